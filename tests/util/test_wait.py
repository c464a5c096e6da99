"""util/wait.py: backoff arithmetic, the backoff managers, loops and polling."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from client_cache.util import runtime as utilruntime
from client_cache.util import wait
from client_cache.util.clock import FakeClock, RealClock
from client_cache.util.wait import (
    Backoff,
    Group,
    WaitTimeoutError,
    backoff_until,
    exponential_backoff,
    interrupted,
    jitter,
    new_exponential_backoff_manager,
    new_jittered_backoff_manager,
    poll,
    poll_immediate,
    poll_immediate_until,
    poll_until,
    until,
)

T0 = 1000.0


def test_jitter_bounds() -> None:
    for _ in range(200):
        assert 10 <= jitter(10, 0.5) < 15
        assert 10 <= jitter(10, 0) < 20  # non-positive factor counts as 1.0


def test_backoff_step_caps_and_stops_growing() -> None:
    b = Backoff(duration=1, factor=2, steps=10, cap=5)
    assert [b.step() for _ in range(6)] == [1, 2, 4, 5, 5, 5]
    assert b.steps == 0
    limited = Backoff(duration=1, factor=3, steps=2)
    assert [limited.step() for _ in range(4)] == [1, 3, 9, 9]
    flat = Backoff(duration=2, factor=0, steps=3)
    assert [flat.step() for _ in range(4)] == [2, 2, 2, 2]


def test_reflector_backoff_sequence_and_reset() -> None:
    """0.8 s doubling with jitter 1.0, capped at 30 s, reset after 2 min without backoff."""
    clock = FakeClock(T0)
    manager = new_exponential_backoff_manager(0.8, 30, 120, 2.0, 1.0, clock)
    bounds = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30]
    timers = []
    for low in bounds:
        before = clock.now()
        timer = manager.backoff()
        timers.append(timer)
        # the timer fires somewhere in [low, 2*low): not before low, surely by 2*low
        clock.step(low - 0.001)
        assert not timer.c().ready(), low
        clock.step(low + 0.001)
        assert timer.c().recv(0)[1], low
        assert clock.now() - before < 2 * low + 0.01
    assert all(t is timers[0] for t in timers)  # the same timer, reset each time
    clock.step(121)  # more than the reset duration since the last backoff
    timer = manager.backoff()
    clock.step(1.6)
    assert timer.c().recv(0)[1]  # back to [0.8, 1.6)


def test_jittered_backoff_manager() -> None:
    clock = FakeClock(T0)
    manager = new_jittered_backoff_manager(5, 0.0, clock)
    timer = manager.backoff()
    clock.step(4.999)
    assert not timer.c().ready()
    clock.step(0.001)
    assert timer.c().recv(0)[1]


class StepBackoff:
    """Each backoff() hands out the same fake-clock timer reset to ``period``."""

    def __init__(self, clock: FakeClock, period: float) -> None:
        self.clock, self.period, self.calls, self.timer = clock, period, 0, None

    def backoff(self) -> Any:
        self.calls += 1
        if self.timer is None:
            self.timer = self.clock.new_timer(self.period)
        else:
            self.timer.reset(self.period)
        return self.timer


def test_backoff_until_driven_by_fake_clock() -> None:
    clock = FakeClock(T0)
    manager = StepBackoff(clock, 10)
    stop = threading.Event()
    ran = threading.Semaphore(0)
    calls = [0]

    def f() -> None:
        calls[0] += 1
        ran.release()

    runner = threading.Thread(target=backoff_until, args=(f, manager, True, stop),
                              name="test-backoff-until", daemon=True)
    runner.start()
    assert ran.acquire(timeout=5)
    for expected in (2, 3):
        clock.step(10)
        assert ran.acquire(timeout=5)
        assert calls[0] == expected
    stop.set()
    runner.join(1)
    assert not runner.is_alive()
    assert calls[0] == 3


def test_backoff_until_never_runs_when_already_stopped() -> None:
    stop = threading.Event()
    stop.set()
    calls: list[int] = []
    backoff_until(lambda: calls.append(1), StepBackoff(FakeClock(T0), 1), True, stop)
    assert calls == []


def test_backoff_until_waits_with_its_own_wait_until_it_says_stop() -> None:
    """The port's ``wait`` hook (a reflector's wait, cut short by a server's answer):
    it replaces the manager's timer after each call; False ends the loop."""
    calls: list[int] = []
    waits = iter([True, True, False])
    backoff_until(lambda: calls.append(1), StepBackoff(FakeClock(T0), 1), True,
                  threading.Event(), wait=lambda: next(waits))
    assert calls == [1, 1, 1]
    with pytest.raises(ValueError, match="sliding"):
        backoff_until(lambda: None, StepBackoff(FakeClock(T0), 1), False, threading.Event(),
                      wait=lambda: True)


