/* client_cache.codec._codec's protobuf values on the wire (see pbdecoder.h): strings, JSON's
 * base64 of bytes, small messages read field by field, and the special types written as
 * JSON text (times, quantities, durations, int-or-strings, raw JSON). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "decode.h"
#include "pbdecoder.h"
#include "strtable.h"

#define GO_ZERO_SECONDS (-62135596800LL)

PyObject *pb_empty_str, *pb_zero_quantity, *pb_zero_duration, *pb_kind_key,
    *pb_api_version_key;

int
pb_wire_init(void)
{
    pb_empty_str = PyUnicode_FromStringAndSize("", 0);
    pb_zero_quantity = PyUnicode_InternFromString("0");
    pb_zero_duration = PyUnicode_InternFromString("0s");
    pb_kind_key = PyUnicode_InternFromString("kind");
    pb_api_version_key = PyUnicode_InternFromString("apiVersion");
    return pb_empty_str == NULL || pb_zero_quantity == NULL || pb_zero_duration == NULL
        || pb_kind_key == NULL || pb_api_version_key == NULL ? -1 : 0;
}

PyObject *
pb_malformed(const char *what)
{
    PyErr_Format(codec_decode_error, "protobuf: %s", what);
    return NULL;
}

PyObject *
pb_string(Decoder *d, Py_ssize_t start, Py_ssize_t end)
{
    const char *s = (const char *)d->buf + start;
    Py_ssize_t length = end - start;
    d->made = IMMUTABLE;
    if (length == 0) {
        return Py_NewRef(pb_empty_str);
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

PyObject *
pb_base64(Decoder *d, Py_ssize_t start, Py_ssize_t end)
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
int
pb_small_message(Decoder *d, Py_ssize_t start, Py_ssize_t end, const char *wires,
                 uint64_t *values, Py_ssize_t *spans, int *found)
{
    Py_ssize_t pos = start;
    uint32_t count = (uint32_t)strlen(wires);
    while (pos < end) {
        Wire f;
        if (pb_next_field(d->buf, &pos, end, &f) < 0) {
            return -1;
        }
        if (f.number >= 1 && f.number <= count) {
            if (f.wire != wires[f.number - 1] - '0') {
                pb_malformed("a field of the wrong wire type");
                return -1;
            }
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
    if (pb_small_message(d, start, end, "00", values, spans, found) < 0) {
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
        return pb_malformed("a time outside years 0-9999");
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

/* A special type's value from its message buf[start:end]. */
PyObject *
pb_special(Decoder *d, int kind, Py_ssize_t start, Py_ssize_t end)
{
    if (kind == T_TIME || kind == T_MICROTIME) {
        return timestamp(d, start, end, kind == T_MICROTIME);
    }
    uint64_t values[3] = {0, 0, 0};
    Py_ssize_t spans[6] = {0, 0, 0, 0, 0, 0};
    int found[3] = {0, 0, 0};
    /* each kind's fields: quantity string; duration int64; int-or-string type, int
     * and string; raw JSON bytes */
    const char *wires = kind == T_QUANTITY ? "2" : kind == T_DURATION ? "0"
                        : kind == T_INTORSTRING ? "002" : "2";
    if (pb_small_message(d, start, end, wires, values, spans, found) < 0) {
        return NULL;
    }
    switch (kind) {
    case T_QUANTITY:
        return found[0] ? pb_string(d, spans[0], spans[1]) : Py_NewRef(pb_zero_quantity);
    case T_DURATION:
        d->made = IMMUTABLE | FRESH;
        return PyObject_CallFunction(d->schema->duration, "L", (long long)values[0]);
    case T_INTORSTRING:
        if (values[0] == 1) {
            return found[2] ? pb_string(d, spans[4], spans[5]) : Py_NewRef(pb_empty_str);
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

