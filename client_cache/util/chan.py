"""A small Go-style buffered channel, the building block of timers and ``select``.

Go code waits on channels (``<-timer.C()``); this port hands out :class:`Chan` objects
for the same job. A channel has a fixed capacity (timers use 1). ``recv`` blocks until a
value is there or the timeout passes; ``send`` blocks while the buffer is full, and
``try_send`` drops the value instead (Go's ``select { case ch <- v: default: }``).

A channel may also become ready *by itself* at a deadline (a real-clock timer): subclasses
implement :meth:`Chan._due_locked` and :meth:`Chan._deadline_locked`, so a real timer needs
no thread of its own. :func:`select_or_stop` waits on several channels and a stop
``threading.Event`` at once without polling and without helper threads: channels wake
their waiters directly, and the stop event through a callback (see
:mod:`client_cache.util.stop`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, TypeVar, cast

from client_cache.util.stop import on_stop

T = TypeVar("T")

__all__ = [
    "CLOSED",
    "NEVER_STOP",
    "STOPPED",
    "TIMED_OUT",
    "Chan",
    "ChanClosedError",
    "DoneChan",
    "SendReady",
    "UnbufferedChan",
    "select",
    "select_or_stop",
    "stop_chan",
]

_Waker = Callable[[], None]


class _Closed:
    """The value a closed, drained channel yields (Go: ``v, ok := <-ch`` with ``!ok``)."""

    _instance: _Closed | None = None

    def __new__(cls) -> _Closed:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "CLOSED"

    def __bool__(self) -> bool:
        return False


CLOSED: Any = _Closed()
"""Received from a closed channel once its buffer is drained."""


class ChanClosedError(RuntimeError):
    """A send on a closed channel (Go panics)."""


class Chan(Generic[T]):
    """A buffered channel of capacity ``capacity`` (>= 1).

    Values are received in the order sent. :meth:`close` works like Go's: buffered values
    are still received, then every receive returns ``(CLOSED, False)`` at once, ``select``
    reports the channel ready with the value :data:`CLOSED`, and a send raises
    :class:`ChanClosedError`. A receive that times out returns ``(None, False)``.
    """

    def __init__(self, capacity: int = 1) -> None:
        if capacity < 1:
            raise ValueError("Chan capacity must be >= 1")
        self._capacity = capacity
        self._buf: deque[T] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._wakers: list[_Waker] = []
        self._is_closed = False
        self._batch_at = 0  # while a wait_batch caller waits: the count that wakes it
        self._receivers = 0  # recv calls waiting for a value

    # -- hooks for self-filling channels (real timers) --------------------------------
    def _due_locked(self, now: float) -> None:
        """Move a value into the buffer if one has come due by ``now`` (monotonic)."""

    def _deadline_locked(self) -> float | None:
        """Monotonic time at which a value comes due by itself, or None."""
        return None

    # -- internals --------------------------------------------------------------------
    def _sleep_for_locked(self, now: float, deadline: float | None) -> float | None:
        """Seconds from ``now`` until ``deadline`` or this channel's own deadline, whichever
        comes first (None: neither)."""
        due = self._deadline_locked()
        if due is None:
            return None if deadline is None else deadline - now
        return due - now if deadline is None else min(deadline, due) - now

    def _notify_locked(self) -> None:
        self._cond.notify_all()
        for waker in list(self._wakers):
            waker()

    def _put_locked(self, value: T) -> None:
        self._buf.append(value)
        self._wake_after_put_locked()

    def _wake_after_put_locked(self) -> None:
        if (self._batch_at and len(self._buf) < self._batch_at and not self._receivers
                and not self._wakers):
            return  # the only waiter is a wait_batch: it wakes at its count or deadline
        self._notify_locked()

    # -- API --------------------------------------------------------------------------
    def send(self, value: T, timeout: float | None = None) -> bool:
        """Send, blocking while the buffer is full; False if ``timeout`` passed first."""
        with self._cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while len(self._buf) >= self._capacity and not self._is_closed:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            if self._is_closed:
                raise ChanClosedError("send on closed channel")
            self._put_locked(value)
            return True

    def try_send(self, value: T) -> bool:
        """Send without blocking; False (value dropped) when the buffer is full."""
        with self._cond:
            if self._is_closed:
                raise ChanClosedError("send on closed channel")
            if len(self._buf) >= self._capacity:
                return False
            self._put_locked(value)
            return True

    def try_send_batch(self, values: Sequence[T]) -> int:
        """Send, without blocking, as many of ``values`` as the buffer has room for, in
        order; returns how many were sent (the rest were not). Raises
        :class:`ChanClosedError` when the channel is closed. A port addition: one lock and
        one wake-up for a burst instead of one per value."""
        with self._cond:
            if self._is_closed:
                raise ChanClosedError("send on closed channel")
            count = min(len(values), self._capacity - len(self._buf))
            if count <= 0:
                return 0
            self._buf.extend(values[:count])
            self._wake_after_put_locked()
            return count

    def recv(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Receive: ``(value, True)``, or ``(None, False)`` when ``timeout`` passed first."""
        with self._cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                now = time.monotonic()
                self._due_locked(now)
                if self._buf:
                    value = self._buf.popleft()
                    if len(self._buf) + 1 >= self._capacity:
                        # There is room again: wake blocked senders, and selectors
                        # waiting to send (they registered as wakers).
                        self._notify_locked()
                    return value, True
                if self._is_closed:
                    return CLOSED, False
                wait = self._sleep_for_locked(now, deadline)
                if wait is not None and wait <= 0:
                    if deadline is not None and now >= deadline:
                        return None, False
                    continue
                self._receivers += 1
                try:
                    self._cond.wait(wait)
                finally:
                    self._receivers -= 1

    def try_recv(self) -> tuple[T | None, bool]:
        """Receive without blocking."""
        return self.recv(0)

    def recv_batch(self, limit: int, last: Callable[[T], bool] | None = None) -> list[T]:
        """Receive, without blocking, the values buffered now, in order: at most ``limit``
        of them, and none after the first for which ``last`` returns true. An empty list
        when nothing is buffered, whether or not the channel is closed (a receive then
        tells which). A port addition, for a consumer that takes a burst under one lock
        instead of one receive (and one ``select``) per value; ``last`` runs under the
        channel's lock, so it must be quick and must not touch the channel."""
        if limit < 1:
            raise ValueError("recv_batch limit must be >= 1")
        with self._cond:
            self._due_locked(time.monotonic())
            buf = self._buf
            was_full = len(buf) >= self._capacity
            count = min(limit, len(buf))
            if last is None:
                out = [buf.popleft() for _ in range(count)]
            else:
                out = []
                while len(out) < count:
                    value = buf.popleft()
                    out.append(value)
                    if last(value):
                        break
            if was_full and out:
                self._notify_locked()  # room again: wake blocked senders (see recv)
            return out

    def wait_batch(self, count: int, timeout: float) -> int:
        """Wait until at least ``count`` values are buffered, the channel is closed, or
        ``timeout`` seconds (monotonic) have passed; returns how many values are buffered.
        Receives nothing. A port addition, for a consumer that would rather take values
        in batches than be woken for each: while it is the only one waiting, a send wakes
        it only once the buffer holds ``count`` (a send still wakes every :meth:`recv` and
        :func:`select` waiting here at once). ``count`` above the capacity is lowered to
        it; a second concurrent ``wait_batch`` is woken by every send, like a receive."""
        if count < 1:
            raise ValueError("wait_batch count must be >= 1")
        count = min(count, self._capacity)
        with self._cond:
            deadline = time.monotonic() + timeout
            owner = not self._batch_at
            if owner:
                self._batch_at = count
            else:
                self._receivers += 1
            try:
                while True:
                    now = time.monotonic()
                    self._due_locked(now)
                    if len(self._buf) >= count or self._is_closed or now >= deadline:
                        break
                    self._cond.wait(max(0.0, self._sleep_for_locked(now, deadline) or 0.0))
            finally:
                if owner:
                    self._batch_at = 0
                else:
                    self._receivers -= 1
            return len(self._buf)

    def __iter__(self) -> Iterator[T]:
        """Each value until the channel is closed and drained (Go ``for v := range ch``;
        a port addition)."""
        while True:
            value, ok = self.recv()
            if not ok:
                return
            yield cast(T, value)

    def close(self) -> None:
        """Close the channel (see the class documentation); closing twice is allowed."""
        with self._cond:
            self._is_closed = True
            self._notify_locked()

    def closed(self) -> bool:
        """True once the channel is closed."""
        with self._cond:
            return self._is_closed

    def deadline(self) -> float | None:
        """Monotonic time at which this channel fills itself, if it does."""
        with self._cond:
            return self._deadline_locked()

    def ready(self) -> bool:
        """Whether a ``recv`` would return at once."""
        with self._cond:
            self._due_locked(time.monotonic())
            return bool(self._buf) or self._is_closed

    def cap(self) -> int:
        """The capacity (Go ``cap(ch)``)."""
        return self._capacity

    def __len__(self) -> int:
        with self._cond:
            self._due_locked(time.monotonic())
            return len(self._buf)

    def on_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` each time this channel may have changed (a value sent or
        received, the channel closed), and once at once if a receive would return now;
        returns the function that unregisters it. A port addition, for a consumer blocked
        elsewhere (a watch loop in a read of its stream) that a send must interrupt;
        ``callback`` runs under the channel's lock, so it must be quick and must not touch
        the channel."""
        self._add_waker(callback)
        if self.ready():
            callback()
        return functools.partial(self._remove_waker, callback)

    def _add_waker(self, waker: _Waker) -> float | None:
        """Register ``waker``; returns this channel's own deadline (or None)."""
        with self._cond:
            self._wakers.append(waker)
            return self._deadline_locked()

    def _remove_waker(self, waker: _Waker) -> None:
        with self._cond, contextlib.suppress(ValueError):
            self._wakers.remove(waker)


class UnbufferedChan(Chan[T]):
    """Go's unbuffered channel: ``send`` returns only once the value was received (or
    raises :class:`ChanClosedError` if the channel is closed first)."""

    def __init__(self) -> None:
        super().__init__(1)
        self._taken = 0
        self._sent = 0

    def send(self, value: T, timeout: float | None = None) -> bool:
        if not super().send(value, timeout):
            return False
        with self._cond:
            self._sent += 1
            ticket = self._sent
            self._cond.wait_for(lambda: self._taken >= ticket or self._is_closed)
        return True

    def recv(self, timeout: float | None = None) -> tuple[T | None, bool]:
        value, ok = super().recv(timeout)
        if ok:
            with self._cond:
                self._taken += 1
                self._cond.notify_all()
        return value, ok

    def recv_batch(self, limit: int, last: Callable[[T], bool] | None = None) -> list[T]:
        values = super().recv_batch(limit, last)
        if values:  # each one received: release its sender, as recv does
            with self._cond:
                self._taken += len(values)
                self._cond.notify_all()
        return values


class SendReady(Chan[None]):
    """Ready while ``target`` has room for a value (or is closed), so that :func:`select`
    can wait for "a send would not block" (Go: a ``case ch <- v:`` in a ``select``). It
    never holds a value of its own; receiving from it only reports readiness."""

    def __init__(self, target: Chan[Any]) -> None:
        super().__init__(1)
        self._target = target

    def _add_waker(self, waker: _Waker) -> float | None:
        return self._target._add_waker(waker)

    def _remove_waker(self, waker: _Waker) -> None:
        self._target._remove_waker(waker)

    def try_recv(self) -> tuple[None, bool]:
        target = self._target
        with target._cond:
            return None, len(target._buf) < target._capacity or target._is_closed

    def recv_batch(self, limit: int, last: Callable[[None], bool] | None = None) -> list[None]:
        raise TypeError("a SendReady only reports readiness; it has no values to receive")


class DoneChan(Chan[None]):
    """A signal channel that is only ever closed (Go: a ``chan struct{}`` closed to
    broadcast). Once closed, every receive and ``select`` returns at once."""

    def __init__(self) -> None:
        super().__init__(1)

    def is_closed(self) -> bool:
        """True once ``close`` was called."""
        return self.closed()


def stop_chan(event: threading.Event) -> Chan[None]:
    """A channel that is ready for ever once ``event`` is set (Go: a closed stop channel);
    closed by an :func:`~client_cache.util.stop.on_stop` callback, no thread involved.
    The registration lives as long as ``event`` is unset; prefer :func:`select_or_stop`,
    which registers only for the duration of one wait."""
    chan = DoneChan()
    on_stop(event, chan.close)
    return chan


def select(chans: Sequence[Chan[Any]], timeout: float | None = None) -> tuple[int, Any]:
    """Wait until one of ``chans`` has a value and receive it (Go ``select``).

    Returns ``(index, value)``; ``(-1, None)`` when ``timeout`` passed first. When several
    are ready, the lowest index wins (Go picks at random; no caller here relies on either).
    """
    return _select(chans, timeout, None)


def _select(
    chans: Sequence[Chan[Any]], timeout: float | None, stop: threading.Event | None
) -> tuple[int, Any]:
    """:func:`select` that also returns ``(STOPPED, None)`` once ``stop`` is set: the
    channels and the stop event wake this thread directly (channel wakers and an
    :func:`~client_cache.util.stop.on_stop` callback)."""
    wake = threading.Event()
    deadline = None if timeout is None else time.monotonic() + timeout
    registration = on_stop(stop, wake.set) if stop is not None else None
    try:
        while True:
            wake.clear()
            own_deadlines = [c._add_waker(wake.set) for c in chans]
            if stop is not None and stop.is_set():
                return STOPPED, None
            for i, chan in enumerate(chans):
                value, ok = chan.try_recv()
                if ok or value is CLOSED:
                    return i, value
            now = time.monotonic()
            waits = [d - now for d in own_deadlines if d is not None]
            if deadline is not None:
                if now >= deadline:
                    return TIMED_OUT, None
                waits.append(deadline - now)
            wake.wait(max(0.0, min(waits)) if waits else None)
            for chan in chans:
                chan._remove_waker(wake.set)
    finally:
        if registration is not None:
            registration.cancel()
        for chan in chans:
            chan._remove_waker(wake.set)


NEVER_STOP = threading.Event()
"""An event nobody sets (Go ``wait.NeverStop``); do not set it."""

TIMED_OUT = -1
STOPPED = -2


def select_or_stop(
    stop: threading.Event, chans: Sequence[Chan[Any]], timeout: float | None = None
) -> tuple[int, Any]:
    """``select`` over ``chans`` that also returns when ``stop`` is set.

    Returns ``(index, value)`` for a received value, ``(STOPPED, None)`` once ``stop`` is
    set (checked first) and ``(TIMED_OUT, None)`` when ``timeout`` passes. Nothing polls:
    ``stop`` wakes the waiting thread through an :func:`~client_cache.util.stop.on_stop`
    callback registered for the duration of this call, the channels through their wakers,
    and self-filling channels (real-clock timers) at their deadlines.
    """
    if stop.is_set():
        return STOPPED, None
    for i, chan in enumerate(chans):  # fast path: something is ready, no waiting needed
        value, ok = chan.try_recv()
        if ok or value is CLOSED:
            return i, value
    if timeout is not None and timeout <= 0:
        return TIMED_OUT, None
    return _select(chans, timeout, None if stop is NEVER_STOP else stop)
