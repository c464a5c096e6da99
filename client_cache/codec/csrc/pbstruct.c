/* client_cache.codec._codec.protobuf_struct_plans and the struct side of the protobuf
 * decoder: a plan per (message, struct class) says which of the message's fields the
 * struct has, under which attribute name, and which plan reads the messages they hold;
 * the decoder (protobuf.c) reads a message with a plan into its struct, calling the
 * class with the fields as keywords, instead of into a dict. The plans are made by
 * client_cache.codec._protobuf_structs from the struct classes of client_cache.codec.structs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "pbstruct.h"
#include "protobuf.h"
#include "strtable.h"
#include "values.h"

#define PLANS_CAPSULE "client_cache.codec.protobuf.struct_plans"

static void
plans_free(PyObject *capsule)
{
    StructPlans *plans = PyCapsule_GetPointer(capsule, PLANS_CAPSULE);
    if (plans == NULL) {
        return;
    }
    for (int i = 0; i < plans->count; i++) {
        StructPlan *p = &plans->plans[i];
        Py_XDECREF(p->cls);
        Py_XDECREF(p->names);
        Py_XDECREF(p->layout);
        PyMem_Free(p->child);
        PyMem_Free(p->mode);
    }
    PyMem_Free(plans->plans);
    PyMem_Free(plans);
}

const StructPlans *
struct_plans_of(PyObject *capsule, const void *schema)
{
    const StructPlans *plans = PyCapsule_GetPointer(capsule, PLANS_CAPSULE);
    if (plans != NULL && plans->schema != schema) {
        PyErr_SetString(PyExc_ValueError, "protobuf: struct plans of another schema");
        return NULL;
    }
    return plans;
}

static int
usage(const char *what)
{
    PyErr_Format(PyExc_TypeError, "protobuf_struct_plans: %s", what);
    return -1;
}

/* Plan i from its spec (cls or None, names or None, message, child, mode). */
static int
compile_plan(PyObject *schema_capsule, StructPlans *plans, StructPlan *p, PyObject *spec)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 5) {
        return usage("a plan is (cls, names, message, child, mode)");
    }
    PyObject *cls = PyTuple_GET_ITEM(spec, 0), *names = PyTuple_GET_ITEM(spec, 1);
    PyObject *child = PyTuple_GET_ITEM(spec, 3), *mode = PyTuple_GET_ITEM(spec, 4);
    if ((cls == Py_None) != (names == Py_None) || (cls != Py_None && !PyCallable_Check(cls))
        || (names != Py_None && !PyDict_Check(names))) {
        return usage("a plan has a class and its names, or neither (inline)");
    }
    long message = PyLong_AsLong(PyTuple_GET_ITEM(spec, 2));
    if (message == -1 && PyErr_Occurred()) {
        return -1;
    }
    const void *schema;
    int count = protobuf_field_count(schema_capsule, message, &schema);
    if (count < 0) {
        return -1;
    }
    plans->schema = schema;
    if (!PyTuple_Check(child) || !PyTuple_Check(mode) || PyTuple_GET_SIZE(child) != count
        || PyTuple_GET_SIZE(mode) != count) {
        return usage("child and mode hold one entry per field of the message");
    }
    p->message = (int)message;
    p->count = count;
    p->child = PyMem_Calloc((size_t)count + 1, sizeof(int));
    p->mode = PyMem_Calloc((size_t)count + 1, 1);
    if (p->child == NULL || p->mode == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int j = 0; j < count; j++) {
        long c = PyLong_AsLong(PyTuple_GET_ITEM(child, j));
        long m = PyLong_AsLong(PyTuple_GET_ITEM(mode, j));
        if (PyErr_Occurred()) {
            return -1;
        }
        if (c < -1 || c >= plans->count || m < 0 || m > (PLAN_SKIP | PLAN_TUPLE)) {
            return usage("a child plan or a mode out of range");
        }
        p->child[j] = (int)c;
        p->mode[j] = (unsigned char)m;
    }
    if (cls != Py_None) {
        p->cls = Py_NewRef(cls);
        p->names = Py_NewRef(names);
        p->layout = Py_XNewRef(struct_layout(cls)); /* looked up once, not per struct */
        if (p->layout == NULL && PyErr_Occurred()) {
            return -1;
        }
    }
    return 0;
}

