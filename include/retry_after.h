/* retry_after.h - parse an HTTP Retry-After value (pure, no I/O). */
#ifndef HOOKD_RETRY_AFTER_H
#define HOOKD_RETRY_AFTER_H
#include <stdint.h>

/* value is the header value (leading/trailing blanks allowed): either
 * delta-seconds or an HTTP-date (IMF-fixdate, RFC 850, asctime forms).
 * now_ms is the wall clock in epoch ms. On success *delay_ms is the wait
 * from now (>= 0; a date in the past gives 0) and 0 is returned; an
 * unparseable value returns -1 and leaves *delay_ms alone. */
int retry_after_parse(const char *value, int64_t now_ms, int64_t *delay_ms);

#endif
