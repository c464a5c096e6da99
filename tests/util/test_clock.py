"""util/clock.py and util/chan.py: fake-clock semantics of k8s.io/utils/clock/testing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest

from client_cache.util.chan import (
    CLOSED,
    STOPPED,
    TIMED_OUT,
    Chan,
    ChanClosedError,
    SendReady,
    UnbufferedChan,
    select,
    select_or_stop,
    stop_chan,
)
from client_cache.util.clock import FakeClock, IntervalClock, RealClock
from client_cache.util.stop import on_stop, stop_callbacks
from tests.fixtures import eventually

T0 = 1_700_000_000.0


def test_fake_clock_now_since_step_set_time() -> None:
    clock = FakeClock(T0)
    assert clock.now() == T0
    clock.step(2.5)
    assert clock.now() == T0 + 2.5
    assert clock.since(T0) == 2.5
    clock.set_time(T0 + 100)
    assert clock.since(T0) == 100
    clock.sleep(1)  # sleep is step, does not block
    assert clock.now() == T0 + 101


def test_fake_timer_fires_at_target_inclusive() -> None:
    clock = FakeClock(T0)
    timer = clock.new_timer(10)
    assert clock.has_waiters()
    clock.step(9.999)
    assert not timer.c().ready()
    clock.step(0.001)  # exactly the target fires
    assert timer.c().recv(0) == (T0 + 10, True)
    assert not clock.has_waiters()
    assert timer.stop() is False  # already fired


def test_fake_timer_zero_duration_waits_for_next_step() -> None:
    clock = FakeClock(T0)
    ch = clock.after(0)
    assert not ch.ready()
    clock.step(0)
    assert ch.recv(0) == (T0, True)


def test_fake_timer_stop_and_reset() -> None:
    clock = FakeClock(T0)
    timer = clock.new_timer(5)
    assert timer.stop() is True
    assert not clock.has_waiters()
    clock.step(10)
    assert not timer.c().ready()
    assert timer.reset(3) is False  # was not active
    assert clock.has_waiters()
    assert timer.reset(4) is True  # active: moves the target
    clock.step(3)
    assert not timer.c().ready()
    clock.step(1)
    assert timer.c().recv(0) == (T0 + 14, True)


def test_fake_ticker_collapses_missed_ticks_and_stop_is_noop() -> None:
    clock = FakeClock(T0)
    ticker = clock.new_ticker(1)
    clock.step(3.5)  # three periods pass: one tick pending, re-armed at T0+4
    assert ticker.c().recv(0) == (T0 + 3.5, True)
    assert not ticker.c().ready()
    clock.step(0.4)
    assert not ticker.c().ready()
    clock.step(0.1)
    assert ticker.c().recv(0) == (T0 + 4.0, True)
    ticker.stop()
    assert clock.has_waiters()  # upstream's fake ticker stays registered
    assert not FakeClock(T0).tick(0).ready()


def test_fake_after_func_runs_inside_step() -> None:
    clock = FakeClock(T0)
    seen: list[float] = []
    clock.after_func(2, lambda: seen.append(clock.now()))
    clock.step(1)
    assert seen == []
    clock.step(1)
    assert seen == [T0 + 2]


def test_thread_blocked_on_fake_timer_is_released_by_step() -> None:
    clock = FakeClock(T0)
    got: list[float | None] = []
    registered = threading.Event()

    def waiter() -> None:
        ch = clock.after(30)
        registered.set()
        value, _ = ch.recv(5)
        got.append(value)

    t = threading.Thread(target=waiter, name="test-fake-waiter", daemon=True)
    t.start()
    assert registered.wait(5)
    assert clock.has_waiters()
    clock.step(30)
    t.join(5)
    assert got == [T0 + 30]


def test_interval_clock() -> None:
    clock = IntervalClock(T0, 0.5)
    assert clock.now() == T0 + 0.5
    assert clock.now() == T0 + 1.0
    assert clock.since(T0) == 1.5
    with pytest.raises(NotImplementedError):
        clock.new_timer(1)


def test_real_timer_and_ticker() -> None:
    clock = RealClock()
    start = time.monotonic()
    timer = clock.new_timer(0.05)
    value, ok = timer.c().recv(2)
    assert ok and value is not None
    assert time.monotonic() - start >= 0.05
    assert timer.stop() is False
    timer2 = clock.new_timer(10)
    assert timer2.stop() is True
    assert timer2.c().recv(0.05) == (None, False)
    ticker = clock.new_ticker(0.02)
    for _ in range(3):
        assert ticker.c().recv(2)[1]
    ticker.stop()
    assert ticker.c().recv(0.06) == (None, False)
    with pytest.raises(ValueError):
        clock.new_ticker(0)


def test_real_after_func_and_stop() -> None:
    clock = RealClock()
    fired = threading.Event()
    timer = clock.after_func(0.01, fired.set)
    assert fired.wait(2)
    assert timer.stop() is False
    never = threading.Event()
    timer2 = clock.after_func(5, never.set)
    assert timer2.stop() is True
    assert not never.is_set()


def test_chan_send_recv_capacity() -> None:
    ch: Chan[int] = Chan(2)
    assert ch.try_send(1) and ch.try_send(2)
    assert not ch.try_send(3)
    assert ch.send(3, timeout=0.01) is False
    assert len(ch) == 2
    assert ch.recv() == (1, True)
    assert ch.recv() == (2, True)
    assert ch.try_recv() == (None, False)
    with pytest.raises(ValueError):
        Chan(0)


def test_select_wakes_on_stop_event_and_timer() -> None:
    stop = threading.Event()
    clock = FakeClock(T0)
    timer = clock.new_timer(5)
    done = stop_chan(stop)
    result: list[tuple[int, object]] = []

    def run() -> None:
        result.append(select([done, timer.c()], timeout=5))

    t = threading.Thread(target=run, name="test-select", daemon=True)
    t.start()
    clock.step(5)
    t.join(5)
    assert result == [(1, T0 + 5)]

    t = threading.Thread(target=run, name="test-select-2", daemon=True)
    t.start()
    stop.set()
    t.join(5)
    assert result[1] == (0, CLOSED)
    # the stop channel stays ready (a closed Go channel)
    assert select([done], timeout=0) == (0, CLOSED)
    assert select([done], timeout=0) == (0, CLOSED)
    assert stop_chan(stop).recv(0) == (CLOSED, False)  # a set event gives a closed chan


def test_select_timeout_and_real_deadline() -> None:
    ch: Chan[int] = Chan(1)
    assert select([ch], timeout=0.02) == (-1, None)
    idx, value = select([ch, RealClock().after(0.02)], timeout=2)
    assert idx == 1 and isinstance(value, float)


def test_chan_close_semantics() -> None:
    ch: Chan[int] = Chan(3)
    ch.try_send(1)
    ch.try_send(2)
    ch.close()
    assert ch.recv(0) == (1, True)  # buffered values are still delivered
    assert ch.recv() == (2, True)
    assert ch.recv() == (CLOSED, False)  # then closed, at once, for ever
    assert ch.recv(5) == (CLOSED, False)
    assert select([ch], timeout=1) == (0, CLOSED)
    assert ch.ready() and ch.closed()
    with pytest.raises(ChanClosedError):
        ch.try_send(3)
    with pytest.raises(ChanClosedError):
        ch.send(3)
    assert not CLOSED


def test_close_wakes_blocked_receiver_and_sender() -> None:
    ch: Chan[int] = Chan(1)
    ch.try_send(0)
    results: list[object] = []

    def blocked_send() -> None:
        try:
            ch.send(1)
        except ChanClosedError as err:
            results.append(err)

    t = threading.Thread(target=blocked_send, name="test-blocked-send", daemon=True)
    t.start()
    empty: Chan[int] = Chan(1)
    r = threading.Thread(target=lambda: results.append(empty.recv(5)), name="test-blocked-recv",
                         daemon=True)
    r.start()
    ch.close()
    empty.close()
    t.join(5)
    r.join(5)
    assert (CLOSED, False) in results
    assert any(isinstance(x, ChanClosedError) for x in results)


def test_select_or_stop_is_woken_by_stop_without_a_helper_thread() -> None:
    """``set()`` wakes a thread blocked in ``select_or_stop`` through a callback: no thread
    watches the event (the old design polled every 50 ms from a shared thread)."""
    stop = threading.Event()  # a plain event, as users pass
    fed: Chan[int] = Chan(1)
    results: list[tuple[int, Any]] = []
    before = {t.ident for t in threading.enumerate()}
    waiter = threading.Thread(target=lambda: results.append(select_or_stop(stop, [fed])),
                              name="test-select-waiter", daemon=True)
    waiter.start()
    eventually(lambda: stop_callbacks(stop) == 1, 5)  # the waiter is registered
    extra = {t.name for t in threading.enumerate() if t.ident not in before}
    assert extra == {"test-select-waiter"}
    stop.set()
    waiter.join(1)
    assert results == [(STOPPED, None)]
    assert stop_callbacks(stop) == 0  # the registration ended with the wait
    fed.try_send(7)
    assert select_or_stop(threading.Event(), [fed], timeout=5) == (0, 7)
    assert select_or_stop(threading.Event(), [Chan(1)], timeout=0.05) == (TIMED_OUT, None)


def test_on_stop_runs_callbacks_inside_set() -> None:
    """Callbacks run once, in the thread that sets, before ``set()`` returns; a callback
    registered on a set event runs at once; a cancelled one never runs; a failing one does
    not keep the others from running; a ``set`` captured before the first registration
    (as ``threading.Timer(d, stop.set)`` does) runs them too; a subclass of Event works."""

    class MyEvent(threading.Event):
        pass

    for event in (threading.Event(), MyEvent()):
        captured_set = event.set
        calls: list[str] = []
        on_stop(event, partial(calls.append, "a"))
        cancelled = on_stop(event, partial(calls.append, "cancelled"))
        on_stop(event, lambda: 1 / 0)  # type: ignore[func-returns-value]
        on_stop(event, partial(calls.append, "b"))
        cancelled.cancel()
        assert calls == []
        (captured_set if type(event) is threading.Event else event.set)()
        assert calls == ["a", "b"]
        event.set()
        assert calls == ["a", "b"]  # once
        on_stop(event, partial(calls.append, "late"))
        assert calls == ["a", "b", "late"]


def test_on_stop_races_with_set() -> None:
    """Registering while another thread sets: the callback runs exactly once."""
    for _ in range(200):
        event = threading.Event()
        calls: list[int] = []
        setter = threading.Thread(target=event.set, name="test-setter")
        setter.start()
        on_stop(event, partial(calls.append, 1))
        setter.join()
        assert calls == [1]


class _CountingCondition(threading.Condition):
    """A condition that reports each wait (``waiting``, set as the wait begins, under the
    lock) and counts the notifications."""

    def __init__(self) -> None:
        super().__init__(threading.Lock())
        self.waiting = threading.Semaphore(0)
        self.notified = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting.release()
        return super().wait(timeout)

    def notify_all(self) -> None:
        self.notified += 1
        super().notify_all()


class _WatchedChan(Chan[int]):
    """Reports each select's registration (``registered``)."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self.registered = threading.Semaphore(0)

    def _add_waker(self, waker: Callable[[], None]) -> float | None:
        deadline = super()._add_waker(waker)
        self.registered.release()
        return deadline


