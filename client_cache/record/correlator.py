"""Event correlation: aggregation, deduplication and spam filtering (Go
``tools/record/events_cache.go``).

An :class:`EventCorrelator` turns each new Event (a core/v1 wire dict) into what should
reach the server, as client-go's:

* **aggregation**: events that differ only in their message (same source, object, type and
  reason) are counted per 10 minutes; from the 10th distinct message on, they become one
  event whose message is ``"(combined from similar events): "`` + the latest message;
* **deduplication**: an event seen before (same key, message included) is sent as a PATCH
  of ``count``, ``lastTimestamp`` and ``message`` on the existing object instead of a new
  one;
* **spam filter**: per source and involved object, a token bucket (burst 25, one token per
  5 minutes); an event without a token is dropped (:attr:`CorrelateResult.skip`).

Caches are LRU-bounded (4,096 entries). Time comes from ``clock`` (wall time for the event
timestamps, monotonic for the token buckets).
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from client_cache.util.clock import REAL_CLOCK, PassiveClock
from client_cache.util.timestamps import format_time
from client_cache.workqueue.default_rate_limiters import TokenBucket

__all__ = [
    "CorrelateResult",
    "CorrelatorOptions",
    "EventCorrelator",
    "event_aggregator_by_reason_func",
    "event_aggregator_by_reason_message_func",
    "get_event_key",
    "get_spam_key",
]

K = TypeVar("K")
V = TypeVar("V")

MAX_LRU_CACHE_ENTRIES = 4096
DEFAULT_SPAM_BURST = 25
DEFAULT_SPAM_QPS = 1.0 / 300.0
DEFAULT_AGGREGATE_MAX_EVENTS = 10
DEFAULT_AGGREGATE_INTERVAL_SECONDS = 600


def _source(event: dict[str, Any]) -> tuple[str, str]:
    source = event.get("source") or {}
    return str(source.get("component", "")), str(source.get("host", ""))


def _involved(event: dict[str, Any]) -> list[str]:
    ref = event.get("involvedObject") or {}
    return [str(ref.get(k, "")) for k in ("kind", "namespace", "name", "uid", "apiVersion")]


def get_event_key(event: dict[str, Any]) -> str:
    """The deduplication key: source, involved object, type, reason and message (Go
    ``getEventKey``)."""
    return "".join([*_source(event), *_involved(event), str(event.get("type", "")),
                    str(event.get("reason", "")), str(event.get("message", ""))])


def get_spam_key(event: dict[str, Any]) -> str:
    """The spam filter's key: source and involved object (Go ``getSpamKey``)."""
    return "".join([*_source(event), *_involved(event)])


def event_aggregator_by_reason_func(event: dict[str, Any]) -> tuple[str, str]:
    """``(aggregate key, local key)``: everything but the message, and the message (Go
    ``EventAggregatorByReasonFunc``)."""
    return ("".join([*_source(event), *_involved(event), str(event.get("type", "")),
                     str(event.get("reason", ""))]), str(event.get("message", "")))


def event_aggregator_by_reason_message_func(event: dict[str, Any]) -> str:
    """The message of an aggregated event (Go ``EventAggregatorByReasonMessageFunc``)."""
    return "(combined from similar events): " + str(event.get("message", ""))


