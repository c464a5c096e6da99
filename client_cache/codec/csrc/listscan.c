/* Finding a LIST body's items without decoding it: part of client_cache.codec._codec (see
 * client_cache.codec._sharing and client_cache.liststream).
 *
 * list_items splits a whole body. list_head and list_scan do the same for a body that
 * arrives in pieces: list_head finds where the items array begins once enough of the
 * body is there, list_scan hands out the items that are whole so far and says where to
 * resume; an item cut by the end of the data is scanned again, whole, with the next
 * piece. Only the structure is followed (strings with their escapes, nesting); the
 * envelope and each item are then decoded, and so checked, by a JSON decoder. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "listscan.h"
#include "strtable.h"

/* -- A whole body ------------------------------------------------------------------------
 * -1: not what was expected (the caller decodes the body whole instead). */

static Py_ssize_t
skip_space(const char *p, Py_ssize_t i, Py_ssize_t n)
{
    while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t')) {
        i++;
    }
    return i;
}

/* i at a '"': the index after the closing quote. */
static Py_ssize_t
skip_string(const char *p, Py_ssize_t i, Py_ssize_t n)
{
    for (i++; i < n; i++) {
        if (p[i] == '\\') {
            i++;
        }
        else if (p[i] == '"') {
            return i + 1;
        }
    }
    return -1;
}

/* i at the first character of a value: the index after it. */
static Py_ssize_t
skip_value(const char *p, Py_ssize_t i, Py_ssize_t n)
{
    if (i >= n) {
        return -1;
    }
    if (p[i] == '"') {
        return skip_string(p, i, n);
    }
    if (p[i] != '{' && p[i] != '[') {
        while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ']' && p[i] != ' '
               && p[i] != '\n' && p[i] != '\r' && p[i] != '\t') {
            i++;
        }
        return i;
    }
    Py_ssize_t depth = 0;
    while (i < n) {
        char c = p[i];
        if (c == '"') {
            i = skip_string(p, i, n);
            if (i < 0) {
                return -1;
            }
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
        }
        else if ((c == '}' || c == ']') && --depth == 0) {
            return i + 1;
        }
        i++;
    }
    return -1;
}

/* p[i] is '[': appends each item's start and end to spans; the index after ']'. */
static Py_ssize_t
split_array(const char *p, Py_ssize_t i, Py_ssize_t n, PyObject *spans)
{
    i = skip_space(p, i + 1, n);
    if (i < n && p[i] == ']') {
        return i + 1;
    }
    while (i >= 0 && i < n) {
        Py_ssize_t end = skip_value(p, i, n);
        if (end < 0) {
            return -1;
        }
        PyObject *start_obj = PyLong_FromSsize_t(i);
        PyObject *end_obj = PyLong_FromSsize_t(end);
        int failed = start_obj == NULL || end_obj == NULL
            || PyList_Append(spans, start_obj) < 0 || PyList_Append(spans, end_obj) < 0;
        Py_XDECREF(start_obj);
        Py_XDECREF(end_obj);
        if (failed) {
            return -2;
        }
        i = skip_space(p, end, n);
        if (i < n && p[i] == ']') {
            return i + 1;
        }
        if (i >= n || p[i] != ',') {
            return -1;
        }
        i = skip_space(p, i + 1, n);
    }
    return -1;
}

