/* client_cache._sharing.protobuf_*: Kubernetes protobuf messages to the dicts their JSON
 * gives, driven by a compiled schema (client_cache.protobuf says what each Go shape reads
 * as, and holds the same rules in Python for where this part is not built).
 *
 * protobuf_schema(types, messages, duration, loads) compiles the schema into a capsule:
 *   types: (kind, ref, key) per type; ref is a message index for MESSAGE, the element's
 *          type index for PTR, LIST, ITEMS and MAP (its value), key a map's key type;
 *   messages: per message, a tuple of fields (number, name, type, omitempty, omitzero,
 *          inline), in Go's (JSON's) order;
 *   duration: a callable giving a Go duration's text from its nanoseconds;
 *   loads: the JSON decoder, for raw extensions and fieldsV1 (JSON held as bytes).
 * protobuf_decode(schema, flags, message, data, start, end[, kind, api_version]) decodes
 * data[start:end] as that message (kind and apiVersion its first keys when given), with the walk's flags (SHARE, UNTRACK, COMPACT) applied while decoding.
 * A message that is not well formed raises ValueError. Everything runs with the GIL. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "_decode.h"
#include "_pbstruct.h"
#include "_protobuf.h"
#include "_shapes.h"
#include "_sharing.h"
#include "_values.h"

enum {
    T_STRING, T_BOOL, T_INT32, T_INT64, T_UINT32, T_UINT64, T_BYTES, T_FLOAT64, T_FLOAT32,
    T_MESSAGE, T_TIME, T_MICROTIME, T_DURATION, T_INTORSTRING, T_QUANTITY, T_RAWJSON,
    T_PTR, T_LIST, T_MAP, T_ITEMS, T_KINDS
};

typedef struct { int kind, ref, key; } Type;
typedef struct {
    int number, type, omitempty, omitzero, inline_;
    PyObject *name;
} Field;
typedef struct {
    Field *fields;
    int count;
    int *by_number; /* field index + 1 by number; 0: not a field */
    int max_number;
} Message;
typedef struct {
    Type *types;
    int ntypes;
    Message *messages;
    int nmessages;
    PyObject *duration, *loads;
} Schema;

#define CAPSULE "client_cache.protobuf.schema"
#define GO_ZERO_SECONDS (-62135596800LL)

typedef struct {
    const Schema *schema;
    const unsigned char *buf;
    int flags;
    RefStack pairs; /* name, value pairs of the messages being read */
    const StructPlans *plans; /* struct mode (NULL: dicts only) */
    int plan;   /* the plan of the message read next; -1: a dict */
    int tuples; /* the field being read wants its lists as tuples */
    int made;   /* IMMUTABLE and FRESH, of the value made last (struct mode's sharing) */
    unsigned char *pair_flags; /* per pair on the stack: its value's IMMUTABLE, FRESH */
    Py_ssize_t pair_flags_size;
} Decoder;

/* What a container of parts made a and b is: immutable when both are (fresh when
 * either is), else neither. */
static inline int
combined(int a, int b)
{
    return (a & b & IMMUTABLE) ? IMMUTABLE | ((a | b) & FRESH) : 0;
}

/* tuple (a new reference, taken; NULL passed on), whose items are what made says, in
 * struct mode the equal one of the value table when it holds only immutable values none
 * of which is fresh (as the walk shares them: _sharing.c); d->made set to made. */
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

static PyObject *empty_str, *zero_quantity, *zero_duration, *kind_key, *api_version_key;

static PyObject *
malformed(const char *what)
{
    PyErr_Format(PyExc_ValueError, "protobuf: %s", what);
    return NULL;
}

/* Push name and value (a new reference, taken) on the decoder's stack, with what the
 * value is (IMMUTABLE, FRESH). */
static int
push_pair(Decoder *d, PyObject *name, PyObject *value, int made)
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

/* The varint at *pos (before end), its end stored in *pos; -1 with ValueError set. */
static int
varint(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, uint64_t *out)
{
    uint64_t result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (*pos >= end) {
            break;
        }
        unsigned char byte = buf[(*pos)++];
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) {
            *out = result;
            return 0;
        }
    }
    malformed("a varint runs past its message or is too long");
    return -1;
}

/* One field as read: its number and wire type, a varint or fixed number in value, a
 * length-delimited value's span in start and end. */
typedef struct {
    uint32_t number;
    int wire;
    uint64_t value;
    Py_ssize_t start, end;
} Wire;

