"""Watch stream decoders: the one seam between a watch's bytes and its events.

A :class:`~client_cache.client.stream_watcher.StreamWatcher` reads its response in chunks and
hands each to one :class:`WatchDecoder`, which keeps whatever is not a whole frame yet
and returns the events of the frames the chunk completed. Three implementations:

- :class:`JsonLines`: JSON lines, each decoded by a Python function (the JSON decoder
  followed by the conversion of the object, or the struct mode's decoder);
- :class:`NativeJsonLines`: JSON lines decoded by the native decoder a buffer at a time,
  the lines it leaves going through a :class:`JsonLines` (so the events and errors are
  the same);
- :class:`ProtobufFrames`: the length-delimited frames of a protobuf watch.

:meth:`~client_cache.codec._decoding.ObjectDecoding.watch_decoder` chooses one for a
lister-watcher. The codec does not know the cache layer's event type: a decoder is given
``event_class`` and ``types`` (each event type by its name on the wire) and makes
``event_class(types[name], object)``.

This is apimachinery's ``watch.Decoder`` (``Decode() (EventType, Object, error)`` and
``Close()``) turned around: Go's decoder pulls from the stream, ours is fed what the
stream gave, so one reader (a thread or the reflector's own loop) drives it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from client_cache.codec._unfit import identity, unfit_from_wire
from client_cache.codec.errors import WatchDecodeError
from client_cache.codec.protobuf import FrameReader

__all__ = ["JsonLines", "LineDecoder", "NativeJsonLines", "ProtobufFrames", "WatchDecoder",
           "bookmark_object", "object_lines", "split_lines"]

_log = logging.getLogger(__name__)

E = TypeVar("E")

LineDecoder = Callable[[bytes], tuple[str, Any]]
"""One JSON line (or protobuf frame) to its event's type name and object; raises
ValueError, KeyError or TypeError when it is not an event."""

NativeLines = Callable[[bytes, int], tuple[list[Any], int, int]]
"""The native decoder of a buffer's whole lines from an offset:
``(events, pos, stuck)`` (:func:`client_cache.codec._sharing.line_decoder`)."""


class WatchDecoder(Protocol[E]):
    """What a stream watcher feeds (Go ``watch.Decoder``, fed instead of pulling).

    :meth:`decode` takes the next chunk read and returns the events of the frames it
    completed, in order; the bytes of a frame not yet whole are kept for the next call. A
    frame that is not an event raises :class:`~client_cache.codec.errors.WatchDecodeError`
    carrying the events of the chunk decoded before it (delivered first). :meth:`end` is
    called once when the stream has ended and returns the events of what was left (a
    JSON document whose newline never came is still an event; a cut frame is logged and
    dropped). :meth:`close` lets go of what the decoder holds."""

    def decode(self, chunk: bytes) -> list[E]:
        """The events of the frames ``chunk`` completed, in order."""
        ...

    def end(self) -> list[E]:
        """The events of what was left when the stream ended."""
        ...

    def close(self) -> None:
        """Let go of what the decoder holds."""
        ...


def bookmark_object(obj: Any) -> Any:
    """A BOOKMARK event's object (a wire dict) reduced to what a bookmark carries: kind,
    apiVersion and metadata (its resourceVersion, the initial-events-end annotation). The
    real server writes the rest as Go's zero values (a pod's ``spec.containers: null``),
    which a typed class refuses; Go decodes it into a struct that takes nil. Anything
    but a dict is returned as it is."""
    return identity(obj)


def object_lines(loads: Callable[[bytes], Any],
                 decode_object: Callable[[Any], Any] | None = None,
                 object_type: Any = None) -> LineDecoder:
    """The line decoder that reads a line with ``loads`` into ``{"type", "object"}`` and
    turns the object with ``decode_object`` (None: kept as decoded). An ``ERROR`` event's
    object stays the ``Status`` dict; a ``BOOKMARK``'s is reduced by
    :func:`bookmark_object` and never given to ``decode_object`` (a typed class may
    require what a bookmark lacks). An object ``decode_object`` refuses becomes an
    :class:`~client_cache.codec._unfit.UnfitObject` naming ``object_type``."""
    def decode(line: bytes) -> tuple[str, Any]:
        raw = loads(line)
        type_name, obj = raw["type"], raw["object"]
        if decode_object is None or type_name == "ERROR":
            return type_name, obj
        if type_name == "BOOKMARK":
            return type_name, bookmark_object(obj)
        try:
            return type_name, decode_object(obj)
        except Exception as err:
            if not isinstance(obj, dict):
                raise ValueError(str(err)) from err
            return type_name, unfit_from_wire(obj, object_type, err)
    return decode


def split_lines(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The complete, non-blank lines of ``buffer`` and the bytes after the last newline."""
    lines = []
    start = 0
    while True:  # scan by offset: one copy per line, not one per remaining byte
        newline = buffer.find(b"\n", start)
        if newline < 0:
            break
        line = buffer[start:newline]
        start = newline + 1
        if line.strip():
            lines.append(line)
    return lines, buffer[start:]


