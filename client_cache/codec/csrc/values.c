/* The value table of client_cache.codec._codec: one object for each immutable value seen
 * (see client_cache.codec._sharing). A SHARE walk puts in place of each frozen msgspec struct and
 * each tuple that holds only immutable values (None, exact bools, ints, floats and strs,
 * and such structs and tuples, already shared: the walk goes innermost first) the equal
 * one held here, so a cache of structs keeps one copy of what many objects have alike
 * (tolerations, owner references, ports, security contexts). Values are equal when they
 * have the same type, the same number of fields or items, and each pair is the same
 * object or, for strs, ints and floats of one exact type, the same value (floats compared
 * by their bits: -0.0 is not 0.0; a NaN hashes by identity, so only itself). As the
 * string table does, the table is fixed in size, two entries per hash bucket, the most
 * recently seen first, and a miss drops the second entry, so it never grows; dropping an
 * entry only ends future sharing of that value. Nothing here calls Python code: the
 * hashes are those of str, int and float (computed in C) and the objects' addresses. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "strtable.h"
#include "values.h"

#define VALUE_BITS 13
#define VALUE_SLOTS (1 << VALUE_BITS)

static Held values[VALUE_SLOTS] HELD_ALIGNED;
static Py_ssize_t value_hits, value_misses;

/* The i-th field (offsets) or item of obj; NULL for an unset field. */
static PyObject *
part(PyObject *obj, const Py_ssize_t *offsets, Py_ssize_t i)
{
    if (offsets == NULL) {
        return PyTuple_GET_ITEM(obj, i);
    }
    return *(PyObject **)((char *)obj + offsets[i]);
}

/* A part's hash: its value's for ints, floats and strs of a length the string table
 * does not hold (outside 2..SHARED_LENGTH: a decoder may make a new "a" each time), else
 * its address: parts of other kinds are singletons or held here, and a str the string
 * table could hold is its held one (were it not, the value only goes unshared). */
static size_t
part_hash(PyObject *p)
{
    if (p == NULL) {
        return 0x27D4EB2FU;
    }
    if ((PyUnicode_CheckExact(p)
         && (PyUnicode_GET_LENGTH(p) < 2 || PyUnicode_GET_LENGTH(p) > SHARED_LENGTH))
        || PyLong_CheckExact(p) || PyFloat_CheckExact(p)) {
        return (size_t)PyObject_Hash(p); /* in C for these types; never -1 */
    }
    return (size_t)(uintptr_t)p >> 4;
}

static int
same_part(PyObject *a, PyObject *b)
{
    if (a == b) {
        return 1;
    }
    if (a == NULL || b == NULL || Py_TYPE(a) != Py_TYPE(b)) {
        return 0;
    }
    if (PyUnicode_CheckExact(a) || PyLong_CheckExact(a)) { /* C for exact strs and ints */
        return PyObject_RichCompareBool(a, b, Py_EQ) == 1;
    }
    if (PyFloat_CheckExact(a)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    return 0;
}

static int
same_value(PyObject *held, PyObject *obj, const Py_ssize_t *offsets, Py_ssize_t count)
{
    if (Py_TYPE(held) != Py_TYPE(obj)
        || (offsets == NULL && PyTuple_GET_SIZE(held) != count)) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!same_part(part(held, offsets, i), part(obj, offsets, i))) {
            return 0;
        }
    }
    return 1;
}

PyObject *
shared_value(PyObject *obj, const Py_ssize_t *offsets, Py_ssize_t count)
{
    size_t hash = ((size_t)(uintptr_t)Py_TYPE(obj) >> 4) ^ (size_t)count;
    for (Py_ssize_t i = 0; i < count; i++) {
        hash = (hash ^ part_hash(part(obj, offsets, i))) * (size_t)0x9E3779B97F4A7C15ULL;
        hash ^= hash >> 31;
    }
    Held *bucket = &values[(hash & (VALUE_SLOTS - 1)) & ~(size_t)1];
    for (int i = 0; i < 2; i++) {
        PyObject *held = bucket[i].obj;
        if (held == obj) {
            return Py_NewRef(obj);
        }
        if (held != NULL && bucket[i].hash == hash && same_value(held, obj, offsets, count)) {
            value_hits++;
            bucket_promote(bucket, i);
            return Py_NewRef(held);
        }
    }
    value_misses++;
    /* released once the table is consistent (freeing a value runs no Python code) */
    Py_XDECREF(bucket_hold(bucket, hash, obj));
    return Py_NewRef(obj);
}

void
values_stats(Py_ssize_t *held, Py_ssize_t *slots, Py_ssize_t *hits, Py_ssize_t *misses)
{
    Py_ssize_t count = 0;
    for (size_t i = 0; i < VALUE_SLOTS; i++) {
        count += values[i].obj != NULL;
    }
    *held = count;
    *slots = VALUE_SLOTS;
    *hits = value_hits;
    *misses = value_misses;
}

void
values_clear(void)
{
    for (size_t i = 0; i < VALUE_SLOTS; i++) {
        Py_CLEAR(values[i].obj);
    }
    value_hits = value_misses = 0;
}
