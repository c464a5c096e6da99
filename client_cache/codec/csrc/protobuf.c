/* client_cache.codec._codec's protobuf messages (see pbdecoder.h): a message's fields read
 * into the dict its JSON gives, Go's zero values written and omitempty ones left out, or,
 * in struct mode, into the struct class its plan names (pbstruct.c), with the walk's
 * sharing done while reading (walk.c). client_cache.codec.protobuf holds the same rules in
 * Python for where this part is not built. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "pbdecoder.h"
#include "pbstruct.h"
#include "shapes.h"
#include "strtable.h"
#include "values.h"

/* What a container of parts made a and b is: immutable when both are (fresh when
 * either is), else neither. */
static inline int
combined(int a, int b)
{
    return (a & b & IMMUTABLE) ? IMMUTABLE | ((a | b) & FRESH) : 0;
}

/* tuple (a new reference, taken; NULL passed on), whose items are what made says, in
 * struct mode the equal one of the value table when it holds only immutable values none
 * of which is fresh (as the walk shares them: walk.c); d->made set to made. */
static PyObject *
shared_tuple_of(Decoder *d, PyObject *tuple, int made)
{
    d->made = made;
    if (tuple != NULL && made == IMMUTABLE && d->plans != NULL && (d->flags & SHARE)
        && PyTuple_GET_SIZE(tuple) > 0) {
        Py_SETREF(tuple, shared_value(tuple, NULL, PyTuple_GET_SIZE(tuple)));
    }
    return tuple;
}

int
pb_push_pair(Decoder *d, PyObject *name, PyObject *value, int made)
{
    Py_ssize_t at = d->pairs.top / 2;
    if (at >= d->pair_flags_size) {
        Py_ssize_t size = d->pair_flags_size ? d->pair_flags_size * 2 : 128;
        unsigned char *flags = PyMem_Realloc(d->pair_flags, (size_t)size);
        if (flags == NULL) {
            Py_DECREF(value);
            PyErr_NoMemory();
            return -1;
        }
        d->pair_flags = flags;
        d->pair_flags_size = size;
    }
    if (ref_push(&d->pairs, Py_NewRef(name)) < 0) {
        Py_DECREF(value);
        return -1;
    }
    d->pair_flags[at] = (unsigned char)made;
    return ref_push(&d->pairs, value);
}

/* The value of type t read from one field (a number, or a span). */
static PyObject *
scalar(Decoder *d, int t, const Wire *f, int depth)
{
    uint64_t number = f->value;
    Py_ssize_t start = f->start, end = f->end;
    const Type *type = &d->schema->types[t];
    int kind = type->kind;
    d->made = IMMUTABLE; /* numbers and bools; what else is made says what it is */
    if (kind == T_PTR) {
        return scalar(d, type->ref, f, depth);
    }
    /* the one wire type of each kind, as Go's generated decoders require it: varints
     * for numbers and bools, fixed64 and fixed32 for floats, length-delimited else */
    int wire = kind >= T_BOOL && kind <= T_UINT64 ? 0 : kind == T_FLOAT64 ? 1
               : kind == T_FLOAT32 ? 5 : 2;
    if (f->wire != wire) {
        return pb_malformed("a field of the wrong wire type");
    }
    switch (kind) {
    case T_STRING: return pb_string(d, start, end);
    case T_BOOL: return PyBool_FromLong(number != 0);
    case T_INT32: return PyLong_FromLong((int32_t)(uint32_t)number);
    case T_INT64: return PyLong_FromLongLong((int64_t)number);
    case T_UINT32: return PyLong_FromUnsignedLong((uint32_t)number);
    case T_UINT64: return PyLong_FromUnsignedLongLong(number);
    case T_BYTES:
        d->made = IMMUTABLE | FRESH;
        return pb_base64(d, start, end);
    case T_FLOAT64:
    case T_FLOAT32: {
        double v;
        if (kind == T_FLOAT64) {
            memcpy(&v, &number, 8);
        }
        else {
            float single;
            uint32_t bits = (uint32_t)number;
            memcpy(&single, &bits, 4);
            v = single;
        }
        if (v == floor(v) && fabs(v) < 1e18) {
            return PyLong_FromLongLong((long long)v); /* Go writes it without a point */
        }
        return PyFloat_FromDouble(v);
    }
    case T_MESSAGE: return pb_message(d, type->ref, start, end, depth + 1);
    case T_ITEMS: {
        PyObject *list = PyList_New(0);
        Py_ssize_t pos = start;
        int made = IMMUTABLE;
        while (list != NULL && pos < end) {
            Wire f;
            if (pb_next_field(d->buf, &pos, end, &f) < 0) {
                Py_CLEAR(list);
                break;
            }
            if (f.number == 1) {
                PyObject *item = scalar(d, d->schema->types[type->ref].ref, &f, depth);
                made = combined(made, d->made);
                if (item == NULL || PyList_Append(list, item) < 0) {
                    Py_XDECREF(item);
                    Py_CLEAR(list);
                    break;
                }
                Py_DECREF(item);
            }
        }
        d->made = 0;
        if (list != NULL && d->tuples) {
            return shared_tuple_of(d, list_to_tuple(list, d->flags & UNTRACK), made);
        }
        return list;
    }
    default:
        return pb_special(d, kind, start, end);
    }
}

