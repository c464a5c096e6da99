"""Periodic loops, backoff and polling (apimachinery ``pkg/util/wait``).

Every loop here stops when its ``stop`` :class:`threading.Event` is set: the check comes
before each call of the function, and a wait in progress is cut short at once (waits are
``select``\\ s on the stop signal and a timer, never sleeps). Durations are float seconds.

* :func:`until`, :func:`non_sliding_until`, :func:`jitter_until`: run ``f`` every
  ``period`` (sliding: the period starts after ``f`` returns) on the real clock, as
  upstream;
* :func:`backoff_until`: the same with the waits chosen by a :class:`BackoffManager`,
  whose clock may be a fake one (the reflector's loop);
* :class:`Backoff` with :meth:`Backoff.step`, :func:`jitter`,
  :func:`new_exponential_backoff_manager` (the reflector uses 0.8 s, 30 s, 120 s, 2.0, 1.0)
  and :func:`new_jittered_backoff_manager`;
* :func:`poll`, :func:`poll_immediate`, :func:`poll_until`, :func:`poll_immediate_until`,
  :func:`poll_infinite`, :func:`poll_immediate_infinite`, :func:`exponential_backoff`:
  a condition returns ``True`` when done and may raise to abort; giving up raises
  :class:`WaitTimeoutError` (``"timed out waiting for the condition"``).

An exception from ``f`` in the loops goes through
:func:`~client_cache.util.runtime.handle_crash`: logged, then re-raised (``REALLY_CRASH``).
"""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from client_cache.util.chan import NEVER_STOP as _NEVER_STOP
from client_cache.util.chan import STOPPED, Chan, select_or_stop
from client_cache.util.clock import REAL_CLOCK, Clock, Timer, WithTicker
from client_cache.util.errors import ClientCacheError
from client_cache.util.runtime import handle_crash

__all__ = [
    "FOREVER_TEST_TIMEOUT",
    "NEVER_STOP",
    "Backoff",
    "BackoffManager",
    "ConditionFunc",
    "Group",
    "WaitTimeoutError",
    "backoff_until",
    "exponential_backoff",
    "forever",
    "interrupted",
    "jitter",
    "jitter_until",
    "new_exponential_backoff_manager",
    "new_jittered_backoff_manager",
    "non_sliding_until",
    "poll",
    "poll_immediate",
    "poll_immediate_infinite",
    "poll_immediate_until",
    "poll_infinite",
    "poll_until",
    "until",
]

FOREVER_TEST_TIMEOUT = 30.0
"""A generous timeout for tests (Go ``ForeverTestTimeout``)."""

NEVER_STOP = _NEVER_STOP
"""An event nobody sets (Go ``NeverStop``); do not set it."""

MAX_INT32 = 2**31 - 1

ConditionFunc = Callable[[], bool]
"""Returns ``True`` when done; raises to abort the wait."""

_rand = random.Random()


class WaitTimeoutError(ClientCacheError, TimeoutError):
    """A wait gave up (Go ``ErrWaitTimeout``)."""

    def __init__(self, message: str = "timed out waiting for the condition") -> None:
        super().__init__(message)


def interrupted(err: BaseException) -> bool:
    """Whether ``err`` means a wait was cut short (Go ``Interrupted``)."""
    return isinstance(err, WaitTimeoutError)


def jitter(duration: float, max_factor: float) -> float:
    """``duration`` plus a random extra in ``[0, max_factor * duration)``; a non-positive
    ``max_factor`` counts as 1.0 (Go ``Jitter``)."""
    if max_factor <= 0.0:
        max_factor = 1.0
    return duration + _rand.random() * max_factor * duration


@dataclasses.dataclass
class Backoff:
    """Parameters of an exponential backoff (Go ``wait.Backoff``).

    :meth:`step` returns the current duration (jittered) and then multiplies it by
    ``factor``, capping at ``cap`` (which also ends the steps: the cap is then returned for
    ever). ``steps`` bounds how many times the duration may grow; once it reaches zero,
    :meth:`step` keeps returning the last duration.
    """

    duration: float = 0.0
    factor: float = 0.0
    jitter: float = 0.0
    steps: int = 0
    cap: float = 0.0

    def step(self) -> float:
        """The next wait in seconds, and advance the backoff (Go ``Step``)."""
        if self.steps < 1:
            return jitter(self.duration, self.jitter) if self.jitter > 0 else self.duration
        self.steps -= 1
        current = self.duration
        if self.factor != 0:
            self.duration = self.duration * self.factor
            if self.cap > 0 and self.duration > self.cap:
                self.duration = self.cap
                self.steps = 0
        return jitter(current, self.jitter) if self.jitter > 0 else current


