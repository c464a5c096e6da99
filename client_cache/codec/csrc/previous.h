/* The previous object of a watch event, and the parts of it an event leaves unchanged:
 * part of client_cache.codec._codec (see previous.c). */
#ifndef CLIENT_CACHE_PREVIOUS_H
#define CLIENT_CACHE_PREVIOUS_H

#include <Python.h>
#include "jsonparser.h"

/* What lookup (a callable taking a cache key) gives for the key of the object whose JSON
 * starts at ps->p, read without moving ps->p: a new reference; NULL without an error when
 * there is none (None, or a key the scan cannot read), NULL with the error set when the
 * lookup raised. */
PyObject *previous_of(Parser *ps, PyObject *lookup);

/* The value hint (a dict) holds under name: borrowed, NULL (no error set) when there is
 * none, hint is not a dict, or one of its keys raised when compared. */
PyObject *member_hint(PyObject *hint, PyObject *name);

/* hint's item at index when hint is a list that long; borrowed, else NULL. */
PyObject *item_hint(PyObject *hint, Py_ssize_t index);

/* Ask the processor to start loading the objects hint (a dict's values, a list's items;
 * anything else: nothing) holds, before they are compared one after the other: the
 * previous object was built long ago and is mostly out of the cache, and misses taken
 * together overlap where misses taken in turn add up. Changes nothing. */
void prefetch_parts(PyObject *hint);

/* Whether hint is a str of exactly the length ASCII bytes at start. */
int same_ascii(PyObject *hint, const char *start, Py_ssize_t length);

/* obj (a new str, int or float; NULL passes through) or, when hint is equal to it and of
 * its exact type (a float's bits the same, so -0.0 is not 0.0), hint in its place: the
 * reference to obj is given up, one to the result returned. */
PyObject *reused_scalar(PyObject *obj, PyObject *hint);

#endif
