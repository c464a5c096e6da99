/* client_cache.codec._codec.decode: JSON to Python objects with the walk done while parsing.
 *
 * decode(flags, data) gives what walk(flags, json.loads(data)) gives (the flags of
 * strtable.h; client_cache.codec._sharing says what each does), in one pass: a string that is
 * already in the table is never made a second time, a dict whose keys have a shape is
 * made straight from its prototype instead of being built and then copied, and a
 * container is taken out of the collector's sight as soon as it is whole.
 *
 * It decodes the JSON objects Kubernetes sends and declines anything else: it returns
 * DECLINED (the module's constant) for malformed JSON, a number it would have to round
 * (an integer of more than 18 digits, a float whose text is long or whose value is not
 * finite), a \u escape that is half of a surrogate pair, invalid UTF-8, a repeated key,
 * nesting deeper than MAX_DEPTH, and anything but bytes-like data. The caller then uses
 * its JSON decoder and the walk, which give the result or the error. So what this file
 * accepts it must decode exactly as RFC 8259 says; what it is unsure of it declines.
 *
 * decode(flags, data, skip) also leaves paths out (client_cache.codec.skip_paths): skip is a
 * tree of dicts, a key's value None where the member is left out, a dict where the tree
 * goes on into the member's value; an array's items are read with the array's own node.
 * A member left out is passed over, never built, its JSON checked as it goes
 * (json_pass_over, jsonscan.c): what would be declined built is declined passed over,
 * so the caller's decoder raises on a document malformed there.
 * Everything runs with the GIL held. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "decode.h"
#include "jsonparser.h"
#include "previous.h"
#include "shapes.h"
#include "strtable.h"
#include "walk.h"

#define KEY_BITS 10
#define KEYS (1 << KEY_BITS)
#define MAX_KEY_LENGTH 64

/* Dict keys seen, by their bytes (one entry per bucket): the same str for the same key,
 * its hash computed once. */
static PyObject *keys[KEYS];
static PyObject *declined; /* the DECLINED sentinel */

static PyObject *value(Parser *ps, int depth);

static int
push(Parser *ps, PyObject *obj)
{
    return ref_push(&ps->parts, obj);
}

/* Drop the stack's entries from base on. */
static void
unwind(Parser *ps, Py_ssize_t base)
{
    ref_unwind(&ps->parts, base);
}

/* A string at ps->p (its opening quote): the hint when equal to it; else a key is
 * looked up among the keys seen, a value shared when the flags say so. */
static PyObject *
string(Parser *ps, int is_key, PyObject *hint)
{
    const char *start = ++ps->p;
    int escaped = 0, ascii = 1;
    const char *p = string_close(start, ps->end, &escaped, &ascii);
    if (p == NULL) {
        return decline(ps);
    }
    ps->p = p + 1;
    Py_ssize_t length = p - start;
    if (!escaped && ascii) {
        if (hint != NULL && same_ascii(hint, start, length)) {
            return Py_NewRef(hint);
        }
        if (is_key && length <= MAX_KEY_LENGTH) {
            size_t slot = quick_hash((const unsigned char *)start, (size_t)length) & (KEYS - 1);
            PyObject *held = keys[slot];
            if (held != NULL && PyUnicode_GET_LENGTH(held) == length
                && same_bytes(PyUnicode_DATA(held), start, (size_t)length)) {
                return Py_NewRef(held);
            }
            PyObject *key = PyUnicode_New(length, 127);
            if (key == NULL) {
                return NULL;
            }
            memcpy(PyUnicode_DATA(key), start, (size_t)length);
            if (PyObject_Hash(key) == -1) { /* computed once, kept in the str */
                Py_DECREF(key);
                return NULL;
            }
            Py_XSETREF(keys[slot], Py_NewRef(key));
            return key;
        }
        if (!is_key && (ps->flags & SHARE)) {
            return shared_ascii(start, length);
        }
        return PyUnicode_FromStringAndSize(start, length);
    }
    PyObject *s = json_string_text(ps, start, p, escaped);
    if (hint != NULL) {
        s = reused_scalar(s, hint);
    }
    if (s != NULL && s != hint && !is_key && (ps->flags & SHARE)) {
        Py_SETREF(s, shared_str(s));
    }
    return s;
}

/* After a container's member: 1 when a comma follows (another member), 0 when close
 * does (the container ends), -1 otherwise (declined); what was found is consumed. */
static int
after_member(Parser *ps, char close)
{
    skip_space(ps);
    if (ps->p < ps->end && (*ps->p == ',' || *ps->p == close)) {
        return *ps->p++ == ',';
    }
    ps->declined = 1;
    return -1;
}