/* The field at *pos (before end) into *f, *pos moved past it; -1 with ValueError set. */
static int
next_field(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, Wire *f)
{
    uint64_t key;
    *f = (Wire){0, 0, 0, 0, 0};
    if (varint(buf, pos, end, &key) < 0) {
        return -1;
    }
    f->number = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    switch (f->wire) {
    case 0:
        return varint(buf, pos, end, &f->value);
    case 2: {
        uint64_t length;
        if (varint(buf, pos, end, &length) < 0) {
            return -1;
        }
        if (length > (uint64_t)(end - *pos)) {
            malformed("a field runs past its message");
            return -1;
        }
        f->start = *pos;
        *pos += (Py_ssize_t)length;
        f->end = *pos;
        return 0;
    }
    case 1:
    case 5: {
        int size = f->wire == 1 ? 8 : 4;
        if (end - *pos < size) {
            malformed("a field runs past its message");
            return -1;
        }
        uint64_t v = 0;
        for (int i = size - 1; i >= 0; i--) {
            v = v << 8 | buf[*pos + i];
        }
        *pos += size;
        f->value = v;
        return 0;
    }
    default:
        malformed("a wire type that is not read");
        return -1;
    }
}

static PyObject *
string(Decoder *d, Py_ssize_t start, Py_ssize_t end)
{
    const char *s = (const char *)d->buf + start;
    Py_ssize_t length = end - start;
    d->made = IMMUTABLE;
    if (length == 0) {
        return Py_NewRef(empty_str);
    }
    int ascii = 1;
    for (Py_ssize_t i = 0; i < length && ascii; i++) {
        ascii = (unsigned char)s[i] < 0x80;
    }
    if (ascii && (d->flags & SHARE)) {
        int fresh = 0;
        PyObject *text = shared_ascii_of(s, length, &fresh);
        d->made = fresh ? IMMUTABLE | FRESH : IMMUTABLE;
        return text;
    }
    if (ascii) {
        return PyUnicode_FromStringAndSize(s, length);
    }
    d->made = IMMUTABLE | FRESH; /* not told: never looked up among the values */
    PyObject *text = PyUnicode_DecodeUTF8(s, length, "replace");
    if (text != NULL && (d->flags & SHARE)) {
        Py_SETREF(text, shared_str(text));
    }
    return text;
}

static PyObject *
base64(Decoder *d, Py_ssize_t start, Py_ssize_t end)
{
    static const char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *in = d->buf + start;
    Py_ssize_t n = end - start, size = (n + 2) / 3 * 4;
    PyObject *out = PyUnicode_New(size, 127);
    if (out == NULL) {
        return NULL;
    }
    char *o = PyUnicode_DATA(out);
    for (Py_ssize_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0)
            | (i + 2 < n ? in[i + 2] : 0);
        *o++ = digits[v >> 18 & 63];
        *o++ = digits[v >> 12 & 63];
        *o++ = i + 1 < n ? digits[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? digits[v & 63] : '=';
    }
    return out;
}

/* The fields of the message buf[start:end] with these numbers: varints in values[i],
 * spans in spans[2i], spans[2i + 1]; found[i] set for those present. */
static int
small_message(Decoder *d, Py_ssize_t start, Py_ssize_t end, int count, uint64_t *values,
              Py_ssize_t *spans, int *found)
{
    Py_ssize_t pos = start;
    while (pos < end) {
        Wire f;
        if (next_field(d->buf, &pos, end, &f) < 0) {
            return -1;
        }
        if (f.number >= 1 && f.number <= (uint32_t)count) {
            values[f.number - 1] = f.value;
            spans[2 * (f.number - 1)] = f.start;
            spans[2 * (f.number - 1) + 1] = f.end;
            found[f.number - 1] = 1;
        }
    }
    return 0;
}

/* Days since 1970-01-01 as a civil date (proleptic Gregorian). */
static void
civil(int64_t days, int64_t *year, int *month, int *day)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    int64_t doe = days - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *day = (int)(doy - (153 * mp + 2) / 5 + 1);
    *month = (int)(mp < 10 ? mp + 3 : mp - 9);
    *year = yoe + era * 400 + (*month <= 2);
}

