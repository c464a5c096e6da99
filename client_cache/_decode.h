/* JSON decoded with the walk done while parsing: part of client_cache._sharing (see
 * _decode.c and client_cache.sharing). */
#ifndef CLIENT_CACHE_DECODE_H
#define CLIENT_CACHE_DECODE_H

#include <Python.h>

/* decode(flags, data[, skip[, previous[, whole]]]): what walk(flags, json.loads(data))
 * gives, the skip tree's paths left out, or DECLINED (METH_FASTCALL); see
 * decode_json_with. */
PyObject *decode_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* The JSON document data[0:length] decoded with the walk's flags applied: what
 * decode(flags, data) gives (new reference; DECLINED, see is_declined; NULL on error). */
PyObject *decode_json(int flags, const char *data, Py_ssize_t length);

/* decode_json with the paths of skip (a tree of dicts: see _decode.c; NULL: none) left
 * out, and an event's object read beside the one previous (a callable taking a cache
 * key: see _previous.c; NULL: none) gives for it; with whole set, the document is itself
 * the object looked up (a LIST item), not an event holding it. */
PyObject *decode_json_with(int flags, PyObject *skip, PyObject *previous, int whole,
                           const char *data, Py_ssize_t length);

/* Whether obj is DECLINED. */
int is_declined(PyObject *obj);

/* Forget the dict keys seen. */
void decode_clear(void);

/* Add DECLINED to the module; -1 on error. */
int decode_init(PyObject *module);

#endif
