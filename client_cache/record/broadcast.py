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

from client_cache.api import meta
from client_cache.client.rest import RestError, request_json
from client_cache.errors import ClientCacheError
from client_cache.util._logs import FailureEpisodes, log_failure
from client_cache.util.clock import REAL_CLOCK, PassiveClock
from client_cache.util.rest_metrics import RateLimiter

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "MAX_QUEUED_EVENTS",
    "MAX_TRIES_PER_EVENT",
    "BroadcasterBase",
    "EventFanout",
    "EventSinkError",
    "EventNamer",
    "RestEventSink",
    "describe_regarding",
    "object_reference",
    "regarding_reference",
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
    """Base of the REST sinks: ``send`` one JSON request with the client's credentials,
    ``timeout`` seconds at most (Go's ``EventSinkImpl`` types). It waits for ``limiter``
    when one is given (a bucket of the Events' own, so that a burst of Events does not
    delay the controller's writes nor wait behind them, as controller-runtime's recorder
    has a client of its own), else for the client's throttling."""

    def __init__(self, api_client: Any, timeout: float = 10.0,
                 limiter: RateLimiter | None = None) -> None:
        self.api_client = api_client
        self.timeout = timeout
        self.limiter = limiter

    def send(self, method: str, path: str, body: Any, content_type: str) -> dict[str, Any]:
        """The stored object, or :class:`EventSinkError` (``retry`` for 5xx, 429 and no
        answer; ``status`` 0 for no answer). The message names the request, never the
        body."""
        try:
            status, stored = request_json(self.api_client, method, path, body,
                                          content_type, self.timeout, self.limiter)
        except RestError as err:
            raise EventSinkError(f"{method} {path}: no answer") from err
        if 200 <= status < 300 and isinstance(stored, dict):
            return stored
        raise EventSinkError(f"{method} {path}: HTTP {status}", status,
                             retry=status >= 500 or status == 429)


class EventNamer:
    """Names for new Events: ``<object name>.<nanoseconds in hex>`` (Go
    ``util.GenerateEventName``), the nanoseconds kept strictly increasing: a float clock
    reading repeats within a burst, and two Events of one name would collide on the
    server (409). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_stamp = 0

    def name(self, object_name: str, now: float) -> str:
        """A fresh name for an Event about ``object_name`` at wall time ``now``."""
        with self._lock:
            stamp = max(int(now * 1e9), self._last_stamp + 1)
            self._last_stamp = stamp
        return f"{object_name}.{stamp:x}"


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
        self._started = 0
        self._retired_dropped = 0

    def start_watcher(self, handler: Callable[[dict[str, Any]], None],
                      ) -> Callable[[], None]:
        """Call ``handler`` with every event from now on, on a thread of its own;
        :class:`ClientCacheError` after :meth:`shutdown`. Returns a function that stops
        this watcher (Go ``watcher.Stop``): what it has queued is dropped, uncounted, and
        its thread ends after the event in hand."""
        with self._lock:
            if self.shutting_down.is_set():
                raise ClientCacheError(f"the event broadcaster {self.name} is shut down")
            self._started += 1
            watcher = _Watcher(f"{self.name}-{self._started - 1}", handler, self.max_queued)
            self._watchers.append(watcher)

        def stop() -> None:
            with self._lock:
                if watcher not in self._watchers:
                    return
                self._watchers.remove(watcher)
                self._retired_dropped += watcher.dropped
            watcher.abandoned = True
            watcher.finish()

        return stop

    def offer(self, event: dict[str, Any]) -> None:
        """Queue ``event`` for every watcher without blocking (dropped where full)."""
        with self._lock:
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher.offer(event)

    def dropped(self) -> int:
        """Events dropped because a watcher's queue was full, or left at shutdown."""
        with self._lock:
            return self._retired_dropped + sum(w.dropped for w in self._watchers)

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


