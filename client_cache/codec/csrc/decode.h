/* JSON decoded with the walk done while parsing: part of client_cache.codec._codec (see
 * decode.c and client_cache.codec._sharing). */
#ifndef CLIENT_CACHE_DECODE_H
#define CLIENT_CACHE_DECODE_H

#include <Python.h>

/* decode(flags, data[, skip[, previous[, mode]]]): what walk(flags, json.loads(data))
 * gives, the skip tree's paths left out, or DECLINED (METH_FASTCALL); see
 * decode_json_with. */
PyObject *decode_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* The JSON document data[0:length] decoded with the walk's flags applied: what
 * decode(flags, data) gives (new reference; DECLINED, see is_declined; NULL on error). */
PyObject *decode_json(int flags, const char *data, Py_ssize_t length);

/* How previous is asked: for the object of a MODIFIED or DELETED event; for the
 * document itself (a LIST item); for the object of an ADDED event too (a watch-list's
 * relist). */
enum { LOOK_UP_EVENTS = 0, LOOK_UP_WHOLE = 1, LOOK_UP_ADDED = 2 };

/* decode_json with the paths of skip (a tree of dicts: see decode.c; NULL: none) left
 * out, and an event's object read beside the one previous (a callable taking a cache
 * key: see previous.c; NULL: none) gives for it, as mode (a LOOK_UP_ value) says. */
PyObject *decode_json_with(int flags, PyObject *skip, PyObject *previous, int mode,
                           const char *data, Py_ssize_t length);

/* 0 when skip is a dict or None and previous a callable or None, as the entries that
 * take them want; else -1 with a TypeError naming usage. */
int check_skip_and_previous(const char *usage, PyObject *skip, PyObject *previous);

/* Whether obj is DECLINED. */
int is_declined(PyObject *obj);

/* Forget the dict keys seen. */
void decode_clear(void);

/* Add DECLINED to the module; -1 on error. */
int decode_init(PyObject *module);

#endif
