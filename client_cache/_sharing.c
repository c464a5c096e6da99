/* client_cache._sharing: the C part of client_cache.sharing (read that module first).
 *
 * walk(flags, obj) goes through a freshly decoded object in place (dicts, lists, tuples
 * and msgspec structs, to a depth of MAX_DEPTH). With SHARE it replaces every str value
 * of at most MAX_LENGTH code points with an equal str already seen, held in a fixed table
 * of SLOTS entries: two entries per hash bucket, the most recently seen first. A miss
 * puts the new string first and moves the other one second, dropping what was second,
 * so the table never grows and a string that keeps coming back stays. Dict keys are left
 * alone (the JSON decoders share those already). With UNTRACK it takes each container
 * that holds nothing the cyclic collector tracks out of the collector's sight, innermost
 * first. With COMPACT it puts in place of each dict an equal one sharing its key table
 * with the dicts of the same keys (_shapes.c). With SHARE it also puts in place of each
 * frozen msgspec struct and tuple below the top that holds only immutable values the
 * equal one seen before (_values.c). A walk returns what takes its argument's place.
 * Everything runs with the GIL held and, but for making a new shape's class (once per
 * sequence of keys) and reading a struct class's configuration (once per class), calls
 * no Python code: equal strings are compared by kind, length and bytes (after the
 * table's own hash of them, kept beside each entry).
 * decode(flags, data) (_decode.c) parses JSON doing the same walk as it goes, with this
 * file's string table. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "_decode.h"
#include "_lines.h"
#include "_pbstruct.h"
#include "_protobuf.h"
#include "_listscan.h"
#include "_shapes.h"
#include "_sharing.h"
#include "_values.h"

#define SLOT_BITS 15
#define SLOTS (1 << SLOT_BITS)
#define MAX_LENGTH SHARED_LENGTH

static Held slots[SLOTS] HELD_ALIGNED;
static Py_ssize_t hits, misses;

/* The bucket where a string of this hash is held. */
static Held *
bucket_of(size_t hash)
{
    return &slots[(hash & (SLOTS - 1)) & ~(size_t)1];
}

/* The string held in the bucket whose hash, kind, length and bytes are these (borrowed;
 * moved first in its bucket), or NULL. The hashes are compared before the strings are
 * read: a string seen once costs no look at the strings held. On a miss, the entry a
 * hold would drop is fetched into the cache while the caller makes the new string. */
static PyObject *
held_equal(Held *bucket, size_t hash, const void *data, Py_ssize_t length, int kind)
{
    for (int i = 0; i < 2; i++) {
        PyObject *held = bucket[i].obj;
        if (bucket[i].hash == hash && held != NULL && PyUnicode_GET_LENGTH(held) == length
            && PyUnicode_KIND(held) == kind
            && same_bytes(PyUnicode_DATA(held), data, (size_t)length * (size_t)kind)) {
            hits++;
            bucket_promote(bucket, i);
            return held;
        }
    }
    PREFETCH(bucket[1].obj);
    return NULL;
}

/* The last DROPS strings dropped from the table, released DROPS drops later: the entry
 * a miss drops is rarely in the cache, and by then its prefetch (held_equal) has
 * brought it in, so the release does not wait for memory. */
#define DROPS 16
static PyObject *drops[DROPS];
static unsigned next_drop;

/* Hold s first in its bucket, moving the first entry second and dropping the second. */
static void
hold(Held *bucket, size_t hash, PyObject *s)
{
    misses++;
    PyObject *dropped = bucket_hold(bucket, hash, s);
    if (dropped != NULL) {
        PyObject *released = drops[next_drop];
        drops[next_drop] = dropped;
        next_drop = (next_drop + 1) % DROPS;
        Py_XDECREF(released); /* freeing a str runs no Python code */
    }
}

/* The shared string equal to s (borrowed in, borrowed out): s itself when it is new
 * (then *fresh is set) or its length is outside 2..MAX_LENGTH. */
static PyObject *
canonical_of(PyObject *s, int *fresh)
{
    Py_ssize_t length = PyUnicode_GET_LENGTH(s);
    if (length < 2 || length > MAX_LENGTH) {
        return s; /* "" and one-character Latin-1 strings are singletons already */
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(s) < 0) { /* decoders make ready strings; this is for others */
        PyErr_Clear();
        return s;
    }
#endif
    int kind = PyUnicode_KIND(s);
    size_t hash = quick_hash(PyUnicode_DATA(s), (size_t)length * (size_t)kind);
    Held *bucket = bucket_of(hash);
    if (bucket[0].obj == s || bucket[1].obj == s) {
        return s;
    }
    PyObject *held = held_equal(bucket, hash, PyUnicode_DATA(s), length, kind);
    if (held != NULL) {
        return held;
    }
    hold(bucket, hash, s);
    *fresh = 1;
    return s;
}

