/* Finding a LIST body's items without decoding it: part of client_cache.codec._codec
 * (see listscan.c and client_cache.codec._sharing). */
#ifndef CLIENT_CACHE_LISTSCAN_H
#define CLIENT_CACHE_LISTSCAN_H

#include <Python.h>

/* list_items(body): where the whole body's items array and each item are (METH_O). */
PyObject *list_items(PyObject *module, PyObject *body);

/* list_head(data): the offset after the items array's '[' in a body's first bytes, or
 * MORE, or NOT_LIST (METH_O). */
PyObject *list_head(PyObject *module, PyObject *data);

/* list_scan(data, pos, state): the whole items from pos on, and where to resume
 * (METH_FASTCALL). */
PyObject *list_scan(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* Add the constants list_head and list_scan answer with to the module; -1 on error. */
int list_scan_constants(PyObject *module);

#endif
