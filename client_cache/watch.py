"""Watch events and watchers (apimachinery ``pkg/watch``).

A watcher delivers :class:`Event`\\ s on its :meth:`Watch.result_chan`, a
:class:`~client_cache.util.chan.Chan` that is *closed* when the watch ends (a receive then
yields ``(CLOSED, False)``, a ``select`` reports the value
:data:`~client_cache.util.chan.CLOSED`). :meth:`Watch.stop` ends the watch; it is safe to call
more than once and from any thread.

* :class:`StreamWatcher` reads a Kubernetes watch stream (one JSON event per line) from a
  streaming HTTP response in a named daemon thread. ``stop()`` shuts the socket down, so the
  reader ends at once even while blocked in a read with no data arriving. How a stream ends:

  - the server closes it cleanly (timeoutSeconds, apiserver shutdown): the channel closes;
  - the connection breaks mid-event (truncated stream) or the client-side idle timeout
    passes with nothing received (not even a bookmark): logged, the channel closes;
  - a line that is not a valid event (garbled): one ``ERROR`` event whose object is a
    ``Status`` dict (code 500, cause ``ClientWatchDecoding``, message "unable to decode an
    event from the watch stream: ..."), then the channel closes;
  - the server sends an ``ERROR`` event (e.g. 410 Expired): delivered as is, with the
    ``Status`` wire dict as object; the server then ends the stream.

* :class:`FakeWatcher`, :class:`RaceFreeFakeWatcher`, :class:`Broadcaster`,
  :class:`ProxyWatcher`, :class:`MockWatcher` and :func:`new_empty_watch` are the upstream
  helpers for tests and in-memory sources.
"""

from __future__ import annotations

import enum
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from client_cache import wire
from client_cache.meta import describe
from client_cache.util.chan import (
    Chan,
    ChanClosedError,
    DoneChan,
    SendReady,
    UnbufferedChan,
    select,
)

__all__ = [
    "DEFAULT_CHAN_SIZE",
    "Broadcaster",
    "bookmark_object",
    "Event",
    "EventType",
    "FakeWatcher",
    "FullChannelBehavior",
    "MockWatcher",
    "ProxyWatcher",
    "RaceFreeFakeWatcher",
    "StreamWatcher",
    "Watch",
    "WatchIteration",
    "decode_error_status",
    "new_empty_watch",
    "new_fake",
    "new_fake_with_chan_size",
    "new_race_free_fake",
]

_log = logging.getLogger(__name__)

DEFAULT_CHAN_SIZE = 100
"""Buffer of buffered watch channels (Go ``DefaultChanSize``)."""


class EventType(str, enum.Enum):
    """The type of a watch event (Go ``watch.EventType``), with the wire strings."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, repr=False)
class Event:
    """One watch event. For ``ERROR`` the object is a ``Status``; for ``BOOKMARK`` an object
    of the watched kind carrying only ``metadata.resourceVersion`` (and annotations). Its
    ``repr`` names the object (:func:`~client_cache.meta.describe`), never its contents."""

    type: EventType
    object: Any

    def __repr__(self) -> str:
        return f"Event({self.type.value}, {describe(self.object)})"


@runtime_checkable
class Watch(Protocol):
    """A running watch (Go ``watch.Interface``)."""

    def stop(self) -> None:
        """End the watch: the result channel closes (Go ``Stop``)."""
        ...

    def result_chan(self) -> Chan[Event]:
        """The channel of events; closed when the watch ends (Go ``ResultChan``)."""
        ...


_W = TypeVar("_W", bound="WatchIteration")


class WatchIteration:
    """Mixed into the watch classes (port addition): ``for event in watch`` (each event
    until the watch ends) and ``with watch:`` (``stop`` at the end of the block)."""

    def stop(self) -> None:
        """End the watch: the result channel closes (Go ``Stop``)."""
        raise NotImplementedError

    def result_chan(self) -> Chan[Event]:
        """The channel of events; closed when the watch ends (Go ``ResultChan``)."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[Event]:
        """Each event until the result channel closes (the watch ended or was stopped)."""
        return iter(self.result_chan())

    def __enter__(self: _W) -> _W:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def new_empty_watch() -> Watch:
    """A watch whose channel is already closed (Go ``NewEmptyWatch``)."""
    chan: Chan[Event] = Chan(1)
    chan.close()
    return MockWatcher(stop_func=lambda: None, result_chan_func=lambda: chan)