PyObject *
protobuf_struct_plans(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyTuple_Check(args[1])) {
        usage("protobuf_struct_plans(schema, plans: tuple)");
        return NULL;
    }
    StructPlans *plans = PyMem_Calloc(1, sizeof(StructPlans));
    if (plans == NULL) {
        return PyErr_NoMemory();
    }
    PyObject *capsule = PyCapsule_New(plans, PLANS_CAPSULE, plans_free);
    if (capsule == NULL) {
        PyMem_Free(plans);
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args[1]);
    plans->plans = PyMem_Calloc((size_t)n + 1, sizeof(StructPlan));
    if (plans->plans == NULL) {
        Py_DECREF(capsule);
        return PyErr_NoMemory();
    }
    plans->count = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (compile_plan(args[0], plans, &plans->plans[i], PyTuple_GET_ITEM(args[1], i)) < 0) {
            Py_DECREF(capsule);
            return NULL;
        }
    }
    return capsule;
}

#define LOCAL_KEYWORDS 64

PyObject *
struct_of_pairs(const StructPlan *plan, PyObject *const *pairs, const unsigned char *made,
                Py_ssize_t count, int share, int *out)
{
    PyObject *local[LOCAL_KEYWORDS];
    PyObject **values = count <= LOCAL_KEYWORDS ? local
        : PyMem_Malloc((size_t)count * sizeof(PyObject *));
    PyObject *attrs = PyTuple_New(count), *result = NULL;
    int what = IMMUTABLE;
    if (values == NULL || attrs == NULL) {
        if (values == NULL) {
            PyErr_NoMemory();
        }
        goto done;
    }
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *attr = PyDict_GetItemWithError(plan->names, pairs[2 * i]);
        if (attr == NULL) {
            if (PyErr_Occurred()) {
                goto done;
            }
            continue; /* a field the struct leaves out */
        }
        PyTuple_SET_ITEM(attrs, n, Py_NewRef(attr));
        values[n++] = pairs[2 * i + 1];
        what = (what & made[i] & IMMUTABLE) ? IMMUTABLE | ((what | made[i]) & FRESH) : 0;
    }
    if (n < count) { /* the names of the fields given, only */
        PyObject *given = PyTuple_GetSlice(attrs, 0, n);
        if (given == NULL) {
            goto done;
        }
        Py_SETREF(attrs, given);
    }
    result = PyObject_Vectorcall(plan->cls, values, 0, n > 0 ? attrs : NULL);
    if (result != NULL && what) {
        PyObject *layout = plan->layout; /* frozen, or not immutable at all */
        if (layout == NULL || !*(const Py_ssize_t *)PyBytes_AS_STRING(layout)) {
            what = 0;
        }
        else if (what == IMMUTABLE && share) {
            const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(layout);
            Py_ssize_t fields = PyBytes_GET_SIZE(layout) / (Py_ssize_t)sizeof(Py_ssize_t) - 1;
            Py_SETREF(result, shared_value(result, at + 1, fields));
        }
    }
    *out = what;
done:
    Py_XDECREF(attrs);
    if (values != local) {
        PyMem_Free(values);
    }
    return result;
}

PyObject *
list_to_tuple(PyObject *list, int untrack)
{
    PyObject *tuple = PyList_AsTuple(list);
    Py_DECREF(list);
    if (tuple != NULL && untrack && PyObject_GC_IsTracked(tuple)
        && !keeps_tracked(((PyTupleObject *)tuple)->ob_item, PyTuple_GET_SIZE(tuple))) {
        PyObject_GC_UnTrack(tuple);
    }
    return tuple;
}