def _counting_chan(capacity: int) -> tuple[_WatchedChan, _CountingCondition]:
    ch = _WatchedChan(capacity)
    cond = _CountingCondition()
    ch._cond = cond  # the test watches the channel's own wake-ups
    return ch, cond


def _waiting(cond: _CountingCondition, call: Callable[[], Any],
             name: str) -> tuple[threading.Thread, list[Any]]:
    """A thread that makes ``call`` (its result goes to the list), started and seen
    waiting on ``cond``."""
    results: list[Any] = []
    thread = threading.Thread(target=lambda: results.append(call()), name=name, daemon=True)
    thread.start()
    assert cond.waiting.acquire(timeout=10)  # it waits (and released the lock)
    return thread, results


def test_wait_batch_is_woken_once_at_its_count() -> None:
    """A lone ``wait_batch`` waiter is not woken by the sends before its count: one
    notification, on the send that reaches it."""
    ch, cond = _counting_chan(10)
    waiter, got = _waiting(cond, lambda: ch.wait_batch(3, 30), "test-wait-batch")
    assert ch.try_send(1) and ch.try_send(2)
    assert cond.notified == 0 and waiter.is_alive()
    assert ch.try_send(3)
    waiter.join(10)
    assert got == [3] and cond.notified == 1
    assert [ch.recv(0)[0] for _ in range(3)] == [1, 2, 3]  # it received nothing


