/* esc.h - text from receivers and payloads made safe to show: on a
 * terminal, in a log line, in JSON a person reads. Pure: no I/O, no
 * allocation, so every writer (fixed buffers, growable ones, JSON)
 * shares the one decision of what is unsafe and how it is spelt.
 *
 * Unsafe: C0 controls and DEL; C1 controls (U+0080-U+009F, whose CSI and
 * OSC drive terminals like ESC [ and ESC ]); the bidirectional marks,
 * embeddings, overrides and isolates (U+061C, U+200E, U+200F,
 * U+202A-U+202E, U+2066-U+2069) that reorder what is shown; the line
 * and paragraph separators U+2028/U+2029; and every byte that is not
 * part of well-formed UTF-8. Other characters pass as they are. */
#ifndef HOOKD_ESC_H
#define HOOKD_ESC_H
#include <stddef.h>

enum esc_style {
    /* \n \r \t \\, \xNN for other C0, DEL and stray bytes, \uXXXX for
     * the unsafe characters above U+007F */
    ESC_TEXT = 0,
    ESC_QUOTED,    /* ESC_TEXT and \" : the value of a key="..." log field */
    ESC_SHOW,      /* ESC_TEXT but a backslash stays: text escaped once already is shown unchanged */
    ESC_JSON,      /* inside a JSON string: \" \\ \n \r \t \u00XX \uXXXX, a stray byte as \ufffd */
    ESC_JSON_DOC   /* a whole JSON document: ESC_JSON but quotes, backslashes and \n \r \t stay */
};

#define ESC_REP_MAX 8   /* the longest spelling, "\u202e", and its NUL */

/* The character at s (n > 0 bytes left): returns how many bytes it
 * spans; rep gets its escaped spelling, or "" when it is safe as it is. */
size_t esc_next(const char *s, size_t n, enum esc_style st, char rep[ESC_REP_MAX]);

/* s escaped into out (size n > 0, NUL terminated), cut before a
 * character or escape that does not fit whole. Returns strlen(out). */
size_t esc_str(char *out, size_t n, const char *s, enum esc_style st);

/* The well-formed UTF-8 sequence at s (n > 0 bytes left; no overlongs,
 * surrogates or code points past U+10FFFF): its length with *cp, or 0. */
size_t esc_utf8(const char *s, size_t n, unsigned *cp);

#endif
