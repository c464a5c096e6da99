/* The string table of client_cache.codec._codec (strtable.c) and what every unit of the
 * extension shares: the walk's flags, the byte helpers, the two-entry buckets. */
#ifndef CLIENT_CACHE_STRTABLE_H
#define CLIENT_CACHE_STRTABLE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The walk's flags: share strings, take containers out of the collector's sight, give
 * dicts of the same keys one key table. */
#define SHARE 1
#define UNTRACK 2
#define COMPACT 4

/* The walk's depth limit: what is nested deeper is left as it is. */
#define MAX_DEPTH 200

/* The longest str the string table holds. */
#define SHARED_LENGTH 64

/* The last n (0..7) bytes in memory of a word read from memory, as a number. */
static inline uint64_t
last_bytes(uint64_t word, size_t n)
{
#if PY_BIG_ENDIAN
    return n == 0 ? 0 : word & ((UINT64_C(1) << (8 * n)) - 1);
#else
    return n == 0 ? 0 : word >> (8 * (8 - n));
#endif
}

/* Bytes i..size-1 (1..7 of them, the tail after whole words) as one number, a different
 * number for different bytes, read without a copy of their length: the compiler makes
 * such a copy a call, and the load of the copied bytes then waits for their stores. The
 * bytes are read as the word ending at size (when size >= 8) or as two overlapping
 * four-byte words, never outside data[0..size). */
static inline uint64_t
load_tail(const unsigned char *data, size_t size, size_t i)
{
    size_t rest = size - i;
    if (size >= 8) {
        uint64_t word;
        memcpy(&word, data + size - 8, 8);
        return last_bytes(word, rest);
    }
    if (rest >= 4) { /* i is 0: bytes 0..3, then bytes 4..rest-1 from the word ending there */
        uint32_t low, high;
        memcpy(&low, data, 4);
        memcpy(&high, data + rest - 4, 4);
        /* high as the last four bytes of a word read from memory */
        uint64_t ending = PY_BIG_ENDIAN ? (uint64_t)high : (uint64_t)high << 32;
        return (uint64_t)low | (last_bytes(ending, rest - 4) << 32);
    }
    uint64_t word = data[0];
    if (rest >= 2) {
        word |= (uint64_t)data[1] << 8;
    }
    if (rest == 3) {
        word |= (uint64_t)data[2] << 16;
    }
    return word;
}

/* Whether the size bytes at a and b are the same: a word at a time, the last word read
 * overlapping the one before it (or the tail as load_tail reads it), inline where memcmp
 * would be a call costing more than the compare of a short string. */
static inline int
same_bytes(const void *a, const void *b, size_t size)
{
    const unsigned char *x = a, *y = b;
    if (size < 8) {
        return size == 0 || load_tail(x, size, 0) == load_tail(y, size, 0);
    }
    uint64_t u, v;
    for (size_t i = 0; i + 8 < size; i += 8) {
        memcpy(&u, x + i, 8);
        memcpy(&v, y + i, 8);
        if (u != v) {
            return 0;
        }
    }
    memcpy(&u, x + size - 8, 8);
    memcpy(&v, y + size - 8, 8);
    return u == v;
}

/* A cheap hash of a short string's bytes, for the string and key tables (not Python's:
 * computing that costs more than the rest of a lookup, and the tables need no protection
 * against chosen keys, since a collision only costs a missed share): eight bytes at a
 * time, the tail by load_tail, then the high bits mixed down into the low ones, which
 * pick the bucket. */
static inline size_t
quick_hash(const unsigned char *data, size_t size)
{
    uint64_t hash = 0x9E3779B97F4A7C15ULL ^ size;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t word;
        memcpy(&word, data + i, 8);
        hash = (hash ^ word) * 0xFF51AFD7ED558CCDULL;
    }
    if (i < size) {
        hash = (hash ^ load_tail(data, size, i)) * 0xFF51AFD7ED558CCDULL;
    }
    /* a multiply carries each bit only upward, so without this the top bytes of every
     * word would never reach the bucket's bits (murmur3's 64-bit finish) */
    hash ^= hash >> 33;
    hash *= 0xFF51AFD7ED558CCDULL;
    hash ^= hash >> 33;
    hash *= 0xC4CEB9FE1A85EC53ULL;
    hash ^= hash >> 33;
    return (size_t)hash;
}

/* The held string equal to s, or s itself, held from now on when its length is in
 * 2..MAX_LENGTH (new reference). */
PyObject *shared_str(PyObject *s);

/* A str of these ASCII bytes: the held one when there is one, else a new one, held
 * from now on when its length is in 2..MAX_LENGTH (new reference); NULL on error. */
PyObject *shared_ascii(const char *data, Py_ssize_t length);

/* shared_str, with *fresh set when the string was new to the table. */
PyObject *shared_str_of(PyObject *s, int *fresh);

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

/* The layouts' table (layouts.c): made at import (-1 with an exception set on failure),
 * emptied by clear(). */
int layouts_init(void);
void layouts_clear(void);

/* The two-entry buckets of the string and value tables: an object with its hash beside
 * it, the most recently seen first. A bucket is 32 bytes and the tables are aligned to
 * their cache lines (HELD_ALIGNED), so a lookup touches one line of the table. */
typedef struct {
    PyObject *obj;
    size_t hash;
} Held;

#if defined(__GNUC__) || defined(__clang__)
#define HELD_ALIGNED __attribute__((aligned(64)))
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define HELD_ALIGNED
#define PREFETCH(address) ((void)(address))
#endif

/* Entry i (0 or 1) of the bucket was seen again: move it first. */
static inline void
bucket_promote(Held *bucket, int i)
{
    if (i != 0) {
        Held seen = bucket[i];
        bucket[i] = bucket[0];
        bucket[0] = seen;
    }
}

/* Hold obj first in the bucket (a new reference), moving the first entry second; returns
 * the dropped second entry (a reference to release, or NULL) for the caller to release
 * once it is done with the table. */
static inline PyObject *
bucket_hold(Held *bucket, size_t hash, PyObject *obj)
{
    PyObject *dropped = bucket[1].obj;
    bucket[1] = bucket[0];
    bucket[0].obj = Py_NewRef(obj);
    bucket[0].hash = hash;
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

/* client_cache.codec.errors.DecodeError (a ValueError), which every unit raises for
 * malformed input, as the Python twins do; set by the module's init (module.c). */
extern PyObject *codec_decode_error;

/* The table's counters and size, for the module's stats(). */
void strtable_stats(Py_ssize_t *hits, Py_ssize_t *misses, Py_ssize_t *held,
                    Py_ssize_t *slots, int *max_length);

/* Empty the table and its counters (the module's clear()). */
void strtable_clear(void);

#endif
