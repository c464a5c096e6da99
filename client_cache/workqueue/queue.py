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

A queue's state (its line, its dirty and processing sets, its sleeping getters, whether it
is shutting down) lives in one core, :mod:`client_cache.workqueue._core`. Where the
optional C extension ``client_cache.workqueue._queue`` is built, a queue with the default
storage and no metrics has the native ``QueueCore``, whose ``add``, ``get`` (when an item
is waiting) and ``done`` are one C call each that takes the core's lock, does the work and
lets the lock go without letting go of the GIL (for items whose hash and equality are C
code: str, int, tuples of them). In Python, a thread could lose the GIL inside the locked
section, and a producer and a worker then took turns on the lock through the kernel for
every item (a lock convoy; half the throughput). Every other queue has the Python twin,
:class:`~client_cache.workqueue._core.PyQueueCore`, which is the native core's
specification; ``CLIENT_CACHE_WORKQUEUE_C=0`` (or ``CLIENT_CACHE_NATIVE=0``) makes every
queue use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, Protocol, TypeVar, runtime_checkable

from client_cache.util import _native as native
from client_cache.util._parking import Parker
from client_cache.util.chan import DoneChan, select
from client_cache.util.clock import REAL_CLOCK, WithTicker
from client_cache.workqueue._core import DefaultQueue, PyQueueCore, Queue, default_queue
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
    :func:`new_with_config`.

    Its state lives in one core (:mod:`client_cache.workqueue._core`): the native
    ``QueueCore`` for the default storage without metrics, else the Python
    :class:`~client_cache.workqueue._core.PyQueueCore`. This class blocks, wakes and
    counts around it: getters park on the core until an item comes, coroutines wait on
    futures, a draining shutdown on a condition of the core's lock."""

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
        self._metrics = metrics
        counted = not isinstance(metrics, NoQueueMetrics)
        # exactly DefaultQueue (a subclass may touch or order); the native core or its twin
        self._core: _queue.QueueCore | PyQueueCore[T]
        if (C_CORE_AVAILABLE and isinstance(queue, DefaultQueue) and type(queue) is DefaultQueue
                and not counted
                and os.environ.get(C_CORE_ENV, "1") != "0"):
            self._core = _queue.QueueCore()
        else:
            self._core = PyQueueCore(queue, metrics)
        self._nothing = self._core.NOTHING
        # A thread waiting in get() parks on a Parker of its own, until add() or done()
        # hands it back to be unparked: one deque check per add while nobody waits, and
        # one wake per sleeper. The condition (the core's lock) is for
        # shut_down_with_drain only.
        self._lock = self._core.lock
        self._cond = threading.Condition(self._lock)
        self._update_period = update_period
        self._stopped = DoneChan()
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._metrics_thread: threading.Thread | None = None
        if counted:
            self._metrics_thread = threading.Thread(
                target=self._update_unfinished_work_loop,
                name=f"workqueue-metrics-{name or 'unnamed'}",
                daemon=True,
            )
            self._metrics_thread.start()

    def add(self, item: T) -> None:
        """Queue ``item`` unless it is queued already or the queue is shutting down. An
        item that cannot be hashed or compared with itself is refused with TypeError
        (:func:`~client_cache.workqueue._core.check_item`)."""
        self._woken(self._core.add(item))

    @property
    def c_core(self) -> bool:
        """True when this queue's state and operations are the native core's (see the
        module documentation): the default storage, no metrics, the extension built and
        not turned off by ``CLIENT_CACHE_WORKQUEUE_C=0`` when the queue was made."""
        return not isinstance(self._core, PyQueueCore)

    def len(self) -> int:
        """How many items wait to be handed out (items being processed not included)."""
        with self._lock:
            return self._core.queued_locked()

    def __len__(self) -> int:
        return self.len()

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Block until an item can be handed out: ``(item, False)``; once shut down and
        empty: ``(None, True)``. ``timeout`` (a port addition) raises ``TimeoutError``."""
        core = self._core
        item = core.take()
        if item is not self._nothing:
            return item, False
        deadline = None if timeout is None else time.monotonic() + timeout
        self._lock.acquire()
        try:
            while core.queued_locked() == 0 and not core.shutting_down_locked():
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
        self._core.park_locked(waiter)
        self._lock.release()
        woken = False
        try:
            woken = waiter.park(timeout)
        finally:  # also when interrupted: a stale entry would swallow someone's wake-up
            self._lock.acquire()
            if not woken:
                self._core.unpark_locked(waiter)  # False: woken as the time ran out

    async def get_async(self) -> tuple[T | None, bool]:
        """:meth:`get` for a coroutine: wait, without holding a thread or blocking the
        event loop, until an item can be handed out; ``(None, True)`` once shut down and
        empty. Cancelling the awaiting task takes nothing from the queue. Wrap it in
        ``asyncio.wait_for`` for a timeout. (A port addition.)"""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                if self._core.queued_locked() or self._core.shutting_down_locked():
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
        item = self._core.take_locked()
        if item is self._nothing:
            return None, True
        return item, False

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
        """After a core call: wake the getter it handed back, or (True) the draining
        shutdown, and any waiting coroutine (each looks at the queue again)."""
        if sleeper is True:
            with self._lock:
                self._cond.notify_all()
        elif sleeper is not None:
            sleeper.unpark()
        if self._async_waiters:
            with self._lock:
                self._wake_async_locked()

    def done(self, item: T) -> None:
        """Mark ``item`` processed; if it was added meanwhile, queue it again. An item
        whose hash or equality fails now is taken out by identity and TypeError raised
        (:class:`~client_cache.workqueue._core.PyQueueCore`); a draining shutdown is
        woken all the same."""
        try:
            woken = self._core.done(item)
        except TypeError:
            with self._lock:
                self._cond.notify_all()
            raise
        self._woken(woken)

    def shut_down(self) -> None:
        """Stop accepting items; workers get what is queued, then ``shutdown=True``.
        Releases a waiting :meth:`shut_down_with_drain`."""
        with self._lock:
            getters = self._core.shut_down_locked(False)
            self._cond.notify_all()
            self._wake_async_locked()
        for getter in getters:
            getter.unpark()
        self._stop_metrics()

    def shut_down_with_drain(self) -> None:
        """Like :meth:`shut_down`, then wait until every handed-out item is done (or until
        a :meth:`shut_down` call cancels the drain)."""
        with self._lock:
            getters = self._core.shut_down_locked(True)
            self._wake_async_locked()
            for getter in getters:
                getter.unpark()
            while self._core.processing_locked() and self._core.draining_locked():
                self._cond.wait()
        self._stop_metrics()

    def shutting_down(self) -> bool:
        """True once the queue is shutting down (Go ``ShuttingDown``)."""
        with self._lock:
            return self._core.shutting_down_locked()

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
                    if self._core.shutting_down_locked():
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


def new_typed(*, item_type: type[T] | None = None) -> Typed[T]:
    """An unnamed work queue without metrics (Go ``NewTyped``); ``item_type`` (``str``
    for keys) only tells a type checker the item type, as Go's type argument does, and
    is not checked at run time."""
    return new_typed_with_config(QueueConfig())


def new(*, item_type: type[T] | None = None) -> Typed[T]:
    """An unnamed work queue without metrics (Go ``New``); ``item_type`` (``str`` for
    keys) only tells a type checker the item type, as Go's type argument does, and is
    not checked at run time."""
    return new_typed_with_config(QueueConfig())


def new_named(name: str, *, item_type: type[T] | None = None) -> Typed[T]:
    """A named work queue (deprecated in Go: use :func:`new_with_config`); ``item_type``
    as in :func:`new_typed`."""
    return new_typed_with_config(QueueConfig(name=name))
