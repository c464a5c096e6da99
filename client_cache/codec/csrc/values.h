/* The value table of client_cache.codec._codec (values.c), for its walk (walk.c). */
#ifndef CLIENT_CACHE_VALUES_H
#define CLIENT_CACHE_VALUES_H

#include <Python.h>

/* The held object equal to obj, or obj itself, held from now on (new reference). obj is
 * a tuple (offsets NULL) or a frozen msgspec struct whose count fields are in the slots
 * at these byte offsets; every item or field must be an immutable value (None, an exact
 * bool, int, float or str, or an object this table gave). */
PyObject *shared_value(PyObject *obj, const Py_ssize_t *offsets, Py_ssize_t count);

/* How many objects the table holds, of how many slots; its hits and misses. */
void values_stats(Py_ssize_t *held, Py_ssize_t *slots, Py_ssize_t *hits, Py_ssize_t *misses);

/* Empty the table and its counters. */
void values_clear(void);

#endif