class _Actions:
    """``add``/``modify``/``delete``/``error`` in terms of ``action``."""

    def action(self, action: EventType, obj: Any) -> None:
        raise NotImplementedError

    def add(self, obj: Any) -> None:
        self.action(EventType.ADDED, obj)

    def modify(self, obj: Any) -> None:
        self.action(EventType.MODIFIED, obj)

    def delete(self, last_value: Any) -> None:
        self.action(EventType.DELETED, last_value)

    def error(self, err_value: Any) -> None:
        self.action(EventType.ERROR, err_value)


class _FakeBase(_Actions, WatchIteration):
    """Lock, stopped flag and channel shared by the two fakes; ``stop`` closes the channel
    once, ``reset`` starts a fresh one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stopped = False
        self._chan = self._new_chan()

    def _new_chan(self) -> Chan[Event]:
        raise NotImplementedError

    def stop(self) -> None:
        with self._lock:
            if not self.stopped:
                self.stopped = True
                self._chan.close()

    def is_stopped(self) -> bool:
        with self._lock:
            return self.stopped

    def reset(self) -> None:
        with self._lock:
            self.stopped = False
            self._chan = self._new_chan()

    def result_chan(self) -> Chan[Event]:
        with self._lock:
            return self._chan


class FakeWatcher(_FakeBase):
    """A watcher fed by the test (Go ``watch.FakeWatcher``).

    :func:`new_fake` makes it unbuffered: each ``add``/``modify``/``delete``/``error``/
    ``action`` returns once the event was received. ``stop`` closes the channel (once);
    sending after that raises :class:`~client_cache.util.chan.ChanClosedError` (Go panics).
    ``reset`` starts a fresh channel.
    """

    def __init__(self, size: int = 0) -> None:
        self._size = size
        super().__init__()

    def _new_chan(self) -> Chan[Event]:
        return UnbufferedChan() if self._size <= 0 else Chan(self._size)

    def action(self, action: EventType, obj: Any) -> None:
        """Send an event of type ``action`` with ``obj`` (Go ``Action``)."""
        self.result_chan().send(Event(action, obj))


def new_fake() -> FakeWatcher:
    """An unbuffered :class:`FakeWatcher` (Go ``NewFake``)."""
    return FakeWatcher(0)


def new_fake_with_chan_size(size: int, blocking: bool = True) -> FakeWatcher:
    """A buffered :class:`FakeWatcher` (Go ``NewFakeWithChanSize``)."""
    return FakeWatcher(max(size, 1))


class RaceFreeFakeWatcher(_FakeBase):
    """A buffered fake whose sends never block and are ignored after ``stop`` (Go
    ``RaceFreeFakeWatcher``); a full channel raises ``RuntimeError`` (Go panics)."""

    def _new_chan(self) -> Chan[Event]:
        return Chan(DEFAULT_CHAN_SIZE)

    def action(self, action: EventType, obj: Any) -> None:
        """Queue an event of type ``action`` with ``obj``; a full buffer is an error (Go
        ``Action``)."""
        with self._lock:
            if self.stopped:
                return
            if not self._chan.try_send(Event(action, obj)):
                raise RuntimeError("channel full")


def new_race_free_fake() -> RaceFreeFakeWatcher:
    """A fake watch with a buffered channel that can be fed before anyone reads (Go
    ``NewRaceFreeFake``)."""
    return RaceFreeFakeWatcher()


@dataclass
class MockWatcher(WatchIteration):
    """A watcher made of two functions (Go ``MockWatcher``)."""

    stop_func: Callable[[], None]
    result_chan_func: Callable[[], Chan[Event]]

    def stop(self) -> None:
        """End the watch: the result channel closes (Go ``Stop``)."""
        self.stop_func()

    def result_chan(self) -> Chan[Event]:
        """The channel of events; closed when the watch ends (Go ``ResultChan``)."""
        return self.result_chan_func()


class ProxyWatcher(WatchIteration):
    """Wraps a channel somebody else feeds (Go ``ProxyWatcher``); ``stop`` only signals
    :meth:`stop_chan`."""

    def __init__(self, chan: Chan[Event]) -> None:
        self._chan = chan
        self._stop = DoneChan()

    def stop(self) -> None:
        """End the watch: the result channel closes (Go ``Stop``)."""
        self._stop.close()

    def stopping(self) -> bool:
        """True once ``stop`` was called (Go ``Stopping``)."""
        return self._stop.is_closed()

    def result_chan(self) -> Chan[Event]:
        """The channel of events; closed when the watch ends (Go ``ResultChan``)."""
        return self._chan

    def stop_chan(self) -> DoneChan:
        """A channel closed when the watch is stopped (Go ``StopChan``)."""
        return self._stop


class FullChannelBehavior(enum.Enum):
    """What a :class:`Broadcaster` does when a watcher's channel is full."""

    WAIT_IF_CHANNEL_FULL = 0
    DROP_IF_CHANNEL_FULL = 1


