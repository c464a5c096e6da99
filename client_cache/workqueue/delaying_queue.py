"""A work queue that can add items later (Go ``util/workqueue/delaying_queue.go``).

:meth:`DelayingType.add_after` hands the item and its ready time to a background thread
(``workqueue-delaying-<name>``) that keeps one heap entry per item and adds each item to
the underlying queue when its time comes. Adding an item that is already waiting only ever
moves it *earlier*; a later ready time is ignored. A non-positive delay adds at once. The
thread also wakes every 10 s (the heartbeat) and on the injected clock's timers, so a fake
clock drives it completely in tests. Shutting the queue down ends the thread.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from client_cache.util.chan import Chan, DoneChan, select
from client_cache.util.clock import REAL_CLOCK, Timer, WithTicker
from client_cache.util.runtime import handle_crash
from client_cache.workqueue.metrics import MetricsProvider, new_retry_metric
from client_cache.workqueue.pythonic import QueueIteration
from client_cache.workqueue.queue import Interface, QueueConfig, new_typed_with_config

__all__ = [
    "HEARTBEAT",
    "WAITING_FOR_ADD_CAPACITY",
    "DelayingInterface",
    "DelayingQueueConfig",
    "DelayingType",
    "new_delaying_queue",
    "new_delaying_queue_with_config",
    "new_delaying_queue_with_custom_clock",
    "new_delaying_queue_with_custom_queue",
    "new_named_delaying_queue",
    "new_typed_delaying_queue",
    "new_typed_delaying_queue_with_config",
]

T = TypeVar("T", bound=Hashable)

HEARTBEAT = 10.0
"""Longest the waiting thread sleeps without checking (upstream ``maxWait``)."""

WAITING_FOR_ADD_CAPACITY = 1000
"""Buffer of the hand-off channel from ``add_after`` to the waiting thread."""


@runtime_checkable
class DelayingInterface(Interface[T], Protocol[T]):
    """A work queue with ``add_after`` (Go ``TypedDelayingInterface``)."""

    def add_after(self, item: T, duration: float) -> None:
        """Add ``item`` once ``duration`` seconds have passed (Go ``AddAfter``)."""
        ...


@dataclass
class DelayingQueueConfig(Generic[T]):
    """Options of :func:`new_delaying_queue_with_config` (Go ``TypedDelayingQueueConfig``).
    Without ``queue`` a work queue with the same name, provider and clock is built."""

    name: str = ""
    metrics_provider: MetricsProvider | None = None
    clock: WithTicker | None = None
    queue: Interface[T] | None = None


@dataclass
class _WaitFor(Generic[T]):
    data: T
    ready_at: float


class DelayingType(QueueIteration[T]):
    """The delaying queue (Go ``delayingType``): every :class:`~.queue.Typed` method plus
    :meth:`add_after`."""

    def __init__(
        self,
        clock: WithTicker,
        queue: Interface[T],
        name: str = "",
        metrics_provider: MetricsProvider | None = None,
        start_waiting_loop: bool = True,
    ) -> None:
        self.queue = queue
        self.name = name
        self._clock = clock
        self._stopped = DoneChan()
        self._stop_once = threading.Lock()
        self._heartbeat = clock.new_ticker(HEARTBEAT)
        self.waiting_for_add: Chan[_WaitFor[T]] = Chan(WAITING_FOR_ADD_CAPACITY)
        self._retries = new_retry_metric(metrics_provider, name)
        # Test hook: how many times the loop has gone to sleep, and whether it sleeps now.
        self._passes = 0
        self._idle = False
        self._pass_cond = threading.Condition()
        self._thread: threading.Thread | None = None
        if start_waiting_loop:
            self._thread = threading.Thread(
                target=self._waiting_loop,
                name=f"workqueue-delaying-{name or 'unnamed'}",
                daemon=True,
            )
            self._thread.start()

    # -- the work queue interface, delegated ------------------------------------------------
    def add(self, item: T) -> None:
        """Queue ``item`` unless it is queued already or the queue is shutting down (Go
        ``Add``)."""
        self.queue.add(item)

    def len(self) -> int:
        """How many items wait to be handed out (Go ``Len``)."""
        return self.queue.len()

    def __len__(self) -> int:
        return self.queue.len()

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Wait for an item: ``(item, False)``, or ``(None, True)`` once shut down and empty
        (Go ``Get``)."""
        return self.queue.get(timeout)

    async def get_async(self) -> tuple[T | None, bool]:
        """:meth:`get` for a coroutine (see :meth:`Typed.get_async`)."""
        return await self.queue.get_async()

    def done(self, item: T) -> None:
        """Mark ``item`` processed; queue it again if it was added meanwhile (Go ``Done``)."""
        self.queue.done(item)

    def shutting_down(self) -> bool:
        """True once the queue is shutting down (Go ``ShuttingDown``)."""
        return self.queue.shutting_down()

    def shut_down(self) -> None:
        """Shut the queue down and stop the waiting thread (waiting items are dropped)."""
        self._stop()
        self.queue.shut_down()

    def shut_down_with_drain(self) -> None:
        """Stop the waiting thread, then drain the underlying queue."""
        self._stop()
        self.queue.shut_down_with_drain()

    def _stop(self) -> None:
        self._stopped.close()
        self._heartbeat.stop()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)

    # -- delays -----------------------------------------------------------------------------
    def add_after(self, item: T, duration: float) -> None:
        """Add ``item`` after ``duration`` seconds; at once when ``duration <= 0``. Ignored
        while shutting down. Counts one retry in the metrics."""
        if self.shutting_down():
            return
        self._retries.inc()
        if duration <= 0:
            self.add(item)
            return
        entry = _WaitFor(item, self._clock.monotonic() + duration)
        # Blocks only while 1000 entries wait to be taken; re-checks stop meanwhile.
        while not self._stopped.is_closed():
            if self.waiting_for_add.send(entry, timeout=0.05):
                return

    def wait_for_idle_loop(self, min_passes: int = 0, timeout: float = 10.0) -> int:
        """Test hook: wait until the waiting thread has gone to sleep more than
        ``min_passes`` times in all, with nothing left to take, and is asleep now; return
        its pass count. Lets fake-clock tests synchronise without polling."""
        with self._pass_cond:
            ok = self._pass_cond.wait_for(
                lambda: self._passes > min_passes
                and self._idle
                and not self.waiting_for_add.ready(),
                timeout,
            )
            if not ok:
                raise TimeoutError("the delaying queue's loop did not become idle")
            return self._passes

    def _waiting_loop(self) -> None:
        with handle_crash():
            self._run_waiting_loop()

    def _run_waiting_loop(self) -> None:
        heap: list[tuple[float, int, Any]] = []  # (ready_at, seq, item); stale entries skipped
        ready_at_of: dict[T, float] = {}
        counter = itertools.count()
        timer: Timer | None = None

        def insert(entry: _WaitFor[T]) -> None:
            if entry.ready_at <= self._clock.monotonic():
                self.queue.add(entry.data)
                return
            current = ready_at_of.get(entry.data)
            if current is not None and current <= entry.ready_at:
                return  # only ever move an item earlier
            ready_at_of[entry.data] = entry.ready_at
            heapq.heappush(heap, (entry.ready_at, next(counter), entry.data))

        never: Chan[float] = Chan(1)
        try:
            while True:
                if self.queue.shutting_down():
                    return
                now = self._clock.monotonic()
                while heap:
                    ready_at, _, data = heap[0]
                    if ready_at_of.get(data) != ready_at:
                        heapq.heappop(heap)  # superseded by an earlier entry
                        continue
                    if ready_at > now:
                        break
                    heapq.heappop(heap)
                    del ready_at_of[data]
                    self.queue.add(data)
                next_ready: Chan[float] = never
                if heap:
                    if timer is not None:
                        timer.stop()
                    timer = self._clock.new_timer(heap[0][0] - now)
                    next_ready = timer.c()
                with self._pass_cond:
                    self._passes += 1
                    self._idle = True
                    self._pass_cond.notify_all()
                index, value = select(
                    [self._stopped, self._heartbeat.c(), next_ready, self.waiting_for_add]
                )
                with self._pass_cond:
                    self._idle = False
                if index == 0:
                    return
                if index == 3:
                    insert(value)
                    while True:
                        more, ok = self.waiting_for_add.try_recv()
                        if not ok:
                            break
                        assert more is not None
                        insert(more)
        finally:
            if timer is not None:
                timer.stop()