/* The value at ps->p pushed on the stack, then what follows it (after_member); -1 on
 * error or when declined. */
static int
member(Parser *ps, int depth, char close)
{
    PyObject *item = value(ps, depth + 1);
    if (item == NULL || push(ps, item) < 0) {
        return -1;
    }
    return after_member(ps, close);
}

/* Whether the container just opened at ps->p is empty (its close consumed). */
static int
empty(Parser *ps, char close)
{
    ps->p++;
    return take(ps, close);
}

/* A key and its colon at ps->p, the key pushed on the stack (expected itself when
 * equal to it); -1 on error or when declined. */
static int
key(Parser *ps, PyObject *expected)
{
    skip_space(ps);
    if (ps->p >= ps->end || *ps->p != '"') {
        ps->declined = 1;
        return -1;
    }
    PyObject *name = string(ps, 1, expected);
    if (name == NULL || push(ps, name) < 0) {
        return -1;
    }
    if (!take(ps, ':')) {
        ps->declined = 1;
        return -1;
    }
    return 0;
}

/* The skip tree's verdict on the member whose key was just pushed, in an object read
 * with node: 1 when it is left out (its key popped), 0 when it is read (ps->skip set
 * to the node its value is read with), -1 on error. */
static int
skipped(Parser *ps, PyObject *node)
{
    PyObject *name = ps->parts.items[ps->parts.top - 1];
    PyObject *below = PyDict_GetItemWithError(node, name);
    if (below == Py_None) {
        unwind(ps, ps->parts.top - 1);
        return 1;
    }
    if (below == NULL && PyErr_Occurred()) {
        return -1;
    }
    ps->skip = below != NULL && PyDict_CheckExact(below) ? below : NULL;
    return 0;
}

/* Whether the event whose members so far are on the stack (from its bottom: the
 * document's top) is of a type whose object is new to the cache: ADDED (unless asked
 * for, as in a watch-list's relist) or BOOKMARK. Not looked up, so an initial sync does
 * not pay. */
static int
new_object(Parser *ps)
{
    for (Py_ssize_t i = 0; i + 1 < ps->parts.top; i += 2) {
        PyObject *name = ps->parts.items[i], *type = ps->parts.items[i + 1];
        if (PyUnicode_CompareWithASCIIString(name, "type") == 0) {
            return PyUnicode_Check(type)
                && ((!ps->added && PyUnicode_CompareWithASCIIString(type, "ADDED") == 0)
                    || PyUnicode_CompareWithASCIIString(type, "BOOKMARK") == 0);
        }
    }
    return 0;
}

/* The previous object's part where the member whose key was just pushed sits, in an
 * object whose own part is hint: a new reference, NULL when there is none (or with the
 * error set). At an event's top, the member "object" has the object the lookup finds
 * (none for new_object's events). */
static PyObject *
member_part(Parser *ps, int depth, PyObject *hint)
{
    PyObject *name = ps->parts.items[ps->parts.top - 1];
    if (depth == 0 && ps->previous != NULL
        && PyUnicode_CompareWithASCIIString(name, "object") == 0) {
        return new_object(ps) ? NULL : previous_of(ps, ps->previous);
    }
    return Py_XNewRef(member_hint(hint, name));
}

/* The members of the container just opened at ps->p, up to its close, pushed on the
 * stack (each value after its key when keyed); -1 on error or when declined, with the
 * stack as it was. The members of an object read with a skip node are read with the
 * nodes below it, or left out; an array's with its own. Each is read with the part of
 * hint (the previous object's container here) in its place. */
