/* schedule.c - delayed delivery: request members, RFC 3339, due times. */
#include "schedule.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int digits(const char *s, int n, int *out)
{
    int i, v = 0;

    for (i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int sched_rfc3339(const char *s, int64_t *ms)
{
    struct tm tm;
    int y, mo, d, h, mi, sec, frac = 0, scale = 1000, oh = 0, om = 0, sign = 0;
    const char *p;
    time_t t;

    if (strlen(s) < 20 || digits(s, 4, &y) < 0 || s[4] != '-' || digits(s + 5, 2, &mo) < 0 || s[7] != '-' ||
        digits(s + 8, 2, &d) < 0 || !strchr("Tt ", s[10]) || digits(s + 11, 2, &h) < 0 || s[13] != ':' ||
        digits(s + 14, 2, &mi) < 0 || s[16] != ':' || digits(s + 17, 2, &sec) < 0)
        return -1;
    p = s + 19;
    if (*p == '.') {
        int n = 0;
        for (p++; isdigit((unsigned char)*p); p++, n++)
            if (n < 3) {
                frac = frac * 10 + (*p - '0');
                scale /= 10;
            }
        if (n == 0)
            return -1;
        frac *= scale;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        sign = *p == '-' ? -1 : 1;
        if (digits(p + 1, 2, &oh) < 0 || p[3] != ':' || digits(p + 4, 2, &om) < 0 || oh > 23 || om > 59)
            return -1;
        p += 6;
    } else {
        return -1;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970)
        return -1;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = timegm(&tm);
    if (t == (time_t)-1)
        return -1;
    /* timegm normalises 31 February into March: refuse a date that moved */
    {
        struct tm back;
        if (!gmtime_r(&t, &back) || back.tm_mday != d || back.tm_mon != mo - 1)
            return -1;
    }
    *ms = ((int64_t)t - (int64_t)sign * (oh * 3600 + om * 60)) * 1000 + frac;
    return 0;
}

int sched_members(const cJSON *o, int64_t *delay_ms, int64_t *at_ms, char *msg, size_t msglen)
{
    const cJSON *dl = cJSON_GetObjectItemCaseSensitive(o, "delay");
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(o, "deliver_at");

    *delay_ms = -1;
    *at_ms = 0;
    if (dl && cJSON_IsNull(dl))
        dl = NULL;
    if (at && cJSON_IsNull(at))
        at = NULL;
    if (dl && at) {
        snprintf(msg, msglen, "give 'delay' or 'deliver_at', not both");
        return -1;
    }
    if (dl) {
        double v = dl->valuedouble;
        if (cJSON_IsNumber(dl) && v == floor(v) && v >= 0 && v <= (double)SCHED_MAX_MS)
            *delay_ms = (int64_t)v;
        else if (!cJSON_IsString(dl) || util_parse_duration_ms(dl->valuestring, delay_ms) < 0 || *delay_ms < 0)
            *delay_ms = -2;
        if (*delay_ms < 0 || *delay_ms > SCHED_MAX_MS) {
            snprintf(msg, msglen, "field 'delay' must be a duration (90s, 5m, 2h) or ms, at most 30 days");
            return -1;
        }
    }
    if (at) {
        double v = at->valuedouble;
        if (cJSON_IsNumber(at) && v == floor(v) && v > 0 && v < 9.2e15)
            *at_ms = (int64_t)v;
        else if (!cJSON_IsString(at) || sched_rfc3339(at->valuestring, at_ms) < 0 || *at_ms <= 0) {
            snprintf(msg, msglen, "field 'deliver_at' must be epoch milliseconds or an RFC 3339 time "
                                  "(2026-12-03T10:30:00Z)");
            return -1;
        }
    }
    return 0;
}

int sched_due(int64_t now, int64_t delay_ms, int64_t at_ms, int64_t ep_delay_ms, int64_t *due, char *msg,
              size_t msglen)
{
    int64_t t = at_ms > 0 ? at_ms : now + (delay_ms >= 0 ? delay_ms : ep_delay_ms > 0 ? ep_delay_ms : 0);

    *due = 0;
    if (t > now + SCHED_MAX_MS) {
        snprintf(msg, msglen, "the delivery time lies more than 30 days ahead");
        return -1;
    }
    if (t > now)
        *due = t;
    return 0;
}