class BroadcasterBase:
    """What both broadcasters offer besides their sinks: watchers, logging, counters.
    Subclasses say how an event reads in a log line (:meth:`log_line`)."""

    def __init__(self, name: str, max_queued: int, clock: PassiveClock) -> None:
        self.clock = clock
        self.fanout = EventFanout(name, max_queued, clock)
        self.counter_lock = threading.Lock()
        self._failed = 0
        # writes given up on, by why: the first of each is visible with no logging
        # configured (a missing RBAC rule refuses every Event), repeats are counted
        self._failures = FailureEpisodes()

    def start_event_watcher(self, handler: Callable[[dict[str, Any]], None],
                            ) -> Callable[[], None]:
        """Call ``handler`` with every event, on a thread of its own (Go
        ``StartEventWatcher``); returns a function that stops this watcher."""
        return self.fanout.start_watcher(handler)

    def log_line(self, event: dict[str, Any]) -> str:
        """How :meth:`start_logging` shows ``event`` (the object by kind and
        namespace/name, never its contents)."""
        raise NotImplementedError

    def start_logging(self, log: Callable[[str], None] | logging.Logger | None = None,
                      ) -> Callable[[], None]:
        """Log every event at INFO to ``log`` (a logger, or a function taking the line;
        the library's logger by default) (Go ``StartLogging``); returns a function that
        stops logging."""
        logger = log or _log

        def write(event: dict[str, Any]) -> None:
            if isinstance(logger, logging.Logger):
                logger.info("%s", self.log_line(event))
            else:
                logger(self.log_line(event))

        return self.start_event_watcher(write)

    def action_or_drop(self, event: dict[str, Any]) -> None:
        """Offer ``event`` to every watcher without blocking (dropped where full)."""
        self.fanout.offer(event)

    def dropped(self) -> int:
        """Events dropped because a watcher's queue was full, or left at shutdown."""
        return self.fanout.dropped()

    def failed(self) -> int:
        """Writes given up on (refused by the server, or 12 failed tries)."""
        with self.counter_lock:
            return self._failed

    def write(self, attempt: Callable[[], bool], pause: Callable[[int], float],
              reason: Any, regarding: str) -> bool:
        """:func:`write_with_retries` (a shutdown cuts it short); counts and logs an event
        given up on. Returns whether an attempt said done."""
        if write_with_retries(attempt, pause, self.fanout.shutting_down):
            return True
        with self.counter_lock:
            self._failed += 1
        log_failure(_log, self._failures, "gave up", "retries", "Unable to write event %s "
                    "for %s (retry limit exceeded or shut down)", reason, regarding)
        return False

    def failed_try(self, err: EventSinkError, reason: Any, regarding: str,
                   retry: bool) -> bool:
        """Log one failed try; True (done) when it is not to be retried, then counted as
        given up on (Go: "will not retry!")."""
        if retry:
            _log.info("Unable to write event %s for %s: %s (may retry)", reason, regarding,
                      err)
            return False
        log_failure(_log, self._failures, "rejected", f"HTTP {err.status}",
                    "Server rejected event %s for %s: %s (will not retry!)", reason,
                    regarding, err)
        with self.counter_lock:
            self._failed += 1
        return True


def describe_regarding(ref: Mapping[str, Any] | None) -> str:
    """An event's object reference as ``Kind namespace/name`` for logs."""
    ref = ref or {}
    return f"{ref.get('kind')} {ref.get('namespace', '')}/{ref.get('name')}"


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


def regarding_reference(obj: Any, kind: str, api_version: str) -> dict[str, Any] | None:
    """:func:`object_reference` for the object an event is about, ``kind`` and
    ``api_version`` filling in what it does not say; None (logged, never raised) when no
    reference with a kind can be built: the event is then not sent, as in client-go."""
    try:
        ref = object_reference(obj)
    except Exception as err:
        _log.error("Could not construct reference to %s, will not report event: %s",
                   meta.describe(obj), type(err).__name__)
        return None
    ref.setdefault("kind", kind)
    ref.setdefault("apiVersion", api_version)
    if not ref.get("kind"):
        _log.error("Could not construct reference to %s: its kind is unknown",
                   meta.describe(obj))
        return None
    return ref
