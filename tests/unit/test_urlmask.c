/* Unit tests for the masking of URLs shown to people (urlmask.c).
 * Expected strings are written out by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "urlmask.h"

static const struct {
    const char *url, *extra, *shown;
} cases[] = {
    /* query names by substring, any case, percent-decoded */
    {"http://h/p?subid=1&token=abc&Key=k2&x=&sig", NULL, "http://h/p?subid=1&token=***&Key=***&x=&sig"},
    {"https://h/p?api_key=K&apiKey=K&X-Auth=A&authorization=A&access_token=T&signature=S&sig=S", NULL,
     "https://h/p?api_key=***&apiKey=***&X-Auth=***&authorization=***&access_token=***&signature=***&sig=***"},
    {"https://h/p?password=P&passwd=P&PASS=P&client_secret=S&hash=H&md5hash=H", NULL,
     "https://h/p?password=***&passwd=***&PASS=***&client_secret=***&hash=***&md5hash=***"},
    {"https://h/p?to%6Ben=T&api%5Fkey=K&%4B%45%59=K", NULL, "https://h/p?to%6Ben=***&api%5Fkey=***&%4B%45%59=***"},
    {"https://h/p?a=1;token=T;b=2&c=3", NULL, "https://h/p?a=1;token=***&c=3"},
    {"https://h/p?token=&k=v", NULL, "https://h/p?token=***&k=v"},
    {"https://h/p?click=1&payout=2.5&status=ok", NULL, "https://h/p?click=1&payout=2.5&status=ok"},
    /* mask_params adds exact names */
    {"http://h/p?a=1&b=2&bb=3", "b, c", "http://h/p?a=1&b=***&bb=3"},
    {"http://h/p?a=1&B=2", "b", "http://h/p?a=1&B=***"},
    /* incoming-webhook paths */
    {"https://hooks.slack.com/services/T0001/B0002/XXXXXXXXXXXXXXXXXXXXXXXX", NULL,
     "https://hooks.slack.com/services/***/***/***"},
    {"https://discord.com/api/webhooks/123456789012345678/abcDEF-ghi_jkl", NULL,
     "https://discord.com/api/webhooks/***/***"},
    {"https://contoso.webhook.office.com/webhookb2/1b2c@3d4e/IncomingWebhook/0a1b/5f6a", NULL,
     "https://contoso.webhook.office.com/webhookb2/***/***/***/***"},
    {"https://chat.example/hooks/x7q?channel=ops", NULL, "https://chat.example/hooks/***?channel=ops"},
    {"https://partner.example/Webhooks", NULL, "https://partner.example/Webhooks"},
    /* generated-looking segments; readable ones stay */
    {"https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage", NULL,
     "https://api.telegram.org/***/sendMessage"},
    {"https://h/cb/0f8fad5b-d9cb-469f-a165-70867728950e/done", NULL, "https://h/cb/***/done"},
    {"https://h/cb/d41d8cd98f00b204e9800998ecf8427e", NULL, "https://h/cb/***"},
    {"https://h/v1/postbacks/conversion-approved-final", NULL, "https://h/v1/postbacks/conversion-approved-final"},
    {"https://h/files/report-2026-12-03-final.csv", NULL, "https://h/files/report-2026-12-03-final.csv"},
    {"https://h/a/b2c3d4e5f6a7b8c9d0e", NULL, "https://h/a/b2c3d4e5f6a7b8c9d0e"},   /* 19 characters */
    {"https://h/a/b2c3d4e5f6a7b8c9d0e1", NULL, "https://h/a/***"},                  /* 20 */
    /* scheme, host, port and the shape stay */
    {"http://[::1]:8080/", NULL, "http://[::1]:8080/"},
    {"http://h", NULL, "http://h"},
    {"http://h?token=1", NULL, "http://h?token=***"},
    {"http://h//x/", NULL, "http://h//x/"},
    {"http://h/p?c=#c#&token=#t#&d=[D]", NULL, "http://h/p?c=#c#&token=***&d=[D]"},   /* templates */
    {"http://h/{a}/x?key={k}&k={k}", NULL, "http://h/{a}/x?key=***&k={k}"},
    {"", NULL, ""},
};

static void test_cases(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct buf b = {0};
        assert_int_equal(urlmask_url(cases[i].url, cases[i].extra, &b), 0);
        if (strcmp(b.p ? b.p : "", cases[i].shown) != 0)
            fail_msg("%s\n  got  %s\n  want %s", cases[i].url, b.p ? b.p : "", cases[i].shown);
        buf_free(&b);
    }
}

static void test_rules(void **state)
{
    char longname[400];

    (void)state;
    assert_true(urlmask_param_secret("MyAuthHeader", 12, NULL));
    assert_true(urlmask_param_secret("SIG", 3, NULL));
    assert_false(urlmask_param_secret("subid", 5, NULL));
    assert_false(urlmask_param_secret("to%6", 4, NULL));    /* a cut escape is text */
    assert_true(urlmask_param_secret("subid", 5, "x, SubID"));
    /* a name too long to judge is masked */
    memset(longname, 'a', sizeof longname);
    assert_true(urlmask_param_secret(longname, sizeof longname, NULL));
    assert_true(urlmask_segment_random("Abcdefghijklmnopqrs1", 20));
    assert_false(urlmask_segment_random("abcdefghijklmnopqrst", 20));   /* no digit */
    assert_false(urlmask_segment_random("12345678901234567890", 20));   /* no letter */
    assert_false(urlmask_segment_random("a2345678901234567890.js", 23));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