static int
members(Parser *ps, int depth, char close, int keyed, PyObject *hint, int *same)
{
    Py_ssize_t base = ps->parts.top, index = 0, pos = 0;
    PyObject *node = keyed ? ps->skip : NULL;
    /* an object's members are read beside hint's entries in order (pos: PyDict_Next's),
     * an array's beside its items; *same stays set while each member was hint's next
     * entry or item, with that one's own value */
    PyObject *entries = keyed && hint != NULL && PyDict_CheckExact(hint) ? hint : NULL;
    *same = entries != NULL || (!keyed && hint != NULL && PyList_CheckExact(hint));
    if (*same) {
        prefetch_parts(hint);
    }
    int more = !empty(ps, close);
    while (more > 0) {
        PyObject *expected = NULL, *value = NULL;
        Py_ssize_t next = pos;
        if (entries != NULL && !PyDict_Next(entries, &next, &expected, &value)) {
            expected = NULL;
        }
        if (keyed && key(ps, expected) < 0) {
            more = -1;
            break;
        }
        int out = node != NULL ? skipped(ps, node) : 0;
        if (out < 0) {
            more = -1;
            break;
        }
        if (out) {
            more = json_pass_over(ps, depth + 1) < 0 ? -1 : after_member(ps, close);
        }
        else {
            /* the part in the previous object (none read without one: no call) */
            PyObject *part = NULL;
            if (expected != NULL && ps->parts.items[ps->parts.top - 1] == expected) {
                part = Py_NewRef(value);
                pos = next;
            }
            else if (keyed) {
                *same = 0;
                if (hint != NULL || (depth == 0 && ps->previous != NULL)) {
                    part = member_part(ps, depth, hint);
                }
            }
            else {
                part = Py_XNewRef(item_hint(hint, index));
                *same = *same && part != NULL;
            }
            index++;
            if (part == NULL && PyErr_Occurred()) {
                more = -1;
                break;
            }
            ps->hint = part; /* value() takes it */
            more = member(ps, depth, close);
            if (more >= 0 && ps->parts.items[ps->parts.top - 1] != part) {
                *same = 0;
            }
            Py_XDECREF(part);
        }
        if (node != NULL) {
            ps->skip = node;
        }
    }
    if (more < 0) {
        unwind(ps, base);
    }
    return more;
}

/* An array, or hint itself when it is a list of the same items (members' same). */
static PyObject *
array(Parser *ps, int depth, PyObject *hint)
{
    Py_ssize_t base = ps->parts.top;
    int same;
    if (members(ps, depth, ']', 0, hint, &same) < 0) {
        return NULL;
    }
    Py_ssize_t count = ps->parts.top - base;
    if (same && PyList_GET_SIZE(hint) == count) { /* each of its items, in order */
        unwind(ps, base);
        return Py_NewRef(hint);
    }
    PyObject *list = PyList_New(count);
    if (list == NULL) {
        unwind(ps, base);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) { /* the list takes the stack's references */
        PyList_SET_ITEM(list, i, ps->parts.items[base + i]);
    }
    ps->parts.top = base;
    if ((ps->flags & UNTRACK) && !keeps_tracked(((PyListObject *)list)->ob_item, count)) {
        PyObject_GC_UnTrack(list);
    }
    return list;
}

/* An object as a dict, or hint itself when it is a dict of the same members. */
static PyObject *
object(Parser *ps, int depth, PyObject *hint)
{
    Py_ssize_t base = ps->parts.top;
    int same;
    if (members(ps, depth, '}', 1, hint, &same) < 0) {
        return NULL;
    }
    Py_ssize_t count = (ps->parts.top - base) / 2;
    PyObject *const *pairs = ps->parts.items + base;
    if (same && PyDict_GET_SIZE(hint) == count) { /* each of its entries, in order */
        unwind(ps, base);
        return Py_NewRef(hint);
    }
    PyObject *dict = (ps->flags & COMPACT) ? shaped_from_pairs(pairs, count)
        : dict_of_pairs(pairs, count);
    if (dict != NULL && PyDict_GET_SIZE(dict) != count) {
        Py_CLEAR(dict); /* a key repeats: the JSON decoder says what that gives */
        ps->declined = 1;
    }
    if (dict != NULL && (ps->flags & UNTRACK) && PyObject_GC_IsTracked(dict)) {
        int keep = 0;
        for (Py_ssize_t i = 0; i < count && !keep; i++) {
            keep = keeps_tracked(&pairs[2 * i + 1], 1);
        }
        if (!keep) {
            PyObject_GC_UnTrack(dict);
        }
    }
    unwind(ps, base);
    return dict;
}

static int
literal(Parser *ps, const char *word, Py_ssize_t length)
{
    const char *after = literal_end(ps->p, ps->end, word, length);
    if (after == NULL) {
        return 0;
    }
    ps->p = after;
    return 1;
}

/* The value at ps->p, read with the previous object's part in its place (ps->hint,
 * taken and cleared). */
static PyObject *
value(Parser *ps, int depth)
{
    PyObject *hint = ps->hint;
    ps->hint = NULL;
    if (depth > MAX_DEPTH) {
        return decline(ps); /* the walk leaves what is deeper as it is */
    }
    skip_space(ps);
    if (ps->p >= ps->end) {
        return decline(ps);
    }
    switch (*ps->p) {
    case '{':
        return object(ps, depth, hint);
    case '[':
        return array(ps, depth, hint);
    case '"':
        return string(ps, 0, hint);
    case 't':
        return literal(ps, "true", 4) ? Py_NewRef(Py_True) : decline(ps);
    case 'f':
        return literal(ps, "false", 5) ? Py_NewRef(Py_False) : decline(ps);
    case 'n':
        return literal(ps, "null", 4) ? Py_NewRef(Py_None) : decline(ps);
    default:
        return hint != NULL ? reused_scalar(json_number(ps), hint) : json_number(ps);
    }
}

