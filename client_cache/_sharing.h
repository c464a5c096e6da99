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

/* The table's hash of a string's bytes. */
size_t quick_hash(const unsigned char *data, size_t size);

/* The held string equal to s, or s itself, held from now on when its length is in
 * 2..MAX_LENGTH (new reference). */
PyObject *shared_str(PyObject *s);

/* A str of these ASCII bytes: the held one when there is one, else a new one, held
 * from now on when its length is in 2..MAX_LENGTH (new reference); NULL on error. */
PyObject *shared_ascii(const char *data, Py_ssize_t length);

/* The flags of a call usage(flags, obj) in *flags (only SHARE, UNTRACK and COMPACT
 * kept); -1 with TypeError or OverflowError set when the arguments are not that. */
int walk_arguments(const char *usage, PyObject *const *args, Py_ssize_t nargs, int *flags);

#endif