@runtime_checkable
class BackoffManager(Protocol):
    """Hands out the timer to wait on before the next attempt (Go ``BackoffManager``).
    Implementations return the same timer object, reset, on every call."""

    def backoff(self) -> Timer:
        """A timer for the next wait (Go ``Backoff``)."""
        ...


def _arm(clock: Clock, timer: Timer | None, delay: float) -> Timer:
    """A timer that fires after ``delay``: ``timer`` reset, or a new one the first time
    (the backoff managers hand out the same timer on every call, as Go's do)."""
    if timer is None:
        return clock.new_timer(delay)
    timer.reset(delay)
    return timer


class ExponentialBackoffManager:
    """Exponential backoff that starts over after ``reset_duration`` without a call (Go
    ``exponentialBackoffManagerImpl``)."""

    def __init__(
        self,
        init_backoff: float,
        max_backoff: float,
        reset_duration: float,
        backoff_factor: float,
        jitter_factor: float,
        clock: Clock,
    ) -> None:
        self._backoff = Backoff(init_backoff, backoff_factor, jitter_factor, MAX_INT32, max_backoff)
        self._initial = init_backoff
        self._reset_duration = reset_duration
        self._clock = clock
        self._last_backoff_start = clock.monotonic()
        self._timer: Timer | None = None
        self._lock = threading.Lock()

    def _next_backoff(self) -> float:
        if self._clock.monotonic() - self._last_backoff_start > self._reset_duration:
            self._backoff.steps = MAX_INT32
            self._backoff.duration = self._initial
        self._last_backoff_start = self._clock.monotonic()
        return self._backoff.step()

    def reset(self) -> None:
        """Start over from the initial backoff (a port addition: the reflector calls it
        when its server answers again)."""
        with self._lock:
            self._backoff.steps = MAX_INT32
            self._backoff.duration = self._initial

    def backoff(self) -> Timer:
        """A timer for the next wait, doubled since the last (reset after a quiet period)
        (Go ``Backoff``)."""
        with self._lock:
            self._timer = _arm(self._clock, self._timer, self._next_backoff())
            return self._timer


class JitteredBackoffManager:
    """A fixed period, optionally jittered (Go ``jitteredBackoffManagerImpl``)."""

    def __init__(self, duration: float, jitter_factor: float, clock: Clock) -> None:
        self._duration = duration
        self._jitter = jitter_factor
        self._clock = clock
        self._timer: Timer | None = None

    def backoff(self) -> Timer:
        """A timer for the next wait, the base duration with jitter (Go ``Backoff``)."""
        delay = jitter(self._duration, self._jitter) if self._jitter > 0 else self._duration
        self._timer = _arm(self._clock, self._timer, delay)
        return self._timer


def new_exponential_backoff_manager(
    init_backoff: float,
    max_backoff: float,
    reset_duration: float,
    backoff_factor: float,
    jitter_factor: float,
    clock: Clock,
) -> BackoffManager:
    """See :class:`ExponentialBackoffManager` (Go ``NewExponentialBackoffManager``)."""
    return ExponentialBackoffManager(
        init_backoff, max_backoff, reset_duration, backoff_factor, jitter_factor, clock
    )


def new_jittered_backoff_manager(
    duration: float, jitter_factor: float, clock: Clock
) -> BackoffManager:
    """See :class:`JitteredBackoffManager` (Go ``NewJitteredBackoffManager``)."""
    return JitteredBackoffManager(duration, jitter_factor, clock)


def backoff_until(
    f: Callable[[], None], manager: BackoffManager, sliding: bool, stop: threading.Event,
    wait: Callable[[], bool] | None = None,
) -> None:
    """Run ``f`` until ``stop`` is set, waiting on ``manager``'s timer between calls
    (Go ``BackoffUntil``). With ``sliding`` the wait starts after ``f`` returns; without,
    it starts before ``f`` runs (so ``f``'s run time is part of the period). ``wait`` (a
    port addition, with ``sliding`` only) replaces the wait after each call: it returns
    False to end the loop (a reflector's, which a server's answer can cut short)."""
    if wait is not None and not sliding:
        raise ValueError("backoff_until: a wait of its own needs sliding=True")
    while True:
        if stop.is_set():
            return
        timer = None if sliding else manager.backoff()
        with handle_crash():
            f()
        if wait is not None:
            if not wait():
                return
            continue
        if timer is None:
            timer = manager.backoff()
        index, _ = select_or_stop(stop, [timer.c()])
        if index == STOPPED:
            if not timer.stop():
                timer.c().try_recv()
            return


def jitter_until(
    f: Callable[[], None],
    period: float,
    jitter_factor: float,
    sliding: bool,
    stop: threading.Event,
) -> None:
    """Run ``f`` every ``period`` (jittered) on the real clock until ``stop`` is set."""
    backoff_until(f, JitteredBackoffManager(period, jitter_factor, REAL_CLOCK), sliding, stop)


