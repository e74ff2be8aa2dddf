/* fuzz_config.c - libFuzzer target for the INI loader (config_load in
 * src/config.c, with libinih, the typed settings table, endpoint sections,
 * URL and secret validation) and config_dump (check-config output).
 *
 * config_load takes a path: the input is written to one memfd per process
 * and loaded through /proc/self/fd/N (no files left behind).
 *
 * Properties:
 *  - a failed load names a reason; neither the reason nor, after a good
 *    load, the check-config dump contains the text of any secret
 *    ("secret = ..." values, each blank/comma separated token of at least
 *    12 bytes that appears only once in the input);
 *  - the dump never shows the password of [postgres] conninfo (the value
 *    of password=... (a key that starts with "password" counts), and the
 *    password of a URI's user:password@) when it is at least 6 bytes long
 *    and appears once in the input;
 *  - a good load keeps its invariants: max_line > max_payload,
 *    base_delay <= max_delay, endpoints have valid names and a URL, at most
 *    SIGN_MAX_SECRETS secrets and ENDPOINT_MAX_HEADERS headers. */
#include "fuzz_common.h"
#include "config.h"

#include <sys/mman.h>
#include <unistd.h>

/* Known bugs (tests/fuzz/crashes/): listed in FUZZ_KNOWN they are not
 * reported, so a fuzz run can look past them until they are fixed.
 *   config-continuation-secret: an indented "secret = whsec_..." line right
 *   after another key is, for inih, a continuation of that key's value;
 *   the error for that key ("url = 'secret = whsec_...': URL must not
 *   contain blanks") prints the secret (check-config, start_failed log).
 *   config-long-line: libinih reads at most 199 bytes of a line; the rest
 *   of a longer line is parsed as a line of its own, so the tail of a long
 *   "secret = whsec_A whsec_B ..." line becomes a key ("QUFB...UE = '':
 *   unknown key") and is printed. (The same cut makes URLs over ~190
 *   bytes impossible to configure in the file, though 2048 are allowed.) */
static int known(const char *id)
{
    const char *k = getenv("FUZZ_KNOWN");
    return k && strstr(k, id) != NULL;
}

/* Does text contain 12 or more consecutive bytes of the secret's base64? */
static const char *g_in;
static size_t g_inlen;

static size_t count_occ(const char *hay, size_t hlen, const char *needle, size_t nlen);

static int shows_secret(const char *text, const char *tok)
{
    const char *b = strncmp(tok, "whsec_", 6) == 0 ? tok + 6 : tok;
    size_t n = strlen(b);
    char win[13];

    if (strstr(text, tok))
        return 1;
    for (size_t i = 0; i + 12 <= n; i++) {
        memcpy(win, b + i, 12);
        win[12] = '\0';
        if (strspn(win, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != 12)
            continue;   /* only runs of secret-looking text count */
        if (count_occ(g_in, g_inlen, win, 12) != 1)
            continue;   /* the input has this text elsewhere too */
        if (strstr(text, win))
            return 1;
    }
    return 0;
}

static int memfd = -1;
static char path[64];
static FILE *devnull;

static size_t count_occ(const char *hay, size_t hlen, const char *needle, size_t nlen)
{
    size_t n = 0;
    for (const char *p = hay; nlen && (size_t)(p - hay) + nlen <= hlen; p++) {
        p = memmem(p, hlen - (size_t)(p - hay), needle, nlen);
        if (!p)
            break;
        n++;
    }
    return n;
}

/* Collect candidate secret texts: values of lines "secret = ..." (naive:
 * trimmed, inline " ;" comments cut), each token of >= 12 bytes. */
static size_t find_secrets(const char *in, size_t len, char toks[][300], size_t max)
{
    size_t n = 0;
    const char *line = in, *end = in + len;

    while (line < end && n < max) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        const char *p = line, *eq;
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        if ((p > line && known("config-continuation-secret")) || (le - line > 190 && known("config-long-line"))) {
            line = le + 1;
            continue;
        }
        if ((size_t)(le - p) > 6 && strncmp(p, "secret", 6) == 0) {
            eq = p + 6;
            while (eq < le && (*eq == ' ' || *eq == '\t'))
                eq++;
            if (eq < le && (*eq == '=' || *eq == ':')) {
                const char *v = eq + 1;
                while (v < le) {
                    const char *t;
                    while (v < le && (*v == ' ' || *v == '\t' || *v == ',' || *v == '\r'))
                        v++;
                    t = v;
                    while (v < le && *v != ' ' && *v != '\t' && *v != ',' && *v != '\r' && *v != ';')
                        v++;
                    if (v - t >= 12 && v - t < 300 && n < max) {
                        memcpy(toks[n], t, (size_t)(v - t));
                        toks[n][v - t] = '\0';
                        if (count_occ(in, len, toks[n], (size_t)(v - t)) == 1 && !memchr(toks[n], '\0', (size_t)(v - t)))
                            n++;
                    }
                    if (v < le && *v == ';')
                        break;
                }
            }
        }
        line = le + 1;
    }
    return n;
}

