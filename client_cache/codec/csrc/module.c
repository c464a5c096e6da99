/* client_cache.codec._codec: the native part of client_cache.codec (read that package's
 * documentation first). This unit is only the module: its method table and its init,
 * which make the tables of the other units (strtable.c, layouts.c, shapes.c, values.c)
 * and add their constants. Each unit includes the headers of what it calls and no unit
 * includes this one, so the units depend on one another without a cycle. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "decode.h"
#include "lines.h"
#include "listscan.h"
#include "pbstruct.h"
#include "protobuf.h"
#include "shapes.h"
#include "strtable.h"
#include "values.h"
#include "walk.h"

PyObject *codec_decode_error = NULL;

/* DecodeError from client_cache.codec.errors, held for the module's life; -1 on error. */
static int
errors_init(void)
{
    if (codec_decode_error != NULL) {
        return 0;
    }
    PyObject *errors = PyImport_ImportModule("client_cache.codec.errors");
    if (errors == NULL) {
        return -1;
    }
    codec_decode_error = PyObject_GetAttrString(errors, "DecodeError");
    Py_DECREF(errors);
    return codec_decode_error == NULL ? -1 : 0;
}

static PyObject *
stats(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    Py_ssize_t hits, misses, held, slots;
    int max_length;
    strtable_stats(&hits, &misses, &held, &slots, &max_length);
    Py_ssize_t made, shapes, shape_slots, interned, budget;
    shapes_stats(&made, &shapes, &shape_slots, &interned, &budget);
    Py_ssize_t values, value_slots, value_hits, value_misses;
    values_stats(&values, &value_slots, &value_hits, &value_misses);
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:i,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n,s:n}",
                         "hits", hits, "misses", misses, "held", held, "slots", slots,
                         "max_length", max_length, "compacted", made, "shapes", shapes,
                         "shape_slots", shape_slots, "interned_keys", interned,
                         "intern_budget", budget, "values", values,
                         "value_slots", value_slots, "value_hits", value_hits,
                         "value_misses", value_misses);
}

static PyObject *
clear(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    strtable_clear();
    layouts_clear();
    values_clear();
    shapes_clear();
    decode_clear();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"walk", (PyCFunction)(void (*)(void))walk_entry, METH_FASTCALL,
     "walk(flags, obj) -> obj: in place, replace short str values inside obj with equal "
     "ones seen before (flags & SHARE), take its containers out of the cyclic "
     "collector's sight (flags & UNTRACK) and its dicts by equal ones sharing key tables "
     "(flags & COMPACT); returns what takes obj's place; see client_cache.sharing."},
    {"decode", (PyCFunction)(void (*)(void))decode_entry, METH_FASTCALL,
     "decode(flags, data[, skip[, previous]]) -> obj: the JSON document in data "
     "(bytes-like) decoded, with what walk(flags, ...) does done while decoding; DECLINED "
     "when data is not one this decoder takes (malformed, numbers it would round, "
     "repeated keys...): decode it with a JSON decoder and walk it instead. skip: a skip "
     "tree's node; previous: a callable giving, for an event's object's cache key, the "
     "object whose equal parts the event's takes as they are (or None)."},
    {"decode_lines", (PyCFunction)(void (*)(void))decode_lines, METH_FASTCALL,
     "decode_lines(flags, data, pos, skip, previous, mode, limit, event_class, types) "
     "-> (events, pos, stuck): the watch events of the whole JSON lines of data "
     "(bytes-like) "
     "from pos, each decoded as decode(flags, line, skip, previous, mode) and made "
     "event_class(types[type], object); stops at a line it leaves to the caller (stuck: "
     "the offset of its newline; -1 when none), pos where it stopped."},
    {"list_items", list_items, METH_O,
     "list_items(body) -> (start, end, spans) | None: where a LIST body's items array "
     "is (body[start:end]) and each item in it (spans: start, end, start, end...); None "
     "when the body is not an object with one items array."},
    {"list_head", list_head, METH_O,
     "list_head(data) -> int: in the first bytes of a LIST body, the offset just after "
     "the '[' that opens its items array; MORE when more bytes are needed to tell, "
     "NOT_LIST when the body is not an object with an items array."},
    {"list_scan", (PyCFunction)(void (*)(void))list_scan, METH_FASTCALL,
     "list_scan(data, pos, state) -> (pos, state, items): the items array's elements "
     "that are whole in data from pos, each as bytes; scanning resumes at the returned "
     "pos and state (AFTER_OPEN, AFTER_COMMA, AFTER_ITEM, CLOSED). ValueError when the "
     "array is not well formed."},
    {"protobuf_struct_plans", (PyCFunction)(void (*)(void))protobuf_struct_plans,
     METH_FASTCALL,
     "protobuf_struct_plans(schema, plans) -> capsule: how the protobuf entries build "
     "structs; see client_cache.protobuf_structs."},
    {"protobuf_schema", (PyCFunction)(void (*)(void))protobuf_schema, METH_FASTCALL,
     "protobuf_schema(types, messages, duration, loads) -> capsule: the protobuf schema "
     "compiled for protobuf_decode; see client_cache.protobuf."},
    {"protobuf_decode", (PyCFunction)(void (*)(void))protobuf_decode, METH_FASTCALL,
     "protobuf_decode(schema, flags, message, data, start, end) -> dict: the message "
     "data[start:end] as its JSON's dict, with what walk(flags, ...) does done while "
     "decoding; ValueError when it is not well formed."},
    {"protobuf_object", (PyCFunction)(void (*)(void))protobuf_object, METH_FASTCALL,
     "protobuf_object(schema, flags, kinds, data) -> dict: a protobuf body (magic and "
     "envelope) decoded, its message found in kinds by (apiVersion, kind)."},
    {"protobuf_event", (PyCFunction)(void (*)(void))protobuf_event, METH_FASTCALL,
     "protobuf_event(schema, flags, kinds, frame) -> (type, object): one frame of a "
     "protobuf watch stream decoded."},
    {"protobuf_list_scan", (PyCFunction)(void (*)(void))protobuf_list_scan, METH_FASTCALL,
     "protobuf_list_scan(schema, flags, item, items_number, data, pos, end) -> (pos, "
     "items, head): the whole fields of a list message in data[pos:end]: its items "
     "decoded as message item, the other fields' bytes in head; pos is where a field not "
     "yet whole begins."},
    {"stats", stats, METH_NOARGS, "stats() -> dict: the table's counters and size."},
    {"clear", clear, METH_NOARGS, "clear() -> None: empty the table and the counters."},
    {NULL, NULL, 0, NULL},
};

#ifndef CLIENT_CACHE_SOURCE_HASH  /* setup.py defines it: the hash of the sources */
#define CLIENT_CACHE_SOURCE_HASH ""
#endif

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "client_cache.codec._codec",
    "The native part of client_cache.codec.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__codec(void)
{
    if (errors_init() < 0 || layouts_init() < 0 || shapes_init() < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL || PyModule_AddIntConstant(module, "SHARE", SHARE) < 0
        || PyModule_AddIntConstant(module, "UNTRACK", UNTRACK) < 0
        || PyModule_AddIntConstant(module, "COMPACT", COMPACT) < 0
        || PyModule_AddStringConstant(module, "SOURCE_HASH", CLIENT_CACHE_SOURCE_HASH) < 0
        || list_scan_constants(module) < 0 || decode_init(module) < 0
        || protobuf_init(module) < 0) {
        Py_XDECREF(module);
        return NULL;
    }
    return module;
}
