/* Unit tests for the escaping of text shown to people (esc.c) and its
 * users: log_q, buf_json_str, the response excerpt, the CLI's cells.
 * Expected strings are written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli_show.h"
#include "esc.h"
#include "log.h"
#include "postback.h"
#include "util.h"

static char *escaped(const char *s, enum esc_style st)
{
    struct buf b = {0};

    assert_int_equal(buf_esc(&b, s, strlen(s), st), 0);
    return b.p ? b.p : strdup("");
}

#define EXPECT(st, in, want)                                  \
    do {                                                      \
        char *got_ = escaped(in, st);                         \
        assert_string_equal(got_, want);                      \
        free(got_);                                           \
    } while (0)

/* Every character the registry of unsafe ones names, in UTF-8, with its
 * ESC_TEXT spelling. */
static const struct {
    const char *in, *text;
} unsafe[] = {
    {"\x01", "\\x01"},          {"\x1b", "\\x1b"},          {"\x7f", "\\x7f"},
    {"\xc2\x80", "\\u0080"},    {"\xc2\x85", "\\u0085"},    {"\xc2\x9b", "\\u009b"},   /* CSI */
    {"\xc2\x9d", "\\u009d"},    {"\xc2\x9f", "\\u009f"},                              /* OSC, APC */
    {"\xd8\x9c", "\\u061c"},    {"\xe2\x80\x8e", "\\u200e"}, {"\xe2\x80\x8f", "\\u200f"},
    {"\xe2\x80\xa8", "\\u2028"}, {"\xe2\x80\xa9", "\\u2029"},
    {"\xe2\x80\xaa", "\\u202a"}, {"\xe2\x80\xab", "\\u202b"}, {"\xe2\x80\xac", "\\u202c"},
    {"\xe2\x80\xad", "\\u202d"}, {"\xe2\x80\xae", "\\u202e"},
    {"\xe2\x81\xa6", "\\u2066"}, {"\xe2\x81\xa7", "\\u2067"}, {"\xe2\x81\xa8", "\\u2068"},
    {"\xe2\x81\xa9", "\\u2069"},
};

/* Neighbours of the unsafe ranges, and ordinary text: as they are. */
static const char *const safe[] = {
    " ", "~", "\xc2\xa0" /* U+00A0 */, "\xc3\xa9" /* é */, "\xd8\x9b" /* U+061B */, "\xd8\x9d",
    "\xe2\x80\x8d" /* U+200D */, "\xe2\x80\x90" /* U+2010 */, "\xe2\x80\xa7" /* U+2027 */,
    "\xe2\x80\xaf" /* U+202F */, "\xe2\x81\xa5" /* U+2065 */, "\xe2\x81\xaa" /* U+206A */,
    "\xe6\x97\xa5" /* 日 */, "\xf0\x9f\x98\x80" /* 😀 */,
};

static void test_unsafe_table(void **state)
{
    size_t i;
    char rep[ESC_REP_MAX], json[16], want[64];

    (void)state;
    for (i = 0; i < sizeof unsafe / sizeof unsafe[0]; i++) {
        size_t n = strlen(unsafe[i].in);
        assert_int_equal(esc_next(unsafe[i].in, n, ESC_TEXT, rep), n);
        assert_string_equal(rep, unsafe[i].text);
        /* inside text, each style */
        snprintf(want, sizeof want, "a%sb", unsafe[i].text);
        snprintf(json, sizeof json, "a%sb", unsafe[i].in);
        EXPECT(ESC_TEXT, json, want);
        EXPECT(ESC_SHOW, json, want);
        EXPECT(ESC_QUOTED, json, want);
        /* JSON spells every one as \u00XX / \uXXXX */
        assert_int_equal(esc_next(unsafe[i].in, n, ESC_JSON, rep), n);
        assert_int_equal(strlen(rep), 6);
        assert_memory_equal(rep, "\\u", 2);
    }
    for (i = 0; i < sizeof safe / sizeof safe[0]; i++) {
        size_t n = strlen(safe[i]);
        assert_int_equal(esc_next(safe[i], n, ESC_TEXT, rep), n);
        assert_string_equal(rep, "");
        assert_int_equal(esc_next(safe[i], n, ESC_JSON, rep), n);
        assert_string_equal(rep, "");
    }
}

static void test_styles(void **state)
{
    (void)state;
    EXPECT(ESC_TEXT, "a\"b\\c\nd\re\tf", "a\"b\\\\c\\nd\\re\\tf");
    EXPECT(ESC_QUOTED, "a\"b\\c\n", "a\\\"b\\\\c\\n");
    EXPECT(ESC_SHOW, "a\"b\\x1b\n", "a\"b\\x1b\\n");
    EXPECT(ESC_JSON, "a\"b\\c\nd\x01\x7f", "a\\\"b\\\\c\\nd\\u0001\\u007f");
    EXPECT(ESC_JSON_DOC, "{\"a\":\"x\\\"y\xc2\x9b\"}\n", "{\"a\":\"x\\\"y\\u009b\"}\n");
    EXPECT(ESC_JSON_DOC, "\x1b", "\\u001b");
    /* a whole CSI / OSC sequence as a receiver would send it */
    EXPECT(ESC_TEXT, "\xc2\x9b" "31mRED\xc2\x9d" "0;pwned\x07", "\\u009b31mRED\\u009d0;pwned\\x07");
    EXPECT(ESC_TEXT, "\x1b[2J\x1b]8;;http://x\x1b\\", "\\x1b[2J\\x1b]8;;http://x\\x1b\\\\");
    /* the Trojan Source shape: an override that reorders the line */
    EXPECT(ESC_TEXT, "ok \xe2\x80\xae" "deliver\xe2\x81\xa6", "ok \\u202edeliver\\u2066");
}

