/* The watch events of a buffer of JSON lines: part of client_cache.codec._codec (see
 * lines.c and client_cache.codec._sharing.line_decoder). */
#ifndef CLIENT_CACHE_LINES_H
#define CLIENT_CACHE_LINES_H

#include <Python.h>

/* decode_lines(flags, data, pos, skip, previous, mode, limit, event_class, types) ->
 * (events, pos, stuck) (METH_FASTCALL): the events of the whole lines of data (bytes-like)
 * from pos on, each line decoded as decode(flags, line, skip, previous, mode) decodes it
 * and its event made as event_class(types[doc["type"]], doc["object"]); blank lines
 * passed over. It returns where it stopped: the start of the next line not yet read, and
 * stuck, -1 when every whole line was read, else the offset of the newline ending the
 * line at pos, which it left to the caller (one of limit bytes or more, one it declined
 * or failed to decode, or one that is not such an event). */
PyObject *decode_lines(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
