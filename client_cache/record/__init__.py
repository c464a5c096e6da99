"""Events about objects, aggregated and rate limited (Go ``tools/record``)."""

from client_cache.record.correlator import (
    CorrelateResult,
    CorrelatorOptions,
    EventCorrelator,
    event_aggregator_by_reason_func,
    event_aggregator_by_reason_message_func,
    get_event_key,
    get_spam_key,
)
from client_cache.record.event import (
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    MAX_QUEUED_EVENTS,
    MAX_TRIES_PER_EVENT,
    CoreV1EventSink,
    EventBroadcaster,
    EventRecorder,
    EventSink,
    EventSinkError,
    EventSource,
)

__all__ = [
    "EVENT_TYPE_NORMAL",
    "EVENT_TYPE_WARNING",
    "MAX_QUEUED_EVENTS",
    "MAX_TRIES_PER_EVENT",
    "CoreV1EventSink",
    "CorrelateResult",
    "CorrelatorOptions",
    "EventBroadcaster",
    "EventCorrelator",
    "EventRecorder",
    "EventSink",
    "EventSinkError",
    "EventSource",
    "event_aggregator_by_reason_func",
    "event_aggregator_by_reason_message_func",
    "get_event_key",
    "get_spam_key",
]
