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
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from client_cache.record.broadcast import (
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    MAX_QUEUED_EVENTS,
    MAX_TRIES_PER_EVENT,
    BroadcasterBase,
    EventNamer,
    EventSinkError,
    RestEventSink,
    describe_regarding,
    regarding_reference,
)
from client_cache.record.correlator import CorrelatorOptions, EventCorrelator
from client_cache.util.clock import REAL_CLOCK, PassiveClock
from client_cache.util.timestamps import format_time

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

DEFAULT_SLEEP_DURATION = 10.0


class EventSink(Protocol):
    """Where events are written (Go ``EventSink``); both return the stored Event."""

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        """Create ``event`` on the server and return what the server stored."""
        ...

    def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        """Apply the strategic-merge ``patch`` to ``event`` and return what the server
        stored."""
        ...


class CoreV1EventSink(RestEventSink):
    """core/v1 Events through a ``kubernetes`` API client (Go ``EventSinkImpl``)."""

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        """Create ``event`` on the server and return what the server stored."""
        namespace = event["metadata"]["namespace"]
        body = dict(event, metadata={k: v for k, v in event["metadata"].items()
                                     if k != "resourceVersion"})
        return self.send("POST", f"/api/v1/namespaces/{namespace}/events", body,
                         "application/json")

    def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        """Apply the strategic-merge ``patch`` to ``event`` and return what the server
        stored."""
        md = event["metadata"]
        return self.send("PATCH", f"/api/v1/namespaces/{md['namespace']}/events/{md['name']}",
                         patch, "application/strategic-merge-patch+json")


@dataclass(frozen=True)
class EventSource:
    """Who reports (Go ``EventSource``)."""

    component: str = ""
    host: str = ""


class EventBroadcaster(BroadcasterBase):
    """See the module documentation (Go ``EventBroadcaster``). Watcher threads are named
    ``record-watcher-<n>``."""

    def __init__(self, *, max_queued: int = MAX_QUEUED_EVENTS,
                 sleep_duration: float = DEFAULT_SLEEP_DURATION,
                 correlator_options: CorrelatorOptions | None = None,
                 clock: PassiveClock = REAL_CLOCK) -> None:
        super().__init__("record-watcher", max_queued, clock)
        self.max_queued = max_queued
        self.sleep_duration = sleep_duration
        self.correlator_options = correlator_options
        self._spam_filtered = 0

    def start_recording_to_sink(self, sink: EventSink) -> Callable[[], None]:
        """Write every event to ``sink``, correlated (Go ``StartRecordingToSink``);
        returns a function that stops recording."""
        correlator = EventCorrelator(self.correlator_options or CorrelatorOptions(
            clock=self.clock))
        return self.start_event_watcher(
            lambda event: self._record_to_sink(sink, correlator, event))

    def log_line(self, event: dict[str, Any]) -> str:
        """Object by kind and namespace/name, type, reason and message."""
        return (f"Event occurred: object={describe_regarding(event.get('involvedObject'))} "
                f"type={event.get('type')} reason={event.get('reason')} "
                f"message={event.get('message')!r}")

    def new_recorder(self, source: EventSource) -> EventRecorder:
        """A recorder that reports as ``source`` (Go ``NewRecorder``)."""
        return EventRecorder(self, source)

    def spam_filtered(self) -> int:
        """Events the spam filter kept from the server."""
        with self.counter_lock:
            return self._spam_filtered

    def _record_to_sink(self, sink: EventSink, correlator: EventCorrelator,
                        event: dict[str, Any]) -> None:
        result = correlator.correlate(event)
        if result.skip or result.event is None:
            with self.counter_lock:
                self._spam_filtered += 1
            return
        correlated, patch = result.event, result.patch
        self.write(lambda: self._record(sink, correlator, correlated, patch),
                   lambda tries: self.sleep_duration * (random.random() if tries == 1 else 1.0),
                   correlated.get("reason"), describe_regarding(correlated.get("involvedObject")))

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
            return self.failed_try(err, event.get("reason"),
                                   describe_regarding(event.get("involvedObject")), err.retry)
        correlator.update_state(stored)
        return True

    def shutdown(self, timeout: float = 1.0) -> list[str]:
        """Stop accepting watchers, let each finish what is queued (a retry pause is cut
        short: one last try, then the event is given up) and wait for them, ``timeout``
        seconds in all (Go ``Shutdown``); what is still queued then is dropped (counted in
        :meth:`dropped`). Returns the watcher threads still alive (one in the middle of a
        request, bounded by the sink's timeout)."""
        return self.fanout.shutdown(timeout)


class EventRecorder:
    """Records events about objects (Go ``EventRecorder``); built by
    :meth:`EventBroadcaster.new_recorder`. The object must say its kind (a wire dict's
    ``kind``, a model's ``kind``); list items of built-in resources often do not, so pass
    ``kind=``/``api_version=`` then."""

    def __init__(self, broadcaster: EventBroadcaster, source: EventSource) -> None:
        self.broadcaster = broadcaster
        self.source = source
        self._namer = EventNamer()

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
        ref = regarding_reference(obj, kind, api_version)
        if ref is None:
            return
        now = self.broadcaster.clock.now()
        stamp = format_time(now)
        md: dict[str, Any] = {"name": self._namer.name(ref.get("name", ""), now),
                              "namespace": ref.get("namespace") or "default"}
        if annotations:
            md["annotations"] = dict(annotations)
        self.broadcaster.action_or_drop({
            "apiVersion": "v1", "kind": "Event", "metadata": md, "involvedObject": ref,
            "reason": reason, "message": message, "firstTimestamp": stamp,
            "lastTimestamp": stamp, "count": 1, "type": event_type,
            "source": {k: v for k, v in (("component", self.source.component),
                                         ("host", self.source.host)) if v},
            # as client-go's makeEvent: the reporter in the fields the newer API reads
            **{k: v for k, v in (("reportingComponent", self.source.component),
                                 ("reportingInstance", self.source.host)) if v}})