static void test_malformed(void **state)
{
    unsigned cp;

    (void)state;
    /* stray continuation, truncated sequence, overlong, surrogate, past
     * U+10FFFF, C0/C1 lead bytes that never start a character */
    EXPECT(ESC_TEXT, "a\x80z", "a\\x80z");
    EXPECT(ESC_TEXT, "a\xe2\x80", "a\\xe2\\x80");
    EXPECT(ESC_TEXT, "\xc0\xaf", "\\xc0\\xaf");          /* overlong '/' */
    EXPECT(ESC_TEXT, "\xe0\x80\xaf", "\\xe0\\x80\\xaf"); /* overlong '/' */
    EXPECT(ESC_TEXT, "\xed\xa0\x80", "\\xed\\xa0\\x80"); /* U+D800 */
    EXPECT(ESC_TEXT, "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
    EXPECT(ESC_TEXT, "\xc2", "\\xc2");
    EXPECT(ESC_TEXT, "\xc2\x9b" "A\xc2", "\\u009bA\\xc2");
    /* an overlong spelling of CSI is no way round the rule */
    EXPECT(ESC_TEXT, "\xe0\x82\x9b", "\\xe0\\x82\\x9b");
    EXPECT(ESC_JSON, "a\xff" "b", "a\\ufffdb");
    assert_int_equal(esc_utf8("\xf0\x9f\x98\x80", 4, &cp), 4);
    assert_int_equal(cp, 0x1f600);
    assert_int_equal(esc_utf8("\xf0\x9f\x98", 3, &cp), 0);
    assert_int_equal(util_utf8_valid("Zo\xc3\xab", 4), 1);
    assert_int_equal(util_utf8_valid("Zo\xc3", 3), 0);
    assert_int_equal(util_utf8_valid("\xed\xbf\xbf", 3), 0);
}

static void test_fixed_buffers(void **state)
{
    char out[32], q[12];

    (void)state;
    /* cut before an escape or character that does not fit whole */
    assert_int_equal(esc_str(out, 6, "abc\x1b" "d", ESC_TEXT), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(esc_str(out, 5, "ab\xe6\x97\xa5z", ESC_TEXT), 2);
    assert_string_equal(out, "ab");
    assert_int_equal(esc_str(out, 6, "ab\xe6\x97\xa5z", ESC_TEXT), 5);
    assert_string_equal(out, "ab\xe6\x97\xa5");
    assert_int_equal(esc_str(out, 1, "abc", ESC_TEXT), 0);
    assert_string_equal(out, "");
    assert_int_equal(esc_str(out, sizeof out, NULL, ESC_TEXT), 0);
    /* log fields */
    assert_string_equal(log_q("a\"b\xc2\x9b", out, sizeof out), "\"a\\\"b\\u009b\"");
    assert_string_equal(log_q("abcdefghijklmnop", q, sizeof q), "\"abcdefghi\"");
    assert_string_equal(log_q("\xe2\x80\xae", q, 8), "\"\"");
    /* the CLI: a control or override never reaches the terminal, a
     * backslash of an excerpt stays */
    cli_sanitize("x\x1b[31m\\n\xe2\x80\xaey", out, sizeof out);
    assert_string_equal(out, "x\\x1b[31m\\n\\u202ey");
    cli_sanitize("x\x1b[31m\\n\xe2\x80\xaey", q, sizeof q);
    assert_string_equal(q, "x\\x1b[31m\\n");
}

static void test_users(void **state)
{
    struct buf b = {0};
    char *x;

    (void)state;
    assert_int_equal(buf_json_str(&b, "r\xc2\x9b\xe2\x80\xae\"\n"), 0);
    assert_string_equal(b.p, "\"r\\u009b\\u202e\\\"\\n\"");
    buf_free(&b);
    assert_int_equal(buf_json_str(&b, NULL), 0);
    assert_string_equal(b.p, "\"\"");
    buf_free(&b);
    x = postback_excerpt("ok\xc2\x9b" "2J\x1b\xe2\x81\xa6\xc3\xa9\xff", 13);
    assert_string_equal(x, "ok\\u009b2J\\x1b\\u2066\xc3\xa9\\xff");
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsafe_table),
        cmocka_unit_test(test_styles),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_fixed_buffers),
        cmocka_unit_test(test_users),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
