/* Kubernetes protobuf messages decoded to JSON's dicts or to structs: the entries
 * client_cache.codec._codec's module table names (see pbdecoder.h for the files behind them,
 * and client_cache.codec.protobuf). */
#ifndef CLIENT_CACHE_PROTOBUF_H
#define CLIENT_CACHE_PROTOBUF_H

#include <Python.h>

/* protobuf_schema(types, messages, duration, loads) -> capsule (METH_FASTCALL). */
PyObject *protobuf_schema(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* protobuf_decode(schema, flags, message, data, start, end[, kind, api_version]) -> dict
 * (METH_FASTCALL). */
PyObject *protobuf_decode(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* protobuf_object(schema, flags, kinds, data) -> dict: a whole body, its envelope's
 * (apiVersion, kind) found in kinds (their message's index) (METH_FASTCALL). */
PyObject *protobuf_object(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* protobuf_event(schema, flags, kinds, frame) -> (type, object): one watch frame
 * (METH_FASTCALL). */
PyObject *protobuf_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* protobuf_list_scan(schema, flags, item, items_number, data, pos, end) -> (pos, items,
 * head): a list message's whole fields in data[pos:end], items decoded, the others'
 * bytes in head; pos where a field not yet whole begins (METH_FASTCALL). */
PyObject *protobuf_list_scan(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* The field count of message in the schema capsule, the schema in *schema; -1 with an
 * exception set when capsule is not a schema or message not one of its messages. */
int protobuf_field_count(PyObject *capsule, long message, const void **schema);

/* Add PROTOBUF_KINDS (the kind codes' names, in order) to the module; -1 on error. */
int protobuf_init(PyObject *module);

#endif
