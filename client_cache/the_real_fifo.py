"""RealFIFO: a queue that delivers every change, in order (Go ``tools/cache/the_real_fifo.go``,
client-go v0.33+, API as of v0.35).

Unlike :class:`~client_cache.delta_fifo.DeltaFIFO`, a RealFIFO does not group deltas by key:
every ``add``/``update``/``delete`` is its own item, delivered in arrival order, and ``pop``
hands the consumer a one-element :class:`~client_cache.delta_fifo.Deltas`. Consequences:

* ``delete`` of an unknown key is queued anyway (no suppression);
* ``replace(list)`` first queues a tombstone ``Deleted`` for every key that has queued items
  and is absent from the list (unless its last queued item is already a deletion) and for
  every known key absent from the list and from the queue, and only then a ``Replaced`` for
  each listed object (never ``Sync``); duplicate keys in the list give two items;
* the first ``replace`` counts the *whole queue* (items queued before it included) as the
  initial population;
* ``resync`` queues ``Sync`` for known keys that have nothing queued;
* known objects are required.

With ``atomic_events`` (Go's ``AtomicEvents``, set by an informer when the
``AtomicFIFO`` gate is on, the client-go v0.36 default) the queue keeps no link to the
consumer's store (``known_objects`` must be None): ``replace(list)`` queues the whole list
as one ``ReplacedAll`` item (a :class:`~client_cache.delta_fifo.ReplacedAllInfo`) and
``resync`` one ``SyncAll`` item; the consumer (``process_deltas``) swaps its store to the
new content in one step and then notifies per object, so readers of the store never see a
half-applied relist. Two options need it: ``unlock_while_processing`` (writers are not
held up while ``pop`` processes an item, as long as fewer than two batches are queued; one
consumer thread only) and ``emit_delta_type_bookmark`` (:meth:`RealFIFO.bookmark` queues a
``Bookmark`` item, which the consumer hands to its store's ``bookmark``). ``ReplacedAll``,
``SyncAll`` and ``Bookmark`` items are popped alone (never part of a larger batch).

:meth:`RealFIFO.pop_batch` pops up to ``batch_size`` (default 1000) items with distinct keys
at once: the batch stops before a key already in it, never mixes initial-list items with
later ones, and closes right after an item whose key cannot be computed.

Port choices: ``replace`` computes every key and transform before queueing anything, so a
failure leaves the queue unchanged; ``RequeueError`` is not supported (it propagates), as in
client-go v0.33+ where it was removed.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from client_cache.delta_fifo import (
    BookmarkInfo,
    Delta,
    Deltas,
    DeltaType,
    ReplacedAllInfo,
    SyncAllInfo,
    TransformFunc,
    queue_key_of,
)
from client_cache.errors import KeyFuncError
from client_cache.fifo import PopProcessFunc, QueueBase
from client_cache.identity import InformerNameAndResource
from client_cache.informer_metrics import InformerMetricsProvider, QueueMetrics
from client_cache.store import (
    DeletedFinalStateUnknown,
    KeyFunc,
    KeyListerGetter,
    meta_namespace_key_func,
)
from client_cache.util.runtime import handle_error

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "ProcessBatchFunc",
    "RealFIFO",
    "RealFIFOOptions",
    "new_real_fifo",
    "new_real_fifo_with_options",
]

_log = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 1000
"""Upper bound of a :meth:`RealFIFO.pop_batch` batch (Go ``defaultBatchSize``)."""

ProcessBatchFunc = Callable[[list[Delta], bool], None]
"""``process(deltas, is_in_initial_list)`` for :meth:`RealFIFO.pop_batch`."""


_BATCHABLE = frozenset({DeltaType.SYNC, DeltaType.REPLACED, DeltaType.ADDED,
                        DeltaType.UPDATED, DeltaType.DELETED})
"""The delta types a batch may hold (Go ``batchable``); the others are popped alone."""

_SYNC_ALL = SyncAllInfo()


@dataclass
class RealFIFOOptions:
    """Options of :func:`new_real_fifo_with_options` (Go ``RealFIFOOptions``).

    ``known_objects`` is required unless ``atomic_events``, and must then be None (Go
    panics; ``ValueError`` here). ``batch_size`` bounds ``pop_batch`` (Go keeps it
    unexported at 1000). ``atomic_events``, ``unlock_while_processing`` and
    ``emit_delta_type_bookmark``: see the module documentation (the last two need
    ``atomic_events``). ``atomic_replace`` is this package's 0.6 spelling of
    ``atomic_events`` (deprecated; a ``known_objects`` given with it is not used).

    ``identifier`` (:class:`~client_cache.identity.InformerNameAndResource`) names the
    queue in its slow-processing log line and, when reserved, publishes its metrics
    through ``metrics_provider`` or the process's provider
    (:mod:`client_cache.informer_metrics`): the items queued, and the seconds each
    popped item took to process. ``name`` names it when the identifier has no name
    (``"RealFIFO"`` by default), as Go.
    """

    key_function: KeyFunc | None = None
    known_objects: KeyListerGetter | None = None
    transformer: TransformFunc | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    atomic_events: bool = False
    unlock_while_processing: bool = False
    emit_delta_type_bookmark: bool = False
    atomic_replace: bool = False
    name: str = ""
    identifier: InformerNameAndResource | None = None
    metrics_provider: InformerMetricsProvider | None = None


def _checked(opts: RealFIFOOptions) -> RealFIFOOptions:
    if opts.atomic_replace:
        warnings.warn("RealFIFOOptions.atomic_replace is now atomic_events (client-go's "
                      "name); known_objects is not used with it", DeprecationWarning,
                      stacklevel=4)
        opts = dataclasses.replace(opts, known_objects=None, atomic_events=True,
                                   atomic_replace=False)
    if opts.batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    if opts.atomic_events:
        if opts.known_objects is not None:
            raise ValueError("coding error: known_objects must not be provided when "
                             "atomic_events is true")
        return opts
    if opts.unlock_while_processing:
        raise ValueError("coding error: unlock_while_processing must be false when "
                         "atomic_events is false")
    if opts.known_objects is None:
        raise ValueError("coding error: known_objects must be provided when atomic_events "
                         "is false")
    if opts.emit_delta_type_bookmark:
        raise ValueError("coding error: emit_delta_type_bookmark must be false when "
                         "atomic_events is false")
    return opts


class RealFIFO(QueueBase):
    """See the module documentation. Build with :func:`new_real_fifo_with_options`."""

    def __init__(self, opts: RealFIFOOptions) -> None:
        opts = _checked(opts)
        super().__init__()
        self._key_func: KeyFunc = opts.key_function or meta_namespace_key_func
        self._known_objects: KeyListerGetter | None = opts.known_objects
        self._transformer = opts.transformer
        self._batch_size = opts.batch_size
        self._atomic = opts.atomic_events
        self._unlock = opts.unlock_while_processing
        self._bookmarks = opts.emit_delta_type_bookmark
        self._items: deque[Delta] = deque()
        identifier = opts.identifier
        self.name = (identifier.name if identifier is not None else "") or opts.name or \
            "RealFIFO"
        if identifier is not None:
            self._trace_fields = f", Name={self.name}" + (
                f", Resource={identifier.resource.label()}"
                if identifier.resource.resource else "")
        metrics = QueueMetrics(identifier, opts.metrics_provider)
        self._queued = metrics.queued
        self._latency = metrics.latency

    @property
    def atomic_events(self) -> bool:
        """Whether a relist and a resync are one item each (see the module
        documentation)."""
        return self._atomic

    def _empty_locked(self) -> bool:
        return not self._items

    def key_of(self, obj: Any) -> str:
        """Key of an object, a :class:`Delta`, the newest of a :class:`Deltas`, or a
        tombstone's stored key; raises :class:`~client_cache.errors.KeyFuncError`."""
        return queue_key_of(self._key_func, obj)

    def transformer(self) -> TransformFunc | None:
        """The transform applied to objects as they are queued, or None."""
        return self._transformer

    def _prepare(self, obj: Any) -> Any:
        """Check the key and transform (tombstones are not transformed)."""
        self.key_of(obj)
        if self._transformer is None or isinstance(obj, DeletedFinalStateUnknown):
            return obj
        return self._transformer(obj)

    def _append_locked(self, delta_type: DeltaType, obj: Any) -> None:
        self._push_locked(self._items, Delta(delta_type, obj))
        if self._queued is not None:
            self._queued.set(len(self._items))

    def _queue_action(self, delta_type: DeltaType, obj: Any) -> None:
        obj = self._prepare(obj)
        with self._lock:
            self._mark_populated_locked()
            self._append_locked(delta_type, obj)

    def add(self, obj: Any) -> None:
        """Queue an ``Added`` item."""
        self._queue_action(DeltaType.ADDED, obj)

    def update(self, obj: Any) -> None:
        """Queue an ``Updated`` item."""
        self._queue_action(DeltaType.UPDATED, obj)

    def delete(self, obj: Any) -> None:
        """Queue a ``Deleted`` item (even for a key nobody knows)."""
        self._queue_action(DeltaType.DELETED, obj)

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Queue tombstones for what is gone, then ``Replaced`` for each listed object (or,
        with ``atomic_events``, one ``ReplacedAll`` item)."""
        prepared = [(self.key_of(item), self._prepare(item)) for item in items]
        if self._atomic:
            info = ReplacedAllInfo([obj for _, obj in prepared], resource_version,
                                   [key for key, _ in prepared])
            with self._lock:
                self._append_locked(DeltaType.REPLACED_ALL, info)
                if not self._populated:
                    self._initial_population_count = len(self._items)
                    self._mark_populated_locked()
            return
        known = self._known_objects
        assert known is not None  # required without atomic_events
        new_keys = {key for key, _ in prepared}
        with self._lock:
            last_for_key: dict[str, Delta] = {}
            for queued in self._items:
                last_for_key[self.key_of(queued.object)] = queued  # first-seen key order
            for key, last in list(last_for_key.items()):
                if key in new_keys or last.type is DeltaType.DELETED:
                    continue
                self._append_locked(DeltaType.DELETED, DeletedFinalStateUnknown(key, last.object))
            for key in known.list_keys():
                if key in new_keys or key in last_for_key:
                    continue
                try:
                    deleted, exists = known.get_by_key(key)
                except Exception as err:
                    deleted = None
                    handle_error(
                        f"error during lookup, placing DeleteFinalStateUnknown marker without "
                        f"object: key={key!r}, err={err}"
                    )
                else:
                    if not exists:
                        deleted = None
                        handle_error(
                            "key does not exist in known objects store, placing "
                            f"DeleteFinalStateUnknown marker without object: key={key!r}"
                        )
                self._append_locked(DeltaType.DELETED, DeletedFinalStateUnknown(key, deleted))
            for _, obj in prepared:
                self._append_locked(DeltaType.REPLACED, obj)
            if not self._populated:
                self._initial_population_count = len(self._items)
                self._mark_populated_locked()

    def resync(self) -> None:
        """With ``atomic_events``, queue one ``SyncAll`` item; otherwise queue ``Sync``
        for each known object whose key has nothing queued (Go ``Resync``)."""
        with self._lock:
            if self._atomic:
                self._append_locked(DeltaType.SYNC_ALL, _SYNC_ALL)
                return
            known = self._known_objects
            assert known is not None  # required without atomic_events
            queued = {self.key_of(d.object) for d in self._items}
            for key in known.list_keys():
                if key in queued:
                    continue
                try:
                    obj, exists = known.get_by_key(key)
                except Exception as err:
                    handle_error(f"unable to queue object for sync: key={key!r}, err={err}")
                    continue
                if not exists:
                    handle_error(
                        "key does not exist in known objects store, unable to queue object "
                        f"for sync: key={key!r}"
                    )
                    continue
                self._append_locked(DeltaType.SYNC, obj)

    def bookmark(self, resource_version: str) -> None:
        """Queue a ``Bookmark`` item with ``emit_delta_type_bookmark``; otherwise nothing
        (Go ``Bookmark``). The reflector calls it for each watch bookmark."""
        if not self._bookmarks:
            return
        with self._lock:
            self._append_locked(DeltaType.BOOKMARK, BookmarkInfo(resource_version))

    def _while_processing(
            self, process: Callable[[Any, bool], None]) -> Callable[[Any, bool], None]:
        """``process``, run with the queue's lock released when
        ``unlock_while_processing`` is set and fewer than two batches are queued, and
        timed into the processing-latency metric when there is one (Go
        ``whileProcessing_locked``); the pop takes the lock back before it goes on. The
        queued-items gauge is set first, the item having left the queue."""
        if self._queued is not None:
            self._queued.set(len(self._items))
        unlock = self._unlock and len(self._items) < 2 * self._batch_size
        latency = self._latency
        if not unlock and latency is None:
            return process

        def run(item: Any, in_initial_list: bool) -> None:
            if unlock:
                self._lock.release()
            start = time.monotonic()
            try:
                process(item, in_initial_list)
            finally:
                if latency is not None:
                    latency.observe(time.monotonic() - start)
                if unlock:
                    self._lock.acquire()
        return run

    def pop(self, process: PopProcessFunc, timeout: float | None = None) -> Deltas:
        """Wait for the oldest item, remove it and run ``process(Deltas([item]),
        is_in_initial_list)`` under the lock; returns that one-element ``Deltas``."""
        with self._lock:
            in_initial_list = self._wait_for_item_locked(timeout)
            item = self._items.popleft()
            deltas = Deltas((item,))
            key = self.key_of(item) if len(self._items) > 10 else ""
            self._process_locked(
                self._while_processing(process), deltas, in_initial_list, key=key,
                depth=len(self._items), requeue=None
            )
            return deltas

    def pop_batch(self, process: ProcessBatchFunc, timeout: float | None = None) -> list[Delta]:
        """Pop a batch of items with distinct keys and run ``process(batch,
        is_in_initial_list)`` under the lock; returns the batch. See the module
        documentation for where a batch stops."""
        with self._lock:
            in_initial_list = self._wait_for_item_locked(timeout, count=False)
            batch: list[Delta] = []
            seen: set[str] = set()
            limit = min(self._batch_size, len(self._items))
            if self._initial_population_count > 0:
                limit = min(limit, self._initial_population_count)
            for item in self._items:
                if len(batch) >= limit:
                    break
                if item.type not in _BATCHABLE:  # a whole relist, resync or a bookmark
                    if not batch:
                        batch.append(item)
                    break
                try:
                    key = self.key_of(item)
                except KeyFuncError:
                    batch.append(item)  # the broken item still leaves the queue, last
                    break
                if key in seen:
                    break
                seen.add(key)
                batch.append(item)
            for _ in batch:
                self._items.popleft()
            if self._initial_population_count > 0:
                self._count_popped_locked(len(batch))
            start = time.monotonic()
            try:
                self._while_processing(process)(batch, in_initial_list)
            finally:
                self._after_process_locked()
            elapsed = time.monotonic() - start
            if len(self._items) > 10 and elapsed > min(0.1 * len(batch), 1.0):
                _log.info(
                    "RealFIFO pop_batch process took %.3fs (batch=%d, depth=%d%s): slow "
                    "event handlers blocking the queue",
                    elapsed,
                    len(batch),
                    len(self._items),
                    self._trace_fields,
                )
            return batch

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def new_real_fifo_with_options(opts: RealFIFOOptions) -> RealFIFO:
    """A new :class:`RealFIFO` (Go ``NewRealFIFOWithOptions``); ``known_objects`` is
    required (``ValueError`` otherwise, where Go panics)."""
    return RealFIFO(opts)


def new_real_fifo(
    key_func: KeyFunc | None,
    known_objects: KeyListerGetter,
    transformer: TransformFunc | None = None,
) -> RealFIFO:
    """A new :class:`RealFIFO` (Go ``NewRealFIFO``)."""
    return RealFIFO(
        RealFIFOOptions(key_function=key_func, known_objects=known_objects, transformer=transformer)
    )
