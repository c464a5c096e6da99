"""One recorder interface over both Event APIs (Go ``events.NewEventBroadcasterAdapter``),
for code moving from core/v1 Events to events.k8s.io/v1: the adapter asks the server (by
discovery) whether it serves events.k8s.io/v1 and records there when it does, and as
core/v1 Events otherwise (then ``related`` and ``action`` are not sent: core/v1 has no
place for them, as in client-go's ``EventRecorderAdapter``)."""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from client_cache.client import discovery
from client_cache.events.broadcaster import EventBroadcaster, EventsV1Sink
from client_cache.record.event import CoreV1EventSink, EventSource
from client_cache.record.event import EventBroadcaster as CoreEventBroadcaster
from client_cache.record.event import EventRecorder as CoreEventRecorder

__all__ = ["EventBroadcasterAdapter", "EventRecorderAdapter", "RecorderLike"]

_log = logging.getLogger(__name__)


class RecorderLike(Protocol):
    """What :meth:`EventBroadcasterAdapter.new_recorder` returns (Go
    ``events.EventRecorder``)."""

    def eventf(self, regarding: Any, related: Any, event_type: str, reason: str,
               action: str, note: str, *args: Any, kind: str = "",
               api_version: str = "") -> None:
        """Record an Event about ``regarding`` (``related`` and ``action`` are dropped by
        core/v1 recorders); ``note`` is formatted with ``args`` (Go ``Eventf``)."""
        ...


class EventRecorderAdapter:
    """A core/v1 recorder behind the events.k8s.io/v1 signature (Go
    ``record.EventRecorderAdapter``): ``related`` and ``action`` are dropped."""

    def __init__(self, recorder: CoreEventRecorder) -> None:
        self.recorder = recorder

    def eventf(self, regarding: Any, related: Any, event_type: str, reason: str,
               action: str, note: str, *args: Any, kind: str = "",
               api_version: str = "") -> None:
        """Record ``note % args`` as a core/v1 Event about ``regarding``."""
        self.recorder.eventf(regarding, event_type, reason, note, *args, kind=kind,
                             api_version=api_version)


class EventBroadcasterAdapter:
    """See the module documentation (Go ``EventBroadcasterAdapter``). ``events_v1`` says
    which API the recorders write to."""

    def __init__(self, api_client: Any) -> None:
        try:
            served = "events" in discovery.served_resources(api_client, "events.k8s.io",
                                                            "v1")
        except Exception as err:  # as client-go: any discovery failure means core/v1
            _log.warning("discovery of events.k8s.io/v1 failed (%s); recording core/v1 "
                         "Events", type(err).__name__)
            served = False
        self.events_v1 = served
        self.broadcaster = EventBroadcaster(EventsV1Sink(api_client)) if served else None
        self.core_broadcaster = CoreEventBroadcaster()
        self._core_sink = CoreV1EventSink(api_client)

    def start_recording_to_sink(self, stop: threading.Event | None = None) -> None:
        """Start writing (Go ``StartRecordingToSink``); ``stop`` ends the events.k8s.io
        recording (core/v1 recording ends at :meth:`shutdown`, as in client-go)."""
        if self.broadcaster is not None:
            self.broadcaster.start_recording_to_sink(stop)
        self.core_broadcaster.start_recording_to_sink(self._core_sink)

    def new_recorder(self, name: str) -> RecorderLike:
        """A recorder reporting as ``name`` on the API the server serves (Go
        ``NewRecorder``)."""
        if self.broadcaster is not None:
            return self.broadcaster.new_recorder(name)
        return EventRecorderAdapter(self.deprecated_new_legacy_recorder(name))

    def deprecated_new_legacy_recorder(self, name: str) -> CoreEventRecorder:
        """A core/v1 recorder with component ``name`` (Go
        ``DeprecatedNewLegacyRecorder``)."""
        return self.core_broadcaster.new_recorder(EventSource(component=name))

    def shutdown(self, timeout: float = 1.0) -> list[str]:
        """Flush and stop both broadcasters (Go ``Shutdown``), ``timeout`` seconds each;
        returns the threads still alive."""
        alive = self.core_broadcaster.shutdown(timeout)
        if self.broadcaster is not None:
            alive += self.broadcaster.shutdown(timeout)
        return alive
