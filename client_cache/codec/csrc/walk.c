/* The walk of client_cache.codec._codec (walk.h; client_cache.codec._sharing says what it is
 * for): walk(flags, obj) goes through a freshly decoded object in place (dicts, lists,
 * tuples and msgspec structs, to a depth of MAX_DEPTH). With SHARE it replaces every str
 * value of at most SHARED_LENGTH code points with the equal one of the string table
 * (strtable.c); dict keys are left alone (the JSON decoders share those already). With
 * UNTRACK it takes each container that holds nothing the cyclic collector tracks out of
 * the collector's sight, innermost first. With COMPACT it puts in place of each dict an
 * equal one sharing its key table with the dicts of the same keys (shapes.c). With SHARE
 * it also puts in place of each frozen msgspec struct and tuple below the top that holds
 * only immutable values the equal one seen before (values.c). A walk returns what takes
 * its argument's place. Everything runs with the GIL held and, but for making a new
 * shape's class (once per sequence of keys) and reading a struct class's configuration
 * (once per class), calls no Python code. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "shapes.h"
#include "strtable.h"
#include "values.h"
#include "walk.h"
/* IMMUTABLE and FRESH (what a walk tells of what it gave): see strtable.h. */

static PyObject *walked(PyObject *obj, int depth, int flags, int *value);
static PyObject *shared_tuple(PyObject *tuple, int depth, int flags, int *value);

/* A walked container leaves the cyclic collector's sight (UNTRACK) only when nothing it
 * holds is in it: the rule CPython applies to dicts and tuples on its own, extended to
 * containers of containers (see client_cache.sharing). */
/* Whether o keeps its container tracked; asked only when untracking. */
#define KEEPS(flags, o) (((flags) & UNTRACK) && PyObject_GC_IsTracked(o))

static void
settle(PyObject *container, int flags, int keep)
{
    if ((flags & UNTRACK) && !keep) {
        PyObject_GC_UnTrack(container);
    }
}

/* Where obj's fields are when it is a msgspec struct: a bytes object holding one
 * Py_ssize_t that is 1 for a frozen class (0 else), then one offset per field (borrowed),
 * else NULL (also on error: check PyErr_Occurred). msgspec keeps a struct's fields in
 * slots, each with a member descriptor on the class; a class whose fields are not all
 * such slots is not walked. */
static PyObject *
layout_of(PyObject *obj)
{
    return struct_layout((PyObject *)Py_TYPE(obj));
}

/* A struct walked: its fields read and replaced in their slots when walking gave another
 * object (a NULL slot is an unset field); then, when SHARE and the struct is frozen and
 * holds only immutable values (*value set), the equal one of the value table in its
 * place, except at the top (new reference). The struct itself is never untracked here:
 * msgspec's gc=False structs are not tracked to begin with. NULL on error. */
static PyObject *
walked_struct(PyObject *obj, PyObject *layout, int depth, int flags, int *value)
{
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(layout);
    Py_ssize_t count = PyBytes_GET_SIZE(layout) / (Py_ssize_t)sizeof(Py_ssize_t) - 1;
    int immutable = (int)*at++, fresh = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject **slot = (PyObject **)((char *)obj + at[i]);
        PyObject *field = *slot;
        if (field == NULL || field == Py_None) {
            continue;
        }
        int field_value = 0;
        PyObject *replacement = walked(field, depth + 1, flags, &field_value);
        if (replacement == NULL) {
            return NULL;
        }
        immutable &= field_value;
        fresh |= field_value;
        *slot = replacement;
        Py_DECREF(field);
    }
    *value = immutable ? (fresh & FRESH) | IMMUTABLE : 0;
    if (*value == IMMUTABLE && (flags & SHARE) && depth > 0) {
        return shared_value(obj, at, count);
    }
    return Py_NewRef(obj);
}

/* A dict walked: its values replaced in place, then (COMPACT) an equal dict sharing its
 * key table (new reference), NULL on error. */
static PyObject *
walked_dict(PyObject *dict, int depth, int flags)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    int keep = 0;
    int ignored;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        PyObject *replacement = walked(value, depth + 1, flags, &ignored);
        if (replacement == NULL) {
            return NULL;
        }
        /* replacing the value of a key being iterated is allowed (the keys stay) */
        int failed = replacement != value && PyDict_SetItem(dict, key, replacement) < 0;
        keep |= KEEPS(flags, replacement) | KEEPS(flags, key);
        Py_DECREF(replacement);
        if (failed) {
            return NULL;
        }
    }
    PyObject *result = (flags & COMPACT) ? shaped_dict(dict) : Py_NewRef(dict);
    if (result != NULL) {
        settle(result, flags, keep);
    }
    return result;
}