/* The JSON of a field the message left out: the Go zero value's. */
static PyObject *
zero(Decoder *d, int t, int depth)
{
    const Type *type = &d->schema->types[t];
    d->made = IMMUTABLE;
    switch (type->kind) {
    case T_STRING: return Py_NewRef(pb_empty_str);
    case T_BOOL: Py_RETURN_FALSE;
    case T_INT32: case T_INT64: case T_UINT32: case T_UINT64: case T_FLOAT64:
    case T_FLOAT32: case T_INTORSTRING:
        return PyLong_FromLong(0);
    case T_MESSAGE: return pb_message(d, type->ref, 0, 0, depth + 1);
    case T_QUANTITY: return Py_NewRef(pb_zero_quantity);
    case T_DURATION: return Py_NewRef(pb_zero_duration);
    default: Py_RETURN_NONE;
    }
}

/* Whether omitempty leaves this value (of type t) out. */
static int
is_empty(const Type *type, PyObject *value)
{
    switch (type->kind) {
    case T_STRING: return PyUnicode_GET_LENGTH(value) == 0;
    case T_BYTES: return value == Py_None || PyUnicode_GET_LENGTH(value) == 0;
    case T_BOOL: return value == Py_False;
    case T_INT32: case T_INT64: case T_UINT32: case T_UINT64: case T_FLOAT64:
    case T_FLOAT32: {
        int overflow;
        return PyLong_Check(value) && PyLong_AsLongLongAndOverflow(value, &overflow) == 0
            && !overflow;
    }
    case T_LIST: return value == Py_None || PyList_GET_SIZE(value) == 0;
    case T_MAP: return value == Py_None || PyDict_GET_SIZE(value) == 0;
    case T_PTR: return value == Py_None;
    default: return 0; /* structs: omitempty never leaves them out */
    }
}

/* A map entry (key = 1, value = 2) put into dict. */
static int
map_entry(Decoder *d, const Type *type, PyObject *dict, Py_ssize_t start, Py_ssize_t end,
          int depth)
{
    PyObject *key = NULL, *value = NULL;
    Py_ssize_t pos = start;
    int result = -1;
    while (pos < end) {
        Wire f;
        if (pb_next_field(d->buf, &pos, end, &f) < 0) {
            goto done;
        }
        if (f.number == 1 || f.number == 2) {
            PyObject *got = scalar(d, f.number == 1 ? type->key : type->ref, &f, depth);
            if (got == NULL) {
                goto done;
            }
            Py_XSETREF(*(f.number == 1 ? &key : &value), got);
        }
    }
    if (key == NULL && (key = zero(d, type->key, depth)) == NULL) {
        goto done;
    }
    if (value == NULL && (value = zero(d, type->ref, depth)) == NULL) {
        goto done;
    }
    result = PyDict_SetItem(dict, key, value);
done:
    Py_XDECREF(key);
    Py_XDECREF(value);
    return result;
}

/* Append value to the list in *slot (made when NULL). */
static int
append(PyObject **slot, PyObject *value)
{
    if (*slot == NULL && (*slot = PyList_New(0)) == NULL) {
        return -1;
    }
    return PyList_Append(*slot, value);
}

/* One occurrence of field f, read into its slot (replaced, appended to or merged), and
 * what the slot's value is (IMMUTABLE, FRESH) into *made. */
