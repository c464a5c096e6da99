"""A small Go-style buffered channel, the building block of timers and ``select``.

Go code waits on channels (``<-timer.C()``); this port hands out :class:`Chan` objects
for the same job. A channel has a fixed capacity (timers use 1). ``recv`` blocks until a
value is there or the timeout passes; ``send`` blocks while the buffer is full, and
``try_send`` drops the value instead (Go's ``select { case ch <- v: default: }``).

A channel may also become ready *by itself* at a deadline (a real-clock timer): subclasses
implement :meth:`Chan._due_locked` and :meth:`Chan._deadline_locked`, so a real timer needs
no thread of its own. :func:`select` waits on several channels and a
``threading.Event`` at once without polling: channels wake their waiters directly, and the
stop event is watched by one shared helper thread that runs only while some wait needs it
(see :func:`select_or_stop`; Go bridges a stop channel into a context the same way).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = [
    "CLOSED",
    "NEVER_STOP",
    "STOPPED",
    "TIMED_OUT",
    "Chan",
    "ChanClosedError",
    "DoneChan",
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

    #: False for channels that only ever fill themselves at a deadline (real timers): a
    #: wait on them plus a stop event needs no helper thread (see :func:`select_or_stop`).
    externally_fed = True

    def __init__(self, capacity: int = 1) -> None:
        if capacity < 1:
            raise ValueError("Chan capacity must be >= 1")
        self._capacity = capacity
        self._buf: deque[T] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._wakers: list[_Waker] = []
        self._is_closed = False

    # -- hooks for self-filling channels (real timers) --------------------------------
    def _due_locked(self, now: float) -> None:
        """Move a value into the buffer if one has come due by ``now`` (monotonic)."""

    def _deadline_locked(self) -> float | None:
        """Monotonic time at which a value comes due by itself, or None."""
        return None

    # -- internals --------------------------------------------------------------------
    def _notify_locked(self) -> None:
        self._cond.notify_all()
        for waker in list(self._wakers):
            waker()

    def _put_locked(self, value: T) -> None:
        self._buf.append(value)
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
                wait = None if deadline is None else deadline - now
                due = self._deadline_locked()
                if due is not None:
                    wait = due - now if wait is None else min(wait, due - now)
                if wait is not None and wait <= 0:
                    if deadline is not None and now >= deadline:
                        return None, False
                    continue
                self._cond.wait(wait)

    def try_recv(self) -> tuple[T | None, bool]:
        """Receive without blocking."""
        return self.recv(0)

    def close(self) -> None:
        """Close the channel (see the class documentation); closing twice is allowed."""
        with self._cond:
            self._is_closed = True
            self._notify_locked()

    def closed(self) -> bool:
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

    def __len__(self) -> int:
        with self._cond:
            self._due_locked(time.monotonic())
            return len(self._buf)

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


class DoneChan(Chan[None]):
    """A signal channel that is only ever closed (Go: a ``chan struct{}`` closed to
    broadcast). Once closed, every receive and ``select`` returns at once."""

    def __init__(self) -> None:
        super().__init__(1)

    def is_closed(self) -> bool:
        return self.closed()


_STOP_POLL = 0.05  # seconds between checks of registered stop events
_STOP_LINGER = 0.1  # the watcher thread ends this long after its last registration


class _StopWatcher:
    r"""One shared thread that turns ``threading.Event``\ s into :class:`DoneChan`\ s.

    ``threading.Event`` cannot wake anything but its own waiters, so a wait on "an event or
    a channel" needs a helper. This one thread checks every registered event every 50 ms
    and closes its channel once set; it runs only while registrations exist and ends a
    tenth of a second after the last one is removed (so that a stream of short waits does
    not start a thread each), well within the library's one-second rule.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._entries: dict[int, tuple[threading.Event, DoneChan, bool]] = {}
        self._next = 0
        self._thread: threading.Thread | None = None

    def register(self, event: threading.Event, until_set: bool = False) -> tuple[int, DoneChan]:
        chan = DoneChan()
        if event.is_set():
            chan.close()
            return -1, chan
        with self._cond:
            self._next += 1
            token = self._next
            self._entries[token] = (event, chan, until_set)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="client_cache-stop-watcher", daemon=True
                )
                self._thread.start()
        return token, chan

    def unregister(self, token: int) -> None:
        with self._cond:
            self._entries.pop(token, None)

    def _run(self) -> None:
        with self._cond:
            idle_since: float | None = None
            while True:
                for token, (event, chan, _) in list(self._entries.items()):
                    if event.is_set():
                        chan.close()
                        del self._entries[token]
                if self._entries:
                    idle_since = None
                else:
                    now = time.monotonic()
                    if idle_since is None:
                        idle_since = now
                    elif now - idle_since >= _STOP_LINGER:
                        self._thread = None
                        return
                self._cond.wait(_STOP_POLL)


