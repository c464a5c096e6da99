"""Injectable clocks (``k8s.io/utils/clock`` and ``clock/testing``).

A clock has two readings, as a Go ``time.Time`` carries two: :meth:`~PassiveClock.now` is
wall time (``float`` seconds since the epoch), for timestamps shown to people or sent to
the server; :meth:`~PassiveClock.monotonic` never jumps and is what every duration,
deadline, timer, backoff and rate limit in the library is measured with, so that a wall
clock stepped back or forth (NTP, a suspended VM, an operator) changes none of them.
Durations are ``float`` seconds (Go ``time.Duration``). Timer and ticker channels are
:class:`~client_cache.util.chan.Chan` objects of capacity 1 that deliver the firing time
(wall time, as Go's channels deliver a ``time.Time``).

* :class:`RealClock` reads ``time.time()`` for :meth:`~RealClock.now` (so ``freezegun``
  can freeze it) and ``time.monotonic()`` for :meth:`~RealClock.monotonic` and timer
  deadlines; its timers and tickers need no thread.
* :class:`FakeClock` only moves when a test calls :meth:`FakeClock.step` or
  :meth:`FakeClock.set_time`. Everything waiting on it (timers, ``after``, tickers,
  ``after_func``) fires during that call when its target time is at or before the new time,
  with the upstream rules: a timer sends with a blocking send into its 1-slot channel and
  fires once; a ticker sends only if its slot is free and re-arms by whole periods past the
  new time; ``after_func`` callbacks run synchronously inside ``step``, after the other
  waiters, so one may reset its own timer; a timer created with
  a non-positive duration waits for the next ``step`` (even ``step(0)``); ``sleep`` is
  ``step``; a fake ticker's ``stop`` does nothing (as upstream, it stays a waiter).
  :meth:`FakeClock.has_waiters` tells a test that some thread is blocked on the clock.
  Its two readings move together, except that :meth:`FakePassiveClock.step_wall` moves
  the wall reading alone (a wall clock stepped by NTP), which fires nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from client_cache.util.chan import Chan

__all__ = [
    "REAL_CLOCK",
    "Clock",
    "FakeClock",
    "FakePassiveClock",
    "IntervalClock",
    "PassiveClock",
    "RealClock",
    "Ticker",
    "Timer",
    "WithDelayedExecution",
    "WithTicker",
]


@runtime_checkable
class Timer(Protocol):
    """A single-shot timer (Go ``clock.Timer``)."""

    def c(self) -> Chan[float]:
        """The channel that receives the clock's reading when the timer fires."""
        ...

    def stop(self) -> bool:
        """Stop the timer; True if that kept it from firing."""
        ...

    def reset(self, d: float) -> bool:
        """Fire ``d`` seconds from now instead; True if it had not fired yet."""
        ...


@runtime_checkable
class Ticker(Protocol):
    """A periodic ticker (Go ``clock.Ticker``)."""

    def c(self) -> Chan[float]:
        """The channel that receives the clock's reading at each tick."""
        ...

    def stop(self) -> None:
        """Stop ticking."""
        ...


@runtime_checkable
class PassiveClock(Protocol):
    """Reads the time (Go ``clock.PassiveClock``): ``now``/``since`` on the wall clock,
    ``monotonic`` for durations (Go keeps both in one ``time.Time``)."""

    def now(self) -> float:
        """Wall-clock time in seconds since the epoch (for timestamps shown or sent)."""
        ...

    def since(self, ts: float) -> float:
        """Seconds from the monotonic reading ``ts`` to now."""
        ...

    def monotonic(self) -> float:
        """The monotonic reading in seconds (for durations, timers and deadlines)."""
        ...


@runtime_checkable
class Clock(PassiveClock, Protocol):
    """A clock with timers (Go ``clock.Clock``)."""

    def after(self, d: float) -> Chan[float]:
        """A channel that receives a reading once ``d`` seconds have passed."""
        ...

    def new_timer(self, d: float) -> Timer:
        """A timer that fires once ``d`` seconds from now."""
        ...

    def sleep(self, d: float) -> None:
        """Block for ``d`` seconds."""
        ...

    def tick(self, d: float) -> Chan[float]:
        """A channel that receives a reading every ``d`` seconds."""
        ...