class _BroadcasterWatcher(WatchIteration):
    def __init__(self, owner: Broadcaster, ident: int, size: int) -> None:
        self._owner = owner
        self.ident = ident
        self.chan: Chan[Event] = Chan(max(size, 1))

    def stop(self) -> None:
        self._owner._remove(self.ident)

    def result_chan(self) -> Chan[Event]:
        return self.chan


class Broadcaster:
    """Distributes every event to every watcher (Go ``watch.Broadcaster``).

    ``action`` delivers synchronously, in order; with ``WAIT_IF_CHANNEL_FULL`` it waits for
    a slow watcher (a watcher stopped meanwhile is skipped), with ``DROP_IF_CHANNEL_FULL``
    the event is dropped for that watcher. ``watch_with_prefix(events)`` starts a watcher
    that first receives ``events``. ``shutdown`` closes every watcher's channel.
    """

    def __init__(self, queue_length: int, behavior: FullChannelBehavior) -> None:
        self._queue_length = queue_length
        self._behavior = behavior
        self._lock = threading.Lock()
        self._action_lock = threading.Lock()
        self._watchers: dict[int, _BroadcasterWatcher] = {}
        self._next_id = 0
        self._stopped = False

    def watch(self) -> Watch:
        """A new watch that receives every event from now on (Go ``Watch``)."""
        return self.watch_with_prefix([])

    def watch_with_prefix(self, queued_events: list[Event]) -> Watch:
        """A new watch that receives ``queued_events`` first, then every event (Go
        ``WatchWithPrefix``)."""
        with self._action_lock, self._lock:
            if self._stopped:
                raise RuntimeError("broadcaster already stopped")
            self._next_id += 1
            watcher = _BroadcasterWatcher(
                self, self._next_id, max(self._queue_length, len(queued_events))
            )
            for event in queued_events:
                watcher.chan.try_send(event)
            self._watchers[watcher.ident] = watcher
            return watcher

    def watcher_count(self) -> int:
        """How many watches are open on this broadcaster."""
        with self._lock:
            return len(self._watchers)

    def _remove(self, ident: int) -> None:
        with self._lock:
            watcher = self._watchers.pop(ident, None)
        if watcher is not None:
            watcher.chan.close()

    def action(self, action: EventType, obj: Any) -> None:
        """Deliver an event to every watcher."""
        event = Event(action, obj)
        with self._action_lock:
            with self._lock:
                if self._stopped:
                    raise RuntimeError("broadcaster already stopped")
                watchers = list(self._watchers.values())
            for watcher in watchers:
                try:
                    if self._behavior is FullChannelBehavior.DROP_IF_CHANNEL_FULL:
                        watcher.chan.try_send(event)
                    else:
                        watcher.chan.send(event)
                except ChanClosedError:
                    continue  # stopped while we were delivering

    def shutdown(self) -> None:
        """Close every watcher; later ``watch`` and ``action`` calls raise."""
        with self._lock:
            self._stopped = True
            watchers = list(self._watchers.values())
            self._watchers.clear()
        for watcher in watchers:
            watcher.chan.close()