_stop_watcher = _StopWatcher()


def stop_chan(event: threading.Event) -> Chan[None]:
    """A channel that is ready for ever once ``event`` is set (Go: a closed stop channel).

    The event is watched by the shared stop-watcher thread until it is set; prefer
    :func:`select_or_stop`, which watches it only for the duration of one wait.
    """
    return _stop_watcher.register(event, until_set=True)[1]


def select(chans: Sequence[Chan[Any]], timeout: float | None = None) -> tuple[int, Any]:
    """Wait until one of ``chans`` has a value and receive it (Go ``select``).

    Returns ``(index, value)``; ``(-1, None)`` when ``timeout`` passed first. When several
    are ready, the lowest index wins (Go picks at random; no caller here relies on either).
    """
    wake = threading.Event()
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            wake.clear()
            own_deadlines = [c._add_waker(wake.set) for c in chans]
            for i, chan in enumerate(chans):
                value, ok = chan.try_recv()
                if ok or value is CLOSED:
                    return i, value
            now = time.monotonic()
            waits = [d - now for d in own_deadlines if d is not None]
            if deadline is not None:
                if now >= deadline:
                    return -1, None
                waits.append(deadline - now)
            wake.wait(max(0.0, min(waits)) if waits else None)
            for chan in chans:
                chan._remove_waker(wake.set)
    finally:
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
    set (checked first) and ``(TIMED_OUT, None)`` when ``timeout`` passes. When every
    channel fills itself at a deadline (real-clock timers and tickers), this is a plain
    ``stop.wait`` until the earliest deadline: no thread, no polling. Otherwise the stop
    event is watched by the shared stop-watcher thread for the duration of this call (stop
    is then noticed within 50 ms).
    """
    if stop.is_set():
        return STOPPED, None
    for i, chan in enumerate(chans):  # fast path: something is ready, no waiting needed
        value, ok = chan.try_recv()
        if ok or value is CLOSED:
            return i, value
    if timeout is not None and timeout <= 0:
        return TIMED_OUT, None
    if stop is NEVER_STOP:
        return select(chans, timeout)
    if any(chan.externally_fed for chan in chans):
        token, done = _stop_watcher.register(stop)
        try:
            index, value = select([done, *chans], timeout)
        finally:
            _stop_watcher.unregister(token)
        if index == 0:
            return STOPPED, None
        return (TIMED_OUT, None) if index < 0 else (index - 1, value)
    end = None if timeout is None else time.monotonic() + timeout
    while True:
        for i, chan in enumerate(chans):
            value, ok = chan.try_recv()
            if ok or value is CLOSED:
                return i, value
        now = time.monotonic()
        if end is not None and now >= end:
            return TIMED_OUT, None
        waits = [d - now for d in (chan.deadline() for chan in chans) if d is not None]
        if end is not None:
            waits.append(end - now)
        if stop.wait(max(0.0, min(waits)) if waits else None):
            return STOPPED, None
