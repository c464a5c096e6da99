"""The watch over a streaming HTTP response (apimachinery ``pkg/watch`` ``StreamWatcher``
and the client-side decoding reporter): :class:`StreamWatcher` and its helpers.
:mod:`client_cache.api.watch` says how a stream ends and what each ending delivers."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from client_cache.api.watch import DEFAULT_CHAN_SIZE, Event, EventType, WatchIteration
from client_cache.codec import _wire as wire
from client_cache.codec._watch_decoders import JsonLines, WatchDecoder, object_lines
from client_cache.codec.errors import WatchDecodeError
from client_cache.util.chan import Chan, ChanClosedError, DoneChan, SendReady, select
from client_cache.util.errors import ClientCacheError

__all__ = ["EVENT_TYPES", "BurstTake", "StreamWatcher", "decode_error_status",
           "json_lines"]

_log = logging.getLogger(__name__)


def decode_error_status(message: str) -> dict[str, Any]:
    """The ``Status`` a client-side decode failure is reported as (upstream's
    ``ClientWatchDecoding`` reporter: code 500, reason ``InternalError``, the cause
    ``ClientWatchDecoding``, so that code checking those sees Go's values). Its message
    says what happened, which Go's does not: this client could not decode what the
    server sent (a frame that is not an event; an object that does not fit the class is
    not this, see :mod:`client_cache.codec._unfit`)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"client-side decode of the watch stream failed ({message})",
        "reason": "InternalError",
        "details": {"causes": [{"reason": "ClientWatchDecoding", "message": message}]},
        "code": 500,
    }


_STOP_JOIN_SECONDS = 1.0
_THREAD, _CALLER = "thread", "caller"  # who reads a StreamWatcher's stream


EVENT_TYPES: dict[str, EventType] = {t.value: t for t in EventType}
"""Each event type by its name on the wire."""


def json_lines(loads: Callable[[bytes], Any] = wire.loads,
               decode_object: Callable[[Any], Any] | None = None) -> JsonLines[Event]:
    """The Python decoder of a JSON watch stream into :class:`~client_cache.api.watch.Event`
    objects: each line read by ``loads``, its object turned by ``decode_object``
    (:func:`client_cache.codec._watch_decoders.object_lines`)."""
    return JsonLines(object_lines(loads, decode_object), Event, EVENT_TYPES)


