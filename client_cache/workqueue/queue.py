"""The work queue (Go ``util/workqueue/queue.go``).

A work queue hands items (any hashable value, typically ``"namespace/name"`` keys) to worker
threads with these guarantees:

* **fair**: items are handed out in the order they were added;
* **stingy**: an item is never handed to two workers at once, and adding an item several
  times before a worker takes it queues it once;
* an item added while a worker is processing it is queued again when the worker calls
  :meth:`Typed.done` (not before);
* multiple producers and consumers;
* shutdown: after :meth:`Typed.shut_down` adds are ignored, workers keep getting what was
  queued, then ``get`` reports ``shutdown=True``. :meth:`Typed.shut_down_with_drain`
  also waits until every item handed out has been marked done.

Coroutines take items with ``await queue.get_async()`` (or ``async for item in queue``),
beside threads using ``get``: a waiting coroutine holds no thread and never blocks its
event loop (a port addition).

Workers must call ``done(item)`` for every item they ``get``. A ``done`` for an item that
is not being processed is ignored (upstream would put a queued copy of it in line twice).

Where the optional C extension ``client_cache.workqueue._queue`` is built, a queue with the
default storage and no metrics runs ``add``, ``get`` (when an item is waiting) and
``done`` as one C call each, which takes the queue's lock, does the work and lets the lock
go without letting go of the GIL (for items whose hash and equality are C code: str, int,
tuples of them). In Python, a thread could lose the GIL inside the locked section, and a
producer and a worker then took turns on the lock through the kernel for every item (a
lock convoy; half the throughput). The Python code below does the same thing and runs for
every other queue; ``CLIENT_CACHE_WORKQUEUE_C=0`` makes every queue use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar, runtime_checkable

from client_cache.util import native
from client_cache.util.chan import DoneChan, select
from client_cache.util.clock import REAL_CLOCK, WithTicker
from client_cache.util.parking import Parker
from client_cache.workqueue.metrics import (
    MetricsProvider,
    NoQueueMetrics,
    QueueMetrics,
    new_queue_metrics,
)
from client_cache.workqueue.pythonic import QueueIteration

if TYPE_CHECKING:  # typed by _queue.pyi; None at run time where it is not loaded
    from client_cache.workqueue import _queue
else:
    _queue = native.load("workqueue._queue")

__all__ = [
    "C_CORE_AVAILABLE",
    "C_CORE_ENV",
    "UNFINISHED_WORK_UPDATE_PERIOD",
    "DefaultQueue",
    "Interface",
    "Queue",
    "QueueConfig",
    "Type",
    "Typed",
    "default_queue",
    "new",
    "new_named",
    "new_typed",
    "new_typed_with_config",
    "new_with_config",
]

T = TypeVar("T", bound=Hashable)

UNFINISHED_WORK_UPDATE_PERIOD = 0.5
"""Seconds between refreshes of the unfinished-work metrics (upstream's 500 ms)."""

C_CORE_AVAILABLE: bool = native.load("workqueue._queue") is not None
"""True where the C extension was built (the package installs without it)."""

C_CORE_ENV = "CLIENT_CACHE_WORKQUEUE_C"
"""Set to ``0`` to run every work queue made afterwards on the Python code (see the
module documentation)."""

_NOTHING = object()  # what the C core's take() returns when the line is empty


@runtime_checkable
class Interface(Protocol[T]):
    """What workers use (Go ``TypedInterface``)."""

    def add(self, item: T) -> None:
        """Queue ``item`` unless it is queued already or the queue is shutting down (Go
        ``Add``)."""
        ...

    def len(self) -> int:
        """How many items wait to be handed out (Go ``Len``)."""
        ...

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Wait for an item: ``(item, False)``, or ``(None, True)`` once shut down and empty
        (Go ``Get``)."""
        ...

    async def get_async(self) -> tuple[T | None, bool]:
        """``get`` for a coroutine, without blocking the event loop (a port addition)."""
        ...

    def done(self, item: T) -> None:
        """Mark ``item`` processed; queue it again if it was added meanwhile (Go ``Done``)."""
        ...

    def shut_down(self) -> None:
        """Stop accepting items; workers get what is queued, then ``shutdown`` (Go
        ``ShutDown``)."""
        ...

    def shut_down_with_drain(self) -> None:
        """Like ``shut_down``, then wait until every handed-out item is done (Go
        ``ShutDownWithDrain``)."""
        ...

    def shutting_down(self) -> bool:
        """True once the queue is shutting down (Go ``ShuttingDown``)."""
        ...


@runtime_checkable
class Queue(Protocol[T]):
    """The storage behind a work queue, pluggable for priority orders (Go ``Queue[T]``).
    ``touch`` is called when an already queued item is added again."""

    def touch(self, item: T) -> None:
        """Note that a queued ``item`` was added again (a plain FIFO does nothing) (Go
        ``Touch``)."""
        ...

    def push(self, item: T) -> None:
        """Put ``item`` at the back (Go ``Push``)."""
        ...

    def len(self) -> int:
        """How many items are in line (Go ``Len``)."""
        ...

    def pop(self) -> T:
        """Take the item at the front (Go ``Pop``)."""
        ...


class DefaultQueue(Generic[T]):
    """First in, first out (Go ``DefaultQueue``); holds no reference to popped items."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: deque[T] = deque()

    def touch(self, item: T) -> None:
        """Note that a queued ``item`` was added again (a plain FIFO does nothing) (Go
        ``Touch``)."""
        pass

    def push(self, item: T) -> None:
        """Put ``item`` at the back (Go ``Push``)."""
        self._items.append(item)

    def len(self) -> int:
        """How many items are in line (Go ``Len``)."""
        return len(self._items)

    def pop(self) -> T:
        """Take the item at the front (Go ``Pop``)."""
        return self._items.popleft()


def default_queue() -> Queue[T]:
    """A new FIFO storage (Go ``DefaultQueue``)."""
    return DefaultQueue()


@dataclass
class QueueConfig(Generic[T]):
    """Options of :func:`new_with_config` (Go ``TypedQueueConfig``). A queue without a
    ``name`` reports no metrics. ``metrics_provider`` defaults to the global one, ``clock``
    to the real clock and ``queue`` to :class:`DefaultQueue`."""

    name: str = ""
    metrics_provider: MetricsProvider | None = None
    clock: WithTicker | None = None
    queue: Queue[T] | None = None


class Typed(QueueIteration[T]):
    """The work queue (Go ``Typed[T]``). Build it with :func:`new` or
    :func:`new_with_config`."""

    def __init__(
        self,
        clock: WithTicker,
        queue: Queue[T],
        metrics: QueueMetrics[T] | NoQueueMetrics[T],
        update_period: float = UNFINISHED_WORK_UPDATE_PERIOD,
        name: str = "",
    ) -> None:
        self.name = name
        self._clock = clock
        self._queue = queue
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        # ``with self._lock`` is the C lock's own context manager. A thread waiting in
        # get() parks on a Parker of its own, until add() or done() takes it off
        # _getters and unparks it: one deque check per add while nobody waits, and one
        # wake per sleeper (a Condition paid an ownership check and a notify on every add
        # until the woken worker had run: a fifth of a busy producer's time). The
        # condition (same lock) is only for shut_down_with_drain.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._getters: deque[Parker] = deque()
        self._shutting_down = False
        self._drain = False
        self._metrics = metrics
        self._counted = not isinstance(metrics, NoQueueMetrics)  # skip no-op calls
        self._update_period = update_period
        self._stopped = DoneChan()
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._metrics_thread: threading.Thread | None = None
        self._core: _queue.Core | None = None  # the C core (module documentation)
        # exactly DefaultQueue (a subclass may touch or order); isinstance narrows for mypy
        if (C_CORE_AVAILABLE and isinstance(queue, DefaultQueue)
                and type(queue) is DefaultQueue
                and not self._counted and os.environ.get(C_CORE_ENV, "1") != "0"):
            self._core = _queue.Core(self._lock, self._dirty, self._processing,
                                         queue._items, self._getters, _NOTHING)
        if not isinstance(metrics, NoQueueMetrics):
            self._metrics_thread = threading.Thread(
                target=self._update_unfinished_work_loop,
                name=f"workqueue-metrics-{name or 'unnamed'}",
                daemon=True,
            )
            self._metrics_thread.start()

    def add(self, item: T) -> None:
        """Queue ``item`` unless it is queued already or the queue is shutting down."""
        core = self._core
        if core is not None:
            self._woken(core.add(item))
            return
        with self._lock:
            if self._shutting_down:
                return
            if item in self._dirty:
                if item not in self._processing:
                    self._queue.touch(item)
                return
            if self._counted:
                self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                return  # done() will queue it again
            self._queue.push(item)
            if self._getters:
                self._getters.popleft().unpark()
            if self._async_waiters:
                self._wake_async_locked()

    @property
    def c_core(self) -> bool:
        """True when this queue's ``add``, ``get`` and ``done`` run in the C core (see the
        module documentation): the default storage, no metrics, the extension built and
        not turned off by ``CLIENT_CACHE_WORKQUEUE_C=0`` when the queue was made."""
        return self._core is not None

    def len(self) -> int:
        """How many items wait to be handed out (items being processed not included)."""
        with self._lock:
            return self._queue.len()

    def __len__(self) -> int:
        return self.len()

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Block until an item can be handed out: ``(item, False)``; once shut down and
        empty: ``(None, True)``. ``timeout`` (a port addition) raises ``TimeoutError``."""
        core = self._core
        if core is not None:
            item = core.take()
            if item is not _NOTHING:
                return item, False
        deadline = None if timeout is None else time.monotonic() + timeout
        self._lock.acquire()
        try:
            while self._queue.len() == 0 and not self._shutting_down:
                remaining = -1.0
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise TimeoutError("workqueue get timed out")
                self._sleep_locked(remaining)
            return self._take_locked()
        finally:
            self._lock.release()

    def _sleep_locked(self, timeout: float) -> None:
        """Sleep until add(), done() or a shutdown wakes this thread, or ``timeout``
        seconds (-1: no limit) pass; the queue's lock is let go meanwhile."""
        waiter = Parker()
        self._getters.append(waiter)
        self._lock.release()
        woken = False
        try:
            woken = waiter.park(timeout)
        finally:  # also when interrupted: a stale entry would swallow someone's wake-up
            self._lock.acquire()
            if not woken:
                with contextlib.suppress(ValueError):  # woken as the time ran out: fine
                    self._getters.remove(waiter)

    async def get_async(self) -> tuple[T | None, bool]:
        """:meth:`get` for a coroutine: wait, without holding a thread or blocking the
        event loop, until an item can be handed out; ``(None, True)`` once shut down and
        empty. Cancelling the awaiting task takes nothing from the queue. Wrap it in
        ``asyncio.wait_for`` for a timeout. (A port addition.)"""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                if self._queue.len() or self._shutting_down:
                    return self._take_locked()
                waiter: asyncio.Future[None] = loop.create_future()
                self._async_waiters.append((loop, waiter))
            try:
                await waiter
            finally:
                with self._lock:
                    if (loop, waiter) in self._async_waiters:
                        self._async_waiters.remove((loop, waiter))

    def _take_locked(self) -> tuple[T | None, bool]:
        if self._queue.len() == 0:
            return None, True
        item = self._queue.pop()
        if self._counted:
            self._metrics.get(item)
        self._processing.add(item)
        self._dirty.discard(item)
        return item, False

    def _wake_getters_locked(self) -> None:
        while self._getters:
            self._getters.popleft().unpark()

    def _wake_async_locked(self) -> None:
        """Wake every waiting :meth:`get_async` (each checks the queue again; few
        coroutines wait on one queue, so waking all is cheaper than bookkeeping)."""
        if not self._async_waiters:  # the common case, on every add and done
            return
        waiters, self._async_waiters = self._async_waiters, []
        for loop, waiter in waiters:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                loop.call_soon_threadsafe(_set_done, waiter)

    def _woken(self, sleeper: Parker | Literal[True] | None) -> None:
        """After a C core call: wake the getter it took off ``_getters``, or (True) the
        draining shutdown, and any waiting coroutine (each looks at the queue again)."""
        if sleeper is True:
            with self._lock:
                self._cond.notify_all()
        elif sleeper is not None:
            sleeper.unpark()
        if self._async_waiters:
            with self._lock:
                self._wake_async_locked()

    def done(self, item: T) -> None:
        """Mark ``item`` processed; if it was added meanwhile, queue it again."""
        core = self._core
        if core is not None:
            self._woken(core.done(item))
            return
        with self._lock:
            if item not in self._processing:
                return  # never handed out (or already done): nothing to do
            if self._counted:
                self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.push(item)
                if self._getters:
                    self._getters.popleft().unpark()
                if self._async_waiters:
                    self._wake_async_locked()
            elif self._drain and not self._processing:
                self._cond.notify_all()  # wakes shut_down_with_drain

    def shut_down(self) -> None:
        """Stop accepting items; workers get what is queued, then ``shutdown=True``.
        Releases a waiting :meth:`shut_down_with_drain`."""
        with self._lock:
            self._set_shutting_down_locked(drain=False)
            self._cond.notify_all()
            self._wake_getters_locked()
            self._wake_async_locked()
        self._stop_metrics()

    def shut_down_with_drain(self) -> None:
        """Like :meth:`shut_down`, then wait until every handed-out item is done (or until
        a :meth:`shut_down` call cancels the drain)."""
        with self._lock:
            self._set_shutting_down_locked(drain=True)
            self._wake_getters_locked()
            self._wake_async_locked()
            while self._processing and self._drain:
                self._cond.wait()
        self._stop_metrics()

    def _set_shutting_down_locked(self, drain: bool) -> None:
        self._drain = drain
        self._shutting_down = True
        if self._core is not None:
            self._core.drain = drain
            self._core.shutting_down = True

    def shutting_down(self) -> bool:
        """True once the queue is shutting down (Go ``ShuttingDown``)."""
        with self._lock:
            return self._shutting_down

    def _stop_metrics(self) -> None:
        self._stopped.close()
        thread = self._metrics_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)

    def _update_unfinished_work_loop(self) -> None:
        ticker = self._clock.new_ticker(self._update_period)
        try:
            while True:
                index, _ = select([self._stopped, ticker.c()])
                if index == 0:
                    return
                with self._lock:
                    if self._shutting_down:
                        return
                    self._metrics.update_unfinished_work()
        finally:
            ticker.stop()


def _set_done(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


Type = Typed
"""Go's ``Type`` (``Typed[any]``): the same generic class."""


def new_typed_with_config(config: QueueConfig[T]) -> Typed[T]:
    """A work queue from ``config`` (Go ``NewTypedWithConfig``)."""
    clock = config.clock or REAL_CLOCK
    return Typed(
        clock,
        config.queue if config.queue is not None else DefaultQueue(),
        new_queue_metrics(config.metrics_provider, config.name, clock),
        UNFINISHED_WORK_UPDATE_PERIOD,
        config.name,
    )


def new_with_config(config: QueueConfig[T]) -> Typed[T]:
    """Same as :func:`new_typed_with_config` (Go ``NewWithConfig``)."""
    return new_typed_with_config(config)


def new_typed() -> Typed[T]:
    """An unnamed work queue without metrics (Go ``NewTyped``)."""
    return new_typed_with_config(QueueConfig())


def new() -> Typed[T]:
    """An unnamed work queue without metrics (Go ``New``)."""
    return new_typed_with_config(QueueConfig())


def new_named(name: str) -> Typed[T]:
    """A named work queue (deprecated in Go: use :func:`new_with_config`)."""
    return new_typed_with_config(QueueConfig(name=name))
