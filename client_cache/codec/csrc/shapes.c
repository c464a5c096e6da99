/* Dicts of the same keys sharing one key table (the COMPACT walk of client_cache.codec._codec;
 * client_cache.codec._sharing says why and what it costs).
 *
 * A dict built by a JSON decoder has its own key table: a hash index and one entry per
 * slot, 184 bytes for up to five keys on CPython 3.11, 272 for up to ten. CPython keeps
 * the attributes of a class's instances in dicts that share one key table (PEP 412), each
 * dict holding only its values: 80 bytes plus 8 per key. shaped_dict() builds such a dict
 * for a decoded one: each distinct sequence of keys (a shape) gets a prototype, the
 * __dict__ of an instance of a class of its own with those attributes (None), and the
 * result is a copy of the prototype (PyDict_Copy keeps a shared table shared) with the
 * decoded dict's values set under the same keys. Only public C API is used (and the
 * ma_values field of PyDictObject, to check that a dict came out sharing its keys: a
 * shape whose dicts do not is never tried again).
 *
 * Shapes are kept in a fixed table of SHAPES entries, WAYS per bucket, the most recently
 * seen first. A shape gets its prototype the second time it is seen, so keys seen once (a
 * map of unique labels) cost nothing but the look-up. Four ways, not the string table's
 * two: the shapes of one object are seen in turn, again for each object of its kind, and
 * three of them in a two-way bucket would push each other out for good (with one hash
 * seed of 700 tried, six dicts of a real apiserver pod were never compacted); five
 * of an object's few dozen shapes in one bucket of 512 is about one seed in a million. The
 * class is dropped once the prototype is made (the key table lives on in the dicts).
 * CPython shares only interned names, so a shape's keys are interned when it gets its
 * prototype, not before; on 3.12, where an interned string is never freed, the number of
 * keys interned that way is bounded (interned_keys).
 * Keys that start with two underscores could name a descriptor of the class (__class__,
 * __dict__), so such dicts are left as they are. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include "shapes.h"
#include "strtable.h"

#define SHAPE_BITS 11
#define SHAPES (1 << SHAPE_BITS)
#define WAYS 4 /* entries per bucket */
#define MAX_KEYS 29 /* 30 is CPython's largest shared key table; 3.11-3.13 share 29 here */
#define INSTANCES 32
#define DEFAULT_INTERN_BUDGET 8192 /* on 3.12: at most about 0.5 MB of key strings kept */

typedef struct {
    Py_hash_t hash;
    PyObject *seen; /* tuple of the keys in order, as first seen; NULL: an empty entry */
    PyObject *keys; /* the same keys interned, once the shape has its prototype */
    PyObject *proto; /* NULL: seen once; Py_None: not shareable; else a dict of the shape */
} Shape;

static Shape shapes[SHAPES];
static PyObject *no_args; /* () for tp_new */
static Py_ssize_t made;
static Py_ssize_t interned;          /* keys the walk interned that were not before */
static Py_ssize_t intern_budget;     /* the most it may intern; -1: no limit */

/* The hash of dict's sequence of keys, or -1 when a key is not a str. */
static Py_hash_t
keys_hash(PyObject *dict)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    Py_uhash_t hash = 0x345678UL;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) {
            return -1;
        }
        Py_hash_t one = PyObject_Hash(key); /* cached: the dict computed it */
        hash = (hash ^ (Py_uhash_t)one) * 1000003UL;
    }
    hash ^= (Py_uhash_t)PyDict_GET_SIZE(dict);
    return hash == (Py_uhash_t)-1 ? -2 : (Py_hash_t)hash;
}

/* Whether two str are equal: the same object (a decoder that caches its keys, as orjson
 * does, gives the same ones), else the same kind, length and bytes. */
static int
equal(PyObject *a, PyObject *b)
{
    if (a == b) {
        return 1;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(a);
    int kind = PyUnicode_KIND(a);
    return PyUnicode_GET_LENGTH(b) == length && PyUnicode_KIND(b) == kind
        && same_bytes(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)length * (size_t)kind);
}

