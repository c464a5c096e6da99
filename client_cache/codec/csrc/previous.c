/* client_cache.codec._codec's reuse of a watch event's previous object (see previous.h).
 *
 * Most updates change a few members of an object (its resourceVersion, a condition, a
 * status message) and send the whole object again. Before an event's object is built,
 * its cache key is read from its metadata (name and namespace, passed over as
 * jsonscan.c passes values over) and the lookup gives the object the cache holds under
 * it. The decoder (decode.c) then reads the event with that object beside it: a string
 * or number equal to the one in the same place is taken as it is (a key equal to the
 * next key of the dict in its place too, never looked up), and an array or object whose
 * parts all were taken (same keys in the same order) is taken whole. What is
 * unchanged is neither built again nor, when the old object goes, freed. Equality is
 * checked on every part, so a stale or unrelated previous object only costs the
 * compares: the result is always what the JSON says. Everything runs with the GIL
 * held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "previous.h"
#include "strtable.h"

#define MAX_KEY_TEXT 512 /* a namespace (63) and a name (253) fit */

static int
is_word(const char *start, Py_ssize_t length, const char *word)
{
    return (size_t)length == strlen(word) && memcmp(start, word, (size_t)length) == 0;
}

/* The string at scan->p when it has no escape: its bytes in *start and *length, scan->p
 * past it; 0 when there is no such string there. */
static int
plain_string(Parser *scan, const char **start, Py_ssize_t *length)
{
    skip_space(scan);
    if (scan->p >= scan->end || *scan->p != '"') {
        return 0;
    }
    int escaped = 0, ascii = 1;
    const char *close = string_close(scan->p + 1, scan->end, &escaped, &ascii);
    if (close == NULL || escaped) {
        return 0;
    }
    *start = scan->p + 1;
    *length = close - *start;
    scan->p = close + 1;
    return 1;
}

/* An object's next member at scan->p (after its opening brace or a comma): its key's
 * bytes, scan->p at its value; 0 at the close, or where the JSON is not plain. */
static int
next_key(Parser *scan, const char **start, Py_ssize_t *length)
{
    if (!plain_string(scan, start, length)) {
        return 0;
    }
    return take(scan, ':');
}

/* The metadata's name and namespace (*space NULL without one) of the object at scan->p;
 * 0 when it has no name the scan can read. */
static int
name_of(Parser *scan, const char **name, Py_ssize_t *name_length, const char **space,
        Py_ssize_t *space_length)
{
    const char *key;
    Py_ssize_t length;
    *name = *space = NULL;
    if (!take(scan, '{')) {
        return 0;
    }
    while (next_key(scan, &key, &length)) {
        if (!is_word(key, length, "metadata")) {
            if (json_pass_over(scan, 2) < 0 || !take(scan, ',')) {
                return 0;
            }
            continue;
        }
        if (!take(scan, '{')) {
            return 0;
        }
        while ((*name == NULL || *space == NULL) && next_key(scan, &key, &length)) {
            int read = is_word(key, length, "name") ? plain_string(scan, name, name_length)
                : is_word(key, length, "namespace")
                ? plain_string(scan, space, space_length) : json_pass_over(scan, 3) == 0;
            if (!read) {
                return 0;
            }
            if (!take(scan, ',')) {
                break; /* the metadata's end */
            }
        }
        return *name != NULL;
    }
    return 0;
}

PyObject *
previous_of(Parser *ps, PyObject *lookup)
{
    Parser scan = {.p = ps->p, .end = ps->end};
    const char *name, *space;
    Py_ssize_t name_length = 0, space_length = 0;
    int found = name_of(&scan, &name, &name_length, &space, &space_length);
    PyMem_Free(scan.text);
    if (!found || PyErr_Occurred()) {
        return NULL;
    }
    char text[MAX_KEY_TEXT];
    Py_ssize_t length = 0;
    if (space != NULL && space_length > 0) { /* "namespace/name", as the informers key */
        if (space_length + 1 + name_length > MAX_KEY_TEXT) {
            return NULL;
        }
        memcpy(text, space, (size_t)space_length);
        text[space_length] = '/';
        length = space_length + 1;
    }
    if (length + name_length > MAX_KEY_TEXT) {
        return NULL;
    }
    memcpy(text + length, name, (size_t)name_length);
    length += name_length;
    PyObject *key = PyUnicode_DecodeUTF8(text, length, "strict");
    if (key == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear(); /* the decoder declines the document itself */
        }
        return NULL;
    }
    PyObject *previous = PyObject_CallOneArg(lookup, key);
    Py_DECREF(key);
    if (previous == Py_None) {
        Py_CLEAR(previous);
    }
    return previous;
}

PyObject *
member_hint(PyObject *hint, PyObject *name)
{
    if (hint == NULL || !PyDict_CheckExact(hint)) {
        return NULL;
    }
    PyObject *value = PyDict_GetItemWithError(hint, name);
    if (value == NULL) {
        PyErr_Clear(); /* a key of hint's own that raised on compare: no part here */
    }
    return value;
}

PyObject *
item_hint(PyObject *hint, Py_ssize_t index)
{
    if (hint == NULL || !PyList_CheckExact(hint) || index >= PyList_GET_SIZE(hint)) {
        return NULL;
    }
    return PyList_GET_ITEM(hint, index);
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

/* an object's header and, for a str, the start of its characters after it */
static void
prefetch_object(PyObject *obj)
{
    PREFETCH(obj);
    PREFETCH((const char *)obj + 64);
}

void
prefetch_parts(PyObject *hint)
{
    if (hint == NULL) {
        return;
    }
    if (PyDict_CheckExact(hint)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(hint, &pos, &key, &value)) {
            prefetch_object(value);
        }
    }
    else if (PyList_CheckExact(hint)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(hint); i++) {
            prefetch_object(PyList_GET_ITEM(hint, i));
        }
    }
}

int
same_ascii(PyObject *hint, const char *start, Py_ssize_t length)
{
    return hint != NULL && PyUnicode_CheckExact(hint) && PyUnicode_IS_COMPACT_ASCII(hint)
        && PyUnicode_GET_LENGTH(hint) == length
        && same_bytes(PyUnicode_DATA(hint), start, (size_t)length);
}

PyObject *
reused_scalar(PyObject *obj, PyObject *hint)
{
    if (obj == NULL || hint == NULL || obj == hint || Py_TYPE(obj) != Py_TYPE(hint)) {
        return obj;
    }
    int same = 0;
    if (PyFloat_CheckExact(obj)) {
        double a = PyFloat_AS_DOUBLE(obj), b = PyFloat_AS_DOUBLE(hint);
        same = memcmp(&a, &b, sizeof a) == 0;
    }
    else if (PyLong_CheckExact(obj) || PyUnicode_CheckExact(obj)) {
        same = PyObject_RichCompareBool(obj, hint, Py_EQ);
        if (same < 0) {
            PyErr_Clear(); /* exact ints and strs compare without raising */
            same = 0;
        }
    }
    if (same) {
        Py_SETREF(obj, Py_NewRef(hint));
    }
    return obj;
}
