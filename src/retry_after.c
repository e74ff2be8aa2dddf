/* retry_after.c - Retry-After (RFC 9110 10.2.3): delta-seconds or an
 * HTTP-date. Locale and TZ independent: names are matched against fixed
 * English tables and the epoch is computed from the fields directly. */
#include "retry_after.h"

#include <stddef.h>
#include <string.h>

/* Anything further out is a misconfigured or hostile server; ten years of
 * 365 days keeps the millisecond arithmetic far from overflow. */
#define RA_CAP_SEC ((int64_t)10 * 365 * 86400)
#define RA_CAP_MS (RA_CAP_SEC * 1000)

static const char *const ra_wkday[7] = {
    "Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"
};
static const char *const ra_weekday[7] = {
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"
};
static const char *const ra_month[12] = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun",
    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
};

struct ra_tm {
    int64_t year;
    int mon;   /* 1..12 */
    int mday;  /* 1..31 */
    int hour, min, sec;
};

static int ra_is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static int ra_is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static char ra_lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* Case-insensitive match of word at *p (RFC 9110 asks recipients to be
 * robust); advances *p past it. */
static int ra_word(const char **p, const char *end, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(end - *p) < n)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (ra_lower((*p)[i]) != ra_lower(word[i]))
            return -1;
    *p += n;
    return 0;
}

static int ra_char(const char **p, const char *end, char c)
{
    if (*p >= end || **p != c)
        return -1;
    (*p)++;
    return 0;
}

