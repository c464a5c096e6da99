"""Event broadcasting and recording (Go ``tools/record/event.go``): core/v1 Events, the
ones ``kubectl describe`` shows.

::

    broadcaster = EventBroadcaster()
    broadcaster.start_recording_to_sink(CoreV1EventSink(api_client))
    recorder = broadcaster.new_recorder(EventSource(component="sample-controller"))
    recorder.event(foo, "Normal", "Synced", "Foo synced successfully")
    ...
    broadcaster.shutdown()      # flushes what is queued (bounded: 1 s by default)

``event``/``eventf``/``annotated_eventf`` never block and never raise for the server's
sake: the event is put on each watcher's bounded queue (1,000 events; when it is full the
event is dropped and counted, :meth:`EventBroadcaster.dropped`), and each watcher has a
thread of its own. The sink's watcher passes every event through an
:class:`~client_cache.record.correlator.EventCorrelator` (aggregation, count patches, spam
filter: its drops are counted in :meth:`EventBroadcaster.spam_filtered`) and writes it with
up to 12 tries, ``sleep_duration`` apart (10 s, the first one randomised), as client-go's
``recordToSink``; a rejection by the server (4xx) is not retried. Events are logged by
kind, namespace/name and reason, never with the object's contents.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Protocol

from client_cache import meta
from client_cache.errors import ClientCacheError
from client_cache.record.correlator import CorrelatorOptions, EventCorrelator
from client_cache.rest import RestError, request_json
from client_cache.util.clock import REAL_CLOCK, PassiveClock

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "MAX_QUEUED_EVENTS",
    "MAX_TRIES_PER_EVENT",
    "CoreV1EventSink",
    "EventBroadcaster",
    "EventRecorder",
    "EventSink",
    "EventSinkError",
    "EventSource",
]

_log = logging.getLogger(__name__)

EVENT_TYPE_NORMAL = "Normal"
EVENT_TYPE_WARNING = "Warning"
MAX_TRIES_PER_EVENT = 12
"""Go ``maxTriesPerEvent``."""
MAX_QUEUED_EVENTS = 1000
"""Go ``maxQueuedEvents``: a watcher's queue bound."""
DEFAULT_SLEEP_DURATION = 10.0


class EventSinkError(ClientCacheError):
    """Writing an event failed; ``retry`` says whether trying again may help (a server
    error or no answer) or not (the server refused it)."""

    def __init__(self, message: str, status: int = 0, retry: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.retry = retry


class EventSink(Protocol):
    """Where events are written (Go ``EventSink``); both return the stored Event."""

    def create(self, event: dict[str, Any]) -> dict[str, Any]: ...

    def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]: ...


class CoreV1EventSink:
    """core/v1 Events through a ``kubernetes`` API client (Go ``EventSinkImpl``)."""

    def __init__(self, api_client: Any, timeout: float = 10.0) -> None:
        self.api_client = api_client
        self.timeout = timeout

    def _send(self, method: str, path: str, body: Any, content_type: str,
              ) -> dict[str, Any]:
        try:
            status, stored = request_json(self.api_client, method, path, body,
                                          content_type, self.timeout)
        except RestError as err:
            raise EventSinkError(f"{method} {path}: no answer") from err
        if 200 <= status < 300 and isinstance(stored, dict):
            return stored
        raise EventSinkError(f"{method} {path}: HTTP {status}", status,
                             retry=status >= 500 or status == 429)

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        namespace = event["metadata"]["namespace"]
        body = dict(event, metadata={k: v for k, v in event["metadata"].items()
                                     if k != "resourceVersion"})
        return self._send("POST", f"/api/v1/namespaces/{namespace}/events", body,
                          "application/json")

    def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        md = event["metadata"]
        return self._send("PATCH", f"/api/v1/namespaces/{md['namespace']}/events/{md['name']}",
                          patch, "application/strategic-merge-patch+json")


@dataclass(frozen=True)
class EventSource:
    """Who reports (Go ``EventSource``)."""

    component: str = ""
    host: str = ""


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