static PyObject *
canonical(PyObject *s)
{
    int fresh = 0;
    return canonical_of(s, &fresh);
}

PyObject *
shared_str(PyObject *s)
{
    return Py_NewRef(canonical(s));
}

PyObject *
shared_ascii(const char *data, Py_ssize_t length)
{
    int fresh = 0;
    return shared_ascii_of(data, length, &fresh);
}

PyObject *
shared_ascii_of(const char *data, Py_ssize_t length, int *fresh)
{
    if (length < 2 || length > MAX_LENGTH) {
        if (length < 2) { /* the interpreter's own "" and one-character strings */
            return PyUnicode_FromStringAndSize(data, length);
        }
        PyObject *s = PyUnicode_New(length, 127);
        if (s != NULL) {
            memcpy(PyUnicode_DATA(s), data, (size_t)length);
        }
        return s;
    }
    size_t hash = quick_hash((const unsigned char *)data, (size_t)length);
    Held *bucket = bucket_of(hash);
    PyObject *held = held_equal(bucket, hash, data, length, PyUnicode_1BYTE_KIND);
    if (held != NULL) {
        return Py_NewRef(held);
    }
    PyObject *s = PyUnicode_New(length, 127);
    if (s == NULL) {
        return NULL;
    }
    memcpy(PyUnicode_DATA(s), data, (size_t)length);
    hold(bucket, hash, s);
    *fresh = 1;
    return s;
}

/* IMMUTABLE and FRESH (what a walk tells of what it gave): see _sharing.h. */

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
        PyObject *s = (flags & SHARE) ? canonical_of(obj, &fresh) : obj;
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

static PyObject *
walk_entry(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    int flags;
    if (walk_arguments("walk(flags, obj)", args, nargs, &flags) < 0) {
        return NULL;
    }
    int value;
    return walked(args[1], 0, flags, &value);
}

static PyObject *
stats(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    Py_ssize_t held = 0;
    for (size_t i = 0; i < SLOTS; i++) {
        held += slots[i].obj != NULL;
    }
    Py_ssize_t made, shapes, shape_slots, interned, budget;
    shapes_stats(&made, &shapes, &shape_slots, &interned, &budget);
    Py_ssize_t values, value_slots, value_hits, value_misses;
    values_stats(&values, &value_slots, &value_hits, &value_misses);
    return Py_BuildValue("{s:n,s:n,s:n,s:i,s:i,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}",
                         "hits", hits, "misses", misses, "held", held, "slots", SLOTS,
                         "max_length", MAX_LENGTH, "compacted", made, "shapes", shapes,
                         "shape_slots", shape_slots, "interned_keys", interned,
                         "intern_budget", budget, "values", values,
                         "value_slots", value_slots, "value_hits", value_hits,
                         "value_misses", value_misses);
}