static int
same_keys(PyObject *seen, PyObject *dict)
{
    if (PyTuple_GET_SIZE(seen) != PyDict_GET_SIZE(dict)) {
        return 0;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (!equal(PyTuple_GET_ITEM(seen, i++), key)) {
            return 0;
        }
    }
    return 1;
}

/* The first entry of the bucket of shapes of this hash. */
static Shape *
bucket_of(Py_hash_t hash)
{
    return &shapes[(size_t)hash & (SHAPES - 1) & ~(size_t)(WAYS - 1)];
}

/* entry moved first in its bucket, the entries before it one down (the bucket's first). */
static Shape *
to_front(Shape *bucket, Shape *entry)
{
    if (entry != bucket) {
        Shape moved = *entry;
        memmove(&bucket[1], &bucket[0], (size_t)(entry - bucket) * sizeof(Shape));
        bucket[0] = moved;
    }
    return bucket;
}

/* A new entry for dict's keys, first in its bucket: seen once, or not shareable. The
 * keys are kept as the dict has them; they are interned only when the shape gets its
 * prototype (interned_keys). */
static int
remember(Shape *bucket, Py_hash_t hash, PyObject *dict)
{
    PyObject *seen = PyTuple_New(PyDict_GET_SIZE(dict));
    if (seen == NULL) {
        return -1;
    }
    int shareable = 1;
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        PyTuple_SET_ITEM(seen, i++, Py_NewRef(key));
        if (PyUnicode_GET_LENGTH(key) >= 2 && PyUnicode_READ_CHAR(key, 0) == '_'
            && PyUnicode_READ_CHAR(key, 1) == '_') {
            shareable = 0;
        }
    }
    Py_XDECREF(bucket[WAYS - 1].seen);
    Py_XDECREF(bucket[WAYS - 1].keys);
    Py_XDECREF(bucket[WAYS - 1].proto);
    memmove(&bucket[1], &bucket[0], (WAYS - 1) * sizeof(Shape));
    bucket[0].hash = hash;
    bucket[0].seen = seen;
    bucket[0].keys = NULL;
    bucket[0].proto = shareable ? NULL : Py_NewRef(Py_None);
    return 0;
}

/* seen's keys interned (a new tuple), Py_None when that would intern more keys than the
 * budget has left, NULL on error. Only interned names are shared by CPython; on 3.12 an
 * interned string is never freed, so there the walk interns at most intern_budget keys
 * that were not interned already, over the process's life. */
static PyObject *
interned_keys(PyObject *seen)
{
    Py_ssize_t size = PyTuple_GET_SIZE(seen), fresh = 0;
    for (Py_ssize_t i = 0; i < size; i++) {
        fresh += !PyUnicode_CHECK_INTERNED(PyTuple_GET_ITEM(seen, i));
    }
    if (intern_budget >= 0 && interned + fresh > intern_budget) {
        return Py_NewRef(Py_None);
    }
    PyObject *keys = PyTuple_New(size);
    if (keys == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *key = Py_NewRef(PyTuple_GET_ITEM(seen, i));
        PyUnicode_InternInPlace(&key);
        PyTuple_SET_ITEM(keys, i, key);
    }
    interned += fresh;
    return keys;
}

/* A dict of the keys keys sharing its key table, its values None (new reference), NULL
 * on error: an instance's __dict__, made after INSTANCES others of the same class so that
 * CPython sizes its values for these keys only (it gives a class's first instances room
 * for more attributes, a little less to each new one). */
static PyObject *
new_proto(PyObject *keys)
{
    PyObject *type = PyObject_CallFunction((PyObject *)&PyType_Type, "s(O){}", "shape",
                                           (PyObject *)&PyBaseObject_Type);
    if (type == NULL) {
        return NULL;
    }
    PyObject *instance = NULL;
    for (int made_ = 0; made_ < INSTANCES; made_++) {
        Py_XDECREF(instance);
        instance = ((PyTypeObject *)type)->tp_new((PyTypeObject *)type, no_args, NULL);
        if (instance == NULL) {
            Py_DECREF(type);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(keys); i++) {
            if (PyObject_GenericSetAttr(instance, PyTuple_GET_ITEM(keys, i), Py_None) < 0) {
                Py_DECREF(instance);
                Py_DECREF(type);
                return NULL;
            }
        }
    }
    PyObject *proto = PyObject_GenericGetDict(instance, NULL);
    Py_DECREF(instance);
    Py_DECREF(type); /* the proto keeps the key table, not the class */
    return proto;
}