static PyObject *
timestamp(Decoder *d, Py_ssize_t start, Py_ssize_t end, int micro)
{
    if (start == end) {
        Py_RETURN_NONE; /* no bytes: Go's zero time */
    }
    uint64_t values[2] = {0, 0};
    Py_ssize_t spans[4];
    int found[2] = {0, 0};
    if (small_message(d, start, end, 2, values, spans, found) < 0) {
        return NULL;
    }
    int64_t seconds = (int64_t)values[0];
    int32_t nanos = (int32_t)(uint32_t)values[1];
    if (seconds == GO_ZERO_SECONDS && (nanos == 0 || !micro)) {
        Py_RETURN_NONE;
    }
    int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
    int64_t rest = seconds - days * 86400, year;
    int month, day;
    civil(days, &year, &month, &day);
    if (year < 0 || year > 9999) {
        return malformed("a time outside years 0-9999");
    }
    char text[40];
    int n = snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d", (int)year, month,
                     day, (int)(rest / 3600), (int)(rest / 60 % 60), (int)(rest % 60));
    if (micro) {
        int32_t micros = nanos / 1000 % 1000000;
        n += snprintf(text + n, sizeof text - (size_t)n, ".%06d",
                      micros < 0 ? micros + 1000000 : micros);
    }
    text[n++] = 'Z';
    /* times written in the same second repeat from object to object */
    if (d->flags & SHARE) {
        int fresh = 0;
        PyObject *shared = shared_ascii_of(text, n, &fresh);
        d->made = fresh ? IMMUTABLE | FRESH : IMMUTABLE;
        return shared;
    }
    return PyUnicode_FromStringAndSize(text, n);
}

static PyObject *message(Decoder *d, int index, Py_ssize_t start, Py_ssize_t end, int depth);