def new_typed_delaying_queue_with_config(config: DelayingQueueConfig[T]) -> DelayingType[T]:
    """A delaying queue from ``config`` (Go ``NewTypedDelayingQueueWithConfig``)."""
    clock = config.clock or REAL_CLOCK
    queue: Interface[T]
    if config.queue is not None:
        queue = config.queue
    else:
        queue = new_typed_with_config(
            QueueConfig(name=config.name, metrics_provider=config.metrics_provider, clock=clock)
        )
    return DelayingType(clock, queue, config.name, config.metrics_provider)


def new_delaying_queue_with_config(config: DelayingQueueConfig[T]) -> DelayingType[T]:
    """A delaying queue set up by ``config`` (Go ``NewDelayingQueueWithConfig``)."""
    return new_typed_delaying_queue_with_config(config)


def new_delaying_queue(*, item_type: type[T] | None = None) -> DelayingType[T]:
    """An unnamed delaying queue on the real clock (Go ``NewDelayingQueue``);
    ``item_type`` (``str`` for keys) only tells a type checker the item type, as Go's
    type argument does, and is not checked at run time."""
    return new_typed_delaying_queue_with_config(DelayingQueueConfig())


def new_typed_delaying_queue(*, item_type: type[T] | None = None) -> DelayingType[T]:
    """An unnamed delaying queue without metrics (Go ``NewTypedDelayingQueue``);
    ``item_type`` (``str`` for keys) only tells a type checker the item type, as Go's
    type argument does, and is not checked at run time."""
    return new_typed_delaying_queue_with_config(DelayingQueueConfig())


def new_named_delaying_queue(name: str, *, item_type: type[T] | None = None,
                             ) -> DelayingType[T]:
    """Deprecated in Go; use :func:`new_delaying_queue_with_config`. ``item_type`` as in
    :func:`new_typed_delaying_queue`."""
    return new_typed_delaying_queue_with_config(DelayingQueueConfig(name=name))


def new_delaying_queue_with_custom_clock(clock: WithTicker, name: str) -> DelayingType[T]:
    """Deprecated in Go; use :func:`new_delaying_queue_with_config`."""
    return new_typed_delaying_queue_with_config(DelayingQueueConfig(name=name, clock=clock))


def new_delaying_queue_with_custom_queue(queue: Interface[T], name: str) -> DelayingType[T]:
    """Deprecated in Go; use :func:`new_delaying_queue_with_config`."""
    return new_typed_delaying_queue_with_config(DelayingQueueConfig(name=name, queue=queue))
