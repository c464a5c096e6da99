"""What both event APIs share (Go ``watch.Broadcaster`` in ``DropIfChannelFull`` mode, the
sinks' REST calls, and the write-with-retries loop of ``recordToSink``/
``attemptRecording``): used by :mod:`client_cache.record` (core/v1 Events) and
:mod:`client_cache.events` (events.k8s.io/v1 Events).

* :class:`EventFanout` hands every event to each watcher's bounded queue without
  blocking (a full queue drops the event and counts it); each watcher drains its queue on
  a named daemon thread of its own. :meth:`EventFanout.shutdown` lets the watchers finish
  what is queued within a deadline, then drops the rest (counted).
* :func:`write_with_retries` makes up to 12 attempts, pausing between them; a shutdown cuts
  the pause short (one last attempt was made) and gives up.
* :class:`RestEventSink` sends one JSON request through a ``kubernetes`` API client and
  raises :class:`EventSinkError` saying whether a retry may help.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

from client_cache import meta
from client_cache.errors import ClientCacheError
from client_cache.rest import RestError, request_json
from client_cache.util.clock import REAL_CLOCK, PassiveClock

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "MAX_QUEUED_EVENTS",
    "MAX_TRIES_PER_EVENT",
    "EventFanout",
    "EventSinkError",
    "RestEventSink",
    "object_reference",
    "write_with_retries",
]

_log = logging.getLogger(__name__)

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"
MAX_TRIES_PER_EVENT = 12
"""Go ``maxTriesPerEvent``."""
MAX_QUEUED_EVENTS = 1000
"""Go ``maxQueuedEvents``: a watcher's queue bound."""