/* A special type's value from its message buf[start:end]. */
static PyObject *
special(Decoder *d, int kind, Py_ssize_t start, Py_ssize_t end)
{
    if (kind == T_TIME || kind == T_MICROTIME) {
        return timestamp(d, start, end, kind == T_MICROTIME);
    }
    uint64_t values[3] = {0, 0, 0};
    Py_ssize_t spans[6] = {0, 0, 0, 0, 0, 0};
    int found[3] = {0, 0, 0};
    if (small_message(d, start, end, 3, values, spans, found) < 0) {
        return NULL;
    }
    switch (kind) {
    case T_QUANTITY:
        return found[0] ? string(d, spans[0], spans[1]) : Py_NewRef(zero_quantity);
    case T_DURATION:
        d->made = IMMUTABLE | FRESH;
        return PyObject_CallFunction(d->schema->duration, "L", (long long)values[0]);
    case T_INTORSTRING:
        if (values[0] == 1) {
            return found[2] ? string(d, spans[4], spans[5]) : Py_NewRef(empty_str);
        }
        return PyLong_FromLong((int32_t)(uint32_t)values[1]);
    default: /* T_RAWJSON */
        if (!found[0] || spans[0] == spans[1]) {
            Py_RETURN_NONE;
        }
        d->made = 0; /* plain JSON: not among the values shared */
        {
            const char *raw = (const char *)d->buf + spans[0];
            PyObject *got = decode_json(d->flags, raw, spans[1] - spans[0]);
            if (got == NULL || !is_declined(got)) {
                return got;
            }
            Py_DECREF(got); /* what our decoder declines, the JSON decoder says */
            return PyObject_CallFunction(d->schema->loads, "y#", raw, spans[1] - spans[0]);
        }
    }
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
    int wants_bytes = !(kind >= T_BOOL && kind <= T_UINT64) && kind != T_FLOAT64
        && kind != T_FLOAT32;
    if (wants_bytes != (f->wire == 2)) {
        return malformed("a field of the wrong wire type");
    }
    switch (kind) {
    case T_STRING: return string(d, start, end);
    case T_BOOL: return PyBool_FromLong(number != 0);
    case T_INT32: return PyLong_FromLong((int32_t)(uint32_t)number);
    case T_INT64: return PyLong_FromLongLong((int64_t)number);
    case T_UINT32: return PyLong_FromUnsignedLong((uint32_t)number);
    case T_UINT64: return PyLong_FromUnsignedLongLong(number);
    case T_BYTES:
        d->made = IMMUTABLE | FRESH;
        return base64(d, start, end);
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
    case T_MESSAGE: return message(d, type->ref, start, end, depth + 1);
    case T_ITEMS: {
        PyObject *list = PyList_New(0);
        Py_ssize_t pos = start;
        int made = IMMUTABLE;
        while (list != NULL && pos < end) {
            Wire f;
            if (next_field(d->buf, &pos, end, &f) < 0) {
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
        return special(d, kind, start, end);
    }
}

/* The JSON of a field the message left out: the Go zero value's. */
static PyObject *
zero(Decoder *d, int t, int depth)
{
    const Type *type = &d->schema->types[t];
    d->made = IMMUTABLE;
    switch (type->kind) {
    case T_STRING: return Py_NewRef(empty_str);
    case T_BOOL: Py_RETURN_FALSE;
    case T_INT32: case T_INT64: case T_UINT32: case T_UINT64: case T_FLOAT64:
    case T_FLOAT32: case T_INTORSTRING:
        return PyLong_FromLong(0);
    case T_MESSAGE: return message(d, type->ref, 0, 0, depth + 1);
    case T_QUANTITY: return Py_NewRef(zero_quantity);
    case T_DURATION: return Py_NewRef(zero_duration);
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
        if (next_field(d->buf, &pos, end, &f) < 0) {
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
    if (f->inline_) {
        span[0] = start;
        span[1] = end;
        return 0;
    }
    if (type->kind == T_MAP) {
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
                if (varint(d->buf, &pos, end, &one.value) < 0) {
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
        malformed("messages nested too deep");
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
        if (next_field(d->buf, &pos, end, &f) < 0) {
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
        if (push_pair(d, f->name, value, value_made) < 0) {
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
static PyObject *
message_after(Decoder *d, Py_ssize_t base, int index, Py_ssize_t start, Py_ssize_t end,
              int depth)
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

static PyObject *
message(Decoder *d, int index, Py_ssize_t start, Py_ssize_t end, int depth)
{
    return message_after(d, d->pairs.top, index, start, end, depth);
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

/* An int in 0..limit - 1 from obj; -1 with an exception set when it is not. */
static int
index_in(PyObject *obj, int limit)
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
        if ((field->number = index_in(PyTuple_GET_ITEM(f, 0), 1 << 20)) < 0
            || (field->type = index_in(PyTuple_GET_ITEM(f, 2), schema->ntypes)) < 0) {
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
        type->kind = index_in(PyTuple_GET_ITEM(t, 0), T_KINDS);
        int refs = type->kind == T_MESSAGE ? schema->nmessages : schema->ntypes;
        if (type->kind < 0 || (type->ref = index_in(PyTuple_GET_ITEM(t, 1), refs)) < 0
            || (type->key = index_in(PyTuple_GET_ITEM(t, 2), schema->ntypes)) < 0) {
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

/* Struct mode for d from the optional (plans, plan) arguments: the plan read first
 * (-1: dicts); -1 with an exception set when they are not plans of d's schema. */
static int
open_plans(Decoder *d, PyObject *const *args)
{
    d->plans = struct_plans_of(args[0], d->schema);
    if (d->plans == NULL) {
        return -1;
    }
    long plan = PyLong_AsLong(args[1]);
    if (plan == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (plan < -1 || plan >= d->plans->count) {
        PyErr_SetString(PyExc_ValueError, "protobuf: a struct plan out of range");
        return -1;
    }
    d->plan = (int)plan;
    return 0;
}

PyObject *
protobuf_decode(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6 && nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "protobuf_decode(schema, flags, message, data, "
                        "start, end[, kind, api_version])");
        return NULL;
    }
    Schema *schema = PyCapsule_GetPointer(args[0], CAPSULE);
    int flags;
    PyObject *flag_args[2] = {args[1], Py_None};
    if (schema == NULL || walk_arguments("protobuf_decode(schema, flags, ...)", flag_args, 2,
                                         &flags) < 0) {
        return NULL;
    }
    int index = index_in(args[2], schema->nmessages);
    Py_ssize_t start = PyLong_AsSsize_t(args[4]), end = PyLong_AsSsize_t(args[5]);
    if (index < 0 || PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[3], &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (start < 0 || end < start || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "protobuf_decode: the span is not in the data");
    }
    else {
        Decoder d = {.schema = schema, .buf = view.buf, .flags = flags, .plan = -1};
        if (nargs == 6 || (push_pair(&d, kind_key, Py_NewRef(args[6]), 0) == 0
                           && push_pair(&d, api_version_key, Py_NewRef(args[7]), 0) == 0)) {
            result = message_after(&d, 0, index, start, end, 0);
        }
        ref_unwind(&d.pairs, 0);
        PyMem_Free(d.pairs.items);
        PyMem_Free(d.pair_flags);
    }
    PyBuffer_Release(&view);
    return result;
}

/* The Decoder over a buffer argument, for the entries below: schema, flags and view
 * filled; -1 with an exception set. */
static int
open_decoder(PyObject *capsule, PyObject *flags_arg, PyObject *data, Decoder *d,
             Py_buffer *view)
{
    Schema *schema = PyCapsule_GetPointer(capsule, CAPSULE);
    int flags;
    PyObject *flag_args[2] = {flags_arg, Py_None};
    if (schema == NULL || walk_arguments("protobuf(schema, flags, ...)", flag_args, 2,
                                         &flags) < 0) {
        return -1;
    }
    if (PyObject_GetBuffer(data, view, PyBUF_SIMPLE) < 0) {
        return -1;
    }
    *d = (Decoder){.schema = schema, .buf = view->buf, .flags = flags, .plan = -1};
    return 0;
}

static void
close_decoder(Decoder *d, Py_buffer *view)
{
    ref_unwind(&d->pairs, 0);
    PyMem_Free(d->pairs.items);
    PyMem_Free(d->pair_flags);
    PyBuffer_Release(view);
}

/* The envelope at buf[start:end] (magic, then runtime.Unknown) decoded as the object it
 * holds, its message found in kinds by (apiVersion, kind). */
static PyObject *
envelope(Decoder *d, PyObject *kinds, Py_ssize_t start, Py_ssize_t end)
{
    if (end - start < 4 || memcmp(d->buf + start, "k8s\0", 4) != 0) {
        return malformed("the body does not start with the k8s magic");
    }
    Py_ssize_t pos = start + 4, raw[2] = {0, 0}, meta[4] = {0, 0, 0, 0};
    int found_raw = 0;
    while (pos < end) {
        Wire f;
        if (next_field(d->buf, &pos, end, &f) < 0) {
            return NULL;
        }
        if (f.wire != 2) {
            continue;
        }
        if (f.number == 1) {
            uint64_t values[2];
            int found[2] = {0, 0};
            if (small_message(d, f.start, f.end, 2, values, meta, found) < 0) {
                return NULL;
            }
        }
        else if (f.number == 2) {
            raw[0] = f.start;
            raw[1] = f.end;
            found_raw = 1;
        }
        else if (f.number == 3 && f.end > f.start) {
            return malformed("an encoded (compressed) envelope is not read");
        }
    }
    if (!found_raw) {
        return malformed("the envelope holds no object");
    }
    PyObject *api_version = string(d, meta[0], meta[1]);
    PyObject *kind = string(d, meta[2], meta[3]);
    PyObject *key = api_version && kind ? PyTuple_Pack(2, api_version, kind) : NULL;
    PyObject *index = key ? PyDict_GetItemWithError(kinds, key) : NULL;
    PyObject *result = NULL;
    if (index == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "protobuf: %R %R is not a built-in kind",
                         api_version, kind);
        }
    }
    else {
        int i = index_in(index, d->schema->nmessages);
        Py_ssize_t base = d->pairs.top;
        int plan = d->plan;
        if (d->plans != NULL && plan >= 0 && d->plans->plans[plan].message != i) {
            d->plan = -1; /* another kind (a Status): a dict */
        }
        if (i >= 0 && push_pair(d, kind_key, Py_NewRef(kind), 0) == 0
            && push_pair(d, api_version_key, Py_NewRef(api_version), 0) == 0) {
            result = message_after(d, base, i, raw[0], raw[1], 0);
        }
        d->plan = plan;
        ref_unwind(&d->pairs, base);
    }
    Py_XDECREF(key);
    Py_XDECREF(api_version);
    Py_XDECREF(kind);
    return result;
}

/* The message of a protobuf body or watch frame data[0:length], decoded. */
typedef PyObject *(*KindsReader)(Decoder *d, PyObject *kinds, Py_ssize_t length);

static PyObject *
whole_body(Decoder *d, PyObject *kinds, Py_ssize_t length)
{
    return envelope(d, kinds, 0, length);
}

static PyObject *
watch_frame(Decoder *d, PyObject *kinds, Py_ssize_t length)
{
    uint64_t values[2];
    Py_ssize_t spans[4] = {0, 0, 0, 0};
    int found[2] = {0, 0};
    if (small_message(d, 0, length, 2, values, spans, found) < 0) {
        return NULL;
    }
    if (!found[0] || spans[0] == spans[1] || !found[1]) {
        return malformed("a watch event without its type or object");
    }
    uint64_t inner[1];
    Py_ssize_t raw[2] = {0, 0};
    int has_raw[1] = {0};
    if (small_message(d, spans[2], spans[3], 1, inner, raw, has_raw) < 0) {
        return NULL;
    }
    PyObject *type = string(d, spans[0], spans[1]);
    PyObject *obj = type ? envelope(d, kinds, raw[0], raw[1]) : NULL;
    PyObject *result = obj ? PyTuple_Pack(2, type, obj) : NULL;
    Py_XDECREF(type);
    Py_XDECREF(obj);
    return result;
}

/* An entry called (schema, flags, kinds, data[, plans, plan]): data read by reader,
 * the object of the plan's message as its struct. */
static PyObject *
kinds_entry(const char *usage, PyObject *const *args, Py_ssize_t nargs, KindsReader reader)
{
    if ((nargs != 4 && nargs != 6) || !PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    Decoder d;
    Py_buffer view;
    if (open_decoder(args[0], args[1], args[3], &d, &view) < 0) {
        return NULL;
    }
    PyObject *result = nargs == 6 && open_plans(&d, args + 4) < 0 ? NULL
        : reader(&d, args[2], view.len);
    close_decoder(&d, &view);
    return result;
}

PyObject *
protobuf_object(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    return kinds_entry("protobuf_object(schema, flags, kinds, data[, plans, plan])", args, nargs,
                       whole_body);
}

PyObject *
protobuf_event(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    return kinds_entry("protobuf_event(schema, flags, kinds, frame[, plans, plan])", args,
                       nargs,
                       watch_frame);
}

PyObject *
protobuf_list_scan(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 && nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "protobuf_list_scan(schema, flags, item, "
                        "items_number, data, pos, end[, plans, plan])");
        return NULL;
    }
    Decoder d;
    Py_buffer view;
    if (open_decoder(args[0], args[1], args[4], &d, &view) < 0) {
        return NULL;
    }
    PyObject *result = NULL, *items = PyList_New(0), *head = PyList_New(0);
    if (nargs == 9 && open_plans(&d, args + 7) < 0) {
        goto done;
    }
    int item = index_in(args[2], d.schema->nmessages);
    long number = PyLong_AsLong(args[3]);
    Py_ssize_t pos = PyLong_AsSsize_t(args[5]), end = PyLong_AsSsize_t(args[6]);
    if (items == NULL || head == NULL || item < 0 || PyErr_Occurred()) {
        goto done;
    }
    if (d.plans != NULL && d.plan >= 0 && d.plans->plans[d.plan].message != item) {
        PyErr_SetString(PyExc_ValueError, "protobuf_list_scan: the plan reads another message");
        goto done;
    }
    if (pos < 0 || end < pos || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "protobuf_list_scan: the span is not in the data");
        goto done;
    }
    while (pos < end) {
        /* a field whose bytes are not all here yet ends the scan, to be resumed */
        Py_ssize_t at = pos;
        uint64_t key, length;
        if (varint(d.buf, &at, end, &key) < 0 || varint(d.buf, &at, end, &length) < 0) {
            PyErr_Clear();
            break;
        }
        if ((key & 7) != 2) {
            malformed("a list's field is not length-delimited");
            goto done;
        }
        if (length > (uint64_t)(end - at)) {
            break;
        }
        Py_ssize_t stop = at + (Py_ssize_t)length;
        PyObject *got;
        if ((long)(key >> 3) == number) {
            got = message(&d, item, at, stop, 0);
            if (got == NULL || PyList_Append(items, got) < 0) {
                Py_XDECREF(got);
                goto done;
            }
        }
        else {
            got = PyBytes_FromStringAndSize((const char *)d.buf + pos, stop - pos);
            if (got == NULL || PyList_Append(head, got) < 0) {
                Py_XDECREF(got);
                goto done;
            }
        }
        Py_DECREF(got);
        pos = stop;
    }
    result = Py_BuildValue("nOO", pos, items, head);
done:
    Py_XDECREF(items);
    Py_XDECREF(head);
    close_decoder(&d, &view);
    return result;
}

int
protobuf_init(PyObject *module)
{
    empty_str = PyUnicode_FromStringAndSize("", 0);
    zero_quantity = PyUnicode_InternFromString("0");
    zero_duration = PyUnicode_InternFromString("0s");
    kind_key = PyUnicode_InternFromString("kind");
    api_version_key = PyUnicode_InternFromString("apiVersion");
    if (empty_str == NULL || zero_quantity == NULL || zero_duration == NULL
        || kind_key == NULL || api_version_key == NULL) {
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