class EventBroadcaster:
    """See the module documentation (Go ``EventBroadcaster``)."""

    def __init__(self, *, max_queued: int = MAX_QUEUED_EVENTS,
                 sleep_duration: float = DEFAULT_SLEEP_DURATION,
                 correlator_options: CorrelatorOptions | None = None,
                 clock: PassiveClock = REAL_CLOCK) -> None:
        self.max_queued = max_queued
        self.sleep_duration = sleep_duration
        self.correlator_options = correlator_options
        self.clock = clock
        self._lock = threading.Lock()
        self._watchers: list[_Watcher] = []
        self._shutting_down = threading.Event()
        self._spam_filtered = 0
        self._failed = 0

    def start_event_watcher(self, handler: Callable[[dict[str, Any]], None]) -> None:
        """Call ``handler`` with every event, on a thread of its own (Go
        ``StartEventWatcher``)."""
        with self._lock:
            if self._shutting_down.is_set():
                raise ClientCacheError("the event broadcaster is shut down")
            self._watchers.append(_Watcher(f"record-watcher-{len(self._watchers)}",
                                           handler, self.max_queued))

    def start_recording_to_sink(self, sink: EventSink) -> None:
        """Write every event to ``sink``, correlated (Go ``StartRecordingToSink``)."""
        correlator = EventCorrelator(self.correlator_options or CorrelatorOptions(
            clock=self.clock))
        self.start_event_watcher(lambda event: self._record_to_sink(sink, correlator, event))

    def start_logging(self, log: Callable[[str], None] | logging.Logger | None = None,
                      ) -> None:
        """Log every event (Go ``StartLogging``/``StartStructuredLogging``): object by kind
        and namespace/name, type, reason and message."""
        logger = log or _log

        def write(event: dict[str, Any]) -> None:
            ref = event.get("involvedObject") or {}
            line = (f"Event occurred: object={ref.get('kind')} "
                    f"{ref.get('namespace', '')}/{ref.get('name')} type={event.get('type')} "
                    f"reason={event.get('reason')} message={event.get('message')!r}")
            if isinstance(logger, logging.Logger):
                logger.info("%s", line)
            else:
                logger(line)

        self.start_event_watcher(write)

    def new_recorder(self, source: EventSource) -> EventRecorder:
        """A recorder that reports as ``source`` (Go ``NewRecorder``)."""
        return EventRecorder(self, source)

    def action_or_drop(self, event: dict[str, Any]) -> None:
        """Offer ``event`` to every watcher without blocking (dropped where full)."""
        with self._lock:
            watchers = list(self._watchers)
        for watcher in watchers:
            watcher.offer(event)

    def dropped(self) -> int:
        """Events dropped because a watcher's queue was full."""
        with self._lock:
            return sum(w.dropped for w in self._watchers)

    def spam_filtered(self) -> int:
        """Events the spam filter kept from the server."""
        with self._lock:
            return self._spam_filtered

    def failed(self) -> int:
        """Events given up on (refused by the server, or 12 failed tries)."""
        with self._lock:
            return self._failed

    def _record_to_sink(self, sink: EventSink, correlator: EventCorrelator,
                        event: dict[str, Any]) -> None:
        result = correlator.correlate(event)
        if result.skip or result.event is None:
            with self._lock:
                self._spam_filtered += 1
            return
        for tries in range(1, MAX_TRIES_PER_EVENT + 1):
            if self._record(sink, correlator, result.event, result.patch):
                return
            if tries == MAX_TRIES_PER_EVENT or self._shutting_down.is_set():
                break
            pause = self.sleep_duration * (random.random() if tries == 1 else 1.0)
            if self._shutting_down.wait(pause):
                break  # shutting down: one last try was made; give up the rest
        with self._lock:
            self._failed += 1
        _log.error("Unable to write event %s for %s (retry limit exceeded or shut down)",
                    result.event.get("reason"), _describe_ref(result.event))

    def _record(self, sink: EventSink, correlator: EventCorrelator, event: dict[str, Any],
                patch: dict[str, Any] | None) -> bool:
        """One try (Go ``recordEvent``): True when done (written, or refused for good)."""
        try:
            stored = None
            if patch is not None:
                try:
                    stored = sink.patch(event, patch)
                except EventSinkError as err:
                    if err.status != 404:
                        raise
            if stored is None:  # new, or the Event to update is gone
                stored = sink.create(event)
        except EventSinkError as err:
            if err.retry:
                _log.info("Unable to write event %s for %s: %s (may retry)",
                          event.get("reason"), _describe_ref(event), err)
                return False
            _log.error("Server rejected event %s for %s: %s (will not retry!)",
                       event.get("reason"), _describe_ref(event), err)
            with self._lock:
                self._failed += 1
            return True
        correlator.update_state(stored)
        return True

    def shutdown(self, timeout: float = 1.0) -> list[str]:
        """Stop accepting watchers, let each finish what is queued (a retry pause is cut
        short: one last try, then the event is given up) and wait for them, ``timeout``
        seconds in all (Go ``Shutdown``); what is still queued then is dropped (counted in
        :meth:`dropped`). Returns the watcher threads still alive (one in the middle of a
        request, bounded by the sink's timeout)."""
        with self._lock:
            self._shutting_down.set()
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
        alive = [w.thread.name for w in late if w.thread.is_alive()]
        if late:
            _log.warning("event broadcaster shut down with %d events unsent (dropped)",
                         sum(w.dropped for w in late))
        return alive


