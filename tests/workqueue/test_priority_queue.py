"""workqueue/priority.py: the priority order (controller-runtime ``priorityqueue``'s
ordering, dedup and hold rules) and its metrics by priority."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from client_cache.util.clock import FakeClock
from client_cache.workqueue.delaying_queue import (
    DelayingQueueConfig,
    new_typed_delaying_queue_with_config,
)
from client_cache.workqueue.metrics import NOOP_METRIC
from client_cache.workqueue.priority import (
    DEFAULT_PRIORITY,
    LOW_PRIORITY,
    PriorityOrder,
    PriorityQueue,
    new_priority_queue,
)
from client_cache.workqueue.queue import DefaultQueue, QueueConfig


@pytest.fixture
def queue() -> Iterator[PriorityQueue[str]]:
    q: PriorityQueue[str] = new_priority_queue()
    yield q
    q.shut_down()


def drain(q: PriorityQueue[str]) -> list[str]:
    out = []
    while q.len():
        item, shutdown = q.get(timeout=1)
        assert not shutdown and item is not None
        out.append(item)
        q.done(item)
    return out


def test_highest_priority_first_then_first_come(queue: PriorityQueue[str]) -> None:
    for name, priority in [("low-1", LOW_PRIORITY), ("a", 0), ("low-2", LOW_PRIORITY),
                           ("high", 10), ("b", 0)]:
        queue.add_with_priority(name, priority)
    queue.add("c")  # the default priority
    assert drain(queue) == ["high", "a", "b", "c", "low-1", "low-2"]


def test_a_higher_priority_raises_a_queued_item_and_a_lower_one_keeps_it(
        queue: PriorityQueue[str]) -> None:
    for name in ("x", "y", "z"):
        queue.add_with_priority(name, LOW_PRIORITY)
    queue.add_with_priority("z", 5)  # moves up, queued once
    queue.add_with_priority("x", -500)  # lower: stays where it was, at its priority
    assert queue.len() == 3
    assert queue.priority_of("z") == 5 and queue.priority_of("x") == LOW_PRIORITY
    assert drain(queue) == ["z", "x", "y"]


def test_an_item_added_while_processed_comes_back_at_the_highest_priority_asked(
        queue: PriorityQueue[str]) -> None:
    queue.add("busy")
    item, _ = queue.get(timeout=1)
    assert item == "busy"
    queue.add_with_priority("busy", LOW_PRIORITY)
    queue.add_with_priority("busy", 7)
    queue.add_with_priority("other", 3)
    assert queue.len() == 1  # held while processed: not handed out twice
    queue.done("busy")
    assert drain(queue) == ["busy", "other"]
    assert queue.priority_of("busy") == DEFAULT_PRIORITY  # nothing kept once handed out


def test_what_the_order_keeps_is_bounded_by_what_is_queued() -> None:
    order: PriorityOrder[int] = PriorityOrder()
    for round_ in range(3):
        for i in range(1000):
            order.want_locked(i, round_)
            order.push(i)
            order.want_locked(i, round_ + 1)  # raised in line: a stale heap entry
        assert [order.pop() for _ in range(1000)] == list(range(1000))
        assert order.len() == 0
    assert not order._line and not order._wanted
    assert not order._heap
    order.push(-1)  # the line never empties now
    order.push(-2)
    for priority in range(1, 10_001):
        order.want_locked(-2, priority)
    assert len(order._heap) <= 2 * order.len() + 65
    assert [order.pop(), order.pop()] == [-2, -1]


def test_a_delaying_queue_over_it_adds_at_the_priority_given_beforehand() -> None:
    clock = FakeClock(100.0)
    line: PriorityQueue[str] = new_priority_queue(QueueConfig(clock=clock))
    delaying = new_typed_delaying_queue_with_config(DelayingQueueConfig(clock=clock,
                                                                        queue=line))
    try:
        line.prioritize("later", 9)
        delaying.add_after("later", 5.0)
        line.add_with_priority("now-low", LOW_PRIORITY)
        line.add("now")
        passes = delaying.wait_for_idle_loop()
        clock.step(5.0)
        delaying.wait_for_idle_loop(passes)
        assert drain(line) == ["later", "now", "now-low"]
    finally:
        delaying.shut_down()


def test_it_keeps_its_own_storage() -> None:
    with pytest.raises(ValueError, match="own storage"):
        new_priority_queue(QueueConfig(queue=DefaultQueue()))


class _ByPriority:
    """A fake depth gauge by priority."""

    def __init__(self) -> None:
        self.values: dict[int, float] = defaultdict(float)

    def inc(self, priority: int) -> None:
        self.values[priority] += 1

    def dec(self, priority: int) -> None:
        self.values[priority] -= 1


class _Seen:
    """A fake histogram counting its observations."""

    def __init__(self) -> None:
        self.count = 0

    def observe(self, value: float) -> None:
        self.count += 1


class _Plain:
    """A provider of the plain metrics (not the no-op one), noting the depth gauges."""

    def __init__(self) -> None:
        self.unlabelled: list[str] = []
        self.latency, self.work = _Seen(), _Seen()

    def new_depth_metric(self, name: str) -> Any:
        self.unlabelled.append(name)
        return NOOP_METRIC

    def new_adds_metric(self, name: str) -> Any:
        return NOOP_METRIC

    def new_latency_metric(self, name: str) -> Any:
        return self.latency

    def new_work_duration_metric(self, name: str) -> Any:
        return self.work

    def new_unfinished_work_seconds_metric(self, name: str) -> Any:
        return NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> Any:
        return NOOP_METRIC

    def new_retries_metric(self, name: str) -> Any:
        return NOOP_METRIC


class _Provider(_Plain):
    def __init__(self) -> None:
        super().__init__()
        self.depth = _ByPriority()

    def new_depth_metric_with_priority(self, name: str) -> _ByPriority:
        return self.depth


def test_the_depth_is_counted_by_priority() -> None:
    provider = _Provider()
    clock = FakeClock(0.0)
    q: PriorityQueue[str] = new_priority_queue(QueueConfig(
        name="pq", metrics_provider=provider, clock=clock))
    try:
        q.add_with_priority("a", LOW_PRIORITY)
        q.add_with_priority("b", LOW_PRIORITY)
        assert dict(provider.depth.values) == {LOW_PRIORITY: 2}
        q.add_with_priority("b", 4)  # raised in line: its count moves
        assert dict(provider.depth.values) == {LOW_PRIORITY: 1, 4: 1}
        assert drain(q) == ["b", "a"]
        assert dict(provider.depth.values) == {LOW_PRIORITY: 0, 4: 0}
        assert provider.latency.count == 2 and provider.work.count == 2  # as a plain queue
        assert provider.unlabelled == []  # the labelled gauge replaces the plain one
    finally:
        q.shut_down()


def test_a_provider_without_priorities_gets_the_plain_metrics() -> None:
    plain = _Plain()
    q: PriorityQueue[str] = new_priority_queue(QueueConfig(name="plain",
                                                           metrics_provider=plain))
    try:
        q.add("a")
        assert drain(q) == ["a"] and plain.unlabelled == ["plain"]
    finally:
        q.shut_down()
