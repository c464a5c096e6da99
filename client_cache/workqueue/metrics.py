"""Workqueue metrics (Go ``util/workqueue/metrics.go``).

A queue reports through a :class:`MetricsProvider` only when it has a non-empty name and
the provider is not the no-op one. The provider makes one metric of each kind per queue
name: depth (gauge), adds (counter), queue latency and work duration (histograms, seconds),
unfinished work seconds and longest running processor seconds (settable gauges, refreshed
every 0.5 s while the queue runs) and retries (counter, counted by ``add_after``). Their
Prometheus names, for an adapter, are ``workqueue_depth``, ``workqueue_adds_total``,
``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds``,
``workqueue_unfinished_work_seconds``, ``workqueue_longest_running_processor_seconds`` and
``workqueue_retries_total``, labelled by ``name``.

:func:`set_provider` sets the global provider for queues created afterwards; the first call
wins, as upstream. :func:`reset_provider_for_tests` undoes it.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar, runtime_checkable

from client_cache.util.clock import PassiveClock

__all__ = [
    "METRIC_NAMES",
    "NOOP_METRIC",
    "CounterMetric",
    "GaugeMetric",
    "HistogramMetric",
    "MetricsProvider",
    "NoopMetricsProvider",
    "SettableGaugeMetric",
    "SummaryMetric",
    "get_provider",
    "reset_provider_for_tests",
    "set_provider",
]

T = TypeVar("T", bound=Hashable)

METRIC_NAMES = {
    "depth": "workqueue_depth",
    "adds": "workqueue_adds_total",
    "latency": "workqueue_queue_duration_seconds",
    "work_duration": "workqueue_work_duration_seconds",
    "unfinished_work": "workqueue_unfinished_work_seconds",
    "longest_running_processor": "workqueue_longest_running_processor_seconds",
    "retries": "workqueue_retries_total",
}


@runtime_checkable
class GaugeMetric(Protocol):
    def inc(self) -> None:
        """Add one."""
        ...

    def dec(self) -> None:
        """Subtract one."""
        ...


@runtime_checkable
class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None:
        """Set the gauge to ``value``."""
        ...


@runtime_checkable
class CounterMetric(Protocol):
    def inc(self) -> None:
        """Add one."""
        ...


@runtime_checkable
class SummaryMetric(Protocol):
    def observe(self, value: float) -> None:
        """Record ``value``."""
        ...


@runtime_checkable
class HistogramMetric(Protocol):
    def observe(self, value: float) -> None:
        """Record ``value``."""
        ...


@runtime_checkable
class MetricsProvider(Protocol):
    """Makes the metrics of one named queue (Go ``MetricsProvider``)."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        """The gauge of how many items wait in queue ``name`` (``workqueue_depth``)."""
        ...

    def new_adds_metric(self, name: str) -> CounterMetric:
        """The counter of items added to queue ``name`` (``workqueue_adds_total``)."""
        ...

    def new_latency_metric(self, name: str) -> HistogramMetric:
        """The histogram of seconds items wait in queue ``name`` before a worker takes them
        (``workqueue_queue_duration_seconds``)."""
        ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        """The histogram of seconds workers of queue ``name`` spend on an item
        (``workqueue_work_duration_seconds``)."""
        ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """The gauge of seconds of work in progress not yet done in queue ``name``
        (``workqueue_unfinished_work_seconds``)."""
        ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """The gauge of the longest time an item of queue ``name`` has been in work
        (``workqueue_longest_running_processor_seconds``)."""
        ...

    def new_retries_metric(self, name: str) -> CounterMetric:
        """The counter of rate-limited re-adds to queue ``name``
        (``workqueue_retries_total``)."""
        ...


class _NoopMetric:
    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


_NOOP = _NoopMetric()
NOOP_METRIC = _NOOP
"""A metric of every kind that does nothing (for other no-op providers)."""


class NoopMetricsProvider:
    """The default provider: every metric does nothing."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_adds_metric(self, name: str) -> CounterMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_latency_metric(self, name: str) -> HistogramMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_retries_metric(self, name: str) -> CounterMetric:
        """A metric that records nothing."""
        return _NOOP