PyObject *
list_items(PyObject *Py_UNUSED(module), PyObject *body)
{
    Py_buffer view;
    if (PyObject_GetBuffer(body, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const char *p = view.buf;
    Py_ssize_t n = view.len, start = -1, end = -1;
    PyObject *spans = PyList_New(0);
    if (spans == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t i = skip_space(p, 0, n);
    int ok = i < n && p[i] == '{';
    i = skip_space(p, i + 1, n);
    if (ok && i < n && p[i] == '}') {
        ok = 0; /* an empty object: no items */
    }
    while (ok) {
        Py_ssize_t key = i;
        i = i < n && p[i] == '"' ? skip_string(p, i, n) : -1;
        if (i < 0) {
            ok = 0;
            break;
        }
        int is_items = i - key == 7 && memcmp(p + key, "\"items\"", 7) == 0;
        i = skip_space(p, i, n);
        if (i >= n || p[i] != ':') {
            ok = 0;
            break;
        }
        i = skip_space(p, i + 1, n);
        if (is_items && i < n && p[i] == '[') {
            if (start >= 0) { /* a second "items": let the decoder decide */
                ok = 0;
                break;
            }
            start = i;
            i = split_array(p, i, n, spans);
            if (i == -2) {
                Py_DECREF(spans);
                PyBuffer_Release(&view);
                return NULL;
            }
            end = i;
        }
        else {
            i = skip_value(p, i, n);
        }
        i = i < 0 ? n : skip_space(p, i, n);
        if (i < n && p[i] == '}') {
            break;
        }
        if (i >= n || p[i] != ',') {
            ok = 0;
            break;
        }
        i = skip_space(p, i + 1, n);
    }
    PyBuffer_Release(&view);
    if (!ok || start < 0) {
        Py_DECREF(spans);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(nnN)", start, end, spans);
}

/* -- The same, for a body that arrives in pieces ------------------------------------------ */

#define MORE (-1)     /* list_head: the data ends before it can tell */
#define NOT_LIST (-2) /* list_head: not an object with an items array */

enum { AFTER_OPEN, AFTER_COMMA, AFTER_ITEM, CLOSED };

/* The offset after the '[' of the first top-level "items" whose value is an array, MORE
 * or NOT_LIST. Every value before it must be whole in the data. */
static Py_ssize_t
head_of(const char *p, Py_ssize_t n)
{
    Py_ssize_t i = skip_space(p, 0, n);
    if (i >= n) {
        return MORE;
    }
    if (p[i] != '{') {
        return NOT_LIST;
    }
    i = skip_space(p, i + 1, n);
    for (;;) {
        if (i >= n) {
            return MORE;
        }
        if (p[i] != '"') { /* the end of the object, or not JSON */
            return NOT_LIST;
        }
        Py_ssize_t key = i;
        i = skip_string(p, i, n);
        if (i < 0) {
            return MORE;
        }
        int is_items = i - key == 7 && memcmp(p + key, "\"items\"", 7) == 0;
        i = skip_space(p, i, n);
        if (i >= n) {
            return MORE;
        }
        if (p[i] != ':') {
            return NOT_LIST;
        }
        i = skip_space(p, i + 1, n);
        if (i >= n) {
            return MORE;
        }
        if (is_items && p[i] == '[') {
            return i + 1;
        }
        i = skip_value(p, i, n); /* a scalar cut by the end runs to n: MORE below */
        if (i < 0) {
            return MORE;
        }
        i = skip_space(p, i, n);
        if (i >= n) {
            return MORE;
        }
        if (p[i] != ',') {
            return NOT_LIST;
        }
        i = skip_space(p, i + 1, n);
    }
}

PyObject *
list_head(PyObject *Py_UNUSED(module), PyObject *data)
{
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    Py_ssize_t found = head_of(view.buf, view.len);
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(found);
}

static PyObject *
malformed(Py_ssize_t at)
{
    PyErr_Format(codec_decode_error,
                 "the LIST body's items array is not well formed (at byte %zd of a piece)", at);
    return NULL;
}

PyObject *
list_scan(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "list_scan(data, pos, state) takes 3 arguments");
        return NULL;
    }
    Py_ssize_t i = PyLong_AsSsize_t(args[1]);
    long state = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (state < AFTER_OPEN || state > CLOSED) {
        PyErr_Format(PyExc_ValueError, "list_scan: no state %ld", state);
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    const char *p = view.buf;
    Py_ssize_t n = view.len;
    PyObject *items = PyList_New(0);
    if (items == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (i < 0 || i > n) {
        PyErr_Format(PyExc_ValueError, "list_scan: position %zd outside the data", i);
        goto fail;
    }
    while (state != CLOSED) {
        i = skip_space(p, i, n);
        if (i >= n) {
            break;
        }
        char c = p[i];
        if (state == AFTER_ITEM) {
            if (c != ',' && c != ']') {
                malformed(i);
                goto fail;
            }
            state = c == ',' ? AFTER_COMMA : CLOSED;
            i++;
            continue;
        }
        if (c == ']' && state == AFTER_OPEN) {
            state = CLOSED;
            i++;
            continue;
        }
        int scalar = c != '{' && c != '[' && c != '"';
        Py_ssize_t end = skip_value(p, i, n);
        if (end < 0 || (scalar && end >= n)) {
            break; /* cut by the end of the data: resume at its start */
        }
        if (end == i) { /* ']' after a comma, ',' or '}' where an item belongs */
            malformed(i);
            goto fail;
        }
        PyObject *item = PyBytes_FromStringAndSize(p + i, end - i);
        if (item == NULL || PyList_Append(items, item) < 0) {
            Py_XDECREF(item);
            goto fail;
        }
        Py_DECREF(item);
        state = AFTER_ITEM;
        i = end;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(nlN)", i, state, items);
fail:
    PyBuffer_Release(&view);
    Py_DECREF(items);
    return NULL;
}

int
list_scan_constants(PyObject *module)
{
    return PyModule_AddIntConstant(module, "MORE", MORE) < 0
        || PyModule_AddIntConstant(module, "NOT_LIST", NOT_LIST) < 0
        || PyModule_AddIntConstant(module, "AFTER_OPEN", AFTER_OPEN) < 0
        || PyModule_AddIntConstant(module, "AFTER_COMMA", AFTER_COMMA) < 0
        || PyModule_AddIntConstant(module, "AFTER_ITEM", AFTER_ITEM) < 0
        || PyModule_AddIntConstant(module, "CLOSED", CLOSED) < 0 ? -1 : 0;
}