class _LRU(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def add(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


@dataclass
class CorrelatorOptions:
    """Go ``CorrelatorOptions`` with client-go's defaults; ``spam_qps``/``spam_burst`` shape
    the spam filter's token bucket."""

    lru_cache_size: int = MAX_LRU_CACHE_ENTRIES
    spam_burst: int = DEFAULT_SPAM_BURST
    spam_qps: float = DEFAULT_SPAM_QPS
    max_events: int = DEFAULT_AGGREGATE_MAX_EVENTS
    max_interval_seconds: int = DEFAULT_AGGREGATE_INTERVAL_SECONDS
    key_func: Callable[[dict[str, Any]], tuple[str, str]] = event_aggregator_by_reason_func
    message_func: Callable[[dict[str, Any]], str] = event_aggregator_by_reason_message_func
    spam_key_func: Callable[[dict[str, Any]], str] = get_spam_key
    clock: PassiveClock = field(default=REAL_CLOCK)


@dataclass
class CorrelateResult:
    """What to send: ``event`` (new, or with count and name of the existing one), the
    ``patch`` to apply when it updates an existing Event, or ``skip`` (spam)."""

    event: dict[str, Any] | None = None
    patch: dict[str, Any] | None = None
    skip: bool = False


@dataclass
class _Aggregate:
    local_keys: set[str]
    last_timestamp: float


@dataclass
class _Observation:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


class EventCorrelator:
    """See the module documentation (Go ``EventCorrelator``). Thread-safe."""

    def __init__(self, options: CorrelatorOptions | None = None) -> None:
        self.options = options or CorrelatorOptions()
        self._lock = threading.Lock()
        size = self.options.lru_cache_size
        self._aggregates: _LRU[str, _Aggregate] = _LRU(size)
        self._observations: _LRU[str, _Observation] = _LRU(size)
        self._spam: _LRU[str, TokenBucket] = _LRU(size)

    def correlate(self, event: dict[str, Any]) -> CorrelateResult:
        """Aggregate, deduplicate and filter ``event`` (Go ``EventCorrelate``)."""
        with self._lock:
            aggregated, key = self._aggregate(event)
            observed, patch = self._observe(aggregated, key)
            if self._filtered(observed):
                return CorrelateResult(skip=True)
            return CorrelateResult(observed, patch)

    def _aggregate(self, event: dict[str, Any]) -> tuple[dict[str, Any], str]:
        opts = self.options
        now = opts.clock.now()
        aggregate_key, local_key = opts.key_func(event)
        record = self._aggregates.get(aggregate_key)
        if record is None or now - record.last_timestamp > opts.max_interval_seconds:
            record = _Aggregate(set(), now)
        record.local_keys.add(local_key)
        record.last_timestamp = now
        self._aggregates.add(aggregate_key, record)
        if len(record.local_keys) < opts.max_events:
            return event, get_event_key(event)
        record.local_keys.pop()  # do not let the set grow past the limit
        stamp = format_time(now)
        ref = event.get("involvedObject") or {}
        combined = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{ref.get('name', '')}.{int(now * 1e9):x}",
                         "namespace": (event.get("metadata") or {}).get("namespace", "")},
            "count": 1, "firstTimestamp": stamp, "lastTimestamp": stamp,
            "involvedObject": ref, "message": opts.message_func(event),
            "type": event.get("type"), "reason": event.get("reason"),
            "source": event.get("source")}
        return combined, aggregate_key

    def _observe(self, event: dict[str, Any], key: str,
                 ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        event = copy.deepcopy(event)
        patch = None
        last = self._observations.get(key)
        if last is not None and last.count > 0:
            event["metadata"]["name"] = last.name
            event["metadata"]["resourceVersion"] = last.resource_version
            event["firstTimestamp"] = last.first_timestamp
            event["count"] = last.count + 1
            patch = {"count": event["count"], "lastTimestamp": event["lastTimestamp"],
                     "message": event["message"]}
        self._observations.add(key, _Observation(
            int(event.get("count", 1)), str(event.get("firstTimestamp", "")),
            event["metadata"]["name"], str(event["metadata"].get("resourceVersion", ""))))
        return event, patch

    def _filtered(self, event: dict[str, Any]) -> bool:
        key = self.options.spam_key_func(event)
        bucket = self._spam.get(key)
        if bucket is None:
            bucket = TokenBucket(self.options.spam_qps, self.options.spam_burst,
                                 self.options.clock)
            self._spam.add(key, bucket)
        return not bucket.try_reserve()

    def update_state(self, event: dict[str, Any]) -> None:
        """Remember what the server stored (name, resourceVersion, count), so the next
        repeat patches it (Go ``UpdateState``)."""
        md = event.get("metadata") or {}
        with self._lock:
            self._observations.add(get_event_key(event), _Observation(
                int(event.get("count") or 1), str(event.get("firstTimestamp", "")),
                str(md.get("name", "")), str(md.get("resourceVersion", ""))))