/* The conninfo's password as loaded (password=... or a URI's
 * user:password@), copied into out; 0 when there is none to look for. */
static int conninfo_password(const char *ci, char *out, size_t cap)
{
    const char *p = strstr(ci, "://"), *at, *colon, *v, *e;

    out[0] = '\0';
    if (p && (at = strchr(p + 3, '@')) && (colon = memchr(p + 3, ':', (size_t)(at - p - 3))) &&
        (size_t)(at - colon - 1) < cap) {
        memcpy(out, colon + 1, (size_t)(at - colon - 1));
        out[at - colon - 1] = '\0';
    } else if ((p = strstr(ci, "password"))) {
        /* the key's rest, blanks, '=': where the mask looks */
        for (v = p + 8; *v && *v != '=' && *v != ' ' && *v != '&'; v++)
            ;
        while (*v == ' ')
            v++;
        if (*v != '=')
            return 0;
        for (v++; *v == ' '; v++)
            ;
        for (e = v; *e && *e != ' ' && *e != '&' && *e != '\''; e++)
            ;
        if ((size_t)(e - v) < cap) {
            memcpy(out, v, (size_t)(e - v));
            out[e - v] = '\0';
        }
    }
    return strlen(out) >= 6 && strcmp(out, "***") != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char toks[16][300];
    struct config c;
    char err[512];
    size_t nsec, i;
    int rc;

    if (size > 64 * 1024)
        return 0;
    if (memfd < 0) {
        memfd = memfd_create("hookd-fuzz-ini", 0);
        if (memfd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
        devnull = fopen("/dev/null", "w");
    }
    if (ftruncate(memfd, 0) != 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
        abort();

    g_in = (const char *)data;
    g_inlen = size;
    nsec = find_secrets((const char *)data, size, toks, 16);
    if (config_init(&c) != 0)
        abort();
    err[0] = '\0';
    rc = config_load(&c, path, err, sizeof err);
    if (rc != 0) {
        FUZZ_CHECK(rc == -1, "rc %d", rc);
        FUZZ_CHECK(err[0] != '\0', "load failed without a reason");
        for (i = 0; i < nsec; i++)
            FUZZ_CHECK(!shows_secret(err, toks[i]), "the error shows secret text '%s': %s", toks[i], err);
    } else {
        char *dump = NULL;
        size_t dlen = 0;
        FILE *f = open_memstream(&dump, &dlen);

        FUZZ_CHECK(c.max_line > c.max_payload, "max_line %lld <= max_payload %lld", (long long)c.max_line,
                   (long long)c.max_payload);
        FUZZ_CHECK(c.dflt.base_delay_ms <= c.dflt.max_delay_ms, "base_delay > max_delay");
        for (i = 0; i < c.n_endpoints; i++) {
            const struct ep_def *e = &c.endpoints[i];
            FUZZ_CHECK(ep_name_valid(e->name), "endpoint name '%s'", e->name);
            FUZZ_CHECK(e->url != NULL, "endpoint %s without url", e->name);
            FUZZ_CHECK(e->nsecrets <= SIGN_MAX_SECRETS && e->nheaders <= ENDPOINT_MAX_HEADERS, "counts");
        }
        if (f) {
            char pw[300];
            config_dump(&c, f);
            fclose(f);
            for (i = 0; i < nsec; i++)
                FUZZ_CHECK(!shows_secret(dump, toks[i]), "check-config output shows secret text '%s'", toks[i]);
            if (c.pg_conninfo && conninfo_password(c.pg_conninfo, pw, sizeof pw) &&
                count_occ((const char *)data, size, pw, strlen(pw)) == 1) {
                /* in the conninfo value: the password may be a word the
                 * dump prints anyway ("synchronous", "backend" in the
                 * help text); masked, the value is no longer than loaded */
                char *line = strstr(dump, "\nconninfo = "), *end = line ? strchr(line + 1, '\n') : NULL;
                size_t vmax = strlen("\nconninfo = ") + strlen(c.pg_conninfo);
                if (end)
                    *end = '\0';
                if (line && strlen(line) > vmax)
                    line[vmax] = '\0';
                FUZZ_CHECK(!line || strstr(line, pw) == NULL, "check-config output shows the conninfo password '%s'",
                           pw);
            }
            free(dump);
        }
        if (devnull)
            config_dump(&c, devnull);
    }
    config_free(&c);
    return 0;
}