/* Exactly n digits. */
static int ra_digits(const char **p, const char *end, int n, int64_t *v)
{
    int64_t x = 0;
    if (end - *p < n)
        return -1;
    for (int i = 0; i < n; i++) {
        if (!ra_is_digit((*p)[i]))
            return -1;
        x = x * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *v = x;
    return 0;
}

/* Index of the table entry matching at *p, or -1. */
static int ra_name(const char **p, const char *end, const char *const *tab, int n)
{
    for (int i = 0; i < n; i++)
        if (ra_word(p, end, tab[i]) == 0)
            return i;
    return -1;
}

static int ra_month_at(const char **p, const char *end)
{
    int m = ra_name(p, end, ra_month, 12);
    return m < 0 ? -1 : m + 1;
}

/* "HH:MM:SS" */
static int ra_time(const char **p, const char *end, struct ra_tm *tm)
{
    int64_t h, m, s;
    if (ra_digits(p, end, 2, &h) != 0 || ra_char(p, end, ':') != 0 ||
        ra_digits(p, end, 2, &m) != 0 || ra_char(p, end, ':') != 0 ||
        ra_digits(p, end, 2, &s) != 0)
        return -1;
    tm->hour = (int)h;
    tm->min = (int)m;
    tm->sec = (int)s;
    return 0;
}

static int ra_is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int ra_valid(const struct ra_tm *tm)
{
    static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int dim;
    if (tm->mon < 1 || tm->mon > 12)
        return 0;
    dim = mdays[tm->mon - 1] + (tm->mon == 2 && ra_is_leap(tm->year));
    if (tm->mday < 1 || tm->mday > dim)
        return 0;
    /* 60 is a leap second, which RFC 9110's time-of-day grammar allows. */
    return tm->hour <= 23 && tm->min <= 59 && tm->sec <= 60;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t ra_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Year of a day count since the epoch (inverse of the above). */
static int64_t ra_year_from_days(int64_t z)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t m = mp < 10 ? mp + 3 : mp - 9;
    return yoe + era * 400 + (m <= 2);
}

static int64_t ra_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
static int ra_imf(const char *p, const char *end, struct ra_tm *tm)
{
    int64_t v;
    if (ra_name(&p, end, ra_wkday, 7) < 0 || ra_char(&p, end, ',') != 0 ||
        ra_char(&p, end, ' ') != 0 || ra_digits(&p, end, 2, &v) != 0)
        return -1;
    tm->mday = (int)v;
    if (ra_char(&p, end, ' ') != 0 || (tm->mon = ra_month_at(&p, end)) < 0 ||
        ra_char(&p, end, ' ') != 0 || ra_digits(&p, end, 4, &tm->year) != 0 ||
        ra_char(&p, end, ' ') != 0 || ra_time(&p, end, tm) != 0 ||
        ra_char(&p, end, ' ') != 0 || ra_word(&p, end, "GMT") != 0)
        return -1;
    return p == end ? 0 : -1;
}

/* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" */
static int ra_rfc850(const char *p, const char *end, int64_t now_year, struct ra_tm *tm)
{
    int64_t v, yy;
    if (ra_name(&p, end, ra_weekday, 7) < 0 || ra_char(&p, end, ',') != 0 ||
        ra_char(&p, end, ' ') != 0 || ra_digits(&p, end, 2, &v) != 0)
        return -1;
    tm->mday = (int)v;
    if (ra_char(&p, end, '-') != 0 || (tm->mon = ra_month_at(&p, end)) < 0 ||
        ra_char(&p, end, '-') != 0 || ra_digits(&p, end, 2, &yy) != 0 ||
        ra_char(&p, end, ' ') != 0 || ra_time(&p, end, tm) != 0 ||
        ra_char(&p, end, ' ') != 0 || ra_word(&p, end, "GMT") != 0 || p != end)
        return -1;
    /* RFC 9110 5.6.7: a two-digit year that looks more than 50 years in
     * the future means the most recent past year with those digits. So the
     * year lies in (now - 50, now + 50]; the window, not the current
     * century, decides, or "00" read in 1999 would mean 1900. */
    tm->year = ra_floor_div(now_year, 100) * 100 + yy;
    if (tm->year > now_year + 50)
        tm->year -= 100;
    else if (tm->year <= now_year - 50)
        tm->year += 100;
    return 0;
}

/* asctime: "Sun Nov  6 08:49:37 1994" (day is 2DIGIT or SP DIGIT) */
static int ra_asctime(const char *p, const char *end, struct ra_tm *tm)
{
    int64_t v;
    if (ra_name(&p, end, ra_wkday, 7) < 0 || ra_char(&p, end, ' ') != 0 ||
        (tm->mon = ra_month_at(&p, end)) < 0 || ra_char(&p, end, ' ') != 0)
        return -1;
    if (p < end && *p == ' ') {
        p++;
        if (ra_digits(&p, end, 1, &v) != 0)
            return -1;
    } else if (ra_digits(&p, end, 2, &v) != 0) {
        return -1;
    }
    tm->mday = (int)v;
    if (ra_char(&p, end, ' ') != 0 || ra_time(&p, end, tm) != 0 ||
        ra_char(&p, end, ' ') != 0 || ra_digits(&p, end, 4, &tm->year) != 0)
        return -1;
    return p == end ? 0 : -1;
}

static int ra_delta(const char *p, const char *end, int64_t *delay_ms)
{
    int64_t sec = 0;
    if (p == end)
        return -1;
    for (; p < end; p++) {
        if (!ra_is_digit(*p))
            return -1;
        /* Saturate instead of overflowing; keep scanning to reject junk. */
        if (sec < RA_CAP_SEC)
            sec = sec * 10 + (*p - '0');
        if (sec > RA_CAP_SEC)
            sec = RA_CAP_SEC;
    }
    *delay_ms = sec * 1000;
    return 0;
}

int retry_after_parse(const char *value, int64_t now_ms, int64_t *delay_ms)
{
    const char *p, *end;
    struct ra_tm tm;
    int64_t now_year, date_ms;

    if (!value || !delay_ms)
        return -1;
    p = value;
    end = value + strlen(value);
    while (p < end && ra_is_blank(*p))
        p++;
    while (end > p && ra_is_blank(end[-1]))
        end--;
    if (p == end)
        return -1;
    if (ra_is_digit(*p))
        return ra_delta(p, end, delay_ms);

    memset(&tm, 0, sizeof(tm));
    now_year = ra_year_from_days(ra_floor_div(now_ms, 86400000));
    if (ra_imf(p, end, &tm) != 0 && ra_rfc850(p, end, now_year, &tm) != 0 &&
        ra_asctime(p, end, &tm) != 0)
        return -1;
    if (!ra_valid(&tm))
        return -1;
    /* Years are at most 4 digits here (two-digit years land near
     * now_year), so this stays far inside int64. */
    if (tm.year < 0 || tm.year > 9999)
        return -1;
    date_ms = (ra_days_from_civil(tm.year, tm.mon, tm.mday) * 86400 +
               tm.hour * 3600 + tm.min * 60 + tm.sec) * 1000;

    /* Compare without computing date_ms - now_ms, which could overflow
     * for an absurd now_ms. */
    if (now_ms >= date_ms)
        *delay_ms = 0;
    else if (now_ms <= date_ms - RA_CAP_MS)
        *delay_ms = RA_CAP_MS;
    else
        *delay_ms = date_ms - now_ms;
    return 0;
}
