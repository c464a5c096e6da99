/* The string table of client_cache._sharing (_sharing.c), for its decoder (_decode.c). */
#ifndef CLIENT_CACHE_SHARING_H
#define CLIENT_CACHE_SHARING_H

#include <Python.h>

/* The walk's flags: share strings, take containers out of the collector's sight, give
 * dicts of the same keys one key table. */
#define SHARE 1
#define UNTRACK 2
#define COMPACT 4

/* The walk's depth limit: what is nested deeper is left as it is. */
#define MAX_DEPTH 200

/* The longest str the string table holds. */
#define SHARED_LENGTH 64

/* The table's hash of a string's bytes. */
size_t quick_hash(const unsigned char *data, size_t size);

/* The held string equal to s, or s itself, held from now on when its length is in
 * 2..MAX_LENGTH (new reference). */
PyObject *shared_str(PyObject *s);

/* A str of these ASCII bytes: the held one when there is one, else a new one, held
 * from now on when its length is in 2..MAX_LENGTH (new reference); NULL on error. */
PyObject *shared_ascii(const char *data, Py_ssize_t length);

/* shared_ascii, with *fresh set when the string was new to the table. */
PyObject *shared_ascii_of(const char *data, Py_ssize_t length, int *fresh);

/* What a walk tells of a value it gave: IMMUTABLE for None, an exact bool, int, float
 * or str, a frozen struct or a tuple holding only such; FRESH when that holds a string
 * the table saw for the first time, so that no value held can equal it (it is not
 * looked up, which keeps what is unique to one object out of the value table). */
#define IMMUTABLE 1
#define FRESH 2

/* The layout of a msgspec struct class (borrowed bytes, held until the tables are
 * cleared: a Py_ssize_t that is 1 for a frozen class, then one slot offset per field),
 * NULL for any other type (also on error: check PyErr_Occurred). */
PyObject *struct_layout(PyObject *type);

/* The two-entry buckets of the string and value tables: objects[first] and
 * objects[first + 1], each with its hash beside it, the most recently seen first. */

/* Entry i of the bucket at first was seen again: move it first. */
static inline void
bucket_promote(PyObject **objects, size_t *hashes, size_t first, size_t i)
{
    if (i != first) {
        PyObject *seen = objects[i];
        size_t hash = hashes[i];
        objects[i] = objects[first];
        hashes[i] = hashes[first];
        objects[first] = seen;
        hashes[first] = hash;
    }
}

/* Hold obj first in the bucket at first (a new reference), moving the first entry
 * second; returns the dropped second entry (a reference to release, or NULL) for the
 * caller to release once it is done with the table. */
static inline PyObject *
bucket_hold(PyObject **objects, size_t *hashes, size_t first, size_t hash, PyObject *obj)
{
    PyObject *dropped = objects[first + 1];
    objects[first + 1] = objects[first];
    hashes[first + 1] = hashes[first];
    objects[first] = Py_NewRef(obj);
    hashes[first] = hash;
    return dropped;
}

/* A stack of owned references (the decoders' parts of the containers being built). */
typedef struct {
    PyObject **items;
    Py_ssize_t top, size;
} RefStack;

/* Push obj (a reference, taken; released on failure); -1 with MemoryError set. */
static inline int
ref_push(RefStack *stack, PyObject *obj)
{
    if (stack->top == stack->size) {
        Py_ssize_t size = stack->size ? stack->size * 2 : 256;
        PyObject **items = PyMem_Realloc(stack->items, (size_t)size * sizeof(PyObject *));
        if (items == NULL) {
            Py_DECREF(obj);
            PyErr_NoMemory();
            return -1;
        }
        stack->items = items;
        stack->size = size;
    }
    stack->items[stack->top++] = obj;
    return 0;
}

/* Release the stack's entries from base on. */
static inline void
ref_unwind(RefStack *stack, Py_ssize_t base)
{
    while (stack->top > base) {
        Py_DECREF(stack->items[--stack->top]);
    }
}

/* Whether a container made of these parts stays in the collector's sight. */
static inline int
keeps_tracked(PyObject *const *parts, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        if (PyObject_IS_GC(parts[i]) && PyObject_GC_IsTracked(parts[i])) {
            return 1;
        }
    }
    return 0;
}

/* The flags of a call usage(flags, obj) in *flags (only SHARE, UNTRACK and COMPACT
 * kept); -1 with TypeError or OverflowError set when the arguments are not that. */
int walk_arguments(const char *usage, PyObject *const *args, Py_ssize_t nargs, int *flags);

#endif