_provider_lock = threading.Lock()
_provider: MetricsProvider = NoopMetricsProvider()
_provider_set = False


def set_provider(provider: MetricsProvider) -> None:
    """Set the global provider (first call wins; later calls are ignored)."""
    global _provider, _provider_set  # noqa: PLW0603 - the documented global, as upstream
    with _provider_lock:
        if not _provider_set:
            _provider = provider
            _provider_set = True


def get_provider() -> MetricsProvider:
    """The metrics provider installed by ``set_provider`` (a no-op one otherwise)."""
    with _provider_lock:
        return _provider


def reset_provider_for_tests() -> None:
    """Restore the no-op provider and allow :func:`set_provider` again."""
    global _provider, _provider_set  # noqa: PLW0603
    with _provider_lock:
        _provider = NoopMetricsProvider()
        _provider_set = False


class QueueMetrics(Generic[T]):
    """Per-queue bookkeeping behind the metrics (Go ``defaultQueueMetrics``). Called with the
    queue's lock held."""

    def __init__(self, provider: MetricsProvider, name: str, clock: PassiveClock) -> None:
        self._clock = clock
        self.adds = provider.new_adds_metric(name)
        self._make_depth(provider, name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished_work_seconds = provider.new_unfinished_work_seconds_metric(name)
        self.longest_running_processor = provider.new_longest_running_processor_seconds_metric(
            name
        )
        self._add_times: dict[T, float] = {}
        self._processing_start_times: dict[T, float] = {}

    def _make_depth(self, provider: MetricsProvider, name: str) -> None:
        """Make the depth gauge (a priority queue's is labelled by priority)."""
        self.depth = provider.new_depth_metric(name)

    def add(self, item: T) -> None:
        """Count an add of ``item`` and note when it was queued."""
        self.adds.inc()
        self.depth.inc()
        if item not in self._add_times:
            self._add_times[item] = self._clock.monotonic()

    def get(self, item: T) -> None:
        """Record how long ``item`` waited and note when its work began."""
        self.depth.dec()
        self._processing_start_times[item] = self._clock.monotonic()
        start = self._add_times.pop(item, None)
        if start is not None:
            self.latency.observe(self._clock.monotonic() - start)

    def done(self, item: T) -> None:
        """Record how long the work on ``item`` took."""
        start = self._processing_start_times.pop(item, None)
        if start is not None:
            self.work_duration.observe(self._clock.monotonic() - start)

    def update_unfinished_work(self) -> None:
        """Refresh the unfinished-work and longest-running gauges."""
        total = 0.0
        oldest = 0.0
        for start in self._processing_start_times.values():
            age = self._clock.monotonic() - start
            total += age
            oldest = max(oldest, age)
        self.unfinished_work_seconds.set(total)
        self.longest_running_processor.set(oldest)


class NoQueueMetrics(Generic[T]):
    """What an unnamed queue (or one with the no-op provider) uses."""

    def add(self, item: T) -> None:
        """Nothing: the queue has no metrics."""
        pass

    def get(self, item: T) -> None:
        """Nothing: the queue has no metrics."""
        pass

    def done(self, item: T) -> None:
        """Nothing: the queue has no metrics."""
        pass

    def update_unfinished_work(self) -> None:
        """Nothing: the queue has no metrics."""
        pass


def new_queue_metrics(
    provider: MetricsProvider | None, name: str, clock: PassiveClock
) -> QueueMetrics[T] | NoQueueMetrics[T]:
    """Metrics for a queue: none when unnamed or when the provider is the no-op one."""
    provider = provider if provider is not None else get_provider()
    if not name or isinstance(provider, NoopMetricsProvider):
        return NoQueueMetrics()
    return QueueMetrics(provider, name, clock)


def new_retry_metric(provider: MetricsProvider | None, name: str) -> CounterMetric:
    """The retries counter of a delaying queue (a no-op when unnamed)."""
    if not name:
        return _NOOP
    provider = provider if provider is not None else get_provider()
    return provider.new_retries_metric(name)
