/* The JSON parser's state, shared by _decode.c (values built) and _jsonscan.c (numbers
 * read, values passed over): internal to client_cache._sharing. Everything runs with the
 * GIL held. */
#ifndef CLIENT_CACHE_JSONPARSER_H
#define CLIENT_CACHE_JSONPARSER_H

#include <Python.h>
#include "_sharing.h"

typedef struct {
    const char *p;           /* the next byte */
    const char *end;
    int flags;
    RefStack parts;          /* the parts of the open arrays and objects */
    char *text;              /* a string with escapes, unescaped (UTF-8) */
    Py_ssize_t text_size;
    int declined;            /* set when NULL is returned for a reason not in PyErr */
    PyObject *skip;          /* the skip tree's node of the value read next (NULL: none) */
} Parser;

/* NULL, the document declined (not an error: the caller's JSON decoder says). */
static inline PyObject *
decline(Parser *ps)
{
    ps->declined = 1;
    return NULL;
}

static inline void
skip_space(Parser *ps)
{
    while (ps->p < ps->end
           && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t')) {
        ps->p++;
    }
}

/* A number at ps->p, as RFC 8259 writes them: an int below 10**18, or a float written in
 * at most 63 characters and finite; NULL (declined) for the others. */
PyObject *json_number(Parser *ps);

/* The value at ps->p passed over without being built, its grammar checked as the
 * building decoder checks what it builds (see _jsonscan.c); -1 when declined, or with
 * the error set on a failure that is not the document's. */
int json_pass_over(Parser *ps);

#endif
