"""A work queue that hands out the highest priority first (controller-runtime's
``priorityqueue``, as a storage of this package's work queue).

:func:`new_priority_queue` makes a :class:`PriorityQueue`: the work queue of
:mod:`client_cache.workqueue.queue` (its guarantees: each item queued once, never handed
to two workers at once, an item added while processed queued again at ``done``) whose
line is a :class:`PriorityOrder` instead of a FIFO:

* items wait in order of priority, highest first, and within one priority in the order
  they came into line (a plain FIFO when every priority is the same);
* :meth:`PriorityQueue.add_with_priority` queues an item at a priority;
  :meth:`PriorityQueue.add` at :data:`DEFAULT_PRIORITY`. An item asked for again at a
  higher priority moves up (keeping the higher one: controller-runtime keeps the
  maximum); at a lower one it keeps its place;
* an item asked for while it is being processed is queued at ``done`` with the highest
  priority asked meanwhile.

It puts no timers of its own: a :class:`~client_cache.workqueue.delaying_queue.DelayingType`
built over it (``DelayingQueueConfig(queue=...)``) adds items later, at the priority
:meth:`PriorityQueue.prioritize` gave them beforehand. controller-runtime's queue does
the timers, the rate limiter and the priorities in one type (``AddWithOpts(AddOpts{After,
RateLimited, Priority})``); here the runtime's scheduler
(:class:`~client_cache.runtime.scheduler.Scheduler`) composes the three.

Metrics: with a provider that also makes a depth gauge by priority (the optional method
of :class:`PriorityMetricsProvider`, as controller-runtime's
``MetricsProviderWithPriority``), the queue's depth is counted at the priority each item
waits at (moved when it is raised); the other metrics are the plain work queue's. Other
providers get the plain depth gauge.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar, runtime_checkable

from client_cache.util.clock import REAL_CLOCK, PassiveClock
from client_cache.workqueue.metrics import (
    NOOP_METRIC,
    MetricsProvider,
    NoQueueMetrics,
    QueueMetrics,
    get_provider,
    new_queue_metrics,
)
from client_cache.workqueue.queue import UNFINISHED_WORK_UPDATE_PERIOD, QueueConfig, Typed

__all__ = [
    "DEFAULT_PRIORITY",
    "LOW_PRIORITY",
    "PriorityGauge",
    "PriorityMetricsProvider",
    "PriorityOrder",
    "PriorityQueue",
    "new_priority_queue",
]

T = TypeVar("T", bound=Hashable)

DEFAULT_PRIORITY = 0
"""The priority of a plain ``add`` (controller-runtime's zero ``AddOpts.Priority``)."""

LOW_PRIORITY = -100
"""The priority the runtime gives what it did not see change: objects of an initial list,
unchanged resyncs and bulk reconciles (controller-runtime's ``handler.LowPriority``)."""


class PriorityOrder(Generic[T]):
    """The line of a :class:`PriorityQueue` (a :class:`~client_cache.workqueue.queue.Queue`
    storage, Go ``Queue[T]``): highest priority first, first come first within one.

    Called with the queue's lock held, as every storage. :meth:`want_locked` records the
    priority an item is to have when it next comes into line (or raises it in line); a
    record lives until that push, so what is kept is bounded by the items queued, waiting
    on a timer or being processed; the entries a raise leaves behind are dropped when the
    line empties or outnumber the line's."""

    __slots__ = ("_heap", "_line", "_seq", "_wanted")

    def __init__(self) -> None:
        # heap entries (-priority, seq, item); an entry counts only while _line holds its
        # (-priority, seq) for the item: a raised item leaves its old entry behind, skipped
        self._heap: list[tuple[int, int, T]] = []
        self._line: dict[T, tuple[int, int]] = {}
        self._wanted: dict[T, int] = {}
        self._seq = itertools.count()

    def want_locked(self, item: T, priority: int) -> int | None:
        """Ask for ``item`` at ``priority`` at least: raises it when it is in line (then
        returns the priority it had), else records it for its next push (the highest
        asked wins) and returns None."""
        place = self._line.get(item)
        if place is None:
            wanted = self._wanted.get(item)
            if wanted is None or priority > wanted:
                self._wanted[item] = priority
            return None
        old = -place[0]
        if priority <= old:
            return None
        self._put(item, priority)
        return old

    def priority_of_locked(self, item: T) -> int:
        """The priority ``item`` waits at in line, else the one recorded for its next push,
        else :data:`DEFAULT_PRIORITY`."""
        place = self._line.get(item)
        if place is not None:
            return -place[0]
        return self._wanted.get(item, DEFAULT_PRIORITY)

    def _put(self, item: T, priority: int) -> None:
        place = (-priority, next(self._seq))
        line = self._line
        line[item] = place
        heapq.heappush(self._heap, (place[0], place[1], item))
        if len(self._heap) > 2 * len(line) + 64:  # mostly raised items' old entries
            self._heap = [(p, seq, it) for it, (p, seq) in line.items()]
            heapq.heapify(self._heap)

    # -- the storage protocol ----------------------------------------------------------------
    def touch(self, item: T) -> None:
        """A queued ``item`` was added again: a priority recorded for it meanwhile raises
        it (Go ``Touch``)."""
        wanted = self._wanted.pop(item, None)
        if wanted is not None:
            self.want_locked(item, wanted)

    def push(self, item: T) -> None:
        """Put ``item`` in line at the priority recorded for it (else the default)."""
        self._put(item, self._wanted.pop(item, DEFAULT_PRIORITY))

    def len(self) -> int:
        """How many items are in line (Go ``Len``)."""
        return len(self._line)

    def pop(self) -> T:
        """Take the item of highest priority that came first (Go ``Pop``)."""
        heap, line = self._heap, self._line
        while True:
            negative, seq, item = heapq.heappop(heap)
            if line.get(item) == (negative, seq):
                del line[item]
                if not line:
                    heap.clear()  # what is left are raised items' old entries
                return item


@runtime_checkable
class PriorityGauge(Protocol):
    """A gauge per priority (controller-runtime ``DepthMetricWithPriority``)."""

    def inc(self, priority: int) -> None:
        """Add one to the gauge of ``priority``."""
        ...

    def dec(self, priority: int) -> None:
        """Subtract one from the gauge of ``priority``."""
        ...


@runtime_checkable
class PriorityMetricsProvider(MetricsProvider, Protocol):
    """A :class:`~client_cache.workqueue.metrics.MetricsProvider` that also makes a
    priority queue's depth gauge by priority (controller-runtime
    ``MetricsProviderWithPriority``); a priority queue uses it instead of the plain depth
    gauge."""

    def new_depth_metric_with_priority(self, name: str) -> PriorityGauge:
        """``workqueue_depth`` of queue ``name``, by priority."""
        ...


class _PriorityQueueMetrics(QueueMetrics[T]):
    """A priority queue's metrics: the depth gauge counts each queued item at the
    priority it waits at (called with the queue's lock held, as
    :class:`~client_cache.workqueue.metrics.QueueMetrics`)."""

    def __init__(self, provider: PriorityMetricsProvider, name: str, clock: PassiveClock,
                 priority_of: Callable[[T], int]) -> None:
        self._priority_of = priority_of
        self._queued: dict[T, int] = {}  # the priority each queued item is counted at
        super().__init__(provider, name, clock)

    def _make_depth(self, provider: MetricsProvider, name: str) -> None:
        assert isinstance(provider, PriorityMetricsProvider)
        self.depth = NOOP_METRIC  # the plain gauge: counted by priority instead
        self.depth_by_priority = provider.new_depth_metric_with_priority(name)

    def add(self, item: T) -> None:
        """Count an add of ``item`` at its priority (then as every queue does)."""
        priority = self._priority_of(item)
        self._queued[item] = priority
        self.depth_by_priority.inc(priority)
        super().add(item)

    def raised(self, item: T, priority: int) -> None:
        """A queued ``item`` now waits at ``priority``: its count moves there."""
        old = self._queued.get(item)
        if old is not None and old != priority:
            self.depth_by_priority.dec(old)
            self.depth_by_priority.inc(priority)
            self._queued[item] = priority

    def get(self, item: T) -> None:
        """Uncount ``item`` from the priority it waited at (then as every queue does)."""
        self.depth_by_priority.dec(self._queued.pop(item, DEFAULT_PRIORITY))
        super().get(item)


class PriorityQueue(Typed[T]):
    """A work queue handing out the highest priority first (see the module
    documentation; controller-runtime ``priorityqueue.PriorityQueue`` without its timers
    and rate limiter). Build it with :func:`new_priority_queue`."""

    def __init__(self, config: QueueConfig[T]) -> None:
        clock = config.clock or REAL_CLOCK
        order: PriorityOrder[T] = PriorityOrder()
        provider = config.metrics_provider or get_provider()
        metrics: QueueMetrics[T] | NoQueueMetrics[T]
        if config.name and isinstance(provider, PriorityMetricsProvider):
            metrics = _PriorityQueueMetrics(provider, config.name, clock,
                                            order.priority_of_locked)
        else:
            metrics = new_queue_metrics(provider, config.name, clock)
        self._order = order
        super().__init__(clock, order, metrics, UNFINISHED_WORK_UPDATE_PERIOD, config.name)

    def prioritize(self, item: T, priority: int) -> None:
        """Ask for ``item`` at ``priority`` at least, without queueing it: raises it when
        it waits in line, else it comes into line at that priority (by a later
        :meth:`add`, a delaying queue's timer, or ``done`` when it was added while
        processed)."""
        with self._lock:
            old = self._order.want_locked(item, priority)
            if old is not None and isinstance(self._metrics, _PriorityQueueMetrics):
                self._metrics.raised(item, priority)

    def add_with_priority(self, item: T, priority: int) -> None:
        """Queue ``item`` at ``priority`` (or raise it to that priority when it waits
        already); controller-runtime ``AddWithOpts(AddOpts{Priority: priority})``."""
        self.prioritize(item, priority)
        self.add(item)

    def priority_of(self, item: T) -> int:
        """The priority ``item`` waits at (or will come into line at)."""
        with self._lock:
            return self._order.priority_of_locked(item)


def new_priority_queue(config: QueueConfig[T] | None = None) -> PriorityQueue[T]:
    """A :class:`PriorityQueue` named, measured and clocked by ``config`` (its ``queue``,
    the storage, must be unset: the storage is the priority order); controller-runtime
    ``priorityqueue.New``."""
    config = config if config is not None else QueueConfig()
    if config.queue is not None:
        raise ValueError("a priority queue keeps its own storage: leave config.queue unset")
    return PriorityQueue(config)