def test_until_on_real_clock_stops_promptly() -> None:
    stop = threading.Event()
    ran = threading.Semaphore(0)
    runner = threading.Thread(target=until, args=(ran.release, 0.01, stop),
                              name="test-until", daemon=True)
    runner.start()
    for _ in range(3):
        assert ran.acquire(timeout=5)
    stop.set()
    runner.join(1)
    assert not runner.is_alive()


def test_backoff_until_reraises_by_default() -> None:
    stop = threading.Event()

    def boom() -> None:
        raise RuntimeError("f failed")

    with pytest.raises(RuntimeError, match="f failed"):
        backoff_until(boom, StepBackoff(FakeClock(T0), 1), True, stop)
    try:
        utilruntime.REALLY_CRASH = False
        calls = [0]

        def boom_then_stop() -> None:
            calls[0] += 1
            stop.set()
            raise RuntimeError("logged only")

        backoff_until(boom_then_stop, StepBackoff(FakeClock(T0), 1), True, stop)
        assert calls == [1]
    finally:
        utilruntime.reset_for_tests()


def test_poll_immediate_until_and_stop() -> None:
    attempts = [0]

    def ready_on_third() -> bool:
        attempts[0] += 1
        return attempts[0] >= 3

    poll_immediate_until(0.001, ready_on_third, threading.Event())
    assert attempts[0] == 3
    stop = threading.Event()
    stop.set()
    with pytest.raises(WaitTimeoutError, match="timed out waiting for the condition") as info:
        poll_until(0.001, lambda: False, stop)
    assert interrupted(info.value)
    assert poll_immediate_until(1, lambda: True, stop) is None  # immediate success wins


def test_poll_with_fake_clock() -> None:
    clock = FakeClock(T0)
    stop = threading.Event()
    checks = threading.Semaphore(0)
    done = threading.Event()
    attempts = [0]

    def cond() -> bool:
        attempts[0] += 1
        checks.release()
        return attempts[0] == 2

    t = threading.Thread(target=lambda: (poll_until(5, cond, stop, clock), done.set()),
                         name="test-poll", daemon=True)
    t.start()
    while not clock.has_waiters():  # the ticker is registered by the poller thread
        threading.Event().wait(0.001)
    clock.step(5)
    assert checks.acquire(timeout=5)
    clock.step(5)
    assert done.wait(5)
    t.join(1)
    stop.set()  # ends the stop bridge a fake-clock wait needs


def test_poll_and_poll_immediate_time_out() -> None:
    with pytest.raises(WaitTimeoutError):
        poll(0.005, 0.03, lambda: False)
    with pytest.raises(WaitTimeoutError):
        poll_immediate(0.005, 0.03, lambda: False)
    with pytest.raises(ValueError, match="condition failed"):
        poll_immediate(0.005, 1, lambda: (_ for _ in ()).throw(ValueError("condition failed")))


def test_exponential_backoff() -> None:
    attempts = [0]

    def never() -> bool:
        attempts[0] += 1
        return False

    backoff = Backoff(duration=0.001, factor=1, steps=4)
    with pytest.raises(WaitTimeoutError):
        exponential_backoff(backoff, never)
    assert attempts[0] == 4
    assert backoff.steps == 4  # copied, as Go passes by value
    exponential_backoff(Backoff(duration=0.001, steps=3), lambda: True)


def test_group_waits_for_all() -> None:
    group = Group("test-group")
    results: list[int] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        with lock:
            results.append(n)

    for n in range(5):
        group.start(lambda n=n: work(n))  # type: ignore[misc]
    assert group.wait(5)
    assert sorted(results) == [0, 1, 2, 3, 4]
    stop = threading.Event()
    group.start_with_stop(stop, lambda s: s.wait(5))
    stop.set()
    assert group.wait(5)


def test_never_stop_is_not_set() -> None:
    assert not wait.NEVER_STOP.is_set()
    assert isinstance(RealClock().now(), float)