static int
read_field(Decoder *d, const Field *f, PyObject **slot, unsigned char *made,
           Py_ssize_t *span, const Wire *w, int depth)
{
    Py_ssize_t start = w->start, end = w->end;
    const Type *type = &d->schema->types[f->type];
    if (f->inline_) { /* an embedded struct: a message, read after the others */
        if (w->wire != 2) {
            pb_malformed("a field of the wrong wire type");
            return -1;
        }
        span[0] = start;
        span[1] = end;
        return 0;
    }
    if (type->kind == T_MAP) {
        if (w->wire != 2) { /* an entry is a message */
            pb_malformed("a field of the wrong wire type");
            return -1;
        }
        *made = 0;
        if (*slot == NULL && (*slot = PyDict_New()) == NULL) {
            return -1;
        }
        return map_entry(d, type, *slot, start, end, depth);
    }
    if (type->kind == T_LIST) {
        const Type *elem = &d->schema->types[type->ref];
        if (*slot == NULL) {
            *made = IMMUTABLE; /* so far: no item */
        }
        if (w->wire == 2 && elem->kind >= T_BOOL && elem->kind <= T_UINT64) { /* packed */
            Py_ssize_t pos = start;
            while (pos < end) {
                Wire one = {0, 0, 0, 0, 0};
                if (pb_varint(d->buf, &pos, end, &one.value) < 0) {
                    return -1;
                }
                PyObject *item = scalar(d, type->ref, &one, depth);
                if (item == NULL || append(slot, item) < 0) {
                    Py_XDECREF(item);
                    return -1;
                }
                Py_DECREF(item);
            }
            return 0; /* numbers: still what it was */
        }
        PyObject *item = scalar(d, type->ref, w, depth);
        *made = (unsigned char)combined(*made, d->made);
        int result = item == NULL ? -1 : append(slot, item);
        Py_XDECREF(item);
        return result;
    }
    PyObject *value = scalar(d, f->type, w, depth);
    if (value == NULL) {
        return -1;
    }
    *made = (unsigned char)d->made;
    Py_XSETREF(*slot, value);
    return 0;
}

/* Untrack a finished list or dict whose members the collector need not see. */
static void
untrack(Decoder *d, PyObject *container)
{
    if (!(d->flags & UNTRACK) || !PyObject_GC_IsTracked(container)) {
        return;
    }
    if (PyList_CheckExact(container)) {
        if (!keeps_tracked(((PyListObject *)container)->ob_item, PyList_GET_SIZE(container))) {
            PyObject_GC_UnTrack(container);
        }
        return;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(container, &pos, &key, &value)) {
        if (keeps_tracked(&value, 1)) {
            return;
        }
    }
    PyObject_GC_UnTrack(container);
}

/* The message's fields, read from buf[start:end], pushed on the decoder's stack as
 * name, value (inline structs' fields in their place). */