class StreamWatcher(WatchIteration):
    """A :class:`Watch` over a streaming HTTP response (Go ``watch.StreamWatcher``).

    ``response`` is a urllib3 response opened with ``preload_content=False`` whose body is
    a Kubernetes watch stream. ``decoder`` (a
    :class:`~client_cache.codec._watch_decoders.WatchDecoder`; by default
    :func:`json_lines`: JSON lines, objects kept as decoded) is fed each chunk read and
    gives its events: JSON lines in Python or natively, or protobuf frames, as the
    lister-watcher chose (:meth:`~client_cache.codec._decoding.ObjectDecoding.watch_decoder`).
    The client-side idle timeout is the read timeout the request was made with: when it
    passes with nothing received, the watch ends. ``name`` names the reader thread
    (``watch-<name>``), which the first :meth:`result_chan` starts; :meth:`take_bursts`
    reads in the caller's thread instead.

    The events of each chunk read go to the channel together (``Chan.try_send_batch``:
    what fits at once, the rest as room is made); an event that fails to decode is
    reported after the events before it in its chunk, and ends the watch.
    """

    def __init__(
        self,
        response: Any,
        decoder: WatchDecoder[Event] | None = None,
        *,
        name: str = "stream",
        chan_size: int = DEFAULT_CHAN_SIZE,
    ) -> None:
        self._response = response
        self._decoder: WatchDecoder[Event] = json_lines() if decoder is None else decoder
        self._result: Chan[Event] = Chan(chan_size)
        self._done = DoneChan()
        self._lock = threading.Lock()
        self._stopped = False
        self._reader: str | None = None  # who reads the stream: _THREAD or _CALLER
        # read in the caller's thread: the bursts, one take at a time (take_bursts)
        self._source: Generator[list[Event], None, None] | None = None
        self._taking = False  # a take is out, not closed yet
        self._held: list[Event] | None = None  # given back by hold, for the next take
        self._thread = threading.Thread(target=self._receive, name=f"watch-{name}", daemon=True)

    def result_chan(self) -> Chan[Event]:
        """The channel of events; closed when the watch ends (Go ``ResultChan``). The
        first call starts the reader thread, unless :meth:`take_bursts` took the stream
        (then the channel stays empty and closes when the stream ends)."""
        with self._lock:
            if self._reader is None:
                self._reader = _THREAD
                if self._stopped:
                    self._result.close()
                else:
                    self._thread.start()
        return self._result

    def take_bursts(self) -> BurstTake | None:
        """The events read in the calling thread instead of a reader thread, a list per
        chunk read (a port addition: a reflector's watch loop reads this way, a hand-off
        between two threads less for every chunk); None when :meth:`result_chan` was
        called first or another take is still open. The lists are what the channel would
        have carried, in order: a decode error ends them with an ERROR event; a
        connection that fails, times out or is stopped ends them quietly.
        :meth:`stop`, from any thread, interrupts a read in progress.

        Closing the take closes the stream, unless :meth:`hold` was called during it:
        then the stream stays open for the next take, which starts with the events
        given back (a watch-list's loop stops at the bookmark that ends its initial
        events, and the reflector's next loop goes on reading the same stream)."""
        with self._lock:
            if self._reader == _THREAD or self._taking:
                return None
            if self._source is None:
                self._reader = _CALLER
                self._source = self._until_end()
            self._taking = True
            return BurstTake(self, self._source)

    def hold(self, events: list[Event]) -> None:
        """Keep the stream open when the current take closes; ``events`` (the rest of
        the last list taken, which the taker stopped in) come first in the next take. A
        port addition, for the caller that reads with :meth:`take_bursts`."""
        with self._lock:
            if not self._taking:
                raise ClientCacheError("hold is for the caller of an open take_bursts")
            self._held = list(events)

    def _next_held(self) -> list[Event] | None:
        """The events given back by :meth:`hold`, once; None when there are none."""
        held, self._held = self._held, None
        return held

    def _end_take(self, source: Generator[list[Event], None, None]) -> None:
        """A take closed: the stream is closed unless it was held."""
        with self._lock:  # closed under the lock: no take can start on it meanwhile
            self._taking = False
            if self._held is None or self._stopped:
                self._held = None
                source.close()  # closes the channel and the response

    def stop(self) -> None:
        """End the watch: shut its connection down, close the channel and wait (at most
        1 s) for the reader thread to end."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            started = self._reader == _THREAD
        self._done.close()
        _interrupt(self._response)
        with self._lock:
            # a stream held between two takes is closed here, under the lock, so that no
            # take starts on it meanwhile; one being taken is closed by its take
            if self._source is not None and not self._taking:
                self._held = None
                self._source.close()
        if started and threading.current_thread() is not self._thread:
            # The socket is shut down, so the reader ends at once; waiting for it here
            # means no ``watch-*`` thread outlives its watcher's stop (Go's Stop does
            # not wait; a port addition, bounded to 1 s).
            self._thread.join(_STOP_JOIN_SECONDS)

    def is_stopped(self) -> bool:
        """True once ``stop`` was called."""
        with self._lock:
            return self._stopped

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the reader thread to end; True if it has (or never started)."""
        if self._thread.ident is not None:  # started
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _bursts(self) -> Iterator[list[Event]]:
        """The events of the stream, a list per chunk read, then those of what was left
        when it ended."""
        decoder = self._decoder
        for chunk in self._response.stream(65536, decode_content=True):
            yield decoder.decode(chunk)
        last = decoder.end()
        if last:
            yield last

    def _deliver_all(self, events: list[Event]) -> bool:
        """Send ``events`` in order: what fits at once, then, each time the channel has
        room again, as much of the rest as fits (one lock and one wake-up per refill, not
        per event). False when the watch was stopped first."""
        while True:
            if self._done.closed():
                return False
            try:
                sent = self._result.try_send_batch(events) if events else 0
            except ChanClosedError:
                return False
            if sent == len(events):
                return True
            events = events[sent:]
            index, _ = select([self._done, SendReady(self._result)])
            if index == 0:
                return False

    def _until_end(self) -> Generator[list[Event], None, None]:
        """:meth:`_bursts` until the stream ends, whoever reads it: a decode error becomes
        a last list (the events before it, then the ERROR event), any other failure an
        end (logged unless stopped). At the end the channel closes and the response is
        closed."""
        try:
            yield from self._bursts()
        except WatchDecodeError as err:
            if not self.is_stopped():
                yield [*err.events, Event(EventType.ERROR, decode_error_status(str(err)))]
        except Exception as err:  # connection reset, truncated chunk, read timeout...
            if not self.is_stopped():
                _log.debug("watch stream ended: %s", err)
        finally:
            self._result.close()
            self._decoder.close()
            _close(self._response)

    def _receive(self) -> None:
        with contextlib.closing(self._until_end()) as bursts:
            for burst in bursts:
                if not self._deliver_all(burst):
                    return


class BurstTake:
    """One take of a :class:`StreamWatcher`'s stream in the caller's thread
    (:meth:`StreamWatcher.take_bursts`): an iterator of lists of events, first those a
    :meth:`StreamWatcher.hold` gave back, then the stream's. ``close`` ends the take
    (at once, also before any list was taken); it closes the stream unless the take
    held it."""

    def __init__(self, watcher: StreamWatcher,
                 source: Generator[list[Event], None, None]) -> None:
        self._watcher = watcher
        self._source: Generator[list[Event], None, None] | None = source

    def __iter__(self) -> BurstTake:
        return self

    def __next__(self) -> list[Event]:
        if self._source is None:
            raise StopIteration
        held = self._watcher._next_held()
        return held if held else next(self._source)  # an empty rest is no list of its own

    def close(self) -> None:
        """End the take; the stream is closed with it unless it was held."""
        source, self._source = self._source, None
        if source is not None:
            self._watcher._end_take(source)


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