def test_wait_batch_does_not_hold_back_other_waiters() -> None:
    """While a ``wait_batch`` waits for its count, a send still wakes a receiver and a
    ``select`` on the same channel at once."""
    ch, cond = _counting_chan(10)
    waiter, batch = _waiting(cond, lambda: ch.wait_batch(5, 30), "test-wait-batch")
    receiver, received = _waiting(cond, lambda: ch.recv(30), "test-recv")
    ch.try_send(1)
    receiver.join(10)
    assert received == [(1, True)] and waiter.is_alive()

    selected: list[tuple[int, Any]] = []
    selector = threading.Thread(target=lambda: selected.append(select([ch], timeout=30)),
                                name="test-select", daemon=True)
    selector.start()
    assert ch.registered.acquire(timeout=10)
    ch.try_send(2)
    selector.join(10)
    assert selected == [(0, 2)] and waiter.is_alive()
    for value in range(5):
        ch.try_send(value)
    waiter.join(10)
    assert batch == [5]


def test_wait_batch_deadline_close_and_bounds() -> None:
    ch: Chan[int] = Chan(4)
    ch.try_send(1)
    began = time.monotonic()
    assert ch.wait_batch(3, 0.02) == 1  # the deadline: what is there
    assert time.monotonic() - began >= 0.02
    assert ch.wait_batch(1, 30) == 1  # already there: at once
    for value in range(3):
        ch.try_send(value)
    assert ch.wait_batch(50, 30) == 4  # a count above the capacity is the capacity
    with pytest.raises(ValueError):
        ch.wait_batch(0, 1)

    empty, cond = _counting_chan(4)
    waiter, got = _waiting(cond, lambda: empty.wait_batch(2, 30), "test-wait-batch")
    empty.close()  # a close wakes it
    waiter.join(10)
    assert got == [0] and not waiter.is_alive()
    assert empty.cap() == 4


