/* The protobuf decoder's parts shared between its files (internal to
 * client_cache.codec._codec; the Python entries are in protobuf.h):
 *   pbschema.c  the compiled schema (types, messages, fields) and its capsule;
 *   pbwire.c    values read off the wire: strings, bytes, times and the special types;
 *   protobuf.c  messages read into dicts, or structs by their plans (pbstruct.c);
 *   pbentry.c   whole bodies, watch frames and lists: the entries Python calls.
 * Everything runs with the GIL. */
#ifndef CLIENT_CACHE_PBDECODER_H
#define CLIENT_CACHE_PBDECODER_H

#include <Python.h>
#include <stdint.h>
#include "pbstruct.h"
#include "strtable.h"

/* What a type reads as (client_cache.codec._protobuf_shapes names them: PROTOBUF_KINDS). */
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

/* One field as read: its number and wire type, a varint or fixed number in value, a
 * length-delimited value's span in start and end. */
typedef struct {
    uint32_t number;
    int wire;
    uint64_t value;
    Py_ssize_t start, end;
} Wire;

/* Strings every part hands out (made by pb_wire_init). */
extern PyObject *pb_empty_str, *pb_zero_quantity, *pb_zero_duration, *pb_kind_key,
    *pb_api_version_key;

/* pbschema.c */
/* The schema in a capsule from protobuf_schema; NULL with an exception set. */
Schema *pb_schema_of(PyObject *capsule);
/* An int in 0..limit - 1 from obj; -1 with an exception set when it is not. */
int pb_index_in(PyObject *obj, int limit);

/* pbwire.c */
int pb_wire_init(void);
/* NULL with ValueError("protobuf: what") set. */
PyObject *pb_malformed(const char *what);
/* buf[start:end] as a str (shared under SHARE); d->made says what it is. */
PyObject *pb_string(Decoder *d, Py_ssize_t start, Py_ssize_t end);
/* bytes buf[start:end] as JSON's base64 text. */
PyObject *pb_base64(Decoder *d, Py_ssize_t start, Py_ssize_t end);
/* The fields of the message buf[start:end] numbered 1..strlen(wires), field i + 1 of
 * wire type wires[i] ('0' varint, '2' length-delimited; another is malformed, as Go's
 * generated decoders refuse it): varints in values[i], spans in spans[2i], spans[2i + 1];
 * found[i] set for those present. -1 on error. */
int pb_small_message(Decoder *d, Py_ssize_t start, Py_ssize_t end, const char *wires,
                     uint64_t *values, Py_ssize_t *spans, int *found);
/* A special kind's value (a time, quantity, duration, int-or-string, raw JSON) from its
 * message buf[start:end]. */
PyObject *pb_special(Decoder *d, int kind, Py_ssize_t start, Py_ssize_t end);

/* protobuf.c */
/* Push name and value (a new reference, taken) on the decoder's stack, with what the
 * value is (IMMUTABLE, FRESH); -1 on error. */
int pb_push_pair(Decoder *d, PyObject *name, PyObject *value, int made);
/* Message index read from buf[start:end] as a dict (or the struct of d->plan), its first
 * pairs those already on the stack from base on (unwound to base after). */
PyObject *pb_message_after(Decoder *d, Py_ssize_t base, int index, Py_ssize_t start,
                           Py_ssize_t end, int depth);
/* pb_message_after with nothing on the stack before. */
PyObject *pb_message(Decoder *d, int index, Py_ssize_t start, Py_ssize_t end, int depth);

/* The varint at *pos (before end), its end stored in *pos; -1 with ValueError set. */
static inline int
pb_varint(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, uint64_t *out)
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
    pb_malformed("a varint runs past its message or is too long");
    return -1;
}

/* The field at *pos (before end) into *f, *pos moved past it; -1 with ValueError set. */
static inline int
pb_next_field(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, Wire *f)
{
    uint64_t key;
    *f = (Wire){0, 0, 0, 0, 0};
    if (pb_varint(buf, pos, end, &key) < 0) {
        return -1;
    }
    f->number = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    switch (f->wire) {
    case 0:
        return pb_varint(buf, pos, end, &f->value);
    case 2: {
        uint64_t length;
        if (pb_varint(buf, pos, end, &length) < 0) {
            return -1;
        }
        if (length > (uint64_t)(end - *pos)) {
            pb_malformed("a field runs past its message");
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
            pb_malformed("a field runs past its message");
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
        pb_malformed("a wire type that is not read");
        return -1;
    }
}

#endif
