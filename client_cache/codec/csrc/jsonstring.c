/* The text of a JSON string with escapes or bytes above 0x7F, for client_cache.codec._codec's
 * decoders (json_string_text, declared in jsonparser.h): its escapes undone (a \u escape
 * to UTF-8, a surrogate pair to the one code point it stands for) into the parser's text
 * buffer, then decoded as UTF-8. What RFC 8259 leaves open is declined, never guessed: an
 * unknown escape, half of a surrogate pair, invalid UTF-8. Runs with the GIL held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "jsonparser.h"

static int
hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* The four hex digits at p as a code unit, or -1. */
static long
code_unit(const char *p)
{
    long unit = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(p[i]);
        if (digit < 0) {
            return -1;
        }
        unit = unit * 16 + digit;
    }
    return unit;
}

static char *
put_utf8(char *out, long cp)
{
    if (cp < 0x80) {
        *out++ = (char)cp;
    }
    else if (cp < 0x800) {
        *out++ = (char)(0xC0 | (cp >> 6));
        *out++ = (char)(0x80 | (cp & 0x3F));
    }
    else if (cp < 0x10000) {
        *out++ = (char)(0xE0 | (cp >> 12));
        *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    }
    else {
        *out++ = (char)(0xF0 | (cp >> 18));
        *out++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    }
    return out;
}

/* The string from start (after its opening quote) to end (its closing quote), which has
 * escapes: unescaped into ps->text, then decoded as UTF-8. NULL (declined or an error)
 * when an escape is not valid or is half of a surrogate pair. */
static PyObject *
unescaped(Parser *ps, const char *start, const char *end)
{
    Py_ssize_t room = end - start; /* an escape is never shorter than what it stands for */
    if (room > ps->text_size) {
        char *text = PyMem_Realloc(ps->text, (size_t)room);
        if (text == NULL) {
            return PyErr_NoMemory();
        }
        ps->text = text;
        ps->text_size = room;
    }
    char *out = ps->text;
    for (const char *p = start; p < end;) {
        if (*p != '\\') {
            *out++ = *p++;
            continue;
        }
        p++; /* the scan saw a character after every backslash */
        char c = *p++;
        switch (c) {
        case '"': *out++ = '"'; break;
        case '\\': *out++ = '\\'; break;
        case '/': *out++ = '/'; break;
        case 'b': *out++ = '\b'; break;
        case 'f': *out++ = '\f'; break;
        case 'n': *out++ = '\n'; break;
        case 'r': *out++ = '\r'; break;
        case 't': *out++ = '\t'; break;
        case 'u': {
            long cp = end - p >= 4 ? code_unit(p) : -1;
            if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) {
                return decline(ps);
            }
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* the high half: the low one must follow */
                long low = end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? code_unit(p + 2) : -1;
                if (low < 0xDC00 || low > 0xDFFF) {
                    return decline(ps);
                }
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            }
            out = put_utf8(out, cp);
            break;
        }
        default:
            return decline(ps);
        }
    }
    PyObject *s = PyUnicode_DecodeUTF8(ps->text, out - ps->text, "strict");
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        return decline(ps);
    }
    return s;
}

PyObject *
json_string_text(Parser *ps, const char *start, const char *close, int escaped)
{
    if (escaped) {
        return unescaped(ps, start, close);
    }
    PyObject *s = PyUnicode_DecodeUTF8(start, close - start, "strict");
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        return decline(ps);
    }
    return s;
}