#define LOCAL_FIELDS 64
static int
message_pairs(Decoder *d, int index, Py_ssize_t start, Py_ssize_t end, int depth)
{
    if (depth > MAX_DEPTH) {
        pb_malformed("messages nested too deep");
        return -1;
    }
    const Message *m = &d->schema->messages[index];
    /* with a plan, each field is read with the plan of what it holds (d->plan) */
    int own_plan = d->plan, own_tuples = d->tuples;
    const StructPlan *plan = d->plans != NULL && own_plan >= 0 ? &d->plans->plans[own_plan]
        : NULL;
    if (plan == NULL) {
        d->tuples = 0; /* a dict's lists are lists, whatever holds the dict */
    }
    PyObject *local_slots[LOCAL_FIELDS];
    Py_ssize_t local_spans[2 * LOCAL_FIELDS];
    unsigned char local_made[LOCAL_FIELDS];
    PyObject **slots = local_slots;
    Py_ssize_t *spans = local_spans;
    unsigned char *made = local_made; /* what each slot's value is: IMMUTABLE, FRESH */
    int result = -1;
    if (m->count <= LOCAL_FIELDS) { /* only the slots this message uses */
        memset(local_slots, 0, (size_t)m->count * sizeof(PyObject *));
        memset(local_spans, 0, 2 * (size_t)m->count * sizeof(Py_ssize_t));
        memset(local_made, 0, (size_t)m->count);
    }
    else {
        slots = PyMem_Calloc((size_t)m->count, sizeof(PyObject *));
        spans = PyMem_Calloc(2 * (size_t)m->count, sizeof(Py_ssize_t));
        made = PyMem_Calloc((size_t)m->count, 1);
        if (slots == NULL || spans == NULL || made == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_ssize_t pos = start;
    while (pos < end) {
        Wire f;
        if (pb_next_field(d->buf, &pos, end, &f) < 0) {
            goto done;
        }
        int i = f.number <= (uint32_t)m->max_number ? m->by_number[f.number] - 1 : -1;
        if (i < 0 || (plan != NULL && (plan->mode[i] & PLAN_SKIP))) {
            continue;
        }
        if (plan != NULL) {
            d->plan = plan->child[i];
            d->tuples = plan->mode[i] & PLAN_TUPLE;
        }
        if (read_field(d, &m->fields[i], &slots[i], &made[i], &spans[2 * i], &f, depth)
            < 0) {
            goto done;
        }
    }
    for (int i = 0; i < m->count; i++) {
        const Field *f = &m->fields[i];
        const Type *type = &d->schema->types[f->type];
        if (plan != NULL) {
            if (plan->mode[i] & PLAN_SKIP) {
                continue;
            }
            d->plan = plan->child[i];
            d->tuples = plan->mode[i] & PLAN_TUPLE;
        }
        if (f->inline_) {
            if (message_pairs(d, type->ref, spans[2 * i], spans[2 * i + 1], depth + 1) < 0) {
                goto done;
            }
            continue;
        }
        PyObject *value = slots[i];
        int value_made = made[i];
        slots[i] = NULL;
        if (value == NULL) {
            if ((value = zero(d, f->type, depth)) == NULL) {
                goto done;
            }
            value_made = d->made;
        }
        if (type->kind == T_MAP && (d->flags & COMPACT) && PyDict_CheckExact(value)) {
            Py_SETREF(value, shaped_dict(value)); /* labels: one key table for alike maps */
            if (value == NULL) {
                goto done;
            }
        }
        if (type->kind == T_LIST || type->kind == T_MAP) {
            untrack(d, value);
        }
        int omit = f->omitempty && is_empty(type, value);
        if (f->omitzero && !omit) {
            PyObject *z = zero(d, f->type, depth);
            omit = z == NULL ? -1 : PyObject_RichCompareBool(value, z, Py_EQ);
            Py_XDECREF(z);
        }
        if (omit) {
            Py_DECREF(value);
            if (omit < 0) {
                goto done;
            }
            continue;
        }
        if (type->kind == T_MAP) {
            value_made = 0;
        }
        else if (type->kind == T_LIST && PyList_CheckExact(value)) {
            if (!d->tuples) {
                value_made = 0; /* a list */
            }
            else if ((value = shared_tuple_of(d, list_to_tuple(value, d->flags & UNTRACK),
                                              value_made)) == NULL) {
                goto done;
            }
        }
        if (pb_push_pair(d, f->name, value, value_made) < 0) {
            goto done;
        }
    }
    result = 0;
done:
    d->plan = own_plan;
    d->tuples = own_tuples;
    if (slots != NULL) {
        for (int i = 0; i < m->count; i++) {
            Py_XDECREF(slots[i]);
        }
    }
    if (slots != local_slots) {
        PyMem_Free(slots);
        PyMem_Free(spans);
        PyMem_Free(made);
    }
    return result;
}

/* The message as a dict; its first pairs those already on the stack from base on. */
PyObject *
pb_message_after(Decoder *d, Py_ssize_t base, int index, Py_ssize_t start,
                 Py_ssize_t end, int depth)
{
    PyObject *dict = NULL;
    const StructPlan *plan = d->plans != NULL && d->plan >= 0 ? &d->plans->plans[d->plan]
        : NULL;
    if (message_pairs(d, index, start, end, depth) == 0) {
        PyObject *const *pairs = d->pairs.items + base;
        Py_ssize_t count = (d->pairs.top - base) / 2;
        if (plan != NULL && plan->cls != NULL) { /* a struct: never tracked */
            dict = struct_of_pairs(plan, pairs, d->pair_flags + base / 2, count,
                                   (d->flags & SHARE) && depth > 0, &d->made);
            ref_unwind(&d->pairs, base);
            return dict;
        }
        d->made = 0;
        dict = (d->flags & COMPACT) ? shaped_from_pairs(pairs, count)
            : dict_of_pairs(pairs, count);
        if (dict != NULL) {
            untrack(d, dict);
        }
    }
    ref_unwind(&d->pairs, base);
    return dict;
}

PyObject *
pb_message(Decoder *d, int index, Py_ssize_t start, Py_ssize_t end, int depth)
{
    return pb_message_after(d, d->pairs.top, index, start, end, depth);
}
