"""workqueue/delaying_queue.go (delaying_queue_test.go), driven by the fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from client_cache.util.clock import FakeClock
from client_cache.workqueue import DelayingQueueConfig, DelayingType, new_delaying_queue_with_config

T0 = 1_763_800_000.0


@pytest.fixture
def fq() -> Iterator[tuple[DelayingType[Any], FakeClock]]:
    clock = FakeClock(T0)
    q: DelayingType[Any] = new_delaying_queue_with_config(DelayingQueueConfig(clock=clock))
    yield q, clock
    q.shut_down()


def step(q: DelayingType[Any], clock: FakeClock, seconds: float) -> None:
    """Advance the fake clock and wait until the loop has handled it."""
    passes = q.wait_for_idle_loop()
    clock.step(seconds)
    q.wait_for_idle_loop(passes)


def test_simple_queue(fq: tuple[DelayingType[Any], FakeClock]) -> None:
    """TestSimpleQueue."""
    q, clock = fq
    q.add_after("foo", 0.05)
    q.wait_for_idle_loop()
    assert q.len() == 0
    step(q, clock, 0.06)
    assert q.len() == 1
    item, _ = q.get()
    q.done(item)
    step(q, clock, 10)  # the heartbeat wakes the loop; nothing is added
    assert q.len() == 0


def test_deduping(fq: tuple[DelayingType[Any], FakeClock]) -> None:
    """TestDeduping: a later ready time is ignored, an earlier one wins."""
    q, clock = fq
    q.add_after("foo", 0.05)
    q.add_after("foo", 0.07)
    q.wait_for_idle_loop()
    assert q.len() == 0
    step(q, clock, 0.06)
    assert q.len() == 1
    item, _ = q.get()
    q.done(item)
    clock.step(0.02)  # nothing is waiting any more: no timer, no second add
    assert q.len() == 0

    q.add_after("foo", 0.05)
    q.add_after("foo", 0.03)
    q.wait_for_idle_loop()
    assert q.len() == 0
    step(q, clock, 0.04)
    assert q.len() == 1
    item, _ = q.get()
    q.done(item)
    clock.step(0.02)
    assert q.len() == 0


def test_add_two_fire_early(fq: tuple[DelayingType[Any], FakeClock]) -> None:
    """TestAddTwoFireEarly."""
    q, clock = fq
    q.add_after("foo", 1)
    q.add_after("bar", 0.05)
    q.wait_for_idle_loop()
    step(q, clock, 0.06)
    assert q.get(timeout=1) == ("bar", False)
    q.add_after("baz", 2)
    q.wait_for_idle_loop()
    step(q, clock, 1)
    assert q.get(timeout=1) == ("foo", False)
    step(q, clock, 2)
    assert q.get(timeout=1) == ("baz", False)


def test_copy_shifting(fq: tuple[DelayingType[Any], FakeClock]) -> None:
    """TestCopyShifting: items come out in ready-time order."""
    q, clock = fq
    q.add_after("foo", 1)
    q.add_after("bar", 0.5)
    q.add_after("baz", 0.25)
    q.wait_for_idle_loop()
    step(q, clock, 2)
    assert q.len() == 3
    assert [q.get(timeout=1)[0] for _ in range(3)] == ["baz", "bar", "foo"]


def test_non_positive_delay_adds_at_once(fq: tuple[DelayingType[Any], FakeClock]) -> None:
    q, _ = fq
    q.add_after("now", 0)
    q.add_after("negative", -5)
    assert q.len() == 2


def test_add_after_ignored_when_shutting_down() -> None:
    clock = FakeClock(T0)
    q: DelayingType[str] = new_delaying_queue_with_config(DelayingQueueConfig(clock=clock))
    q.shut_down()
    q.add_after("late", 1)
    q.add_after("late", 0)
    assert q.len() == 0
    assert q._thread is not None and not q._thread.is_alive()