def test_recv_batch_takes_what_is_buffered_up_to_its_limit_and_last() -> None:
    ch: Chan[int] = Chan(8)
    for value in range(6):
        ch.try_send(value)
    assert ch.recv_batch(3) == [0, 1, 2]
    assert ch.recv_batch(10, lambda v: v == 3) == [3]  # ends after the first ``last``
    assert ch.recv_batch(10, lambda v: v > 100) == [4, 5]
    assert ch.recv_batch(10) == []  # nothing buffered: nothing, no wait
    ch.try_send(7)
    ch.close()
    assert ch.recv_batch(10) == [7]  # what was buffered before the close
    assert ch.recv_batch(10) == [] and ch.recv(0) == (CLOSED, False)
    with pytest.raises(ValueError):
        ch.recv_batch(0)
    timer = RealClock().new_timer(0)  # due at once: the batch moves its value in
    assert len(timer.c().recv_batch(5)) == 1


def test_recv_batch_releases_blocked_senders() -> None:
    ch: Chan[int] = Chan(2)
    ch.try_send(1)
    ch.try_send(2)
    sent: list[bool] = []
    sender = threading.Thread(target=lambda: sent.append(ch.send(3, timeout=30)),
                              name="test-send", daemon=True)
    sender.start()
    assert ch.recv_batch(5) == [1, 2]
    sender.join(10)
    assert sent == [True] and ch.recv_batch(5) == [3]

    unbuffered: UnbufferedChan[int] = UnbufferedChan()
    handed: list[bool] = []
    sender = threading.Thread(target=lambda: handed.append(unbuffered.send(9)),
                              name="test-unbuffered-send", daemon=True)
    sender.start()
    assert unbuffered.wait_batch(1, 10) == 1
    assert unbuffered.recv_batch(5) == [9]
    sender.join(10)  # received by the batch: the send returns
    assert handed == [True]
    with pytest.raises(TypeError):
        SendReady(ch).recv_batch(1)


