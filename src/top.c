/* top.c - `hookd top`: the endpoint list redrawn every second with
 * ncurses (topview.c lays it out), or one frame as plain text (--once).
 * Read-only: it asks the daemon for endpoint.list and nothing else. */
#include "top.h"
#include "client.h"
#include "epstats.h"
#include "topview.h"

#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct top_state {
    const char *sock;
    int64_t timeout_ms;
    enum top_col sort;
    int desc;
    struct top_frame frame;
    int have;
    char err[512];
};

/* One endpoint.list round trip into st->frame; on failure st->err says
 * why and the last frame stays on screen. */
static int fetch(struct top_state *st)
{
    struct buf req = {0}, reply = {0};
    cJSON *r = NULL;
    int rc = -1;

    buf_puts(&req, "{\"op\":\"endpoint.list\"}\n");
    if (client_transact(st->sock, &req, st->timeout_ms, &reply, st->err, sizeof st->err) < 0)
        goto out;
    r = cJSON_ParseWithLength(reply.p, reply.len);
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
        snprintf(st->err, sizeof st->err, "the daemon refused endpoint.list");
        goto out;
    }
    top_frame_free(&st->frame);
    if (top_parse(r, EPSTATS_SECS, &st->frame) < 0) {
        snprintf(st->err, sizeof st->err, "malformed reply from the daemon");
        goto out;
    }
    st->have = 1;
    st->err[0] = '\0';
    rc = 0;
out:
    cJSON_Delete(r);
    buf_free(&req);
    buf_free(&reply);
    return rc;
}

static void title(const struct top_state *st, char *out, size_t n)
{
    char when[32];
    time_t t = time(NULL);
    struct tm tm;

    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%SZ", &tm);
    if (st->err[0])
        snprintf(out, n, "hookd top  %s  %s  ERROR: %s", when, st->sock, st->err);
    else
        snprintf(out, n, "hookd top  %s  %s  rates: last %d s", when, st->sock, EPSTATS_SECS);
}

int top_once(const char *sock, int64_t timeout_ms, int sort, int desc, int width)
{
    struct top_state st = {sock, timeout_ms, (enum top_col)sort, desc, {0}, 0, ""};
    struct buf out = {0};
    char t[700];
    int rc = 1;

    if (fetch(&st) < 0) {
        fprintf(stderr, "hookd top: %s\n", st.err);
        return 3;
    }
    top_sort(&st.frame, st.sort, st.desc);
    title(&st, t, sizeof t);
    if (top_render(&st.frame, t, width, 0, &out) == 0 && fwrite(out.p, 1, out.len, stdout) == out.len &&
        fflush(stdout) == 0)
        rc = 0;
    buf_free(&out);
    top_frame_free(&st.frame);
    return rc;
}

static void draw(struct top_state *st)
{
    struct buf out = {0};
    char t[700];
    int h, w, y, nlines = 0;
    size_t i, rows, start[512];

    getmaxyx(stdscr, h, w);
    rows = h > TOP_CHROME_LINES ? (size_t)(h - TOP_CHROME_LINES) : 1;
    title(st, t, sizeof t);
    erase();
    if (top_render(&st->frame, t, w, rows, &out) == 0) {
        for (i = 0; i < out.len && nlines < (int)(sizeof start / sizeof start[0]); i++)
            if (i == 0 || out.p[i - 1] == '\n')
                start[nlines++] = i;
        for (y = 0; y < nlines && y < h; y++) {
            size_t e = start[y];
            /* the column header and the totals stand out */
            int attr = y == 1 ? A_REVERSE : y == nlines - 2 ? A_BOLD : 0;
            while (e < out.len && out.p[e] != '\n')
                e++;
            if (attr)
                attron(attr);
            mvaddnstr(y, 0, out.p + start[y], (int)(e - start[y]));
            if (attr)
                attroff(attr);
        }
    }
    refresh();
    buf_free(&out);
}

int top_run(const char *sock, int64_t timeout_ms, int sort, int desc)
{
    struct top_state st = {sock, timeout_ms, (enum top_col)sort, desc, {0}, 0, ""};
    struct timespec last = {0, 0}, now;
    SCREEN *scr;

    /* newterm, not initscr: initscr exits the process itself when the
     * terminal is unknown, without saying what to do instead */
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        fprintf(stderr, "hookd top: not a terminal; hookd top --once prints one frame as text\n");
        return 2;
    }
    if (!(scr = newterm(NULL, stdout, stdin))) {
        fprintf(stderr, "hookd top: cannot use this terminal (TERM=%s); try hookd top --once\n",
                getenv("TERM") ? getenv("TERM") : "");
        return 2;
    }
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(200);
    for (;;) {
        int ch, col;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec * 1000 + now.tv_nsec / 1000000 - (last.tv_sec * 1000 + last.tv_nsec / 1000000) >= 1000) {
            fetch(&st);
            last = now;
            top_sort(&st.frame, st.sort, st.desc);
            draw(&st);
        }
        ch = getch();
        if (ch == ERR)
            continue;
        if (ch == 'q' || ch == 'Q')
            break;
        if (ch == 'r' || ch == 'R')
            st.desc = !st.desc;
        else if ((col = top_col_key(ch)) >= 0) {
            /* the same column again turns it round; a new one starts
             * worst first (names and states A to Z) */
            st.desc = col == (int)st.sort ? !st.desc : top_col_default_desc((enum top_col)col);
            st.sort = (enum top_col)col;
        }
        else if (ch != KEY_RESIZE)
            continue;
        clearok(stdscr, TRUE);   /* a new order moves every line: repaint whole */
        top_sort(&st.frame, st.sort, st.desc);
        draw(&st);
    }
    endwin();
    delscreen(scr);
    top_frame_free(&st.frame);
    return 0;
}