def until(f: Callable[[], None], period: float, stop: threading.Event) -> None:
    """Run ``f`` every ``period`` seconds after it returns, until ``stop`` is set."""
    jitter_until(f, period, 0.0, True, stop)


def non_sliding_until(f: Callable[[], None], period: float, stop: threading.Event) -> None:
    """Run ``f`` every ``period`` seconds from its start, until ``stop`` is set."""
    jitter_until(f, period, 0.0, False, stop)


def forever(f: Callable[[], None], period: float) -> None:
    """Run ``f`` every ``period`` seconds for ever (Go ``Forever``)."""
    until(f, period, NEVER_STOP)


def _poll(
    interval: float,
    condition: ConditionFunc,
    stop: threading.Event,
    immediate: bool,
    timeout: float | None,
    clock: WithTicker,
) -> None:
    if immediate and condition():
        return
    ticker = clock.new_ticker(interval)
    deadline = None if timeout is None else clock.new_timer(timeout)
    try:
        chans: list[Chan[Any]] = [ticker.c()]
        if deadline is not None:
            chans.append(deadline.c())
        while True:
            index, _ = select_or_stop(stop, chans)
            if index != 0:
                raise WaitTimeoutError()
            if condition():
                return
    finally:
        ticker.stop()
        if deadline is not None:
            deadline.stop()


def poll_immediate_until(
    interval: float, condition: ConditionFunc, stop: threading.Event, clock: WithTicker = REAL_CLOCK
) -> None:
    """Check ``condition`` now and then every ``interval`` until it is done; raise
    :class:`WaitTimeoutError` if ``stop`` is set first (Go ``PollImmediateUntil``)."""
    _poll(interval, condition, stop, True, None, clock)


def poll_until(
    interval: float, condition: ConditionFunc, stop: threading.Event, clock: WithTicker = REAL_CLOCK
) -> None:
    """Like :func:`poll_immediate_until` but waits one ``interval`` first."""
    _poll(interval, condition, stop, False, None, clock)


def poll(interval: float, timeout: float, condition: ConditionFunc) -> None:
    """Check every ``interval`` (first after one interval) for at most ``timeout``."""
    _poll(interval, condition, NEVER_STOP, False, timeout, REAL_CLOCK)


def poll_immediate(interval: float, timeout: float, condition: ConditionFunc) -> None:
    """Check now and every ``interval`` for at most ``timeout``."""
    _poll(interval, condition, NEVER_STOP, True, timeout, REAL_CLOCK)


def poll_infinite(interval: float, condition: ConditionFunc) -> None:
    """Check every ``interval`` until done, without limit."""
    _poll(interval, condition, NEVER_STOP, False, None, REAL_CLOCK)


def poll_immediate_infinite(interval: float, condition: ConditionFunc) -> None:
    """Check now and every ``interval`` until done, without limit."""
    _poll(interval, condition, NEVER_STOP, True, None, REAL_CLOCK)


def exponential_backoff(
    backoff: Backoff, condition: ConditionFunc, stop: threading.Event = NEVER_STOP
) -> None:
    """Check ``condition`` up to ``backoff.steps`` times, waiting ``backoff.step()`` between
    checks (not after the last); raise :class:`WaitTimeoutError` if it never succeeds
    (Go ``ExponentialBackoff``). ``stop`` (a port addition) cuts the waits short.
    ``backoff`` is copied, as Go passes it by value."""
    backoff = dataclasses.replace(backoff)
    while backoff.steps > 0:
        if condition():
            return
        if backoff.steps == 1:
            break
        if stop.wait(backoff.step()):
            break
    raise WaitTimeoutError()


class Group:
    """Start functions in named daemon threads and wait for all of them (Go
    ``wait.Group``)."""

    def __init__(self, name: str = "client_cache-group") -> None:
        self._name = name
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def start(self, f: Callable[[], None]) -> None:
        """Run ``f`` on a new thread the group waits for (Go ``Start``)."""
        with self._lock:
            thread = threading.Thread(
                target=f, name=f"{self._name}-{len(self._threads)}", daemon=True
            )
            self._threads.append(thread)
        thread.start()

    def start_with_stop(
        self, stop: threading.Event, f: Callable[[threading.Event], None]
    ) -> None:
        """Run ``f(stop)`` on a new thread the group waits for (Go ``StartWithChannel``)."""
        self.start(lambda: f(stop))

    def wait(self, timeout: float | None = None) -> bool:
        """Join every started thread; False if ``timeout`` passed first."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
            if thread.is_alive():
                return False
        return True