class EventSinkError(ClientCacheError):
    """Writing an event failed; ``retry`` says whether trying again may help (a server
    error or no answer) or not (the server refused it)."""

    def __init__(self, message: str, status: int = 0, retry: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.retry = retry


class RestEventSink:
    """Base of the REST sinks: ``send`` one JSON request with the client's credentials
    and throttling, ``timeout`` seconds at most (Go's ``EventSinkImpl`` types)."""

    def __init__(self, api_client: Any, timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.timeout = timeout

    def send(self, method: str, path: str, body: Any, content_type: str) -> dict[str, Any]:
        """The stored object, or :class:`EventSinkError` (``retry`` for 5xx, 429 and no
        answer; ``status`` 0 for no answer). The message names the request, never the
        body."""
        try:
            status, stored = request_json(self.api_client, method, path, body,
                                          content_type, self.timeout)
        except RestError as err:
            raise EventSinkError(f"{method} {path}: no answer") from err
        if 200 <= status < 300 and isinstance(stored, dict):
            return stored
        raise EventSinkError(f"{method} {path}: HTTP {status}", status,
                             retry=status >= 500 or status == 429)


class _Watcher:
    """One consumer of the broadcast events: a bounded queue and a thread."""

    _DONE = object()

    def __init__(self, name: str, handle: Callable[[dict[str, Any]], None],
                 max_queued: int) -> None:
        self.queue: queue.Queue[Any] = queue.Queue(max_queued)
        self.handle = handle
        self.dropped = 0
        self.abandoned = False  # past the shutdown deadline: drop what is left
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def offer(self, event: dict[str, Any]) -> None:
        try:
            self.queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            event = self.queue.get()
            if event is self._DONE:
                return
            if self.abandoned:
                self.dropped += 1
                continue
            try:
                self.handle(event)
            except Exception:
                _log.exception("an event watcher failed")

    def finish(self) -> None:
        while True:
            try:
                self.queue.put(self._DONE, timeout=0.1)
                return
            except queue.Full:
                if not self.thread.is_alive():
                    return


class EventFanout:
    """Every event to every watcher, never blocking the sender (Go ``watch.Broadcaster``
    with ``DropIfChannelFull``). Watcher threads are named ``<name>-<n>``."""

    def __init__(self, name: str, max_queued: int = MAX_QUEUED_EVENTS,
                 clock: PassiveClock = REAL_CLOCK) -> None:
        self.name = name
        self.max_queued = max_queued
        self.clock = clock
        self.shutting_down = threading.Event()
        """Set by :meth:`shutdown`; retry pauses wait on it."""
        self._lock = threading.Lock()
        self._watchers: list[_Watcher] = []

    def start_watcher(self, handler: Callable[[dict[str, Any]], None]) -> None:
        """Call ``handler`` with every event from now on, on a thread of its own;
        :class:`ClientCacheError` after :meth:`shutdown`."""
        with self._lock:
            if self.shutting_down.is_set():
                raise ClientCacheError(f"the event broadcaster {self.name} is shut down")
            self._watchers.append(_Watcher(f"{self.name}-{len(self._watchers)}", handler,
                                           self.max_queued))

    def offer(self, event: dict[str, Any]) -> None:
        """Queue ``event`` for every watcher without blocking (dropped where full)."""
        with self._lock:
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher.offer(event)

    def dropped(self) -> int:
        """Events dropped because a watcher's queue was full, or left at shutdown."""
        with self._lock:
            return sum(w.dropped for w in self._watchers)

    def shutdown(self, timeout: float) -> list[str]:
        """Stop accepting watchers, let each finish what is queued and wait for them,
        ``timeout`` seconds in all; what is still queued then is dropped (counted in
        :meth:`dropped`). Returns the names of watcher threads still alive (one in the
        middle of a request, bounded by the sink's timeout)."""
        with self._lock:
            self.shutting_down.set()
            watchers = list(self._watchers)
        deadline = self.clock.monotonic() + timeout
        for watcher in watchers:
            watcher.finish()
        for watcher in watchers:
            watcher.thread.join(max(0.0, deadline - self.clock.monotonic()))
        late = [w for w in watchers if w.thread.is_alive()]
        for watcher in late:  # out of time: what is still queued is dropped and counted
            watcher.abandoned = True
        for watcher in late:
            watcher.thread.join(0.5)
        if late:
            _log.warning("event broadcaster %s shut down with %d events unsent (dropped)",
                         self.name, sum(w.dropped for w in late))
        return [w.thread.name for w in late if w.thread.is_alive()]


def write_with_retries(attempt: Callable[[], bool], pause: Callable[[int], float],
                       stopping: threading.Event) -> bool:
    """Call ``attempt`` (True: done, written or refused for good) up to
    :data:`MAX_TRIES_PER_EVENT` times, waiting ``pause(tries)`` seconds after each failed
    one; a set ``stopping`` ends the wait and gives up. Returns whether an attempt said
    done."""
    for tries in range(1, MAX_TRIES_PER_EVENT + 1):
        if attempt():
            return True
        if tries == MAX_TRIES_PER_EVENT or stopping.is_set():
            break
        if stopping.wait(pause(tries)):
            break  # shutting down: one last try was made; give up the rest
    return False


def object_reference(obj: Any) -> dict[str, Any]:
    """An ObjectReference (wire form, empty fields left out) for ``obj``: a wire dict, a
    model, a dynamic object or anything with ``name``/``namespace``/``kind``/
    ``api_version``/``uid`` attributes (a runtime ObjectRef) (Go
    ``reference.GetReference``). A list item of a built-in resource often has no kind:
    then the reference has none either, and the caller supplies it."""
    if not isinstance(obj, Mapping) and hasattr(obj, "kind") and hasattr(obj, "name") \
            and not hasattr(obj, "metadata"):
        return {k: v for k, v in (("kind", obj.kind), ("namespace", obj.namespace),
                                  ("name", obj.name), ("uid", getattr(obj, "uid", "")),
                                  ("apiVersion", getattr(obj, "api_version", ""))) if v}
    api_version, kind = meta.type_meta(obj)
    md = meta.accessor(obj)
    ref = {"kind": kind, "namespace": md.namespace, "name": md.name, "uid": md.uid,
           "apiVersion": api_version, "resourceVersion": md.resource_version}
    return {k: v for k, v in ref.items() if v}
