"""The ``Queue`` interface and the simple ``FIFO`` (Go ``tools/cache/fifo.go``).

A *queue* is a store that also hands its items, in order, to a consumer: ``pop(process)``
waits for an item, removes it, and runs ``process(item, is_in_initial_list)`` **while
holding the queue's lock**, so that whatever the process function updates (normally the
informer's indexer) changes atomically with the queue. ``close()`` wakes every blocked
``pop``, which then raises :class:`~client_cache.errors.FIFOClosedError`.

The lock is re-entrant: a process function that calls back into the same queue works here
(in Go it deadlocks). Every blocking ``pop`` takes an optional ``timeout`` and raises
``TimeoutError`` when it passes; waiting uses a condition variable, so an idle consumer
costs no CPU.

:class:`FIFO` keeps only the latest object per key: adding an object whose key is already
queued replaces the object and keeps its place in line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from client_cache.errors import FIFOClosedError, RequeueError
from client_cache.store import KeyFunc, Store, checked_key
from client_cache.util._sync_signal import notify_sync_changed

__all__ = [
    "FIFO",
    "PopProcessFunc",
    "Queue",
    "ReflectorStore",
    "new_fifo",
    "pop",
]

_log = logging.getLogger(__name__)

PopProcessFunc = Callable[[Any, bool], None]
"""``process(item, is_in_initial_list)``; may raise :class:`RequeueError` (Go
``PopProcessFunc``)."""

_Objects = list[Any]
_Keys = list[str]

_SLOW_PROCESS = 0.1  # seconds; a slower process call with a deep queue is logged
_TRACE_DEPTH = 10


@runtime_checkable
class ReflectorStore(Protocol):
    """What a Reflector writes to (Go ``ReflectorStore``, v0.33+)."""

    def add(self, obj: Any) -> None:
        """Insert ``obj`` under its key, replacing what was there (Go ``Add``)."""
        ...

    def update(self, obj: Any) -> None:
        """Store ``obj`` under its key, replacing what was there (Go ``Update``)."""
        ...

    def delete(self, obj: Any) -> None:
        """Remove the object stored under ``obj``'s key; nothing when absent (Go
        ``Delete``)."""
        ...

    def replace(self, items: Iterable[Any], resource_version: str) -> None:
        """Make the contents exactly ``items`` (the result of a list at
        ``resource_version``) (Go ``Replace``)."""
        ...

    def resync(self) -> None:
        """Deliver every stored object again, for a periodic resync (Go ``Resync``)."""
        ...


@runtime_checkable
class Queue(Store, Protocol):
    """A store with a blocking ``pop`` (Go ``Queue``, v0.32 shape).

    ``has_synced`` is true once the first ``replace`` batch has been popped entirely, or
    when an add/update/delete came before any replace. ``add_if_not_present`` queues an
    item only when its key is not queued already (used to requeue).
    """

    def pop(self, process: PopProcessFunc, timeout: float | None = None) -> Any:
        """Wait for the first object (at most ``timeout`` seconds), remove it and call
        ``process`` with it; its result is returned (Go ``Pop``)."""
        ...

    def add_if_not_present(self, obj: Any) -> None:
        """Queue ``obj`` unless something is queued under its key already (Go
        ``AddIfNotPresent``)."""
        ...

    def has_synced(self) -> bool:
        """True once the first ``replace`` and everything it queued have been popped (Go
        ``HasSynced``)."""
        ...

    def close(self) -> None:
        """Close the queue: a waiting ``pop`` returns (Go ``Close``)."""
        ...


class QueueBase:
    """Lock, condition, closed flag and initial-population accounting shared by the FIFOs.

    Synced = populated and the initial population count is zero. The count is set once,
    by the first ``replace`` when nothing was written before it, and goes down by one for
    each ``pop`` (by the batch size for ``pop_batch``); ``has_synced`` reports it once the
    pop that completed it has processed its item.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._closed = False
        self._synced_reported = False
        self.__populated = False
        self.__initial_population_count = 0
        self._synced_callbacks: list[Callable[[], None]] = []
        self._popping = False  # a pop is between counting its item and processing it
        self._synced_callbacks_due = False
        self._synced = False  # what has_synced answers; see there
        self._trace_fields = ""  # ", Name=..., Resource=..." in the slow-process line

    # The two fields behind has_synced are properties so that every change that may make
    # the queue synced signals wait_for_cache_sync (once), wherever it happens.
    @property
    def _populated(self) -> bool:
        return self.__populated

    @_populated.setter
    def _populated(self, value: bool) -> None:
        self.__populated = value
        self._report_synced_locked()

    def _mark_populated_locked(self) -> None:
        """Set ``_populated``, as every write does: through the setter until the queue has
        reported synced, then not at all (it is set for good by then, and the setter's
        sync check cost two calls on every add)."""
        if not self._synced_reported:
            self._populated = True

    @property
    def _initial_population_count(self) -> int:
        return self.__initial_population_count

    @_initial_population_count.setter
    def _initial_population_count(self, value: int) -> None:
        self.__initial_population_count = value
        self._report_synced_locked()

    def _push_locked(self, line: deque[Any], entry: Any) -> None:
        """Append ``entry`` to ``line`` (the queue's line of keys or deltas), waking the
        poppers only when it was empty: they wait only then, so any other add needs no
        wake."""
        line.append(entry)
        if len(line) == 1:
            self._cond.notify_all()

    def _report_synced_locked(self) -> None:
        """Note the first time this queue turns synced; :meth:`has_synced` answers it (and
        ``wait_for_cache_sync`` is woken) once the item that completed it is processed."""
        if not self._synced_reported and self.__populated and (
            self.__initial_population_count == 0
        ):
            self._synced_reported = True
            if self._popping:
                self._synced_callbacks_due = True  # run once the item is processed
            else:
                self._run_synced_callbacks_locked()

    def _run_synced_callbacks_locked(self) -> None:
        callbacks, self._synced_callbacks = self._synced_callbacks, []
        self._synced_callbacks_due = False
        for callback in callbacks:
            try:
                callback()
            except Exception:
                _log.exception("a synced callback of %s failed", type(self).__name__)
        self._synced = True
        # after has_synced turned true: a waiter woken earlier would find it false and
        # sleep a poll period (the signal is process-wide, util.sync_signal)
        notify_sync_changed()

    def on_synced(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once, as soon as the queue has synced *and* the item that
        completed the initial population has been processed (at once when that has already
        happened). A port addition: an informer uses it to mark its indexer ready
        (:meth:`~client_cache.thread_safe_store.ThreadSafeMap.mark_ready`)."""
        with self._lock:
            if self._synced_reported and not self._synced_callbacks_due:
                run_now = True
            else:
                self._synced_callbacks.append(callback)
                run_now = False
        if run_now:
            callback()

    def _empty_locked(self) -> bool:
        raise NotImplementedError

    def close(self) -> None:
        """Close the queue: every blocked and future ``pop`` on an empty queue raises
        :class:`~client_cache.errors.FIFOClosedError`. Writes are still accepted."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        """True once ``close`` was called (Go ``IsClosed``)."""
        with self._lock:
            return self._closed

    def has_synced(self) -> bool:
        """True once the first replace batch has been popped (or a write came first).

        It reads one flag without taking the queue's lock, which the popping thread holds
        while it processes an item, so an event loop or a sync wait asking never waits for
        a handler. The flag turns on (once; the state never turns back) after the item
        that completed the initial population has been processed and the ``on_synced``
        callbacks have run: the moment a caller taking the lock would first have seen
        True."""
        return self._synced

    def _has_synced_locked(self) -> bool:
        return self._populated and self._initial_population_count == 0

    def _wait_for_item_locked(self, timeout: float | None, count: bool = True) -> bool:
        """Block until the queue is non-empty; returns ``is_in_initial_list`` for the
        item about to be popped and, when ``count``, counts one item off the initial
        population."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._empty_locked():
            if self._closed:
                raise FIFOClosedError()
            if deadline is None:
                self._cond.wait()
            else:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("pop timed out waiting for an item")
                self._cond.wait(remaining)
        if self._synced_reported:  # synced for good: the population count stays 0
            return False
        in_initial_list = not self._has_synced_locked()
        if count and self._initial_population_count > 0:
            self._count_popped_locked(1)
        return in_initial_list

    def _count_popped_locked(self, n: int) -> None:
        """Count ``n`` popped items off the initial population; synced callbacks that this
        makes due wait for :meth:`_after_process_locked`."""
        self._popping = True
        try:
            self._initial_population_count -= n
        finally:
            self._popping = False

    def _after_process_locked(self) -> None:
        if self._synced_callbacks_due:
            self._run_synced_callbacks_locked()


    def _process_locked(
        self,
        process: PopProcessFunc,
        item: Any,
        in_initial_list: bool,
        *,
        key: str,
        depth: int,
        requeue: Callable[[str, Any], None] | None,
    ) -> None:
        """Run ``process`` under the lock; on :class:`RequeueError` call
        ``requeue(key, item)`` (then raise its inner error, if any); log a slow call when
        the queue is deep."""
        start = time.monotonic() if depth > _TRACE_DEPTH else None
        try:
            process(item, in_initial_list)
        except RequeueError as err:
            if requeue is None:  # this queue does not requeue (RealFIFO, as v0.33+)
                raise
            requeue(key, item)
            if err.err is not None:
                raise err.err from err
        finally:
            self._after_process_locked()
            if start is not None:
                elapsed = time.monotonic() - start
                if elapsed > _SLOW_PROCESS:
                    _log.info(
                        "%s pop process took %.3fs (ID=%s, Depth=%d%s): slow event "
                        "handlers blocking the queue",
                        type(self).__name__,
                        elapsed,
                        key,
                        depth,
                        self._trace_fields,
                    )


class FIFO(QueueBase):
    """A producer/consumer queue that keeps the newest object per key (Go ``FIFO``).

    * ``add``/``update`` of a queued key replaces the object and keeps its position (no
      line jumping); of a new key appends it;
    * ``delete`` removes the object but leaves the key in line; ``pop`` skips such keys
      (they still count toward the initial population);
    * ``replace`` drops everything and queues the new list (no deletion events);
    * ``resync`` re-queues stored keys missing from the line (normally none).
    """

    def __init__(self, key_func: KeyFunc) -> None:
        super().__init__()
        self._key_func = key_func
        self._items: dict[str, Any] = {}
        self._queue: deque[str] = deque()

    def _empty_locked(self) -> bool:
        return not self._queue

    def _key(self, obj: Any) -> str:
        return checked_key(self._key_func, obj)

    def add(self, obj: Any) -> None:
        """Queue ``obj`` (replacing a queued object with the same key in place)."""
        key = self._key(obj)
        with self._lock:
            self._mark_populated_locked()
            if key not in self._items:  # (a stored key is always in line)
                self._push_locked(self._queue, key)
            self._items[key] = obj

    update = add

    def add_if_not_present(self, obj: Any) -> None:
        """Queue ``obj`` only if its key is not stored already."""
        key = self._key(obj)
        with self._lock:
            self._add_if_not_present_locked(key, obj)

    def _add_if_not_present_locked(self, key: str, obj: Any) -> None:
        self._mark_populated_locked()
        if key in self._items:
            return
        self._push_locked(self._queue, key)
        self._items[key] = obj

    def delete(self, obj: Any) -> None:
        """Forget the object; its key stays in line and is skipped by ``pop``."""
        key = self._key(obj)
        with self._lock:
            self._mark_populated_locked()
            self._items.pop(key, None)

    def list(self) -> _Objects:
        """Every queued object (Go ``List``)."""
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> _Keys:
        """The keys of every queued object (Go ``ListKeys``)."""
        with self._lock:
            return list(self._items)

    def get(self, obj: Any) -> tuple[Any, bool]:
        """``(queued object, True)`` for ``obj``'s key, ``(None, False)`` when absent (Go
        ``Get``)."""
        return self.get_by_key(self._key(obj))

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """``(queued object, True)`` for ``key``, ``(None, False)`` when absent (Go
        ``GetByKey``)."""
        with self._lock:
            if key in self._items:
                return self._items[key], True
            return None, False

    def pop(self, process: PopProcessFunc, timeout: float | None = None) -> Any:
        """Wait for an item, remove it and run ``process(item, is_in_initial_list)`` under
        the lock; returns the item. A :class:`RequeueError` from ``process`` puts the item
        back (and its ``err``, if any, is raised); any other exception propagates and the
        item stays removed."""
        with self._lock:
            while True:
                in_initial_list = self._wait_for_item_locked(timeout)
                key = self._queue.popleft()
                if key not in self._items:  # deleted after it was queued
                    self._after_process_locked()  # it may have been the last initial one
                    continue
                item = self._items.pop(key)
                self._process_locked(
                    process,
                    item,
                    in_initial_list,
                    key=key,
                    depth=len(self._queue),
                    requeue=self._add_if_not_present_locked,
                )
                return item

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Drop the content and queue ``items`` (later duplicates of a key win). All keys are
        computed first: a key error raises and leaves the queue unchanged."""
        new: dict[str, Any] = {}
        for item in items:
            new[self._key(item)] = item
        with self._lock:
            if not self._populated:
                self._initial_population_count = len(new)  # (count first: see _populated)
                self._mark_populated_locked()
            self._items = new
            self._queue = deque(new)
            if self._queue:
                self._cond.notify_all()

    def resync(self) -> None:
        """Queue every stored key that is not in line."""
        with self._lock:
            in_line = set(self._queue)
            for key in self._items:
                if key not in in_line:
                    self._queue.append(key)
            if self._queue:
                self._cond.notify_all()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def new_fifo(key_func: KeyFunc) -> FIFO:
    """A new :class:`FIFO` (Go ``NewFIFO``)."""
    return FIFO(key_func)


def pop(queue: Queue) -> Any:
    """Pop one item with a process function that does nothing; ``None`` if the queue is
    closed (Go's deprecated ``Pop`` helper, kept for tests)."""
    try:
        return queue.pop(lambda obj, is_in_initial_list: None)
    except FIFOClosedError:
        return None
