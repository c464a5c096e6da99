/* The JSON parser's state, shared by decode.c (values built) and jsonscan.c (numbers
 * read, values passed over): internal to client_cache.codec._codec. Everything runs with the
 * GIL held. */
#ifndef CLIENT_CACHE_JSONPARSER_H
#define CLIENT_CACHE_JSONPARSER_H

#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "strtable.h"

typedef struct {
    const char *p;           /* the next byte */
    const char *end;
    int flags;
    RefStack parts;          /* the parts of the open arrays and objects */
    char *text;              /* a string with escapes, unescaped (UTF-8) */
    Py_ssize_t text_size;
    int declined;            /* set when NULL is returned for a reason not in PyErr */
    PyObject *skip;          /* the skip tree's node of the value read next (NULL: none) */
    PyObject *hint;          /* the previous object's part where the value read next sits
                              * (previous.c; borrowed, NULL: none) */
    PyObject *previous;      /* the lookup of an event's previous object (NULL: none) */
    int added;               /* ADDED events looked up too (a watch-list's relist) */
} Parser;

/* NULL, the document declined (not an error: the caller's JSON decoder says). */
static inline PyObject *
decline(Parser *ps)
{
    ps->declined = 1;
    return NULL;
}

/* The first byte at or after p that is not JSON white space. */
static inline const char *
space_end(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
        p++;
    }
    return p;
}

static inline void
skip_space(Parser *ps)
{
    ps->p = space_end(ps->p, ps->end);
}

/* Whether the next byte at ps->p that is not white space is c (then consumed). */
static inline int
take(Parser *ps, char c)
{
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == c) {
        ps->p++;
        return 1;
    }
    return 0;
}

/* Whether string_close reads eight bytes at a time (it needs the lowest set bit's
 * index and the first byte in memory lowest in a word). */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) \
    && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define STRING_WORDS 1
#else
#define STRING_WORDS 0
#endif

/* The closing quote of the string whose characters start at p (after its opening
 * quote); NULL when the data ends first or a raw control character comes. *escaped is
 * set when it has a backslash, *ascii cleared when it has a byte above 0x7F; the escapes
 * themselves are checked when the text is made (json_string_text). */
static inline const char *
string_close(const char *p, const char *end, int *escaped, int *ascii)
{
    for (;;) {
#if STRING_WORDS
        /* Eight bytes at a time up to the first quote, backslash or byte below 0x20, by
         * the subtract-and-mask test for a zero byte (in word ^ '"'..., word ^ '\\'...)
         * and for a byte below 0x20: its lowest flagged byte is exact, the ones above it
         * may not be, and only the lowest is used. */
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
        while (end - p >= 8) {
            uint64_t word;
            memcpy(&word, p, 8);
            uint64_t quote = word ^ (ones * '"'), slash = word ^ (ones * '\\');
            uint64_t stop = (((quote - ones) & ~quote) | ((slash - ones) & ~slash)
                             | ((word - ones * 0x20) & ~word)) & highs;
            if (stop != 0) {
                int bit = __builtin_ctzll(stop); /* the high bit of the first such byte */
                uint64_t before = (1ULL << (bit - 7)) - 1; /* the bytes below it */
                *ascii &= (word & before & highs) == 0;
                p += bit >> 3;
                break;
            }
            *ascii &= (word & highs) == 0;
            p += 8;
        }
#endif
        if (p >= end) {
            return NULL;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            return p;
        }
        if (c == '\\') {
            *escaped = 1;
            if (end - p < 2) {
                return NULL; /* the data ends inside the escape (no pointer past end + 1) */
            }
            p += 2; /* the escaped character cannot end the string */
            continue;
        }
        if (c < 0x20) {
            return NULL; /* control characters must be escaped */
        }
        *ascii &= c < 0x80;
        p++;
    }
}

/* The end of the literal word (true, false, null: length bytes) at p, or NULL. */
static inline const char *
literal_end(const char *p, const char *end, const char *word, Py_ssize_t length)
{
    if (end - p < length || memcmp(p, word, (size_t)length) != 0) {
        return NULL;
    }
    return p + length;
}

/* The str of a string's characters from start to close (its closing quote) that has
 * escapes or bytes above 0x7F: escapes undone, UTF-8 decoded. NULL when
 * declined (an escape not valid, half of a surrogate pair, invalid UTF-8) or on error
 * (jsonstring.c). */
PyObject *json_string_text(Parser *ps, const char *start, const char *close, int escaped);

/* A number at ps->p, as RFC 8259 writes them: an int below 10**18, or a float written in
 * at most 63 characters and finite; NULL (declined) for the others. */
PyObject *json_number(Parser *ps);

/* The value at ps->p passed over without being built, its grammar and depth checked as
 * the building decoder checks what it builds at depth `at` (see jsonscan.c); -1 when
 * declined, or with the error set on a failure that is not the document's. */
int json_pass_over(Parser *ps, int at);

#endif