static int
walk_list(PyObject *list, int depth, int flags)
{
    int keep = 0, ignored;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        PyObject *replacement = walked(item, depth + 1, flags, &ignored);
        if (replacement == NULL) {
            return -1;
        }
        keep |= KEEPS(flags, replacement);
        if (replacement != item) {
            PyList_SET_ITEM(list, i, replacement);
            Py_DECREF(item);
        }
        else {
            Py_DECREF(replacement);
        }
    }
    settle(list, flags, keep);
    return 0;
}

/* A tuple walked: a new tuple when walking one of its items gave another object, else
 * the same tuple; then, when SHARE and it holds only immutable values (*value set), the
 * equal one of the value table in its place, except at the top (new reference). NULL on
 * error. */
static PyObject *
shared_tuple(PyObject *tuple, int depth, int flags, int *value)
{
    Py_ssize_t size = PyTuple_GET_SIZE(tuple);
    PyObject *out = NULL;
    int keep = 0, immutable = IMMUTABLE, fresh = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        int item_value = 0;
        PyObject *replacement = walked(item, depth + 1, flags, &item_value);
        if (replacement == NULL) {
            Py_XDECREF(out);
            return NULL;
        }
        keep |= KEEPS(flags, replacement);
        immutable &= item_value;
        fresh |= item_value;
        if (replacement != item && out == NULL) {
            out = PyTuple_New(size);
            if (out == NULL) {
                Py_DECREF(replacement);
                return NULL;
            }
            for (Py_ssize_t j = 0; j < size; j++) {
                PyTuple_SET_ITEM(out, j, Py_NewRef(PyTuple_GET_ITEM(tuple, j)));
            }
        }
        if (out != NULL) {
            PyObject *old = PyTuple_GET_ITEM(out, i);
            PyTuple_SET_ITEM(out, i, replacement);
            Py_DECREF(old);
        }
        else {
            Py_DECREF(replacement);
        }
    }
    if (out == NULL) {
        out = Py_NewRef(tuple);
    }
    settle(out, flags, keep);
    *value = immutable ? (fresh & FRESH) | IMMUTABLE : 0;
    if (*value == IMMUTABLE && size > 0 && (flags & SHARE) && depth > 0) {
        Py_SETREF(out, shared_value(out, NULL, size));
    }
    return out;
}

/* obj walked (see the top of this file): what takes its place, which is obj itself
 * unless it is a str shared, a dict compacted, an immutable value shared or a tuple
 * holding one of those (new reference); *value tells whether that is an immutable
 * value (None, an exact bool, int, float or str, a frozen struct or a tuple of such).
 * NULL on error. */
static PyObject *
walked(PyObject *obj, int depth, int flags, int *value)
{
    if (PyUnicode_CheckExact(obj)) {
        int fresh = 0;
        PyObject *s = (flags & SHARE) ? shared_str_of(obj, &fresh) : obj;
        *value = fresh ? IMMUTABLE | FRESH : IMMUTABLE;
        return Py_NewRef(s);
    }
    *value = obj == Py_None || PyLong_CheckExact(obj) || PyBool_Check(obj)
        || PyFloat_CheckExact(obj) ? IMMUTABLE : 0;
    if (*value || depth > MAX_DEPTH || PyUnicode_Check(obj)) {
        return Py_NewRef(obj);
    }
    if (PyDict_CheckExact(obj)) {
        return walked_dict(obj, depth, flags);
    }
    if (PyList_CheckExact(obj)) {
        return walk_list(obj, depth, flags) < 0 ? NULL : Py_NewRef(obj);
    }
    if (PyTuple_CheckExact(obj)) {
        return shared_tuple(obj, depth, flags, value);
    }
    PyObject *layout = layout_of(obj);
    if (layout == NULL) {
        return PyErr_Occurred() ? NULL : Py_NewRef(obj);
    }
    return walked_struct(obj, layout, depth, flags, value);
}

int
walk_arguments(const char *usage, PyObject *const *args, Py_ssize_t nargs, int *flags)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s takes 2 arguments", usage);
        return -1;
    }
    long value = PyLong_AsLong(args[0]);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    *flags = (int)(value & (SHARE | UNTRACK | COMPACT));
    return 0;
}

PyObject *
walk_entry(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    int flags;
    if (walk_arguments("walk(flags, obj)", args, nargs, &flags) < 0) {
        return NULL;
    }
    int value;
    return walked(args[1], 0, flags, &value);
}