class _Events(Generic[E]):
    """What every decoder shares: making an event of a decoded (type name, object)."""

    def __init__(self, decode_line: LineDecoder, event_class: Callable[[Any, Any], E],
                 types: Mapping[str, Any]) -> None:
        self._decode_line = decode_line
        self._event_class = event_class
        self._types = types

    def event(self, item: bytes, what: str) -> E:
        """``item``'s event; :class:`WatchDecodeError` naming ``what`` when it is not
        one."""
        try:
            type_name, obj = self._decode_line(item)
            return self._event_class(self._types[type_name], obj)
        except (ValueError, KeyError, TypeError) as err:
            raise WatchDecodeError(f"unable to decode {what}: {err}") from err

    def events(self, items: list[bytes], what: str, before: list[E] | None = None,
               ) -> list[E]:
        """The events of ``items`` appended to ``before``; on a decode error the events
        before it travel with the error."""
        burst: list[E] = [] if before is None else before
        for item in items:
            try:
                burst.append(self.event(item, what))
            except WatchDecodeError as err:
                err.events = burst
                raise
        return burst


_LINE = "an event from the watch stream"


class JsonLines(_Events[E]):
    """JSON lines, each decoded by ``decode_line`` (see :func:`object_lines`) into an
    event ``event_class(types[type], object)``; the Python decoder of a JSON watch."""

    def __init__(self, decode_line: LineDecoder, event_class: Callable[[Any, Any], E],
                 types: Mapping[str, Any]) -> None:
        super().__init__(decode_line, event_class, types)
        self._rest = b""

    def decode(self, chunk: bytes) -> list[E]:
        """The events of the lines ``chunk`` completed."""
        buffer = self._rest + chunk if self._rest else chunk
        lines, self._rest = split_lines(buffer)
        return self.events(lines, _LINE)

    def end(self) -> list[E]:
        """The event of a last document without its newline (some servers omit it); a
        cut-off one is logged (INFO) and dropped."""
        rest, self._rest = self._rest, b""
        if not rest.strip():
            return []
        try:
            return [self.event(rest, _LINE)]
        except WatchDecodeError:
            _log.info("Unexpected EOF during watch stream event decoding")
            return []

    def close(self) -> None:
        """Drop the bytes held."""
        self._rest = b""


class NativeJsonLines(Generic[E]):
    """JSON lines decoded by the native decoder a buffer at a time (``lines``,
    :func:`client_cache.codec._sharing.line_decoder`, which makes the events itself); each
    line it leaves (too long, declined, not an event) goes through ``fallback``, so the
    events and the errors are those of the Python decoder."""

    def __init__(self, lines: NativeLines, fallback: JsonLines[E]) -> None:
        self._lines = lines
        self._fallback = fallback
        self._rest = b""

    def decode(self, chunk: bytes) -> list[E]:
        """The events of the lines ``chunk`` completed."""
        buffer = self._rest + chunk if self._rest else chunk
        burst: list[E] = []
        pos = 0
        while True:
            events, pos, stuck = self._lines(buffer, pos)
            burst += events
            if stuck < 0:
                self._rest = buffer[pos:]
                return burst
            self._fallback.events([buffer[pos:stuck]], _LINE, burst)
            pos = stuck + 1

    def end(self) -> list[E]:
        """As :meth:`JsonLines.end` (the fallback reads what is left)."""
        rest, self._rest = self._rest, b""
        self._fallback.close()
        self._fallback.decode(rest)  # no newline in it: held as the unfinished line
        return self._fallback.end()

    def close(self) -> None:
        """Drop the bytes held."""
        self._rest = b""
        self._fallback.close()


class ProtobufFrames(_Events[E]):
    """The length-delimited frames of a protobuf watch (Go ``LengthDelimitedFramer``),
    each decoded by ``decode_frame`` into its type name and object."""

    def __init__(self, decode_frame: LineDecoder, event_class: Callable[[Any, Any], E],
                 types: Mapping[str, Any]) -> None:
        super().__init__(decode_frame, event_class, types)
        self._frames = FrameReader()

    def decode(self, chunk: bytes) -> list[E]:
        """The events of the frames ``chunk`` completed."""
        try:
            frames = self._frames.feed(chunk)
        except ValueError as err:
            raise WatchDecodeError(f"unable to decode the watch stream: {err}") from err
        return self.events(frames, _LINE)

    def end(self) -> list[E]:
        """Nothing: a frame not yet whole when the stream ended is logged and dropped."""
        if self._frames.pending():
            _log.info("Unexpected EOF during watch stream event decoding")
        self._frames = FrameReader()
        return []

    def close(self) -> None:
        """Drop the bytes held."""
        self._frames = FrameReader()