def test_try_send_batch_sends_what_fits_and_wakes_a_receiver() -> None:
    ch, cond = _counting_chan(3)
    ch.try_send(0)
    assert ch.try_send_batch([1, 2, 3, 4]) == 2  # room for two
    assert ch.try_send_batch([5]) == 0
    assert ch.recv_batch(10) == [0, 1, 2]
    assert ch.try_send_batch([]) == 0

    receiver, received = _waiting(cond, lambda: ch.recv(30), "test-recv")
    assert ch.try_send_batch([7, 8]) == 2
    receiver.join(10)
    assert received == [(7, True)] and ch.recv_batch(10) == [8]
    ch.close()
    with pytest.raises(ChanClosedError):
        ch.try_send_batch([1])


def test_try_send_batch_wakes_a_wait_batch_once_at_its_count() -> None:
    ch, cond = _counting_chan(10)
    waiter, got = _waiting(cond, lambda: ch.wait_batch(4, 30), "test-wait-batch")
    assert ch.try_send_batch([1, 2]) == 2
    assert cond.notified == 0 and waiter.is_alive()  # below its count: not woken
    assert ch.try_send_batch([3, 4, 5]) == 3
    waiter.join(10)
    assert got == [5] and cond.notified == 1


def test_real_after_func_stop_waits_for_a_timer_that_has_not_fired() -> None:
    before = set(threading.enumerate())
    timer = RealClock().after_func(60, lambda: None)
    assert timer.stop() is True
    assert set(threading.enumerate()) == before  # its thread ended within the stop


def test_real_after_func_stop_does_not_wait_for_a_running_function() -> None:
    """As Go's Stop: a function already running is not waited for (it may wait on the
    one stopping it), and stop says it was too late."""
    running, release = threading.Event(), threading.Event()

    def f() -> None:
        running.set()
        release.wait(10)

    timer = RealClock().after_func(0, f)
    assert running.wait(5)
    try:
        assert timer.stop() is False  # returns while f still runs
        assert not release.is_set()
    finally:
        release.set()
    threads = [t for t in threading.enumerate() if t.name == "client_cache-after-func"]
    for thread in threads:
        thread.join(1)
        assert not thread.is_alive()


def test_real_after_func_reset_from_its_own_function_re_arms() -> None:
    fired = threading.Semaphore(0)
    made = threading.Event()  # the timer below is assigned
    calls: list[int] = []

    def f() -> None:
        made.wait(5)
        calls.append(1)
        if len(calls) == 1:
            timer.reset(0.01)
        fired.release()

    timer = RealClock().after_func(0.01, f)
    made.set()
    assert fired.acquire(timeout=5) and fired.acquire(timeout=5)
    assert calls == [1, 1]
    timer.stop()