# --- streaming HTTP watches ----------------------------------------------------------------

ObjectDecoder = Callable[[Any], Any]
"""Turns the decoded ``object`` of a watch event (a wire dict) into what is delivered."""
EventDecoder = Callable[[bytes], tuple[str, Any]]
"""Turns one line of a watch stream into its type and object, in one step (the struct
mode's decoder, :class:`client_cache.structs.StructCodec`); raises ValueError."""


def decode_error_status(message: str) -> dict[str, Any]:
    """The ``Status`` a client-side decode failure is reported as (upstream's
    ``ClientWatchDecoding`` reporter)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'an error on the server ("{message}") has prevented the request from '
        "succeeding",
        "reason": "InternalError",
        "details": {"causes": [{"reason": "ClientWatchDecoding", "message": message}]},
        "code": 500,
    }


_STOP_JOIN_SECONDS = 1.0


def bookmark_object(obj: Any) -> Any:
    """A BOOKMARK event's object (a wire dict) reduced to what a bookmark carries: kind,
    apiVersion and metadata (its resourceVersion, the initial-events-end annotation). The
    real server writes the rest as Go's zero values (a pod's ``spec.containers: null``),
    which a typed model refuses; Go decodes it into a struct that takes nil. Anything
    but a dict is returned as it is."""
    if not isinstance(obj, dict):
        return obj
    return {k: obj[k] for k in ("kind", "apiVersion", "metadata") if k in obj}


class _DecodeError(Exception):
    pass


_EVENT_TYPES: dict[str, EventType] = {t.value: t for t in EventType}


class StreamWatcher(WatchIteration):
    """A :class:`Watch` over a streaming HTTP response (Go ``watch.StreamWatcher``).

    ``response`` is a urllib3 response opened with ``preload_content=False`` whose body is
    a Kubernetes watch stream. ``decode_object`` converts each event's object (ERROR objects
    stay ``Status`` dicts); ``loads`` is the JSON decoder; ``decode_event``, when given,
    replaces both (a whole line to type and object). ``frames``, when given, cuts the
    stream into events instead of newlines (its ``feed(bytes)`` returns the whole frames,
    its ``pending()`` the bytes held toward the next: a protobuf stream's
    :class:`~client_cache.protobuf.FrameReader`), each handed to ``decode_event``. The
    client-side idle timeout is
    the read timeout the request was made with: when it passes with nothing received, the
    watch ends. ``name`` names the reader thread (``watch-<name>``).
    """

    def __init__(
        self,
        response: Any,
        decode_object: ObjectDecoder | None = None,
        *,
        name: str = "stream",
        loads: Callable[[bytes], Any] = wire.loads,
        chan_size: int = DEFAULT_CHAN_SIZE,
        decode_event: EventDecoder | None = None,
        frames: Any = None,
    ) -> None:
        self._response = response
        self._frames = frames
        self._decode_object = decode_object
        self._loads = loads
        self._decode_event = decode_event
        self._result: Chan[Event] = Chan(chan_size)
        self._done = DoneChan()
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._receive, name=f"watch-{name}", daemon=True)
        self._thread.start()

    def result_chan(self) -> Chan[Event]:
        """The channel of events; closed when the watch ends (Go ``ResultChan``)."""
        return self._result

    def stop(self) -> None:
        """End the watch: shut its connection down, close the channel and wait (at most
        1 s) for the reader thread to end."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._done.close()
        _interrupt(self._response)
        if threading.current_thread() is not self._thread:
            # The socket is shut down, so the reader ends at once; waiting for it here
            # means no ``watch-*`` thread outlives its watcher's stop (Go's Stop does
            # not wait; a port addition, bounded to 1 s).
            self._thread.join(_STOP_JOIN_SECONDS)

    def is_stopped(self) -> bool:
        """True once ``stop`` was called."""
        with self._lock:
            return self._stopped

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the reader thread to end; True if it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _deliver(self, event: Event) -> bool:
        if self._done.closed():
            return False
        if self._result.try_send(event):  # room in the buffer: the common case, no select
            return True
        index, _ = select([self._done, SendReady(self._result)])
        if index == 0:
            return False
        try:
            return self._result.try_send(event) or self._deliver(event)
        except ChanClosedError:
            return False

    def _events(self) -> Iterator[Event]:
        if self._frames is not None:
            yield from self._framed_events()
            return
        buffer = b""
        for chunk in self._response.stream(65536, decode_content=True):
            buffer = buffer + chunk if buffer else chunk
            start = 0
            while True:  # scan by offset: one copy per line, not one per remaining byte
                newline = buffer.find(b"\n", start)
                if newline < 0:
                    break
                line = buffer[start:newline]
                start = newline + 1
                if line.strip():
                    yield self._parse(line)
            buffer = buffer[start:]
        if buffer.strip():
            # The stream ended without the final newline: a complete JSON document is
            # still an event (some servers omit it); a cut-off one is a truncated stream.
            try:
                yield self._parse(buffer)
            except _DecodeError:
                _log.info("Unexpected EOF during watch stream event decoding")

    def _framed_events(self) -> Iterator[Event]:
        for chunk in self._response.stream(65536, decode_content=True):
            try:
                frames = self._frames.feed(chunk)
            except ValueError as err:
                raise _DecodeError(f"unable to decode the watch stream: {err}") from err
            for frame in frames:
                yield self._parse(frame)
        if self._frames.pending():
            _log.info("Unexpected EOF during watch stream event decoding")

    def _parse(self, line: bytes) -> Event:
        if self._decode_event is not None:
            try:
                type_name, obj = self._decode_event(line)
                return Event(_EVENT_TYPES[type_name], obj)
            except (ValueError, KeyError, TypeError) as err:
                raise _DecodeError(
                    f"unable to decode an event from the watch stream: {err}") from err
        try:
            raw = self._loads(line)
            event_type = _EVENT_TYPES[raw["type"]]
            obj = raw["object"]
        except (ValueError, KeyError, TypeError) as err:
            raise _DecodeError(f"unable to decode an event from the watch stream: {err}") from err
        if event_type is not EventType.ERROR and self._decode_object is not None:
            try:
                obj = self._decode_object(bookmark_object(obj) if event_type is
                                          EventType.BOOKMARK else obj)
            except Exception as err:
                raise _DecodeError(
                    f"unable to decode an event from the watch stream: {err}"
                ) from err
        return Event(event_type, obj)

    def _receive(self) -> None:
        try:
            for event in self._events():
                if not self._deliver(event):
                    return
        except _DecodeError as err:
            if not self.is_stopped():
                self._deliver(Event(EventType.ERROR, decode_error_status(str(err))))
        except Exception as err:  # connection reset, truncated chunk, read timeout...
            if not self.is_stopped():
                _log.debug("watch stream ended: %s", err)
        finally:
            self._result.close()
            _close(self._response)


def _interrupt(response: Any) -> None:
    """Unblock a reader of ``response`` now (shut the socket down) and close it."""
    shutdown = getattr(response, "shutdown", None)
    try:
        if callable(shutdown):
            shutdown()
        else:
            sock = getattr(getattr(response, "connection", None), "sock", None)
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
    except (OSError, ValueError, RuntimeError):  # already closed or released to the pool
        pass
    _close(response)


def _close(response: Any) -> None:
    """Close ``response``; a fully read one goes back to its pool."""
    for name in ("close", "release_conn"):
        method = getattr(response, name, None)
        if callable(method):
            try:
                method()
            except Exception:  # pragma: no cover - a broken connection
                _log.debug("%s of a watch response failed", name, exc_info=True)
