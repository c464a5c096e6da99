/* client_cache.codec._codec's protobuf entries (see pbdecoder.h and protobuf.h):
 *   protobuf_decode(schema, flags, message, data, start, end[, kind, api_version]): one
 *     message of data[start:end] (kind and apiVersion its first keys when given);
 *   protobuf_object / protobuf_event: a whole body or one watch frame, its envelope's
 *     (apiVersion, kind) looked up in a dict of kinds;
 *   protobuf_list_scan: a list's whole items in a span, for a list read as it arrives.
 * The walk's flags (SHARE, UNTRACK, COMPACT) apply while decoding; with (plans, plan)
 * the objects of the plan's message are its structs. A message that is not well formed
 * raises ValueError. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include "pbdecoder.h"
#include "pbstruct.h"
#include "protobuf.h"
#include "strtable.h"
#include "walk.h"

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

/* The Decoder of an entry called with nargs arguments, (schema, flags, ...) and its
 * buffer at args[data]: plain arguments, or plain and two optional ones (usage says
 * them); schema, flags and view filled. -1 with an exception set. */
static int
open_decoder(const char *usage, PyObject *const *args, Py_ssize_t nargs, Py_ssize_t plain,
             int data, Decoder *d, Py_buffer *view)
{
    if (nargs != plain && nargs != plain + 2) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    Schema *schema = pb_schema_of(args[0]);
    int flags;
    PyObject *flag_args[2] = {args[1], Py_None};
    if (schema == NULL || walk_arguments(usage, flag_args, 2, &flags) < 0) {
        return -1;
    }
    if (PyObject_GetBuffer(args[data], view, PyBUF_SIMPLE) < 0) {
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

PyObject *
protobuf_decode(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    Decoder d;
    Py_buffer view;
    if (open_decoder("protobuf_decode(schema, flags, message, data, start, end[, kind, "
                     "api_version])", args, nargs, 6, 3, &d, &view) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    int index = pb_index_in(args[2], d.schema->nmessages);
    Py_ssize_t start = PyLong_AsSsize_t(args[4]), end = PyLong_AsSsize_t(args[5]);
    if (index < 0 || PyErr_Occurred()) {
        close_decoder(&d, &view);
        return NULL;
    }
    if (start < 0 || end < start || end > view.len) {
        PyErr_SetString(PyExc_ValueError, "protobuf_decode: the span is not in the data");
    }
    else if (nargs == 6 || (pb_push_pair(&d, pb_kind_key, Py_NewRef(args[6]), 0) == 0
                            && pb_push_pair(&d, pb_api_version_key, Py_NewRef(args[7]), 0)
                            == 0)) {
        result = pb_message_after(&d, 0, index, start, end, 0);
    }
    close_decoder(&d, &view);
    return result;
}

/* The envelope at buf[start:end] (magic, then runtime.Unknown) decoded as the object it
 * holds, its message found in kinds by (apiVersion, kind). */
static PyObject *
envelope(Decoder *d, PyObject *kinds, Py_ssize_t start, Py_ssize_t end)
{
    if (end - start < 4 || memcmp(d->buf + start, "k8s\0", 4) != 0) {
        return pb_malformed("the body does not start with the k8s magic");
    }
    Py_ssize_t pos = start + 4, raw[2] = {0, 0}, meta[4] = {0, 0, 0, 0};
    int found_raw = 0, found_meta = 0;
    while (pos < end) {
        Wire f;
        if (pb_next_field(d->buf, &pos, end, &f) < 0) {
            return NULL;
        }
        if (f.wire != 2) {
            continue;
        }
        if ((f.number == 1 && found_meta) || (f.number == 2 && found_raw)) {
            /* one type and one object: a second would replace the first (Go keeps the
             * last), a padded or spliced body the server never writes */
            return pb_malformed("an envelope with a repeated type or object");
        }
        if (f.number == 1) {
            uint64_t values[2];
            int found[2] = {0, 0};
            found_meta = 1;
            if (pb_small_message(d, f.start, f.end, "22", values, meta, found) < 0) {
                return NULL;
            }
        }
        else if (f.number == 2) {
            raw[0] = f.start;
            raw[1] = f.end;
            found_raw = 1;
        }
        else if (f.number == 3 && f.end > f.start) {
            return pb_malformed("an encoded (compressed) envelope is not read");
        }
    }
    if (!found_raw) {
        return pb_malformed("the envelope holds no object");
    }
    PyObject *api_version = pb_string(d, meta[0], meta[1]);
    PyObject *kind = pb_string(d, meta[2], meta[3]);
    PyObject *key = api_version && kind ? PyTuple_Pack(2, api_version, kind) : NULL;
    PyObject *index = key ? PyDict_GetItemWithError(kinds, key) : NULL;
    PyObject *result = NULL;
    if (index == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_Format(codec_decode_error, "protobuf: %R %R is not a built-in kind",
                         api_version, kind);
        }
    }
    else {
        int i = pb_index_in(index, d->schema->nmessages);
        Py_ssize_t base = d->pairs.top;
        int plan = d->plan;
        if (d->plans != NULL && plan >= 0 && d->plans->plans[plan].message != i) {
            d->plan = -1; /* another kind (a Status): a dict */
        }
        if (i >= 0 && pb_push_pair(d, pb_kind_key, Py_NewRef(kind), 0) == 0
            && pb_push_pair(d, pb_api_version_key, Py_NewRef(api_version), 0) == 0) {
            result = pb_message_after(d, base, i, raw[0], raw[1], 0);
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
    if (pb_small_message(d, 0, length, "22", values, spans, found) < 0) {
        return NULL;
    }
    if (!found[0] || spans[0] == spans[1] || !found[1]) {
        return pb_malformed("a watch event without its type or object");
    }
    uint64_t inner[1];
    Py_ssize_t raw[2] = {0, 0};
    int has_raw[1] = {0};
    if (pb_small_message(d, spans[2], spans[3], "2", inner, raw, has_raw) < 0) {
        return NULL;
    }
    PyObject *type = pb_string(d, spans[0], spans[1]);
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
    Decoder d;
    Py_buffer view;
    if (open_decoder(usage, args, nargs, 4, 3, &d, &view) < 0) {
        return NULL;
    }
    if (!PyDict_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, usage);
        close_decoder(&d, &view);
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
                       nargs, watch_frame);
}

PyObject *
protobuf_list_scan(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    Decoder d;
    Py_buffer view;
    if (open_decoder("protobuf_list_scan(schema, flags, item, items_number, data, pos, "
                     "end[, plans, plan])", args, nargs, 7, 4, &d, &view) < 0) {
        return NULL;
    }
    PyObject *result = NULL, *items = PyList_New(0), *head = PyList_New(0);
    if (nargs == 9 && open_plans(&d, args + 7) < 0) {
        goto done;
    }
    int item = pb_index_in(args[2], d.schema->nmessages);
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
        Py_ssize_t at = pos, length_at = pos;
        uint64_t key, length;
        if (pb_varint(d.buf, &at, end, &key) < 0
            || (length_at = at, pb_varint(d.buf, &at, end, &length) < 0)) {
            if (end - length_at >= 10) {
                goto done; /* ten bytes and no end: too long, not still arriving */
            }
            PyErr_Clear();
            break;
        }
        if ((key & 7) != 2) {
            pb_malformed("a list's field is not length-delimited");
            goto done;
        }
        if (length > (uint64_t)(end - at)) {
            break;
        }
        Py_ssize_t stop = at + (Py_ssize_t)length;
        PyObject *got;
        if ((long)(key >> 3) == number) {
            got = pb_message(&d, item, at, stop, 0);
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
