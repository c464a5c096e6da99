/* The walk of decoded objects (walk.c): part of client_cache.codec._codec. */
#ifndef CLIENT_CACHE_WALK_H
#define CLIENT_CACHE_WALK_H

#include <Python.h>

/* walk(flags, obj): the module's entry (see walk.c). */
PyObject *walk_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* The flags of a call usage(flags, obj) in *flags (only SHARE, UNTRACK and COMPACT
 * kept); -1 with TypeError or OverflowError set when the arguments are not that. */
int walk_arguments(const char *usage, PyObject *const *args, Py_ssize_t nargs, int *flags);

#endif