@runtime_checkable
class WithTicker(Clock, Protocol):
    """A clock that makes tickers (Go ``clock.WithTicker``)."""

    def new_ticker(self, d: float) -> Ticker:
        """A ticker firing every ``d`` seconds."""
        ...


@runtime_checkable
class WithDelayedExecution(Clock, Protocol):
    """A clock that runs functions later (Go ``clock.WithDelayedExecution``)."""

    def after_func(self, d: float, f: Callable[[], None]) -> Timer:
        """Call ``f`` on a thread of its own ``d`` seconds from now; returns a timer that
        can stop it."""
        ...


# --- real clock ---------------------------------------------------------------------------


class _RealTimer(Chan[float]):
    """A timer that fills its own channel at its deadline; no thread involved."""

    def __init__(self, d: float) -> None:
        super().__init__(1)
        self._deadline: float | None = time.monotonic() + d

    def _due_locked(self, now: float) -> None:
        if self._deadline is not None and now >= self._deadline:
            self._deadline = None
            if not self._buf:
                self._buf.append(time.time())
            self._notify_locked()

    def _deadline_locked(self) -> float | None:
        return self._deadline

    def c(self) -> Chan[float]:
        return self

    def stop(self) -> bool:
        with self._cond:
            self._due_locked(time.monotonic())
            active = self._deadline is not None
            self._deadline = None
            return active

    def reset(self, d: float) -> bool:
        with self._cond:
            self._due_locked(time.monotonic())
            active = self._deadline is not None
            self._deadline = time.monotonic() + d
            self._notify_locked()
            return active