/* dict's values under the shape's keys, in a copy of its proto (new reference), NULL on
 * error. */
static PyObject *
shaped_copy(PyObject *proto, PyObject *keys, PyObject *dict)
{
    PyObject *result = PyDict_Copy(proto);
    if (result == NULL) {
        return NULL;
    }
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (PyDict_SetItem(result, PyTuple_GET_ITEM(keys, i++), value) < 0) {
            Py_DECREF(result);
            return NULL;
        }
    }
    return result;
}

/* The entry of the bucket whose seen keys are seen (by identity), or NULL. */
static Shape *
entry_of(Shape *bucket, PyObject *seen)
{
    for (int i = 0; i < WAYS; i++) {
        if (bucket[i].seen == seen) {
            return &bucket[i];
        }
    }
    return NULL;
}

PyObject *
shaped_dict(PyObject *dict)
{
    Py_ssize_t size = PyDict_GET_SIZE(dict);
    if (size == 0 || size > MAX_KEYS || ((PyDictObject *)dict)->ma_values != NULL) {
        return Py_NewRef(dict);
    }
    Py_hash_t hash = keys_hash(dict);
    if (hash == -1) {
        return Py_NewRef(dict);
    }
    Shape *bucket = bucket_of(hash);
    Shape *found = NULL;
    for (int i = 0; i < WAYS; i++) {
        if (bucket[i].seen != NULL && bucket[i].hash == hash
            && same_keys(bucket[i].seen, dict)) {
            found = &bucket[i];
            break;
        }
    }
    if (found == NULL) {
        return remember(bucket, hash, dict) < 0 ? NULL : Py_NewRef(dict);
    }
    found = to_front(bucket, found); /* seen again: first in its bucket */
    if (found->proto == Py_None) {
        return Py_NewRef(dict);
    }
    /* what follows can run Python code (a collection) that changes the table: hold
     * strong references, and find the entry again before changing it */
    PyObject *seen = Py_NewRef(found->seen);
    PyObject *keys = Py_XNewRef(found->keys);
    PyObject *proto = Py_XNewRef(found->proto);
    if (proto == NULL) {
        keys = interned_keys(seen);
        proto = keys == NULL || keys == Py_None ? NULL : new_proto(keys);
        Shape *entry = entry_of(bucket, seen);
        if (entry != NULL && entry->proto == NULL && keys == Py_None) {
            entry->proto = Py_NewRef(Py_None); /* over the budget: never again */
        }
        else if (entry != NULL && entry->proto == NULL && proto != NULL) {
            entry->keys = Py_NewRef(keys);
            entry->proto = Py_NewRef(proto);
        }
        if (keys == Py_None) {
            Py_DECREF(keys);
            Py_DECREF(seen);
            return Py_NewRef(dict);
        }
    }
    PyObject *result = proto == NULL ? NULL : shaped_copy(proto, keys, dict);
    if (result != NULL && (((PyDictObject *)result)->ma_values == NULL
                           || PyDict_GET_SIZE(result) != size)) {
        Shape *entry = entry_of(bucket, seen); /* CPython would not share these keys */
        if (entry != NULL) {
            Py_XSETREF(entry->proto, Py_NewRef(Py_None));
        }
        Py_SETREF(result, Py_NewRef(dict));
    }
    else if (result != NULL) {
        made++;
    }
    Py_DECREF(seen);
    Py_XDECREF(keys);
    Py_XDECREF(proto);
    return result;
}

PyObject *
dict_of_pairs(PyObject *const *pairs, Py_ssize_t n)
{
    PyObject *dict = PyDict_New();
    if (dict == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyDict_SetItem(dict, pairs[2 * i], pairs[2 * i + 1]) < 0) {
            Py_DECREF(dict);
            return NULL;
        }
    }
    return dict;
}

