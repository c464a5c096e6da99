/* client_cache.codec._codec's compiled protobuf schema (see pbdecoder.h):
 * protobuf_schema(types, messages, duration, loads) compiles it into a capsule:
 *   types: (kind, ref, key) per type; ref is a message index for MESSAGE, the element's
 *          type index for PTR, LIST, ITEMS and MAP (its value), key a map's key type;
 *   messages: per message, a tuple of fields (number, name, type, omitempty, omitzero,
 *          inline), in Go's (JSON's) order;
 *   duration: a callable giving a Go duration's text from its nanoseconds;
 *   loads: the JSON decoder, for raw extensions and fieldsV1 (JSON held as bytes). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "pbdecoder.h"
#include "protobuf.h"

#define CAPSULE "client_cache.codec.protobuf.schema"

Schema *
pb_schema_of(PyObject *capsule)
{
    return PyCapsule_GetPointer(capsule, CAPSULE);
}

static void
schema_free(PyObject *capsule)
{
    Schema *schema = PyCapsule_GetPointer(capsule, CAPSULE);
    if (schema == NULL) {
        return;
    }
    for (int i = 0; i < schema->nmessages; i++) {
        Message *m = &schema->messages[i];
        for (int j = 0; j < m->count; j++) {
            Py_XDECREF(m->fields[j].name);
        }
        PyMem_Free(m->fields);
        PyMem_Free(m->by_number);
    }
    PyMem_Free(schema->messages);
    PyMem_Free(schema->types);
    Py_XDECREF(schema->duration);
    Py_XDECREF(schema->loads);
    PyMem_Free(schema);
}

int
pb_index_in(PyObject *obj, int limit)
{
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < 0 || v >= limit) {
        PyErr_SetString(PyExc_ValueError, "protobuf_schema: an index out of range");
        return -1;
    }
    return (int)v;
}

static int
compile_message(Schema *schema, Message *m, PyObject *spec)
{
    if (!PyTuple_Check(spec)) {
        PyErr_SetString(PyExc_TypeError, "protobuf_schema: a message is a tuple of fields");
        return -1;
    }
    m->count = (int)PyTuple_GET_SIZE(spec);
    m->fields = PyMem_Calloc((size_t)m->count + 1, sizeof(Field));
    if (m->fields == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int j = 0; j < m->count; j++) {
        PyObject *f = PyTuple_GET_ITEM(spec, j);
        Field *field = &m->fields[j];
        if (!PyTuple_Check(f) || PyTuple_GET_SIZE(f) != 6
            || !PyUnicode_Check(PyTuple_GET_ITEM(f, 1))) {
            PyErr_SetString(PyExc_TypeError, "protobuf_schema: a field is (number, name, "
                            "type, omitempty, omitzero, inline)");
            return -1;
        }
        if ((field->number = pb_index_in(PyTuple_GET_ITEM(f, 0), 1 << 20)) < 0
            || (field->type = pb_index_in(PyTuple_GET_ITEM(f, 2), schema->ntypes)) < 0) {
            return -1;
        }
        field->name = Py_NewRef(PyTuple_GET_ITEM(f, 1));
        PyUnicode_InternInPlace(&field->name);
        field->omitempty = PyObject_IsTrue(PyTuple_GET_ITEM(f, 3));
        field->omitzero = PyObject_IsTrue(PyTuple_GET_ITEM(f, 4));
        field->inline_ = PyObject_IsTrue(PyTuple_GET_ITEM(f, 5));
        if (field->inline_ && schema->types[field->type].kind != T_MESSAGE) {
            PyErr_SetString(PyExc_ValueError, "protobuf_schema: an inline field is a message");
            return -1;
        }
        if (field->number > m->max_number) {
            m->max_number = field->number;
        }
    }
    m->by_number = PyMem_Calloc((size_t)m->max_number + 1, sizeof(int));
    if (m->by_number == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int j = 0; j < m->count; j++) {
        m->by_number[m->fields[j].number] = j + 1;
    }
    return 0;
}

PyObject *
protobuf_schema(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "protobuf_schema(types: tuple, messages: tuple, duration, loads)");
        return NULL;
    }
    Schema *schema = PyMem_Calloc(1, sizeof(Schema));
    if (schema == NULL) {
        return PyErr_NoMemory();
    }
    PyObject *capsule = PyCapsule_New(schema, CAPSULE, schema_free);
    if (capsule == NULL) {
        PyMem_Free(schema);
        return NULL;
    }
    schema->duration = Py_NewRef(args[2]);
    schema->loads = Py_NewRef(args[3]);
    schema->ntypes = (int)PyTuple_GET_SIZE(args[0]);
    schema->nmessages = (int)PyTuple_GET_SIZE(args[1]);
    schema->types = PyMem_Calloc((size_t)schema->ntypes + 1, sizeof(Type));
    schema->messages = PyMem_Calloc((size_t)schema->nmessages + 1, sizeof(Message));
    if (schema->types == NULL || schema->messages == NULL) {
        Py_DECREF(capsule);
        return PyErr_NoMemory();
    }
    for (int i = 0; i < schema->ntypes; i++) {
        PyObject *t = PyTuple_GET_ITEM(args[0], i);
        Type *type = &schema->types[i];
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
            PyErr_SetString(PyExc_TypeError, "protobuf_schema: a type is (kind, ref, key)");
            Py_DECREF(capsule);
            return NULL;
        }
        type->kind = pb_index_in(PyTuple_GET_ITEM(t, 0), T_KINDS);
        int refs = type->kind == T_MESSAGE ? schema->nmessages : schema->ntypes;
        if (type->kind < 0 || (type->ref = pb_index_in(PyTuple_GET_ITEM(t, 1), refs)) < 0
            || (type->key = pb_index_in(PyTuple_GET_ITEM(t, 2), schema->ntypes)) < 0) {
            Py_DECREF(capsule);
            return NULL;
        }
    }
    for (int i = 0; i < schema->nmessages; i++) {
        if (compile_message(schema, &schema->messages[i], PyTuple_GET_ITEM(args[1], i)) < 0) {
            Py_DECREF(capsule);
            return NULL;
        }
    }
    return capsule;
}

int
protobuf_field_count(PyObject *capsule, long message, const void **schema)
{
    const Schema *s = PyCapsule_GetPointer(capsule, CAPSULE);
    if (s == NULL) {
        return -1;
    }
    if (message < 0 || message >= s->nmessages) {
        PyErr_SetString(PyExc_ValueError, "protobuf: a message index out of range");
        return -1;
    }
    *schema = s;
    return s->messages[message].count;
}

int
protobuf_init(PyObject *module)
{
    if (pb_wire_init() < 0) {
        return -1;
    }
    static const char *kinds[] = {
        "STRING", "BOOL", "INT32", "INT64", "UINT32", "UINT64", "BYTES", "FLOAT64",
        "FLOAT32", "MESSAGE", "TIME", "MICROTIME", "DURATION", "INTORSTRING", "QUANTITY",
        "RAWJSON", "PTR", "LIST", "MAP", "ITEMS"};
    PyObject *names = PyTuple_New(T_KINDS);
    if (names == NULL) {
        return -1;
    }
    for (int i = 0; i < T_KINDS; i++) {
        PyObject *name = PyUnicode_FromString(kinds[i]);
        if (name == NULL) {
            Py_DECREF(names);
            return -1;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    int result = PyModule_AddObjectRef(module, "PROTOBUF_KINDS", names);
    Py_DECREF(names);
    return result;
}
