"""workqueue/metrics.go (metrics_test.go)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from client_cache.util.clock import FakeClock
from client_cache.workqueue import QueueConfig, new_with_config
from client_cache.workqueue.metrics import (
    METRIC_NAMES,
    NoopMetricsProvider,
    NoQueueMetrics,
    QueueMetrics,
    get_provider,
    reset_provider_for_tests,
    set_provider,
)
from client_cache.workqueue.queue import DefaultQueue, Typed

T0 = 1000.0  # small, so float seconds keep microsecond precision


class Counter:
    def __init__(self) -> None:
        self.value = 0.0

    def inc(self) -> None:
        self.value += 1

    def dec(self) -> None:
        self.value -= 1


class Settable:
    def __init__(self) -> None:
        self.value = 0.0
        self.updated = threading.Event()
        self.sets = 0

    def set(self, value: float) -> None:
        self.value = value
        self.sets += 1
        self.updated.set()


class Histogram:
    def __init__(self) -> None:
        self.observed: list[float] = []

    def observe(self, value: float) -> None:
        self.observed.append(value)


class RecordingProvider:
    def __init__(self) -> None:
        self.depth, self.adds, self.retries = Counter(), Counter(), Counter()
        self.latency, self.work = Histogram(), Histogram()
        self.unfinished, self.longest = Settable(), Settable()
        self.names: list[str] = []

    def new_depth_metric(self, name: str) -> Counter:
        self.names.append(name)
        return self.depth

    def new_adds_metric(self, name: str) -> Counter:
        return self.adds

    def new_latency_metric(self, name: str) -> Histogram:
        return self.latency

    def new_work_duration_metric(self, name: str) -> Histogram:
        return self.work

    def new_unfinished_work_seconds_metric(self, name: str) -> Settable:
        return self.unfinished

    def new_longest_running_processor_seconds_metric(self, name: str) -> Settable:
        return self.longest

    def new_retries_metric(self, name: str) -> Counter:
        return self.retries


@pytest.fixture
def metered() -> Iterator[tuple[Typed[str], RecordingProvider, FakeClock]]:
    clock = FakeClock(T0)
    provider = RecordingProvider()
    q: Typed[str] = Typed(clock, DefaultQueue(), QueueMetrics(provider, "test", clock),
                          update_period=0.001, name="test")
    yield q, provider, clock
    q.shut_down()


def test_metric_shutdown(metered: tuple[Typed[str], RecordingProvider, FakeClock]) -> None:
    """TestMetricShutdown: the update loop ticks until shut down, then never again."""
    q, provider, clock = metered
    clock.step(0.001)
    assert provider.unfinished.updated.wait(5)
    assert provider.unfinished.sets == 1
    q.shut_down()
    assert q._metrics_thread is not None and not q._metrics_thread.is_alive()
    clock.step(3600)
    assert provider.unfinished.sets == 1


def test_metrics(metered: tuple[Typed[str], RecordingProvider, FakeClock]) -> None:
    """TestMetrics: adds, depth, latency, work duration, unfinished work."""
    q, p, clock = metered
    q.add("foo")
    assert (p.adds.value, p.depth.value) == (1, 1)
    clock.step(50e-6)
    item, _ = q.get()
    assert p.latency.observed == pytest.approx([50e-6])
    for _ in range(5):
        q.add("foo")  # while processing: counted once
    assert (p.adds.value, p.depth.value) == (2, 1)
    clock.step(25e-6)
    q.done(item)
    assert p.work.observed == pytest.approx([25e-6])
    assert p.depth.value == 1
    item, _ = q.get()
    assert p.latency.observed == pytest.approx([50e-6, 25e-6])
    p.unfinished.updated.clear()
    clock.step(0.001)
    assert p.unfinished.updated.wait(5)
    assert p.unfinished.value == pytest.approx(0.001)
    assert p.longest.value == pytest.approx(0.001)
    q.done(item)
    assert p.work.observed == pytest.approx([25e-6, 0.001])


def test_unnamed_or_noop_queues_have_no_metrics() -> None:
    q = new_with_config(QueueConfig[str](metrics_provider=RecordingProvider()))
    assert isinstance(q._metrics, NoQueueMetrics) and q._metrics_thread is None
    named_noop = new_with_config(QueueConfig[str](name="x", metrics_provider=NoopMetricsProvider()))
    assert isinstance(named_noop._metrics, NoQueueMetrics)
    provider = RecordingProvider()
    named = new_with_config(QueueConfig[str](name="jobs", metrics_provider=provider))
    assert provider.names == ["jobs"]
    named.shut_down()
    assert named._metrics_thread is not None and not named._metrics_thread.is_alive()


def test_set_provider_first_call_wins() -> None:
    first, second = RecordingProvider(), RecordingProvider()
    try:
        set_provider(first)
        set_provider(second)
        assert get_provider() is first
    finally:
        reset_provider_for_tests()
    assert isinstance(get_provider(), NoopMetricsProvider)
    assert METRIC_NAMES["depth"] == "workqueue_depth"
    assert METRIC_NAMES["retries"] == "workqueue_retries_total"
