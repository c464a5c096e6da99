"""workqueue/delaying_queue.go (delaying_queue_test.go), driven by the fake clock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from client_cache.util.clock import FakeClock
from client_cache.util.wait import new_exponential_backoff_manager
from client_cache.workqueue import DelayingQueueConfig, DelayingType, new_delaying_queue_with_config
from client_cache.workqueue.default_rate_limiters import TokenBucket

# the C core and the Python code (fq names the fixture too: it must run before fq)
pytestmark = pytest.mark.usefixtures("native_impl")

T0 = 1_763_800_000.0


@pytest.fixture
def fq(native_impl: str) -> Iterator[tuple[DelayingType[Any], FakeClock]]:
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


def test_wall_clock_jumps_do_not_move_timers_on_the_real_clock(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The real clock's wall reading jumps back 60 s and forward 60 s while items wait:
    each arrives after its own delay (measured on the monotonic clock), in order, not
    60 s late and not early."""
    offset = [0.0]
    real_time = time.time
    monkeypatch.setattr(time, "time", lambda: real_time() + offset[0])
    q: DelayingType[Any] = new_delaying_queue_with_config(DelayingQueueConfig())
    try:
        started = time.monotonic()
        q.add_after("a", 0.2)
        offset[0] = -60.0  # stepped back while "a" waits
        q.add_after("b", 0.4)
        offset[0] = 60.0  # stepped forward: nothing may fire early
        q.add_after("c", 0.6)
        arrivals = []
        for _ in range(3):
            item, _ = q.get()
            arrivals.append((item, time.monotonic() - started))
            q.done(item)
        assert [item for item, _ in arrivals] == ["a", "b", "c"]
        for (_, at), delay in zip(arrivals, (0.2, 0.4, 0.6), strict=True):
            assert delay <= at < delay + 5.0  # never early; not a minute late
    finally:
        q.shut_down()


def test_wall_clock_steps_on_the_fake_clock_fire_nothing() -> None:
    """The fake clock's wall reading moves alone (step_wall): pending items, the token
    bucket and the backoff manager follow the monotonic reading only."""
    clock = FakeClock(T0)
    q: DelayingType[Any] = new_delaying_queue_with_config(DelayingQueueConfig(clock=clock))
    try:
        q.add_after("x", 1.0)
        q.wait_for_idle_loop()
        clock.step_wall(3600.0)  # an hour forward on the wall: not due
        q.wait_for_idle_loop()
        assert q.len() == 0 and clock.has_waiters()
        clock.step_wall(-7200.0)  # two hours back: still due at +1 s
        step(q, clock, 1.0)
        assert q.len() == 1
        assert clock.now() == T0 + 1.0 - 3600.0 and clock.monotonic() == T0 + 1.0
    finally:
        q.shut_down()
    bucket = TokenBucket(10.0, 1, clock)
    assert bucket.reserve() == 0.0
    clock.step_wall(-60.0)
    assert bucket.reserve() == pytest.approx(0.1)  # a wall step refills nothing
    manager = new_exponential_backoff_manager(1.0, 10.0, 60.0, 2.0, 0.0, clock)
    first = manager.backoff()
    first.stop()
    clock.step_wall(120.0)  # would pass the 60 s reset on the wall clock
    second = manager.backoff()
    second.stop()
    assert clock.has_waiters()
    clock.step(1.5)
    assert first.c().try_recv() == (None, False)  # stopped
    ok = second.c().try_recv()[1]
    assert not ok  # 2 s backoff (not reset to 1 s): not fired after 1.5 s
