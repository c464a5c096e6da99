"""events.k8s.io/v1 Events (Go ``tools/events``): the newer Event API, repeats folded
into series; :class:`EventBroadcasterAdapter` picks it or core/v1
(:mod:`client_cache.record`) by what the server serves."""

from client_cache.events.adapter import (
    EventBroadcasterAdapter,
    EventRecorderAdapter,
    RecorderLike,
)
from client_cache.events.broadcaster import (
    FINISH_TIME,
    REFRESH_TIME,
    EventBroadcaster,
    EventRecorder,
    EventSink,
    EventsV1Sink,
    isomorphic_key,
)

__all__ = [
    "FINISH_TIME",
    "REFRESH_TIME",
    "EventBroadcaster",
    "EventBroadcasterAdapter",
    "EventRecorder",
    "EventRecorderAdapter",
    "EventSink",
    "EventsV1Sink",
    "RecorderLike",
    "isomorphic_key",
]
