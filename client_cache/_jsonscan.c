/* client_cache._sharing's JSON scanning (see _jsonparser.h): numbers read as RFC 8259
 * writes them, and values passed over without being built (the members a skip tree
 * leaves out: _decode.c). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>
#include "_jsonparser.h"

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


/* The deepest nesting passed over; deeper is declined (the caller's decoder decides). */
#define MAX_PASS_DEPTH 256

static int
is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* The end of the string at p (its opening quote), past the closing one, checked as the
 * decoder checks what it builds: no raw control character, only JSON's escapes, no
 * \u escape into the surrogates (declined there, as when building), valid UTF-8. NULL
 * when declined; also NULL, with the error set, on a failure other than invalid UTF-8. */
static const char *
string_end(const char *p, const char *end, int *failed)
{
    const char *start = ++p;
    int ascii = 1;
    for (;;) {
        if (p >= end) {
            return NULL;
        }
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            break;
        }
        if (c == '\\') {
            if (p + 1 >= end) {
                return NULL;
            }
            char e = p[1];
            if (e == 'u') {
                if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4])
                    || !is_hex(p[5])) {
                    return NULL;
                }
                char first = (char)(p[2] | 0x20);
                if (first == 'd' && p[3] >= '8') { /* 8-9, a-f, A-F */
                    return NULL; /* a surrogate: the building decoder declines those too */
                }
                p += 6;
                continue;
            }
            if (strchr("\"\\/bfnrt", e) == NULL || e == '\0') {
                return NULL;
            }
            p += 2;
            continue;
        }
        if (c < 0x20) {
            return NULL; /* control characters must be escaped */
        }
        ascii &= c < 0x80;
        p++;
    }
    if (!ascii) {
        PyObject *s = PyUnicode_DecodeUTF8(start, p - start, "strict");
        if (s == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
            }
            else {
                *failed = 1;
            }
            return NULL;
        }
        Py_DECREF(s);
    }
    return p + 1;
}

/* Whether the literal word (true, false, null) is at p. */
static const char *
literal_end(const char *p, const char *end, const char *word)
{
    size_t length = strlen(word);
    if ((size_t)(end - p) < length || memcmp(p, word, length) != 0) {
        return NULL;
    }
    return p + length;
}

static const char *
space_end(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
        p++;
    }
    return p;
}

int
json_pass_over(Parser *ps)
{
    /* A value's grammar checked without building it: the closers of the open arrays and
     * objects on a stack, each member's key, colon and comma where they belong. What
     * the building decoder would decline is declined here too, so a document with a
     * member left out decodes, or is declined to the caller's decoder (which raises on
     * malformed JSON), as the whole document would. */
    char closers[MAX_PASS_DEPTH];
    int depth = 0, failed = 0, fraction;
    const char *p = space_end(ps->p, ps->end), *end = ps->end;
    for (;;) {
        /* a value at p */
        if (p >= end) {
            goto declined;
        }
        switch (*p) {
        case '{':
        case '[':
            if (depth == MAX_PASS_DEPTH) {
                goto declined;
            }
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
            p = string_end(p, end, &failed);
            break;
        case 't':
            p = literal_end(p, end, "true");
            break;
        case 'f':
            p = literal_end(p, end, "false");
            break;
        case 'n':
            p = literal_end(p, end, "null");
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
            p = string_end(p, end, &failed);
            if (p == NULL) {
                goto declined;
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
    if (failed) {
        return -1; /* an error, set (not a decline) */
    }
    ps->declined = 1;
    return -1;
}
