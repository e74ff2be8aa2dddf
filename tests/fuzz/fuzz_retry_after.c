/* fuzz_retry_after.c - libFuzzer target for retry_after_parse.
 *
 * Input: 8 bytes of "now" (folded into 1970..9999), then the header value.
 * Properties: success gives 0 <= delay <= 10 years; a value of digits only
 * (blanks around allowed) gives exactly min(n, cap) seconds; a failure
 * leaves *delay_ms alone. A second mode formats a date built from the
 * input as IMF-fixdate, RFC 850 and asctime and checks each parses to the
 * same, exact delay. */
#include "fuzz_common.h"
#include "retry_after.h"

#include <time.h>

#define CAP_MS ((int64_t)10 * 365 * 86400 * 1000)
#define MAX_NOW_MS ((int64_t)253402300799999)  /* 9999-12-31T23:59:59.999Z */

static int64_t take_now(const uint8_t **data, size_t *size)
{
    uint64_t v = 0;
    for (int i = 0; i < 8 && *size > 0; i++, (*data)++, (*size)--)
        v = (v << 8) | **data;
    return (int64_t)(v % (uint64_t)(MAX_NOW_MS + 1));
}

static void check_delta(const char *s, int64_t delay)
{
    const char *p = s, *e = s + strlen(s);
    int64_t sec = 0;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    if (p == e)
        return;
    for (const char *q = p; q < e; q++)
        if (*q < '0' || *q > '9')
            return;
    for (const char *q = p; q < e; q++) {
        if (sec < CAP_MS / 1000)
            sec = sec * 10 + (*q - '0');
        if (sec > CAP_MS / 1000)
            sec = CAP_MS / 1000;
    }
    FUZZ_CHECK(delay == sec * 1000, "'%s' gave %lld ms, want %lld", s, (long long)delay,
               (long long)(sec * 1000));
}

static void check_dates(int64_t now_ms, const uint8_t *data, size_t size)
{
    static const char *const wk[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const wkl[7] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday",
                                       "Friday", "Saturday"};
    static const char *const mon[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    uint64_t v = 0;
    time_t t;
    struct tm tm;
    char s[128];
    int64_t date_ms, want, got;

    for (size_t i = 0; i < size && i < 8; i++)
        v = (v << 8) | data[i];
    /* a date within +-20 years of now, whole seconds */
    t = (time_t)(now_ms / 1000) + (time_t)(v % (40ULL * 365 * 86400)) - (time_t)(20LL * 365 * 86400);
    if (t < 0 || (int64_t)t * 1000 > MAX_NOW_MS)
        return;
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999)
        return;
    date_ms = (int64_t)t * 1000;
    want = date_ms <= now_ms ? 0 : (date_ms - now_ms >= CAP_MS ? CAP_MS : date_ms - now_ms);

    snprintf(s, sizeof s, "%s, %02d %s %04d %02d:%02d:%02d GMT", wk[tm.tm_wday], tm.tm_mday,
             mon[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    got = -7;
    FUZZ_CHECK(retry_after_parse(s, now_ms, &got) == 0, "IMF-fixdate '%s' refused (now %lld)", s,
               (long long)now_ms);
    FUZZ_CHECK(got == want, "IMF-fixdate '%s' now %lld: %lld ms, want %lld", s, (long long)now_ms,
               (long long)got, (long long)want);

    snprintf(s, sizeof s, "%s %s %2d %02d:%02d:%02d %04d", wk[tm.tm_wday], mon[tm.tm_mon], tm.tm_mday,
             tm.tm_hour, tm.tm_min, tm.tm_sec, tm.tm_year + 1900);
    got = -7;
    FUZZ_CHECK(retry_after_parse(s, now_ms, &got) == 0, "asctime '%s' refused", s);
    FUZZ_CHECK(got == want, "asctime '%s' now %lld: %lld ms, want %lld", s, (long long)now_ms,
               (long long)got, (long long)want);

    /* RFC 850 has two-digit years: only within the +-50 year window, which
     * +-20 years always is */
    snprintf(s, sizeof s, "%s, %02d-%s-%02d %02d:%02d:%02d GMT", wkl[tm.tm_wday], tm.tm_mday,
             mon[tm.tm_mon], (tm.tm_year + 1900) % 100, tm.tm_hour, tm.tm_min, tm.tm_sec);
    got = -7;
    FUZZ_CHECK(retry_after_parse(s, now_ms, &got) == 0, "RFC 850 '%s' refused", s);
    FUZZ_CHECK(got == want, "RFC 850 '%s' now %lld: %lld ms, want %lld", s, (long long)now_ms,
               (long long)got, (long long)want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t now_ms, delay = -12345;
    char *s;
    int rc;

    if (size < 1)
        return 0;
    if (data[0] == 'D') {        /* mode 2: formatted dates */
        data++, size--;
        now_ms = take_now(&data, &size);
        check_dates(now_ms, data, size);
        return 0;
    }
    now_ms = take_now(&data, &size);
    s = fuzz_strndup(data, size);
    rc = retry_after_parse(s, now_ms, &delay);
    if (rc == 0) {
        FUZZ_CHECK(delay >= 0 && delay <= CAP_MS, "'%s' gave %lld ms", s, (long long)delay);
        check_delta(s, delay);
    } else {
        FUZZ_CHECK(rc == -1, "rc %d", rc);
        FUZZ_CHECK(delay == -12345, "failure changed *delay_ms to %lld", (long long)delay);
    }
    free(s);
    return 0;
}
