"""events.k8s.io/v1 Events (Go ``tools/events``): the newer Event API, with a reporting
controller and instance, an action, an optional related object, and repeats folded into an
``EventSeries`` instead of a count.

::

    broadcaster = EventBroadcaster(EventsV1Sink(api_client))
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_recorder("sample-controller")
    recorder.eventf(foo, None, "Normal", "Synced", "Reconcile", "Foo %s synced", name)
    ...
    broadcaster.shutdown()    # flushes what is queued and the series' last counts

How repeats reach the server, as client-go's ``recordToSink`` does it: events are
*isomorphic* when they agree on regarding, related, reason, action, type and reporting
controller and instance (the note is not compared). The first is created; the second turns
the first into a series (``series.count`` 2, a strategic-merge PATCH of the first Event);
later ones only count up in memory. Every 30 minutes the series still running are written
again, and 6 minutes after its last occurrence a series is written a last time and
forgotten (singletons are forgotten 6 minutes after they happened). Unlike client-go,
:meth:`EventBroadcaster.shutdown` also writes the counts not yet written (one try each,
within its timeout), so a short-lived process does not lose them.

Sending never blocks the caller: events are queued (1,000 at most; then dropped and
counted) and written on the sink watcher's thread, with up to 12 tries each,
``sleep_duration`` (10 s) apart with 25 % jitter; a refusal (4xx) is not retried, except a
409 on creating an Event for a series (it was just created elsewhere: the next try patches
it). Writes are one at a time on that thread (client-go starts a goroutine per event); a
server that is down therefore holds the queue, which then drops. Events are logged by
kind, namespace/name, type, reason and action, never with the object's contents.
"""

from __future__ import annotations

import copy
import logging
import random
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from client_cache.api import meta
from client_cache.record.broadcast import (
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    MAX_QUEUED_EVENTS,
    BroadcasterBase,
    EventNamer,
    EventSinkError,
    RestEventSink,
    describe_regarding,
    object_reference,
    regarding_reference,
)
from client_cache.util.clock import REAL_CLOCK, PassiveClock
from client_cache.util.stop import on_stop
from client_cache.util.timestamps import format_micro_time

__all__ = [
    "FINISH_TIME",
    "REFRESH_TIME",
    "EventBroadcaster",
    "EventRecorder",
    "EventSink",
    "EventsV1Sink",
    "isomorphic_key",
]

_log = logging.getLogger(__name__)

FINISH_TIME = 6 * 60.0
"""Go ``finishTime``: a series with no occurrence for this long is over."""
REFRESH_TIME = 30 * 60.0
"""Go ``refreshTime``: how often running series are written again."""
DEFAULT_SLEEP_DURATION = 10.0
_EVENTS_PATH = "/apis/events.k8s.io/v1/namespaces/{namespace}/events"


class EventSink(Protocol):
    """Where events.k8s.io/v1 Events are written (Go ``events.EventSink``); each returns
    the stored Event or raises :class:`~client_cache.record.broadcast.EventSinkError`."""

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        """Create ``event`` on the server and return what the server stored."""
        ...

    def update(self, event: dict[str, Any]) -> dict[str, Any]:
        """Replace ``event`` on the server and return what the server stored."""
        ...

    def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        """Apply the strategic-merge ``patch`` to ``event`` and return what the server
        stored."""
        ...


class EventsV1Sink(RestEventSink):
    """events.k8s.io/v1 Events through a ``kubernetes`` API client (Go
    ``events.EventSinkImpl``); an Event without a namespace is refused (not retried)."""

    def _path(self, event: dict[str, Any], name: bool) -> str:
        md = event.get("metadata") or {}
        if not md.get("namespace"):
            raise EventSinkError("can't write an event with an empty namespace", retry=False)
        path = _EVENTS_PATH.format(namespace=md["namespace"])
        return f"{path}/{md['name']}" if name else path

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        """Create ``event`` on the server and return what the server stored."""
        body = dict(event, metadata={k: v for k, v in event["metadata"].items()
                                     if k != "resourceVersion"})
        return self.send("POST", self._path(event, False), body, "application/json")

    def update(self, event: dict[str, Any]) -> dict[str, Any]:
        """Replace ``event`` on the server and return what the server stored."""
        return self.send("PUT", self._path(event, True), event, "application/json")

    def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        """Apply the strategic-merge ``patch`` to ``event`` and return what the server
        stored."""
        return self.send("PATCH", self._path(event, True), patch,
                         "application/strategic-merge-patch+json")