static PyObject *
clear(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    for (size_t i = 0; i < SLOTS; i++) {
        Py_CLEAR(slots[i].obj);
    }
    for (size_t i = 0; i < DROPS; i++) {
        Py_CLEAR(drops[i]);
    }
    layouts_clear();
    values_clear();
    shapes_clear();
    decode_clear();
    hits = misses = 0;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk_entry, METH_FASTCALL,
     "walk(flags, obj) -> obj: in place, replace short str values inside obj with equal "
     "ones seen before (flags & SHARE), take its containers out of the cyclic "
     "collector's sight (flags & UNTRACK) and its dicts by equal ones sharing key tables "
     "(flags & COMPACT); returns what takes obj's place; see client_cache.sharing."},
    {"decode", (PyCFunction)(void (*)(void))decode_entry, METH_FASTCALL,
     "decode(flags, data[, skip[, previous]]) -> obj: the JSON document in data "
     "(bytes-like) decoded, with what walk(flags, ...) does done while decoding; DECLINED "
     "when data is not one this decoder takes (malformed, numbers it would round, "
     "repeated keys...): decode it with a JSON decoder and walk it instead. skip: a skip "
     "tree's node; previous: a callable giving, for an event's object's cache key, the "
     "object whose equal parts the event's takes as they are (or None)."},
    {"decode_lines", (PyCFunction)(void (*)(void))decode_lines, METH_FASTCALL,
     "decode_lines(flags, data, pos, skip, previous, mode, limit, event_class, types) "
     "-> (events, pos, stuck): the watch events of the whole JSON lines of data "
     "(bytes-like) "
     "from pos, each decoded as decode(flags, line, skip, previous, mode) and made "
     "event_class(types[type], object); stops at a line it leaves to the caller (stuck: "
     "the offset of its newline; -1 when none), pos where it stopped."},
    {"list_items", list_items, METH_O,
     "list_items(body) -> (start, end, spans) | None: where a LIST body's items array "
     "is (body[start:end]) and each item in it (spans: start, end, start, end...); None "
     "when the body is not an object with one items array."},
    {"list_head", list_head, METH_O,
     "list_head(data) -> int: in the first bytes of a LIST body, the offset just after "
     "the '[' that opens its items array; MORE when more bytes are needed to tell, "
     "NOT_LIST when the body is not an object with an items array."},
    {"list_scan", (PyCFunction)(void (*)(void))list_scan, METH_FASTCALL,
     "list_scan(data, pos, state) -> (pos, state, items): the items array's elements "
     "that are whole in data from pos, each as bytes; scanning resumes at the returned "
     "pos and state (AFTER_OPEN, AFTER_COMMA, AFTER_ITEM, CLOSED). ValueError when the "
     "array is not well formed."},
    {"protobuf_struct_plans", (PyCFunction)(void (*)(void))protobuf_struct_plans,
     METH_FASTCALL,
     "protobuf_struct_plans(schema, plans) -> capsule: how the protobuf entries build "
     "structs; see client_cache.protobuf_structs."},
    {"protobuf_schema", (PyCFunction)(void (*)(void))protobuf_schema, METH_FASTCALL,
     "protobuf_schema(types, messages, duration, loads) -> capsule: the protobuf schema "
     "compiled for protobuf_decode; see client_cache.protobuf."},
    {"protobuf_decode", (PyCFunction)(void (*)(void))protobuf_decode, METH_FASTCALL,
     "protobuf_decode(schema, flags, message, data, start, end) -> dict: the message "
     "data[start:end] as its JSON's dict, with what walk(flags, ...) does done while "
     "decoding; ValueError when it is not well formed."},
    {"protobuf_object", (PyCFunction)(void (*)(void))protobuf_object, METH_FASTCALL,
     "protobuf_object(schema, flags, kinds, data) -> dict: a protobuf body (magic and "
     "envelope) decoded, its message found in kinds by (apiVersion, kind)."},
    {"protobuf_event", (PyCFunction)(void (*)(void))protobuf_event, METH_FASTCALL,
     "protobuf_event(schema, flags, kinds, frame) -> (type, object): one frame of a "
     "protobuf watch stream decoded."},
    {"protobuf_list_scan", (PyCFunction)(void (*)(void))protobuf_list_scan, METH_FASTCALL,
     "protobuf_list_scan(schema, flags, item, items_number, data, pos, end) -> (pos, "
     "items, head): the whole fields of a list message in data[pos:end]: its items "
     "decoded as message item, the other fields' bytes in head; pos is where a field not "
     "yet whole begins."},
    {"stats", stats, METH_NOARGS, "stats() -> dict: the table's counters and size."},
    {"clear", clear, METH_NOARGS, "clear() -> None: empty the table and the counters."},
    {NULL, NULL, 0, NULL},
};

#ifndef CLIENT_CACHE_SOURCE_HASH  /* setup.py defines it: the hash of the sources */
#define CLIENT_CACHE_SOURCE_HASH ""
#endif

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "client_cache._sharing",
    "The C part of client_cache.sharing.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__sharing(void)
{
    if (layouts_init() < 0 || shapes_init() < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL || PyModule_AddIntConstant(module, "SHARE", SHARE) < 0
        || PyModule_AddIntConstant(module, "UNTRACK", UNTRACK) < 0
        || PyModule_AddIntConstant(module, "COMPACT", COMPACT) < 0
        || PyModule_AddStringConstant(module, "SOURCE_HASH", CLIENT_CACHE_SOURCE_HASH) < 0
        || list_scan_constants(module) < 0 || decode_init(module) < 0
        || protobuf_init(module) < 0) {
        Py_XDECREF(module);
        return NULL;
    }
    return module;
}