class _RealTicker(Chan[float]):
    def __init__(self, d: float) -> None:
        if d <= 0:
            raise ValueError("non-positive interval for new_ticker")
        super().__init__(1)
        self._period = d
        self._next: float | None = time.monotonic() + d

    def _due_locked(self, now: float) -> None:
        if self._next is None or now < self._next:
            return
        if not self._buf:  # a slow receiver misses ticks, as in Go
            self._buf.append(time.time())
        missed = int((now - self._next) // self._period) + 1
        self._next += missed * self._period
        self._notify_locked()

    def _deadline_locked(self) -> float | None:
        return self._next

    def c(self) -> Chan[float]:
        return self

    def stop(self) -> None:
        with self._cond:
            self._next = None

    def reset(self, d: float) -> None:
        if d <= 0:
            raise ValueError("non-positive interval for reset")
        with self._cond:
            self._period = d
            self._next = time.monotonic() + d
            self._notify_locked()


class _RealFuncTimer:
    """``after_func`` on the real clock: a named daemon ``threading.Timer``. ``stop`` on a
    timer that has not fired waits for its thread, which ends at once, so neither the
    thread nor the function it holds outlives the stop; on one whose function runs it
    returns at once (False, as Go's ``Stop``), the thread ending with the function."""

    def __init__(self, d: float, f: Callable[[], None]) -> None:
        self._f = f
        self._lock = threading.Lock()
        self._chan: Chan[float] = Chan(1)
        self._firing: threading.Thread | None = None  # the timer whose function runs
        self._timer = self._start(d)

    def _start(self, d: float) -> threading.Timer:
        timer = threading.Timer(max(0.0, d), self._fire)
        timer.name = "client_cache-after-func"
        timer.daemon = True
        timer.start()
        return timer

    def _fire(self) -> None:
        me = cast(threading.Timer, threading.current_thread())
        with self._lock:
            if me.finished.is_set():  # stopped or reset after it woke: not to run
                return
            self._firing = me
        try:
            self._f()
        finally:
            with self._lock:
                if self._firing is me:
                    self._firing = None

    def c(self) -> Chan[float]:
        return self._chan  # never fires, as Go's AfterFunc timer channel

    def stop(self) -> bool:
        with self._lock:
            running = self._firing is self._timer
            active = not self._timer.finished.is_set() and not running
            self._timer.cancel()
            timer = self._timer
        if not running and timer is not threading.current_thread():
            timer.join()  # cancelled before its function: it ends at once
        return active

    def reset(self, d: float) -> bool:
        with self._lock:
            active = not self._timer.finished.is_set() and self._firing is not self._timer
            self._timer.cancel()
            self._timer = self._start(d)
            return active


class RealClock:
    """The real clock (Go ``clock.RealClock``)."""

    def now(self) -> float:
        """Wall time, seconds since the epoch."""
        return time.time()

    def since(self, ts: float) -> float:
        """Wall seconds since the wall time ``ts`` (for durations use :meth:`monotonic`)."""
        return time.time() - ts

    def monotonic(self) -> float:
        """``time.monotonic()``: the reading every duration and deadline is measured in."""
        return time.monotonic()

    def after(self, d: float) -> Chan[float]:
        """A channel that receives a reading once ``d`` seconds have passed."""
        return _RealTimer(d)

    def new_timer(self, d: float) -> Timer:
        """A timer that fires once ``d`` seconds from now."""
        return _RealTimer(d)

    def after_func(self, d: float, f: Callable[[], None]) -> Timer:
        """Call ``f`` on a thread of its own ``d`` seconds from now; returns a timer that
        can stop it."""
        return _RealFuncTimer(d, f)

    def tick(self, d: float) -> Chan[float]:
        """A ticker channel; for ``d <= 0`` a channel that never fires (Go returns nil)."""
        if d <= 0:
            return Chan(1)
        return _RealTicker(d)

    def new_ticker(self, d: float) -> Ticker:
        """A ticker firing every ``d`` seconds."""
        return _RealTicker(d)

    def sleep(self, d: float) -> None:
        """Block for ``d`` seconds."""
        if d > 0:
            time.sleep(d)


REAL_CLOCK = RealClock()
"""The shared real clock used when no clock is injected."""


# --- fake clocks --------------------------------------------------------------------------


class FakePassiveClock:
    """A passive clock whose time only moves by :meth:`set_time` (Go ``FakePassiveClock``)."""

    def __init__(self, t: float) -> None:
        self._lock = threading.RLock()
        self._time = float(t)
        self._wall_offset = 0.0

    def now(self) -> float:
        """The wall reading: the fake time plus any :meth:`step_wall` offset."""
        with self._lock:
            return self._time + self._wall_offset

    def since(self, ts: float) -> float:
        """Seconds from the fake reading ``ts`` to the fake now."""
        with self._lock:
            return self._time + self._wall_offset - ts

    def monotonic(self) -> float:
        """The fake time itself; timers fire by it."""
        with self._lock:
            return self._time

    def set_time(self, t: float) -> None:
        """Set both readings to ``t`` (any :meth:`step_wall` offset is dropped)."""
        with self._lock:
            self._time = float(t)
            self._wall_offset = 0.0

    def step_wall(self, d: float) -> None:
        """Step the wall reading alone by ``d`` (may be negative), as NTP or an operator
        steps a real wall clock; the monotonic reading, timers and tickers do not move."""
        with self._lock:
            self._wall_offset += d


@dataclass(eq=False)
class _Waiter:
    target_time: float
    dest: Chan[float]
    step_interval: float = 0.0
    skip_if_blocked: bool = False
    after_func: Callable[[], None] | None = None


class _FakeTimer:
    def __init__(self, clock: FakeClock, waiter: _Waiter) -> None:
        self._clock = clock
        self._waiter = waiter

    def c(self) -> Chan[float]:
        return self._waiter.dest

    def stop(self) -> bool:
        with self._clock._lock:
            waiters = self._clock._waiters
            active = self._waiter in waiters
            if active:
                waiters.remove(self._waiter)
            return active

    def reset(self, d: float) -> bool:
        with self._clock._lock:
            self._waiter.target_time = self._clock._time + d
            active = self._waiter in self._clock._waiters
            if not active:
                self._clock._waiters.append(self._waiter)
            return active


class _FakeTicker:
    def __init__(self, waiter: _Waiter) -> None:
        self._waiter = waiter

    def c(self) -> Chan[float]:
        return self._waiter.dest

    def stop(self) -> None:
        """A no-op, as upstream's fake ticker (it stays registered as a waiter)."""


class FakeClock(FakePassiveClock):
    """A clock for tests: time moves only by :meth:`step` / :meth:`set_time`
    (Go ``testing.FakeClock``)."""

    def __init__(self, t: float) -> None:
        super().__init__(t)
        self._waiters: list[_Waiter] = []

    def _add(self, waiter: _Waiter) -> _Waiter:
        with self._lock:
            self._waiters.append(waiter)
        return waiter

    def after(self, d: float) -> Chan[float]:
        """A channel that receives a reading once ``d`` seconds fake seconds have passed
        (``step`` moves time)."""
        return self.new_timer(d).c()

    def new_timer(self, d: float) -> Timer:
        """A timer that fires once ``d`` fake seconds from now."""
        with self._lock:
            waiter = self._add(_Waiter(self._time + d, Chan(1)))
        return _FakeTimer(self, waiter)

    def after_func(self, d: float, f: Callable[[], None]) -> Timer:
        """Call ``f`` on a thread of its own ``d`` fake seconds from now; returns a timer
        that can stop it."""
        with self._lock:
            waiter = self._add(_Waiter(self._time + d, Chan(1), after_func=f))
        return _FakeTimer(self, waiter)

    def tick(self, d: float) -> Chan[float]:
        """A ticker channel; for ``d <= 0`` a channel that never fires (Go returns nil)."""
        if d <= 0:
            return Chan(1)
        return self.new_ticker(d).c()

    def new_ticker(self, d: float) -> Ticker:
        """A ticker firing every ``d`` seconds."""
        if d <= 0:
            raise ValueError("non-positive interval for new_ticker")
        with self._lock:
            waiter = self._add(
                _Waiter(self._time + d, Chan(1), step_interval=d, skip_if_blocked=True)
            )
        return _FakeTicker(waiter)

    def step(self, d: float) -> None:
        """Move time forward by ``d`` and fire everything due."""
        with self._lock:
            self._set_time_locked(self._time + d)

    def set_time(self, t: float) -> None:
        """Jump both readings to ``t`` and fire everything due."""
        with self._lock:
            self._wall_offset = 0.0
            self._set_time_locked(float(t))

    def _set_time_locked(self, t: float) -> None:
        self._time = t
        remaining: list[_Waiter] = []
        funcs: list[Callable[[], None]] = []
        for waiter in self._waiters:
            if waiter.target_time > t:
                remaining.append(waiter)
                continue
            if waiter.after_func is not None:  # its channel never fires, as the real one's
                funcs.append(waiter.after_func)
            elif waiter.skip_if_blocked:
                waiter.dest.try_send(t)
            else:
                waiter.dest.send(t)
            if waiter.step_interval > 0:
                while waiter.target_time <= t:
                    waiter.target_time += waiter.step_interval
                remaining.append(waiter)
        self._waiters = remaining
        # once the waiters are settled, so a function may reset its own timer
        for func in funcs:
            func()

    def has_waiters(self) -> bool:
        """Whether any timer, ticker or ``after`` is registered."""
        with self._lock:
            return bool(self._waiters)

    def waiter_count(self) -> int:
        """How many timers, tickers and ``after`` channels are registered (Go's
        ``FakeClock`` tests count them through ``HasWaiters``-style helpers)."""
        with self._lock:
            return len(self._waiters)

    def sleep(self, d: float) -> None:
        """Same as :meth:`step` (does not block)."""
        self.step(d)


class IntervalClock:
    """A clock whose every :meth:`now` advances by ``duration`` (Go ``IntervalClock``);
    it has no timers."""

    def __init__(self, t: float, duration: float) -> None:
        self.time = float(t)
        self.duration = float(duration)

    def now(self) -> float:
        """The next reading: each call advances by the interval."""
        self.time += self.duration
        return self.time

    def since(self, ts: float) -> float:
        """Seconds from ``ts`` to the next reading."""
        return self.now() - ts

    def monotonic(self) -> float:
        """Same as :meth:`now` (this clock has one reading)."""
        return self.now()

    def _unsupported(self) -> NotImplementedError:
        return NotImplementedError("IntervalClock has no timers")

    def after(self, d: float) -> Chan[float]:
        """Not supported by an interval clock: raises ``NotImplementedError``."""
        raise self._unsupported()

    def new_timer(self, d: float) -> Timer:
        """Not supported by an interval clock: raises ``NotImplementedError``."""
        raise self._unsupported()

    def after_func(self, d: float, f: Callable[[], None]) -> Timer:
        """Not supported by an interval clock: raises ``NotImplementedError``."""
        raise self._unsupported()

    def tick(self, d: float) -> Chan[float]:
        """Not supported by an interval clock: raises ``NotImplementedError``."""
        raise self._unsupported()

    def new_ticker(self, d: float) -> Ticker:
        """Not supported by an interval clock: raises ``NotImplementedError``."""
        raise self._unsupported()

    def sleep(self, d: float) -> None:
        """Not supported by an interval clock: raises ``NotImplementedError``."""
        raise self._unsupported()