def _describe_ref(event: dict[str, Any]) -> str:
    ref = event.get("involvedObject") or {}
    return f"{ref.get('kind')} {ref.get('namespace', '')}/{ref.get('name')}"


def _reference(obj: Any) -> dict[str, Any]:
    """An ObjectReference for ``obj``: a wire dict, a model, a dynamic object or anything
    with ``name``/``namespace``/``kind``/``api_version``/``uid`` attributes (a runtime
    ObjectRef)."""
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


class EventRecorder:
    """Records events about objects (Go ``EventRecorder``); built by
    :meth:`EventBroadcaster.new_recorder`. The object must say its kind (a wire dict's
    ``kind``, a model's ``kind``); list items of built-in resources often do not, so pass
    ``kind=``/``api_version=`` then."""

    def __init__(self, broadcaster: EventBroadcaster, source: EventSource) -> None:
        self.broadcaster = broadcaster
        self.source = source
        self._lock = threading.Lock()
        self._last_stamp = 0

    def _unique_stamp(self, now: float) -> int:
        """Nanoseconds for the Event's name (Go: ``<object>.<UnixNano in hex>``), kept
        strictly increasing: a float clock reading repeats within a burst, and two Events
        of one name would collide on the server (409)."""
        with self._lock:
            stamp = max(int(now * 1e9), self._last_stamp + 1)
            self._last_stamp = stamp
            return stamp

    def event(self, obj: Any, event_type: str, reason: str, message: str, *,
              kind: str = "", api_version: str = "") -> None:
        """Record an event (Go ``Event``); never blocks."""
        self._generate(obj, None, event_type, reason, message, kind, api_version)

    def eventf(self, obj: Any, event_type: str, reason: str, fmt: str, *args: Any,
               kind: str = "", api_version: str = "") -> None:
        """Record an event with a ``%``-formatted message (Go ``Eventf``)."""
        self._generate(obj, None, event_type, reason, fmt % args if args else fmt, kind,
                       api_version)

    def annotated_eventf(self, obj: Any, annotations: Mapping[str, str], event_type: str,
                         reason: str, fmt: str, *args: Any, kind: str = "",
                         api_version: str = "") -> None:
        """:meth:`eventf` with annotations on the Event (Go ``AnnotatedEventf``)."""
        self._generate(obj, annotations, event_type, reason, fmt % args if args else fmt,
                       kind, api_version)

    def _generate(self, obj: Any, annotations: Mapping[str, str] | None, event_type: str,
                  reason: str, message: str, kind: str, api_version: str) -> None:
        if event_type not in (EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING):
            _log.error("Unsupported event type: %r", event_type)
            return
        try:
            ref = _reference(obj)
        except Exception as err:
            _log.error("Could not construct reference to %s: %s", meta.describe(obj),
                       type(err).__name__)
            return
        ref.setdefault("kind", kind)
        ref.setdefault("apiVersion", api_version)
        if not ref.get("kind"):
            _log.error("Could not construct reference to %s: its kind is unknown",
                       meta.describe(obj))
            return
        now = self.broadcaster.clock.now()
        stamp = datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        md: dict[str, Any] = {"name": f"{ref.get('name', '')}.{self._unique_stamp(now):x}",
                              "namespace": ref.get("namespace") or "default"}
        if annotations:
            md["annotations"] = dict(annotations)
        self.broadcaster.action_or_drop({
            "apiVersion": "v1", "kind": "Event", "metadata": md, "involvedObject": ref,
            "reason": reason, "message": message, "firstTimestamp": stamp,
            "lastTimestamp": stamp, "count": 1, "type": event_type,
            "source": {k: v for k, v in (("component", self.source.component),
                                         ("host", self.source.host)) if v}})
