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

PyObject *
json_number(Parser *ps)
{
    const char *start = ps->p, *p = ps->p, *end = ps->end;
    int negative = p < end && *p == '-';
    p += negative;
    if (!is_digit(p, end)) {
        return decline(ps);
    }
    if (*p == '0') {
        p++;
        if (is_digit(p, end)) {
            return decline(ps); /* no leading zeros */
        }
    }
    else {
        while (is_digit(p, end)) {
            p++;
        }
    }
    int fraction = 0;
    if (p < end && *p == '.') {
        fraction = 1;
        p++;
        if (!is_digit(p, end)) {
            return decline(ps);
        }
        while (is_digit(p, end)) {
            p++;
        }
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        fraction = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (!is_digit(p, end)) {
            return decline(ps);
        }
        while (is_digit(p, end)) {
            p++;
        }
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


int
json_pass_over(Parser *ps)
{
    skip_space(ps);
    const char *p = ps->p, *end = ps->end;
    Py_ssize_t level = 0;
    do {
        if (p >= end) {
            ps->declined = 1;
            return -1;
        }
        char c = *p++;
        if (c == '"') {
            while (p < end && *p != '"') {
                p += *p == '\\' ? 2 : 1;
            }
            if (p >= end) {
                ps->declined = 1;
                return -1;
            }
            p++;
        }
        else if (c == '{' || c == '[') {
            level++;
        }
        else if (c == '}' || c == ']') {
            if (--level < 0) {
                ps->declined = 1;
                return -1;
            }
        }
        else if (level == 0) { /* a number or literal: up to what ends it */
            while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' '
                   && *p != '\n' && *p != '\r' && *p != '\t') {
                p++;
            }
        }
    } while (level > 0);
    ps->p = p;
    return 0;
}
