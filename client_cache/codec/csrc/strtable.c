/* The string table of client_cache.codec._codec (strtable.h): one str object for each short
 * string seen recently, so that the decoded objects of a cache share their strings.
 *
 * SLOTS entries, two per hash bucket, the most recently seen first. A miss puts the new
 * string first and moves the other one second, dropping what was second, so the table
 * never grows and a string that keeps coming back stays. Equal strings are compared by
 * kind, length and bytes after the table's own hash of them (kept beside each entry), so
 * a lookup calls no Python code. Every decoder of the extension (decode.c, lines.c, the
 * protobuf units) and the walk (walk.c) take their strings from here; module.c reports
 * and clears it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include "strtable.h"

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
PyObject *
shared_str_of(PyObject *s, int *fresh)
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
    return shared_str_of(s, &fresh);
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

void
strtable_stats(Py_ssize_t *hit_count, Py_ssize_t *miss_count, Py_ssize_t *held,
               Py_ssize_t *slot_count, int *max_length)
{
    Py_ssize_t n = 0;
    for (size_t i = 0; i < SLOTS; i++) {
        n += slots[i].obj != NULL;
    }
    *hit_count = hits;
    *miss_count = misses;
    *held = n;
    *slot_count = SLOTS;
    *max_length = MAX_LENGTH;
}

void
strtable_clear(void)
{
    for (size_t i = 0; i < SLOTS; i++) {
        Py_CLEAR(slots[i].obj);
    }
    for (size_t i = 0; i < DROPS; i++) {
        Py_CLEAR(drops[i]);
    }
    hits = misses = 0;
}
