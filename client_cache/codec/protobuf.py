"""protobuf: the Kubernetes protobuf wire format read into the wire dicts JSON gives.

The built-in resources' servers can answer in protobuf
(``Accept: application/vnd.kubernetes.protobuf``), which is smaller than JSON and cheaper
to send. This module turns such an answer into exactly the dict ``json.loads`` makes of
the same object's JSON, so a cache fed by either holds equal objects:

* :func:`decode` reads one body: the ``k8s\\x00`` magic, then a ``runtime.Unknown``
  envelope whose type meta names the kind and whose ``raw`` is the object. The result has
  ``kind`` and ``apiVersion`` first, as the server's JSON has.
* :func:`decode_watch_event` reads one frame of a protobuf watch stream (a
  ``metav1.WatchEvent`` whose object is itself an envelope); :class:`FrameReader` cuts the
  stream into frames (a 4-byte big-endian length before each).
* :class:`ListReader` reads a LIST body as it arrives, decoding each item as soon as it
  is whole.
* :func:`encode` and :func:`encode_watch_event` write a wire dict in the same format; the
  embedded server answers protobuf with them.

Which field is which comes from :mod:`client_cache.codec._protobuf_shapes`' schema, generated
from ``k8s.io/api``'s Go types by ``tools/protoschema`` (field numbers, JSON names,
``omitempty``/``omitzero``, inline structs, Go shapes). The JSON form of a field follows
Go's ``encoding/json`` as the server applies it to an object it read from protobuf (its
storage): a missing
non-pointer string, number or bool is its zero value (left out under ``omitempty``), a
missing pointer, list, map or bytes is ``None`` (left out under ``omitempty``), a struct
is always written (an empty one as the JSON of its zero fields), times are RFC 3339 in
UTC (``metav1.Time`` to the second, ``MicroTime`` to the microsecond, the zero time
``None``), quantities their string, ``IntOrString`` an int or a str, durations as Go
prints them, bytes base64, and raw extensions and ``fieldsV1`` the JSON they hold. Custom
resources have no protobuf form; their servers answer JSON.

A body this module cannot read raises :class:`ValueError`. Go: the protobuf serializer of
``k8s.io/apimachinery/pkg/runtime/serializer/protobuf`` and the types' generated
``Unmarshal``/``MarshalJSON``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from client_cache.codec import _protobuf_structs as protobuf_structs
from client_cache.codec._protobuf_schema import schema
from client_cache.codec._protobuf_shapes import (
    BYTES,
    Buffer,
    Message,
    Str,
    fields,
    put_bytes,
    small_message,
    varint,
)
from client_cache.codec.errors import DecodeError
from client_cache.codec.skip_paths import SkipTree

__all__ = [
    "CONTENT_TYPE",
    "MAGIC",
    "MAX_FRAME",
    "WATCH_CONTENT_TYPE",
    "FrameReader",
    "ListReader",
    "decode",
    "decode_watch_event",
    "encode",
    "encode_watch_event",
    "schema",
    "unwrap",
]

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
WATCH_CONTENT_TYPE = CONTENT_TYPE + ";stream=watch"
MAX_FRAME = 1 << 30
"""The largest watch frame read (1 GiB, as the real server's framer bounds it)."""


# -- bodies, envelopes and watch frames -------------------------------------------------------
def unwrap(body: Buffer) -> tuple[str, str, tuple[int, int]]:
    """A protobuf body's ``apiVersion``, ``kind`` and the span of its object's bytes.
    Raises ValueError for a body without the magic or the envelope."""
    if bytes(body[:4]) != MAGIC:
        raise DecodeError("protobuf: the body does not start with the k8s magic")
    api_version = kind = ""
    raw: tuple[int, int] | None = None
    typed = False
    for number, wire_type, value in fields(body, 4):
        if wire_type == BYTES and ((number == 1 and typed) or (number == 2 and raw is not None)):
            raise DecodeError("protobuf: an envelope with a repeated type or object")
        if number == 1 and wire_type == BYTES:
            typed = True
            meta = small_message(body, value, "22")
            api_version = Str().read(body, *meta[1]) if 1 in meta else ""
            kind = Str().read(body, *meta[2]) if 2 in meta else ""
        elif number == 2 and wire_type == BYTES:
            raw = value
        elif number == 3 and wire_type == BYTES and value[0] != value[1]:
            raise DecodeError("protobuf: an encoded (compressed) envelope is not read")
    if raw is None:
        raise DecodeError("protobuf: the envelope holds no object")
    return api_version, kind, raw


def decode(body: Buffer, flags: int = 0) -> dict[str, Any]:
    """One protobuf body (an object or a list) as the dict its JSON would give (an empty
    list's ``items`` is ``[]``, as the server's JSON writes it). With the
    C part built, ``flags`` (:func:`client_cache.codec._sharing.flags`) share strings, untrack
    and compact while decoding; without it they are not applied."""
    obj = schema().c_object(body, flags)
    if obj is None:  # without the C part
        api_version, kind, raw = unwrap(body)
        obj = {"kind": kind, "apiVersion": api_version}
        obj.update(schema().message(api_version, kind).decode(body, *raw))
    if "items" in obj and obj["items"] is None and obj["kind"].endswith("List"):
        obj["items"] = []  # an empty list: the server's JSON writes [], not null
    return obj


def encode(obj: Mapping[str, Any]) -> bytes:
    """A built-in object's wire dict (with ``kind`` and ``apiVersion``) as a protobuf
    body. Raises ValueError for a kind the schema lacks."""
    api_version, kind = obj.get("apiVersion", ""), obj.get("kind", "")
    raw = schema().message(api_version, kind).encode(obj)
    type_meta = bytearray()
    put_bytes(type_meta, 1, api_version.encode())
    put_bytes(type_meta, 2, kind.encode())
    out = bytearray(MAGIC)
    put_bytes(out, 1, bytes(type_meta))
    put_bytes(out, 2, raw)
    put_bytes(out, 3, b"")
    put_bytes(out, 4, b"")
    return bytes(out)


def decode_watch_event(frame: Buffer, flags: int = 0,
                       plans: tuple[Any, ...] = ()) -> tuple[str, Any]:
    """One watch frame (without its length) as the event's type and object (``flags``
    as :func:`decode` takes them; ``plans`` as :meth:`Schema.c_event` does, for struct
    objects: the C part only)."""
    fast = schema().c_event(frame, flags, plans)
    if fast is not None:
        return fast
    found = small_message(frame, (0, len(frame)), "22")  # without the C part
    if 1 not in found or found[1][1][0] == found[1][1][1] or 2 not in found:
        raise DecodeError("protobuf: a watch event without its type or object")
    inner = small_message(frame, found[2][1], "2")
    start, end = inner[1][1] if 1 in inner else (0, 0)
    event_type = Str().read(frame, *found[1])
    return event_type, decode(memoryview(frame)[start:end], flags)


def encode_watch_event(event_type: str, obj: Mapping[str, Any]) -> bytes:
    """A watch event as one frame of a protobuf watch stream, its length first."""
    extension = bytearray()
    put_bytes(extension, 1, encode(obj))
    event = bytearray()
    put_bytes(event, 1, event_type.encode())
    put_bytes(event, 2, bytes(extension))
    return len(event).to_bytes(4, "big") + bytes(event)


class FrameReader:
    """Cuts a protobuf watch stream into frames: feed it what the socket gave, take the
    whole frames it returns (Go ``LengthDelimitedFramer``). A frame longer than
    :data:`MAX_FRAME` raises ValueError."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The frames ``data`` completes, in order."""
        self._buffer += data
        frames: list[bytes] = []
        pos = 0
        buffer = self._buffer
        while len(buffer) - pos >= 4:
            length = int.from_bytes(buffer[pos:pos + 4], "big")
            if length > MAX_FRAME:
                raise DecodeError(f"protobuf: a watch frame of {length} bytes is too long")
            if len(buffer) - pos - 4 < length:
                break
            frames.append(bytes(buffer[pos + 4:pos + 4 + length]))
            pos += 4 + length
        del buffer[:pos]
        return frames

    def pending(self) -> int:
        """Bytes held toward a frame not yet whole."""
        return len(self._buffer)


def _field_head(buf: Buffer, pos: int, end: int) -> tuple[int, int, int] | None:
    """The key and length of the field at ``pos`` and where its payload starts: ``(key,
    start, length)``; None when a varint of them runs into ``end`` (its bytes still
    arriving). A varint whose first ten bytes are here without its end is too long:
    ValueError, as the C scanner says."""
    at = pos
    try:
        key, at = varint(buf, at, end)
        length, after = varint(buf, at, end)
    except ValueError:
        if end - at >= 10:
            raise
        return None
    return key, after, length


class ListReader:
    """Reads a protobuf LIST body as it arrives: :meth:`feed` it what the socket gave and
    it decodes each item as soon as its bytes are whole (so decoding overlaps the
    server's sending, and the body is never held whole); :meth:`finish` gives the list
    as :func:`decode` would have (``kind``, ``apiVersion``, ``metadata``, ``items``).
    ``flags`` as :func:`decode` takes them. With ``struct_class`` (the C part only) the
    items are that struct class's objects
    (:func:`client_cache.codec._protobuf_structs.plans`); else with ``skip`` the members it
    names are left out of the items (passed over where the C part's plans reach them:
    :func:`client_cache.codec._protobuf_structs.dict_plans`). A body that is not a protobuf
    list, or ends early, raises ValueError."""

    def __init__(self, flags: int = 0, struct_class: type | None = None, *,
                 skip: SkipTree | None = None) -> None:
        self.flags = flags
        self.struct_class = struct_class
        self.skip = skip if struct_class is None else None
        self._plans: tuple[Any, ...] = ()
        self._exact = False  # the plans leave out all that skip names
        self._buffer = bytearray()
        self._started = False
        self._raw_left = -1  # bytes of the envelope's object still to come; -1: not there
        self._type_meta: tuple[str, str] | None = None
        self._items_number = 0
        self._item: Message | None = None
        self._head: list[bytes] = []  # the list's fields other than its items
        self._items: list[dict[str, Any]] = []

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the body."""
        self._buffer += data
        if not self._started:
            if len(self._buffer) < len(MAGIC):
                return
            if bytes(self._buffer[:4]) != MAGIC:
                raise DecodeError("protobuf: the body does not start with the k8s magic")
            del self._buffer[:4]
            self._started = True
        pos = 0
        while pos < len(self._buffer):
            if self._raw_left > 0:
                pos = self._scan(pos)
                if self._raw_left > 0:
                    break  # the next item is not whole yet
                continue
            found = self._field(pos)
            if found is None:
                break
            number, start, end = found
            if number == 2 and self._raw_left < 0:  # the object: read as it arrives
                if self._item is None:
                    raise DecodeError("protobuf: the envelope has no list type before its "
                                     "object")
                self._raw_left = end - start
                pos = start
                continue
            if number == 2 or (number == 1 and self._type_meta is not None):
                raise DecodeError("protobuf: an envelope with a repeated type or object")
            if end > len(self._buffer):
                break
            if number == 1:
                self._read_type_meta(start, end)
            elif number == 3 and end > start:
                raise DecodeError("protobuf: an encoded (compressed) envelope is not read")
            pos = end
        del self._buffer[:pos]

    def _field(self, pos: int) -> tuple[int, int, int] | None:
        """The envelope's length-delimited field at ``pos``: number, payload start and
        end (which may be past the bytes here); None when its header is not all here."""
        found = _field_head(self._buffer, pos, len(self._buffer))
        if found is None:
            return None
        key, at, length = found
        if key & 7 != BYTES:
            raise DecodeError("protobuf: an envelope's field is not length-delimited")
        return key >> 3, at, at + length

    def _scan(self, pos: int) -> int:
        """The list's whole fields from ``pos``: items decoded, the others kept."""
        assert self._item is not None
        end = min(len(self._buffer), pos + self._raw_left)
        scanned = schema().c_list_scan(self._item, self._items_number, self._buffer, pos,
                                       end, self.flags, self._plans)
        exact = scanned is not None and self._exact
        after, items, head = scanned or self._scan_python(pos, end)
        if self.skip is not None and not exact:
            for item in items:
                self.skip.drop(item)
        self._items += items
        self._head += head
        self._raw_left -= after - pos
        return after

    def _scan_python(self, pos: int, end: int,
                     ) -> tuple[int, list[dict[str, Any]], list[bytes]]:
        assert self._item is not None
        items: list[dict[str, Any]] = []
        head: list[bytes] = []
        while pos < end:
            found = _field_head(self._buffer, pos, end)
            if found is None:
                break
            key, at, length = found
            if key & 7 != BYTES:  # as the C scanner: a list's fields are all messages
                raise DecodeError("protobuf: a list's field is not length-delimited")
            if at + length > end:
                break
            if key >> 3 == self._items_number:
                items.append(self._item.decode(self._buffer, at, at + length))
            else:
                head.append(bytes(self._buffer[pos:at + length]))
            pos = at + length
        return pos, items, head

    def _read_type_meta(self, start: int, end: int) -> None:
        meta = small_message(self._buffer, (start, end), "22")
        api_version = Str().read(self._buffer, *meta[1]) if 1 in meta else ""
        kind = Str().read(self._buffer, *meta[2]) if 2 in meta else ""
        items = schema().message(api_version, kind).items_field()
        if items is None:
            raise DecodeError(f"protobuf: {api_version} {kind} is not a list")
        self._items_number, self._item = items
        self._type_meta = (kind, api_version)
        if self.struct_class is not None:
            found = protobuf_structs.plans(self._item, self.struct_class)
            self._plans = (found.capsule, found.root)
        elif self.skip is not None and protobuf_structs.AVAILABLE:
            skipping = protobuf_structs.dict_plans(self._item, self.skip)
            self._plans, self._exact = (skipping.capsule, skipping.root), skipping.exact

    def finish(self) -> dict[str, Any]:
        """The list, once the body has ended."""
        if self._type_meta is None or self._raw_left != 0 or self._buffer:
            raise DecodeError("protobuf: the list body ended early")
        kind, api_version = self._type_meta
        head = b"".join(self._head)
        result = schema().decode(schema().message(api_version, kind), head, 0, len(head),
                                 self.flags, type_meta=self._type_meta)
        result["items"] = self._items
        return result
