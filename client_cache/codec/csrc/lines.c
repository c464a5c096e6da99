/* client_cache.codec._codec.decode_lines: the watch events of a buffer of JSON lines, in one
 * call (see lines.h).
 *
 * A JSON watch stream is one event per line, {"type": ..., "object": ...}. The reader
 * thread used to cut each buffer into lines, decode each line and build its event with
 * a few Python calls per event; here the whole buffer is done in one call, each line by
 * decode_json_with (decode.c) exactly as decode(flags, line, skip, previous, mode)
 * decodes it, and each event built by calling the event class with its type and object,
 * as the Python path does.
 *
 * Anything that path would treat otherwise is left to it: a line this call cannot take
 * (too long, declined, an error while decoding, a document that is not an object with a
 * "type" the types dict knows and an "object") stops the call there, and the caller
 * decodes that one line its own way, which gives the event or the error it always gave,
 * then calls again after it. Everything runs with the GIL held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "decode.h"
#include "lines.h"

/* Whether data[0:length] is all white space as bytes.strip() reads it (a blank line). */
static int
blank(const char *data, Py_ssize_t length)
{
    for (Py_ssize_t i = 0; i < length; i++) {
        char c = data[i];
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f') {
            return 0;
        }
    }
    return 1;
}

/* The keys of an event document, made once (interned): looking a member up by a C string
 * made and hashed a str for each event. */
static PyObject *type_key, *object_key;

/* The event of the decoded document doc (new reference), or NULL without an error when
 * doc is not an event this call builds (the caller's own path then says what it is);
 * NULL with the error set when the event class raised. */
static PyObject *
event_of(PyObject *doc, PyObject *event_class, PyObject *types)
{
    if (!PyDict_CheckExact(doc)) {
        return NULL;
    }
    PyObject *name = PyDict_GetItemWithError(doc, type_key); /* borrowed */
    PyObject *obj = name == NULL ? NULL : PyDict_GetItemWithError(doc, object_key);
    if (name == NULL || obj == NULL || !PyUnicode_CheckExact(name)) {
        return NULL; /* no error: exact str keys compare without raising */
    }
    PyObject *type = PyDict_GetItemWithError(types, name); /* borrowed */
    if (type == NULL) {
        PyErr_Clear(); /* not a type it knows: the caller's path raises its error */
        return NULL;
    }
    PyObject *args[2] = {type, obj};
    return PyObject_Vectorcall(event_class, args, 2, NULL);
}

/* What the lines of data[pos:size] decode to, as decode_lines returns it: (events, pos,
 * stuck), or NULL with the error set. */
static PyObject *
events_of(const char *data, Py_ssize_t size, Py_ssize_t pos, int flags, PyObject *skip,
          PyObject *previous, int mode, Py_ssize_t limit, PyObject *event_class,
          PyObject *types)
{
    PyObject *events = PyList_New(0);
    if (events == NULL) {
        return NULL;
    }
    Py_ssize_t stuck = -1;
    for (;;) {
        const char *newline = memchr(data + pos, '\n', (size_t)(size - pos));
        if (newline == NULL) {
            break;
        }
        Py_ssize_t end = newline - data, length = end - pos;
        if (blank(data + pos, length)) {
            pos = end + 1;
            continue;
        }
        if (length >= limit) {
            stuck = end;
            break;
        }
        PyObject *doc = decode_json_with(flags, skip, previous, mode, data + pos, length);
        if (doc == NULL || is_declined(doc)) {
            PyErr_Clear(); /* the caller decodes the line again and meets it there */
            Py_XDECREF(doc);
            stuck = end;
            break;
        }
        PyObject *event = event_of(doc, event_class, types);
        Py_DECREF(doc);
        if (event == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(events);
                return NULL;
            }
            stuck = end;
            break;
        }
        int failed = PyList_Append(events, event);
        Py_DECREF(event);
        if (failed < 0) {
            Py_DECREF(events);
            return NULL;
        }
        pos = end + 1;
    }
    return Py_BuildValue("(Nnn)", events, pos, stuck);
}

PyObject *
decode_lines(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    const char *usage = "decode_lines(flags, data, pos, skip, previous, mode, limit, "
                        "event_class, types)";
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "%s takes 9 arguments", usage);
        return NULL;
    }
    if (type_key == NULL) { /* the first call: the GIL is held, so once */
        type_key = PyUnicode_InternFromString("type");
        object_key = PyUnicode_InternFromString("object");
        if (type_key == NULL || object_key == NULL) {
            Py_CLEAR(type_key);
            Py_CLEAR(object_key);
            return NULL;
        }
    }
    long flags = PyLong_AsLong(args[0]);
    Py_ssize_t pos = PyLong_AsSsize_t(args[2]);
    long mode = PyLong_AsLong(args[5]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[6]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *skip = args[3], *previous = args[4], *event_class = args[7], *types = args[8];
    if (check_skip_and_previous(usage, skip, previous) < 0) {
        return NULL;
    }
    if (mode != LOOK_UP_EVENTS && mode != LOOK_UP_ADDED) {
        PyErr_Format(PyExc_ValueError, "%s: mode is LOOK_UP_EVENTS or LOOK_UP_ADDED",
                     usage);
        return NULL;
    }
    if (!PyCallable_Check(event_class) || !PyDict_CheckExact(types)) {
        PyErr_Format(PyExc_TypeError, "%s: event_class is a callable, types a dict",
                     usage);
        return NULL;
    }
    if (PyUnicode_Check(args[1]) || !PyObject_CheckBuffer(args[1])) {
        PyErr_Format(PyExc_TypeError, "%s: data is bytes-like", usage);
        return NULL;
    }
    Py_buffer view; /* held to the end: a bytearray cannot be resized meanwhile */
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (pos < 0 || pos > view.len) {
        PyErr_Format(PyExc_ValueError, "%s: pos %zd is outside data", usage, pos);
    }
    else {
        result = events_of(view.buf, view.len, pos, (int)flags,
                           skip == Py_None ? NULL : skip,
                           previous == Py_None ? NULL : previous, (int)mode, limit,
                           event_class, types);
    }
    PyBuffer_Release(&view);
    return result;
}