def isomorphic_key(event: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two events the same occurrence of one series (Go ``getKey``): type,
    action, reason, reporting controller and instance, regarding and related."""
    def ref(value: Any) -> tuple[tuple[str, Any], ...]:
        return tuple(sorted((value or {}).items()))
    return (event.get("type"), event.get("action"), event.get("reason"),
            event.get("reportingController"), event.get("reportingInstance"),
            ref(event.get("regarding")), ref(event.get("related")))


@dataclass
class _Isomorphic:
    event: dict[str, Any]  # the first occurrence, with its series once there is one
    observed: float  # monotonic time of the last occurrence
    written: int  # the series count last written (1: only the first occurrence)


class EventBroadcaster(BroadcasterBase):
    """See the module documentation (Go ``events.EventBroadcaster``). Threads:
    ``events-watcher-<n>`` per watcher, ``events-series`` for the periodic series writes.
    """

    def __init__(self, sink: EventSink, *, max_queued: int = MAX_QUEUED_EVENTS,
                 sleep_duration: float = DEFAULT_SLEEP_DURATION,
                 clock: PassiveClock = REAL_CLOCK) -> None:
        super().__init__("events-watcher", max_queued, clock)
        self.sink = sink
        self.sleep_duration = sleep_duration
        self._lock = threading.Lock()
        self._cache: dict[tuple[Any, ...], _Isomorphic] = {}
        self._series_thread: threading.Thread | None = None
        self._stop_series = threading.Event()
        self._stop_hook: Any = None  # the registration on the caller's stop event

    def start_recording_to_sink(self, stop: threading.Event | None = None) -> None:
        """Write every event to the sink, folding repeats into series, and start the
        periodic series writes (Go ``StartRecordingToSink``). Setting ``stop`` ends both
        (what is queued for the sink is dropped); :meth:`shutdown` ends them too, after a
        flush."""
        stop_watching = self.start_event_watcher(self.record_to_sink)
        with self._lock:
            if self._series_thread is not None:
                raise RuntimeError("start_recording_to_sink was already called")
            self._series_thread = threading.Thread(target=self._series_loop,
                                                   name="events-series", daemon=True)
        self._series_thread.start()
        if stop is not None:
            def stopped() -> None:
                stop_watching()
                self._stop_series.set()
            self._stop_hook = on_stop(stop, stopped)

    def log_line(self, event: dict[str, Any]) -> str:
        """Regarding object by kind and namespace/name, type, reason, action and note."""
        return (f"Event occurred: object={describe_regarding(event.get('regarding'))} "
                f"type={event.get('type')} reason={event.get('reason')} "
                f"action={event.get('action')} note={event.get('note')!r}")

    def new_recorder(self, reporting_controller: str, reporting_instance: str = "",
                     ) -> EventRecorder:
        """A recorder reporting as ``reporting_controller``; the instance defaults to
        ``<controller>-<hostname>`` as client-go's (Go ``NewRecorder``)."""
        return EventRecorder(self, reporting_controller, reporting_instance
                             or f"{reporting_controller}-{socket.gethostname()}")

    def series_count(self, event: dict[str, Any]) -> int:
        """How many occurrences of ``event``'s series were seen so far (0: none)."""
        with self._lock:
            entry = self._cache.get(isomorphic_key(event))
            if entry is None:
                return 0
            return int((entry.event.get("series") or {}).get("count", 1))

    def record_to_sink(self, event: dict[str, Any]) -> None:
        """Write one occurrence (Go ``recordToSink``), on the caller's thread: the sink
        watcher calls it for every event."""
        now = self.clock.now()
        with self._lock:
            key = isomorphic_key(event)
            entry = self._cache.get(key)
            if entry is None:
                self._cache[key] = _Isomorphic(copy.deepcopy(event),
                                               self.clock.monotonic(), 1)
                to_write = copy.deepcopy(event)
            else:
                entry.observed = self.clock.monotonic()
                series = entry.event.get("series")
                if series is not None:
                    series["count"] += 1
                    series["lastObservedTime"] = format_micro_time(now)
                    return
                entry.event["series"] = {"count": 2,
                                         "lastObservedTime": format_micro_time(now)}
                to_write = copy.deepcopy(entry.event)
        if self.write(lambda: self._record(to_write)[0],
                      lambda _: self.sleep_duration * (1 + random.random() / 4),
                      to_write.get("reason"), describe_regarding(to_write.get("regarding"))) \
                and entry is not None:
            with self._lock:
                entry.written = max(entry.written, 2)

    def _record(self, event: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        """One try (Go ``recordEvent``): (done, the stored Event). Done is True when
        written or refused for good."""
        series = event.get("series")
        try:
            stored = None
            if series is not None:
                try:
                    stored = self.sink.patch(event, {"series": series})
                except EventSinkError as err:
                    if err.status != 404:
                        raise
            if stored is None:  # a singleton, or the Event of the series is gone
                stored = self.sink.create(event)
            return True, stored
        except EventSinkError as err:
            # a 409 creating a series' Event: it was just created; the next try patches it
            return self.failed_try(err, event.get("reason"),
                                   describe_regarding(event.get("regarding")),
                                   err.retry or (err.status == 409 and series is not None),
                                   ), None

    def _write_once(self, entry: _Isomorphic) -> bool:
        """Write ``entry``'s series as it is now, one try; True when done."""
        with self._lock:
            event = copy.deepcopy(entry.event)
        done, _ = self._record(event)
        if done:
            with self._lock:
                entry.written = max(entry.written, int(event["series"]["count"]))
        return done

    def _write_series(self, keep: Callable[[_Isomorphic], bool],
                      forget: Callable[[_Isomorphic], bool]) -> None:
        """Write once each series that ``keep`` or ``forget`` selects; drop from the
        cache those ``forget`` selects, once written (at once when they have no series).
        """
        with self._lock:
            chosen = [(key, entry) for key, entry in self._cache.items()
                      if keep(entry) or forget(entry)]
        for key, entry in chosen:
            done = entry.event.get("series") is None or self._write_once(entry)
            with self._lock:
                if done and forget(entry) and self._cache.get(key) is entry:
                    del self._cache[key]

    def refresh_existing_series(self) -> None:
        """Write every running series again (Go ``refreshExistingEventSeries``); runs
        every :data:`REFRESH_TIME` on the ``events-series`` thread."""
        self._write_series(lambda e: e.event.get("series") is not None, lambda e: False)

    def finish_series(self) -> None:
        """Write the last count of every series idle for :data:`FINISH_TIME` and forget
        it; forget singletons that old (Go ``finishSeries``); runs every
        :data:`FINISH_TIME` on the ``events-series`` thread."""
        cutoff = self.clock.monotonic() - FINISH_TIME
        self._write_series(lambda e: False, lambda e: e.observed < cutoff)

    def _series_loop(self) -> None:
        due_finish = due_refresh = self.clock.monotonic()
        due_finish += FINISH_TIME
        due_refresh += REFRESH_TIME
        while not self._stop_series.wait(max(0.0, min(due_finish, due_refresh)
                                             - self.clock.monotonic())):
            now = self.clock.monotonic()
            try:
                if now >= due_refresh:
                    due_refresh = now + REFRESH_TIME
                    self.refresh_existing_series()
                if now >= due_finish:
                    due_finish = now + FINISH_TIME
                    self.finish_series()
            except Exception:
                _log.exception("writing event series failed")

    def shutdown(self, timeout: float = 1.0) -> list[str]:
        """Let the watchers finish what is queued (a retry pause is cut short: one last
        try), then write each series count not yet written (one try each, while time is
        left), all within ``timeout`` seconds; then end the threads (Go ``Shutdown``,
        which writes no pending counts). Returns the threads still alive (one in the
        middle of a request, bounded by the sink's timeout)."""
        deadline = self.clock.monotonic() + timeout
        self._stop_series.set()
        if self._stop_hook is not None:  # the caller's stop event must not keep us alive
            self._stop_hook.cancel()
        alive = self.fanout.shutdown(timeout)
        with self._lock:
            thread = self._series_thread
            pending = [e for e in self._cache.values() if e.event.get("series")
                       and e.written < e.event["series"]["count"]]
        for index, entry in enumerate(pending):
            if self.clock.monotonic() >= deadline or not self._write_once(entry):
                # out of time, or no answer: do not wait for every other series too
                _log.warning("event broadcaster shut down with %d series counts unwritten",
                             len(pending) - index)
                break
        if thread is not None:
            thread.join(max(0.0, deadline - self.clock.monotonic()))
            if thread.is_alive():
                alive.append(thread.name)
        return alive


class EventRecorder:
    """Records events.k8s.io/v1 Events about objects (Go ``events.EventRecorder``); built
    by :meth:`EventBroadcaster.new_recorder`. The regarding object must say its kind (a
    wire dict's ``kind``, a model's ``kind``); list items of built-in resources often do
    not, so pass ``kind=``/``api_version=`` then. ``related`` is optional (None)."""

    def __init__(self, broadcaster: EventBroadcaster, reporting_controller: str,
                 reporting_instance: str) -> None:
        self.broadcaster = broadcaster
        self.reporting_controller = reporting_controller
        self.reporting_instance = reporting_instance
        self._namer = EventNamer()

    def eventf(self, regarding: Any, related: Any, event_type: str, reason: str,
               action: str, note: str, *args: Any, kind: str = "",
               api_version: str = "", annotations: Mapping[str, str] | None = None) -> None:
        """Record an event (Go ``Eventf``): ``note % args`` (no formatting without
        ``args``); never blocks. An unknown type or an object without a kind is logged and
        not sent; a related object whose reference cannot be built is left out.
        ``annotations`` go on the Event's metadata (the port's: Go's newer recorder has
        no ``AnnotatedEventf``; they do not count in telling repeats apart)."""
        message = note % args if args else note
        ref = regarding_reference(regarding, kind, api_version)
        if ref is None:
            return
        related_ref = None
        if related is not None:
            try:
                related_ref = object_reference(related)
            except Exception as err:
                _log.debug("Could not construct reference to %s: %s",
                           meta.describe(related), type(err).__name__)
        if event_type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            _log.error("Unsupported event type: %r", event_type)
            return
        now = self.broadcaster.clock.now()
        event: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": self._namer.name(ref.get("name", ""), now),
                         "namespace": ref.get("namespace") or "default"},
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action, "reason": reason, "regarding": ref, "note": message,
            "type": event_type}
        if related_ref:
            event["related"] = related_ref
        if annotations:
            event["metadata"]["annotations"] = dict(annotations)
        self.broadcaster.action_or_drop(event)