PyObject *
decode_json_with(int flags, PyObject *skip, PyObject *previous, int mode,
                 const char *data, Py_ssize_t length)
{
    Parser ps = {.p = data, .end = data + length, .flags = flags, .skip = skip,
                 .previous = previous, .added = mode == LOOK_UP_ADDED};
    PyObject *top = NULL; /* LOOK_UP_WHOLE: the object the document replaces */
    if (mode == LOOK_UP_WHOLE && previous != NULL) {
        ps.previous = NULL; /* no member of the document is an event's object */
        skip_space(&ps);
        if (ps.p < ps.end && *ps.p == '{') {
            top = previous_of(&ps, previous);
            if (top == NULL && PyErr_Occurred()) {
                return NULL;
            }
        }
    }
    ps.hint = top;
    PyObject *result = value(&ps, 0);
    Py_XDECREF(top);
    if (result != NULL) {
        skip_space(&ps);
        if (ps.p != ps.end) { /* something after the document */
            Py_CLEAR(result);
            ps.declined = 1;
        }
    }
    unwind(&ps, 0);
    PyMem_Free(ps.parts.items);
    PyMem_Free(ps.text);
    if (result == NULL && ps.declined && !PyErr_Occurred()) {
        return Py_NewRef(declined);
    }
    return result;
}

PyObject *
decode_json(int flags, const char *data, Py_ssize_t length)
{
    return decode_json_with(flags, NULL, NULL, LOOK_UP_EVENTS, data, length);
}

int
is_declined(PyObject *obj)
{
    return obj == declined;
}

int
check_skip_and_previous(const char *usage, PyObject *skip, PyObject *previous)
{
    if (skip != Py_None && !PyDict_CheckExact(skip)) {
        PyErr_Format(PyExc_TypeError, "%s: skip is a dict or None", usage);
        return -1;
    }
    if (previous != Py_None && !PyCallable_Check(previous)) {
        PyErr_Format(PyExc_TypeError, "%s: previous is a callable or None", usage);
        return -1;
    }
    return 0;
}

PyObject *
decode_entry(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    int flags;
    const char *usage = "decode(flags, data[, skip[, previous[, mode]]])";
    PyObject *skip = nargs >= 3 ? args[2] : Py_None;
    PyObject *previous = nargs >= 4 ? args[3] : Py_None;
    if (nargs > 5) {
        PyErr_Format(PyExc_TypeError, "%s: at most 5 arguments", usage);
        return NULL;
    }
    long mode = nargs == 5 ? PyLong_AsLong(args[4]) : LOOK_UP_EVENTS;
    if (mode == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (mode != LOOK_UP_EVENTS && mode != LOOK_UP_WHOLE && mode != LOOK_UP_ADDED) {
        PyErr_Format(PyExc_ValueError, "%s: mode is LOOK_UP_EVENTS, LOOK_UP_WHOLE or "
                     "LOOK_UP_ADDED", usage);
        return NULL;
    }
    if (check_skip_and_previous(usage, skip, previous) < 0) {
        return NULL;
    }
    if (walk_arguments(usage, args, nargs >= 3 ? 2 : nargs, &flags) < 0) {
        return NULL;
    }
    if (!PyObject_CheckBuffer(args[1])) {
        return Py_NewRef(declined);
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *result = decode_json_with(flags, skip == Py_None ? NULL : skip,
                                        previous == Py_None ? NULL : previous, (int)mode,
                                        view.buf, view.len);
    PyBuffer_Release(&view);
    return result;
}

void
decode_clear(void)
{
    for (Py_ssize_t i = 0; i < KEYS; i++) {
        Py_CLEAR(keys[i]);
    }
}

int
decode_init(PyObject *module)
{
    declined = PyObject_CallObject((PyObject *)&PyBaseObject_Type, NULL);
    if (declined == NULL) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "DECLINED", declined) < 0
        || PyModule_AddIntConstant(module, "LOOK_UP_EVENTS", LOOK_UP_EVENTS) < 0
        || PyModule_AddIntConstant(module, "LOOK_UP_WHOLE", LOOK_UP_WHOLE) < 0
        || PyModule_AddIntConstant(module, "LOOK_UP_ADDED", LOOK_UP_ADDED) < 0 ? -1 : 0;
}
