/* Dicts of the same keys sharing one key table: part of client_cache.codec._codec
 * (see shapes.c and client_cache.codec._sharing). */
#ifndef CLIENT_CACHE_SHAPES_H
#define CLIENT_CACHE_SHAPES_H

#include <Python.h>

/* An equal dict whose keys are kept in a table shared with the other dicts of the same
 * keys in the same order (new reference), or dict itself (new reference) when it is
 * empty, too large, already shares its keys, has a key that is not a str or starts with
 * two underscores, or when its keys have been seen only once so far. NULL on error. */
PyObject *shaped_dict(PyObject *dict);

/* A dict (of its own key table) of the n pairs keys[0], values[0], keys[1]... (new
 * reference), NULL on error. */
PyObject *dict_of_pairs(PyObject *const *pairs, Py_ssize_t n);

/* A dict of the n pairs (keys[0], values[0], keys[1]...: str keys), made as
 * shaped_dict would make it from a dict of those pairs, without making that dict when
 * the keys' shape has its prototype already (new reference); NULL on error. When a key
 * repeats the dict has fewer than n keys. */
PyObject *shaped_from_pairs(PyObject *const *pairs, Py_ssize_t n);

/* Forget every shape (the dicts already made keep theirs) and reset the counters. */
void shapes_clear(void);

/* The counters: dicts made, shapes held (seen twice or more), table entries, keys the
 * walk interned that were not interned before, and the most it may intern (-1: no
 * limit; CLIENT_CACHE_SHAPE_KEYS_BUDGET, else 8192 on 3.12 only). */
void shapes_stats(Py_ssize_t *made, Py_ssize_t *held, Py_ssize_t *entries,
                  Py_ssize_t *interned, Py_ssize_t *budget);

/* Set up the module-level objects; -1 on error. */
int shapes_init(void);

#endif
