/* client_cache.codec._codec's JSON scanning (see jsonparser.h): numbers read as RFC 8259
 * writes them, and values passed over without being built (the members a skip tree
 * leaves out: decode.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>
#include "jsonparser.h"

#define MAX_INT_DIGITS 18 /* below 10**18: fits a long long */
#define MAX_FLOAT_TEXT 63

static int
is_digit(const char *p, const char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* The end of the number at p as RFC 8259 writes them, NULL when there is none; *fraction
 * is set when it has a fraction or an exponent. */
static const char *
number_end(const char *p, const char *end, int *fraction)
{
    p += p < end && *p == '-';
    if (!is_digit(p, end)) {
        return NULL;
    }
    if (*p == '0') {
        p++;
        if (is_digit(p, end)) {
            return NULL; /* no leading zeros */
        }
    }
    else {
        while (is_digit(p, end)) {
            p++;
        }
    }
    *fraction = 0;
    if (p < end && *p == '.') {
        *fraction = 1;
        p++;
        if (!is_digit(p, end)) {
            return NULL;
        }
        while (is_digit(p, end)) {
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *fraction = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (!is_digit(p, end)) {
            return NULL;
        }
        while (is_digit(p, end)) {
            p++;
        }
    }
    return p;
}

PyObject *
json_number(Parser *ps)
{
    const char *start = ps->p;
    int negative = start < ps->end && *start == '-';
    int fraction;
    const char *p = number_end(start, ps->end, &fraction);
    if (p == NULL) {
        return decline(ps);
    }
    ps->p = p;
    Py_ssize_t length = p - start;
    if (!fraction) {
        if (length - negative > MAX_INT_DIGITS) {
            return decline(ps);
        }
        long long n = 0;
        for (const char *d = start + negative; d < p; d++) {
            n = n * 10 + (*d - '0');
        }
        return PyLong_FromLongLong(negative ? -n : n);
    }
    if (length > MAX_FLOAT_TEXT) {
        return decline(ps);
    }
    char text[MAX_FLOAT_TEXT + 1];
    memcpy(text, start, (size_t)length);
    text[length] = '\0';
    double d = PyOS_string_to_double(text, NULL, NULL);
    if (d == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    if (!isfinite(d)) {
        return decline(ps);
    }
    return PyFloat_FromDouble(d);
}


/* Past the string at p (its opening quote), its text checked as string() checks what it
 * builds (json_string_text, made and dropped, for the rare string with escapes or bytes
 * above 0x7F); NULL when declined (ps->declined set) or on error. */
static const char *
pass_string(Parser *ps, const char *p)
{
    int escaped = 0, ascii = 1;
    const char *close = string_close(p + 1, ps->end, &escaped, &ascii);
    if (close == NULL) {
        ps->declined = 1;
        return NULL;
    }
    if (escaped || !ascii) {
        PyObject *text = json_string_text(ps, p + 1, close, escaped);
        if (text == NULL) {
            return NULL;
        }
        Py_DECREF(text);
    }
    return close + 1;
}

int
json_pass_over(Parser *ps, int at)
{
    /* A value's grammar checked without building it: the closers of the open arrays and
     * objects on a stack, each member's key, colon and comma where they belong. What
     * the building decoder would decline is declined here too, so a document with a
     * member left out decodes, or is declined to the caller's decoder (which raises on
     * malformed JSON), as the whole document would: that includes any value, scalar or
     * not, nested deeper than MAX_DEPTH counted from the document's top (at + depth). */
    char closers[MAX_DEPTH + 1];
    int depth = 0, fraction;
    if (at < 0) {
        at = 0;
    }
    const char *p = space_end(ps->p, ps->end), *end = ps->end;
    for (;;) {
        /* a value at p */
        if (p >= end || at + depth > MAX_DEPTH) {
            goto declined;
        }
        switch (*p) {
        case '{':
        case '[':
            /* room for it: a container opens only at a value with at + depth <=
             * MAX_DEPTH (checked above) and at >= 0, so depth < MAX_DEPTH + 1 here */
            closers[depth++] = *p == '{' ? '}' : ']';
            p = space_end(p + 1, end);
            if (p < end && *p == closers[depth - 1]) {
                depth--;
                p++;
                break; /* empty: the value is done */
            }
            if (closers[depth - 1] == '}') {
                goto key;
            }
            continue; /* the array's first value */
        case '"':
            p = pass_string(ps, p);
            if (p == NULL) {
                return -1; /* declined or an error, already said */
            }
            break;
        case 't':
            p = literal_end(p, end, "true", 4);
            break;
        case 'f':
            p = literal_end(p, end, "false", 5);
            break;
        case 'n':
            p = literal_end(p, end, "null", 4);
            break;
        default:
            p = number_end(p, end, &fraction);
        }
        /* after a value: the end of the outermost one, a comma, or a closer */
        for (;;) {
            if (p == NULL) {
                goto declined;
            }
            if (depth == 0) {
                ps->p = p;
                return 0;
            }
            p = space_end(p, end);
            if (p < end && *p == closers[depth - 1]) {
                depth--;
                p++;
                continue;
            }
            if (p >= end || *p != ',') {
                goto declined;
            }
            p = space_end(p + 1, end);
            if (closers[depth - 1] == ']') {
                break; /* the next value of the array */
            }
        key:
            if (p >= end || *p != '"') {
                goto declined;
            }
            p = pass_string(ps, p);
            if (p == NULL) {
                return -1;
            }
            p = space_end(p, end);
            if (p >= end || *p != ':') {
                goto declined;
            }
            p = space_end(p + 1, end);
            break; /* the member's value */
        }
    }
declined:
    ps->declined = 1;
    return -1;
}
