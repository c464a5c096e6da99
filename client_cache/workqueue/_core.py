"""The state of a work queue and the operations on it (the part of Go's ``Typed[T]`` that
runs under its lock): :class:`PyQueueCore`, the specification of the native
``client_cache.workqueue._queue.QueueCore``, and the pluggable storage it keeps its line
in (Go ``Queue[T]``, ``DefaultQueue``).

A core owns everything a queue knows, once: its lock, its line (the storage), the set of
items queued or to queue again (``dirty``), the set handed out and not done
(``processing``), the getters sleeping until an item comes, and whether it is shutting
down (and draining). :class:`~client_cache.workqueue.queue.Typed` keeps none of it; it
blocks, wakes and counts around a core. This is CPython's ``queue.py``/``_queue`` shape:
the Python class is the specification, the C type does the same where it can (the default
storage, no metrics), and ``CLIENT_CACHE_WORKQUEUE_C=0`` or ``CLIENT_CACHE_NATIVE=0``
makes every queue use the Python one.

The invariants, held under :attr:`PyQueueCore.lock`:

* an item is in the line at most once, and every item in the line is in ``dirty``;
* an item in ``processing`` is not in the line; when it is also in ``dirty`` (added while
  processed), ``done`` puts it in line again;
* a sleeping getter is woken by taking it off the getters (the caller unparks it after
  letting the lock go), so each wake-up is delivered once.

Methods whose names end in ``_locked`` expect the caller to hold :attr:`lock`; the others
take it themselves (and must not be called with it held: it is not reentrant).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from typing import Any, Final, Generic, Literal, Protocol, TypeVar, runtime_checkable

from client_cache.util._parking import Parker
from client_cache.util.runtime import handle_error
from client_cache.workqueue.metrics import NoQueueMetrics, QueueMetrics

__all__ = ["DefaultQueue", "PyQueueCore", "Queue", "check_item", "default_queue"]

T = TypeVar("T", bound=Hashable)

Wake = Parker | Literal[True] | None
"""What an operation asks its caller to wake once the lock is let go: a sleeping getter,
True for a draining shutdown (the queue's condition), or nothing."""


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


_NOTHING: Any = object()


def check_item(item: object) -> None:
    """Refuse an item a work queue cannot keep: one whose hash fails, or whose equality
    with itself fails (TypeError naming its type and the error; the sets that hold items
    call both). A port addition: Go's comparable types cannot fail there."""
    if type(item) in (str, int):
        return  # the usual keys: their hash and equality cannot fail
    try:
        hash(item)
        item == item  # noqa: B015, PLR0124 - its __eq__ must not raise
    except Exception as err:
        raise _unusable(item, err) from err


def _unusable(item: object, err: BaseException) -> TypeError:
    return TypeError(f"a work queue item must be hashable and comparable: "
                     f"{type(item).__name__}: {type(err).__name__}: {err}")


class PyQueueCore(Generic[T]):
    """A work queue's state and its operations (see the module documentation); the
    Python twin, and specification, of the native ``QueueCore``. ``queue`` is the storage
    (a :class:`DefaultQueue` by default) and ``metrics`` what is told of each add, take and
    done (the native core has neither: a queue with another storage or with metrics uses
    this one)."""

    NOTHING: Final[Any] = _NOTHING
    """What :meth:`take` returns when no item is in line."""

    def __init__(self, queue: Queue[T] | None = None,
                 metrics: QueueMetrics[T] | NoQueueMetrics[T] | None = None) -> None:
        self.lock = threading.Lock()
        self._queue: Queue[T] = DefaultQueue() if queue is None else queue
        self._metrics = None if isinstance(metrics, NoQueueMetrics) else metrics
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._getters: deque[Parker] = deque()
        self._shutting_down = False
        self._drain = False

    # -- one call each, under the lock -----------------------------------------------------
    def add(self, item: T) -> Wake:
        """Queue ``item`` unless it is queued already or the queue is shutting down; the
        getter to wake. An item that cannot be hashed or compared with itself is refused
        with TypeError (:func:`check_item`), and nothing is kept."""
        check_item(item)
        with self.lock:
            if self._shutting_down:
                return None
            if item in self._dirty:
                if item not in self._processing:
                    self._queue.touch(item)
                return None
            if self._metrics is not None:
                self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                return None  # done() puts it in line again
            self._queue.push(item)
            return self._getters.popleft() if self._getters else None

    def take(self) -> Any:
        """The item at the front of the line, now being processed, or :attr:`NOTHING`."""
        with self.lock:
            return self.take_locked()

    def done(self, item: T) -> Wake:
        """Mark ``item`` processed and put it in line again if it was added meanwhile; the
        getter to wake, or True when a draining shutdown may end. An item not being
        processed is ignored."""
        with self.lock:
            try:  # every use of the item's hash and equality, before anything changes
                handed_out = item in self._processing
                again = handed_out and item in self._dirty
                if not handed_out:
                    return None  # never handed out (or already done): nothing to do
                self._processing.discard(item)
            except Exception as err:
                # its hash or equality fails now (at any call): taken out by identity,
                # so that a draining shutdown still ends; not queued again
                self._processing = {x for x in self._processing if x is not item}
                self._dirty = {x for x in self._dirty if x is not item}
                raise _unusable(item, err) from err
            if self._metrics is not None:
                try:
                    self._metrics.done(item)
                except Exception as err:  # the queue stays consistent whatever metrics do
                    handle_error(f"work queue metrics failed on done(): "
                                 f"{type(err).__name__}: {err}")
            if again:
                self._queue.push(item)
                return self._getters.popleft() if self._getters else None
            return True if self._drain and not self._processing else None

    # -- under the caller's lock -----------------------------------------------------------
    def take_locked(self) -> Any:
        """:meth:`take`, with the lock held. An item whose hash or equality fails now
        (it passed :func:`check_item` when added) goes back in line and TypeError is
        raised: nothing is lost."""
        if self._queue.len() == 0:
            return _NOTHING
        item = self._queue.pop()
        try:
            self._processing.add(item)
            self._dirty.discard(item)
        except Exception as err:
            self._processing = {x for x in self._processing if x is not item}
            self._queue.push(item)
            raise _unusable(item, err) from err
        if self._metrics is not None:
            self._metrics.get(item)
        return item

    def queued_locked(self) -> int:
        """How many items are in line."""
        return self._queue.len()

    def processing_locked(self) -> int:
        """How many items are handed out and not done."""
        return len(self._processing)

    def dirty_locked(self) -> int:
        """How many items are queued or to queue again once done."""
        return len(self._dirty)

    def sleepers_locked(self) -> int:
        """How many getters sleep until an item comes."""
        return len(self._getters)

    def shutting_down_locked(self) -> bool:
        """Whether the queue is shutting down."""
        return self._shutting_down

    def draining_locked(self) -> bool:
        """Whether a shutdown waits for the items handed out to be done."""
        return self._drain

    def shut_down_locked(self, drain: bool) -> list[Parker]:
        """Shut the queue down (``drain``: a shutdown that waits for what is handed out;
        a later one without it cancels the wait); every sleeping getter, to wake."""
        self._shutting_down = True
        self._drain = drain
        getters = list(self._getters)
        self._getters.clear()
        return getters

    def park_locked(self, getter: Parker) -> None:
        """``getter`` sleeps until an item comes (:meth:`add` or :meth:`done` hands it
        back to be woken) or the queue shuts down."""
        self._getters.append(getter)

    def unpark_locked(self, getter: Parker) -> bool:
        """Take back a getter that stopped waiting (its time ran out); False when it was
        handed out to be woken meanwhile."""
        try:
            self._getters.remove(getter)
        except ValueError:
            return False
        return True