PyObject *
shaped_from_pairs(PyObject *const *pairs, Py_ssize_t n)
{
    if (n == 0 || n > MAX_KEYS) {
        return dict_of_pairs(pairs, n);
    }
    Py_uhash_t hash = 0x345678UL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_hash_t one = PyObject_Hash(pairs[2 * i]); /* cached in the key */
        if (one == -1) {
            return NULL;
        }
        hash = (hash ^ (Py_uhash_t)one) * 1000003UL;
    }
    hash ^= (Py_uhash_t)n;
    Py_hash_t shape_hash = hash == (Py_uhash_t)-1 ? -2 : (Py_hash_t)hash;
    Shape *bucket = bucket_of(shape_hash);
    Shape *found = NULL;
    for (int i = 0; i < WAYS && found == NULL; i++) {
        PyObject *seen = bucket[i].seen;
        if (seen == NULL || bucket[i].hash != shape_hash || PyTuple_GET_SIZE(seen) != n
            || bucket[i].proto == NULL || bucket[i].proto == Py_None) {
            continue;
        }
        Py_ssize_t k = 0;
        while (k < n && equal(PyTuple_GET_ITEM(seen, k), pairs[2 * k])) {
            k++;
        }
        if (k == n) {
            found = &bucket[i];
        }
    }
    if (found == NULL) { /* not a shape with a prototype yet: as shaped_dict decides */
        PyObject *dict = dict_of_pairs(pairs, n);
        if (dict == NULL || PyDict_GET_SIZE(dict) != n) {
            return dict; /* repeated keys: the caller sees the size */
        }
        PyObject *result = shaped_dict(dict);
        Py_DECREF(dict);
        return result;
    }
    found = to_front(bucket, found); /* seen again: first in its bucket */
    /* making the dict can run Python code (a collection's callbacks, which may let
     * another thread change the table): hold strong references, and find the entry
     * again before changing it */
    PyObject *seen = Py_NewRef(found->seen);
    PyObject *shape_keys = Py_NewRef(found->keys);
    PyObject *proto = Py_NewRef(found->proto);
    PyObject *result = PyDict_Copy(proto);
    Py_DECREF(proto);
    for (Py_ssize_t i = 0; result != NULL && i < n; i++) {
        if (PyDict_SetItem(result, PyTuple_GET_ITEM(shape_keys, i), pairs[2 * i + 1]) < 0) {
            Py_CLEAR(result);
        }
    }
    if (result != NULL && ((PyDictObject *)result)->ma_values == NULL) { /* as shaped_dict */
        Shape *entry = entry_of(bucket, seen);
        if (entry != NULL) {
            Py_XSETREF(entry->proto, Py_NewRef(Py_None));
        }
        Py_SETREF(result, dict_of_pairs(pairs, n));
    }
    else if (result != NULL) {
        made++;
    }
    Py_DECREF(seen);
    Py_DECREF(shape_keys);
    return result;
}

void
shapes_clear(void)
{
    for (Py_ssize_t i = 0; i < SHAPES; i++) {
        Py_CLEAR(shapes[i].seen);
        Py_CLEAR(shapes[i].keys);
        Py_CLEAR(shapes[i].proto);
        shapes[i].hash = 0;
    }
    made = 0;
}

void
shapes_stats(Py_ssize_t *made_out, Py_ssize_t *held, Py_ssize_t *entries,
             Py_ssize_t *interned_out, Py_ssize_t *budget)
{
    *made_out = made;
    *held = 0;
    for (Py_ssize_t i = 0; i < SHAPES; i++) {
        *held += shapes[i].proto != NULL && shapes[i].proto != Py_None;
    }
    *entries = SHAPES;
    *interned_out = interned;
    *budget = intern_budget;
}

int
shapes_init(void)
{
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
    intern_budget = DEFAULT_INTERN_BUDGET; /* 3.12 never frees an interned string */
#else
    intern_budget = -1;
#endif
    const char *budget = getenv("CLIENT_CACHE_SHAPE_KEYS_BUDGET");
    if (budget != NULL && *budget != '\0') {
        char *end;
        long value = strtol(budget, &end, 10);
        if (*end == '\0') {
            intern_budget = value < 0 ? -1 : (Py_ssize_t)value;
        }
    }
    no_args = PyTuple_New(0);
    return no_args == NULL ? -1 : 0;
}
