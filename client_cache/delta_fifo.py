"""DeltaFIFO: a queue of per-object change lists (Go ``tools/cache/delta_fifo.go``).

A DeltaFIFO is what a Reflector writes into and what an informer pops from. For each object
key it accumulates the *deltas* (``Added``, ``Updated``, ``Deleted``, ``Replaced``,
``Sync``) that happened since the key was last popped, and ``pop`` hands the consumer the
whole :class:`Deltas` list of the oldest key. Keys are popped in the order they were first
queued; a key is in line at most once.

Rules, all as in client-go v0.32:

* ``delete`` of a key that is neither queued nor in the *known objects* (the informer's
  indexer) is ignored: the deletion was already reported, e.g. by a relist;
* two trailing ``Deleted`` deltas merge into one; the older survives unless it is a
  tombstone, in which case the real final state (the newer) wins; nothing else merges;
* ``replace(list)`` queues ``Sync`` (or ``Replaced`` when ``emit_delta_type_replaced``)
  for each listed object, then a ``Deleted`` delta carrying a
  :class:`~client_cache.store.DeletedFinalStateUnknown` tombstone for every queued key and
  every known key that is not in the list (known keys only when nothing is queued for
  them). A tombstone is never wrapped in another tombstone;
* ``resync()`` queues ``Sync`` for every known object whose key has nothing queued;
* ``has_synced()`` turns true once the first ``replace`` batch - its listed keys and the
  tombstones it made - has been popped, or at once if a write came before any replace;
  ``pop`` passes ``is_in_initial_list`` accordingly;
* the transformer runs once per object before it is queued; never on tombstones and never
  for ``Sync`` deltas from ``resync`` (those objects were transformed already).

Port choices (safer in error cases only): ``replace`` computes every key and transform
before changing anything, so a failure leaves the queue exactly as it was (Go may have
queued part of the list); the lock is re-entrant.
"""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from client_cache.api.meta import describe
from client_cache.errors import KeyFuncError, ZeroLengthDeltasError
from client_cache.fifo import PopProcessFunc, QueueBase
from client_cache.store import (
    DeletedFinalStateUnknown,
    KeyFunc,
    KeyListerGetter,
    checked_key,
    meta_namespace_key_func,
)

__all__ = [
    "BookmarkInfo",
    "Delta",
    "DeltaFIFO",
    "DeltaFIFOOptions",
    "DeltaType",
    "Deltas",
    "DeletedFinalStateUnknown",
    "BOOKMARK_KEY",
    "REPLACED_ALL_KEY",
    "SYNC_ALL_KEY",
    "ReplacedAllInfo",
    "SyncAllInfo",
    "TransformFunc",
    "new_delta_fifo",
    "new_delta_fifo_with_options",
]

_log = logging.getLogger(__name__)

TransformFunc = Callable[[Any], Any]
"""Turns an object into the object to store, e.g. dropping managedFields (Go
``TransformFunc``); raises on failure."""

_Objects = list[Any]
_Keys = list[str]


class DeltaType(str, enum.Enum):
    """The kind of change a :class:`Delta` records (Go ``DeltaType``)."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    REPLACED = "Replaced"
    """Listed by a relist (replace) when ``emit_delta_type_replaced`` is set."""
    SYNC = "Sync"
    """A periodic resync, or a relist without ``emit_delta_type_replaced``."""
    REPLACED_ALL = "ReplacedAll"
    """A whole relist as one item (its object a :class:`ReplacedAllInfo`), queued by a
    :class:`~client_cache.the_real_fifo.RealFIFO` with ``atomic_events`` (Go's
    ``AtomicFIFO``)."""
    SYNC_ALL = "SyncAll"
    """A whole resync as one item (its object a :class:`SyncAllInfo`): the consumer
    notifies an update of every stored object (a RealFIFO with ``atomic_events``)."""
    BOOKMARK = "Bookmark"
    """A watch bookmark (its object a :class:`BookmarkInfo`): the consumer's store notes
    the resourceVersion (a RealFIFO with ``emit_delta_type_bookmark``)."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, repr=False)
class ReplacedAllInfo:
    """The object of a ``ReplacedAll`` delta: every listed object and the list's
    resourceVersion (Go ``ReplacedAllInfo``), plus each object's key as the queue computed
    it (a port addition, so the consumer need not know the key function). Its own queue key
    is :data:`REPLACED_ALL_KEY`."""

    objects: list[Any]
    resource_version: str
    keys: list[str]

    def __repr__(self) -> str:
        return (f"ReplacedAllInfo({len(self.objects)} objects, "
                f"resourceVersion {self.resource_version!r})")


REPLACED_ALL_KEY = "\x00replaced-all"
"""The queue key of a :class:`ReplacedAllInfo` (no object key can contain a NUL)."""


@dataclass(frozen=True, slots=True)
class SyncAllInfo:
    """The object of a ``SyncAll`` delta (Go ``SyncAllInfo``); its queue key is
    :data:`SYNC_ALL_KEY`."""


@dataclass(frozen=True, slots=True)
class BookmarkInfo:
    """The object of a ``Bookmark`` delta: the bookmark's resourceVersion (Go
    ``BookmarkInfo``); its queue key is :data:`BOOKMARK_KEY`."""

    resource_version: str


SYNC_ALL_KEY = "\x00sync-all"
"""The queue key of a :class:`SyncAllInfo`."""

BOOKMARK_KEY = "\x00bookmark"
"""The queue key of a :class:`BookmarkInfo`."""


@dataclass(frozen=True, slots=True, repr=False, init=False)
class Delta:
    """One change: its type and the object after it (for ``Deleted``, the object's last
    known state, possibly a :class:`DeletedFinalStateUnknown`). Its ``repr`` names the
    object, never its contents. Frozen, as a dataclass."""

    type: DeltaType
    object: Any

    def __init__(self, type: DeltaType, object: Any) -> None:
        # Set through the slots' own descriptors, as watch.Event's: 0.14 us less on every
        # queued change than a frozen dataclass's generated __init__.
        _set_delta_type(self, type)
        _set_delta_object(self, object)

    def __repr__(self) -> str:
        return f"Delta({self.type.value}, {describe(self.object)})"


_set_delta_type = Delta.__dict__["type"].__set__  # the slot's descriptor
_set_delta_object = Delta.__dict__["object"].__set__  # the slot's descriptor


class Deltas(list[Delta]):
    """The changes queued for one key, oldest first (Go ``Deltas``)."""

    __slots__ = ()

    def oldest(self) -> Delta | None:
        """The first delta, or ``None`` when empty."""
        return self[0] if self else None

    def newest(self) -> Delta | None:
        """The last delta, or ``None`` when empty."""
        return self[-1] if self else None

    def copy(self) -> Deltas:
        return Deltas(self)

    def __repr__(self) -> str:
        return f"Deltas({list.__repr__(self)})"


@dataclass
class DeltaFIFOOptions:
    """Options of :func:`new_delta_fifo_with_options` (Go ``DeltaFIFOOptions``).

    ``key_function`` defaults to :func:`~client_cache.store.meta_namespace_key_func`.
    ``known_objects`` is the store the consumer keeps up to date (the informer's indexer);
    without it, deletions and tombstones can only be detected among queued keys and
    ``resync`` does nothing. ``emit_delta_type_replaced`` makes ``replace`` queue
    ``Replaced`` instead of ``Sync``. ``transformer`` runs on every object before queueing.
    """

    key_function: KeyFunc | None = None
    known_objects: KeyListerGetter | None = None
    emit_delta_type_replaced: bool = False
    transformer: TransformFunc | None = None


_OBJECT_CLASSES: set[type] = set()
"""Classes :func:`queue_key_of` has met that are none of the queue's own wrappers (up to
512): their objects go straight to the key function, after one set lookup instead of
four ``isinstance`` checks."""


def queue_key_of(key_func: KeyFunc, obj: Any) -> str:
    """Key of what a queue holds: the newest object of a :class:`Deltas`, the object of a
    :class:`Delta`, the stored key of a tombstone, else ``key_func(obj)``; failures raise
    :class:`~client_cache.errors.KeyFuncError`."""
    cls = type(obj)
    if cls is dict or cls in _OBJECT_CLASSES:  # an object as the server sent it
        return checked_key(key_func, obj)
    if isinstance(obj, Deltas):
        if not obj:
            raise KeyFuncError(obj, ZeroLengthDeltasError())
        obj = obj[-1].object
    elif isinstance(obj, Delta):
        obj = obj.object
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    if isinstance(obj, ReplacedAllInfo):
        return REPLACED_ALL_KEY
    if isinstance(obj, BookmarkInfo):
        return BOOKMARK_KEY
    if isinstance(obj, SyncAllInfo):
        return SYNC_ALL_KEY
    if type(obj) is cls and len(_OBJECT_CLASSES) < 512:  # not unwrapped: none of them
        _OBJECT_CLASSES.add(cls)
    return checked_key(key_func, obj)


def _dedup(deltas: Deltas) -> None:
    """Merge the last two deltas in place when both are deletions."""
    if len(deltas) < 2:
        return
    newer, older = deltas[-1], deltas[-2]
    if newer.type is DeltaType.DELETED and older.type is DeltaType.DELETED:
        # The older delete survives unless it is a tombstone: a real final state wins.
        keep = newer if isinstance(older.object, DeletedFinalStateUnknown) else older
        deltas[-2:] = [keep]


class DeltaFIFO(QueueBase):
    """See the module documentation. Build with :func:`new_delta_fifo_with_options`."""

    def __init__(self, opts: DeltaFIFOOptions | None = None) -> None:
        super().__init__()
        opts = opts or DeltaFIFOOptions()
        self._key_func: KeyFunc = opts.key_function or meta_namespace_key_func
        self._known_objects = opts.known_objects
        self._emit_delta_type_replaced = opts.emit_delta_type_replaced
        self._transformer = opts.transformer
        self._items: dict[str, Deltas] = {}
        self._queue: deque[str] = deque()

    def _empty_locked(self) -> bool:
        return not self._queue

    # -- keys -----------------------------------------------------------------------------
    def key_of(self, obj: Any) -> str:
        """The key of ``obj``: a :class:`Deltas` gives its newest object's key (an empty one
        raises), a tombstone gives its stored key, anything else the key function's.
        Failures raise :class:`~client_cache.errors.KeyFuncError`."""
        return queue_key_of(self._key_func, obj)

    def transformer(self) -> TransformFunc | None:
        """The transform function (Go ``Transformer()``, v0.34)."""
        return self._transformer

    # -- writes ---------------------------------------------------------------------------
    def _transform(self, obj: Any) -> Any:
        if self._transformer is None or isinstance(obj, DeletedFinalStateUnknown):
            return obj
        return self._transformer(obj)

    def _append_locked(self, key: str, delta_type: DeltaType, obj: Any) -> None:
        """Append one (already transformed) delta and merge trailing deletions."""
        deltas = self._items.get(key)
        if deltas is None:
            self._items[key] = Deltas((Delta(delta_type, obj),))
            self._push_locked(self._queue, key)
        else:
            deltas.append(Delta(delta_type, obj))  # the key is in line: nobody waits
            _dedup(deltas)

    def _queue_action(self, delta_type: DeltaType, obj: Any) -> None:
        key = queue_key_of(self._key_func, obj)  # key_of's, a call less on every change
        if self._transformer is not None:
            obj = self._transform(obj)
        with self._lock:
            self._mark_populated_locked()
            self._append_locked(key, delta_type, obj)

    def add(self, obj: Any) -> None:
        """Queue an ``Added`` delta."""
        self._queue_action(DeltaType.ADDED, obj)

    def update(self, obj: Any) -> None:
        """Queue an ``Updated`` delta."""
        self._queue_action(DeltaType.UPDATED, obj)

    def delete(self, obj: Any) -> None:
        """Queue a ``Deleted`` delta, unless the key is neither queued nor known (then the
        deletion has been reported already and is ignored)."""
        key = self.key_of(obj)
        with self._lock:
            if key not in self._items:
                if self._known_objects is None:
                    self._mark_populated_locked()
                    return
                try:
                    _, exists = self._known_objects.get_by_key(key)
                except Exception:
                    exists = True  # a lookup error does not suppress the deletion
                if not exists:
                    self._mark_populated_locked()
                    return
            obj = self._transform(obj)
            self._mark_populated_locked()
            self._append_locked(key, DeltaType.DELETED, obj)

    def add_if_not_present(self, obj: Any) -> None:
        """Queue a whole :class:`Deltas` for its key unless the key is queued already (used
        to requeue a popped item). Anything but a ``Deltas`` (or a list of ``Delta``)
        raises ``TypeError``; an empty one raises :class:`~client_cache.errors.KeyFuncError`
        wrapping :class:`~client_cache.errors.ZeroLengthDeltasError`."""
        if not isinstance(obj, Deltas):
            if isinstance(obj, list) and all(isinstance(d, Delta) for d in obj):
                obj = Deltas(obj)
            else:
                raise TypeError(f"object must be of type Deltas, but got: {describe(obj)}")
        key = self.key_of(obj)
        with self._lock:
            self._add_if_not_present_locked(key, obj)

    def _add_if_not_present_locked(self, key: str, deltas: Deltas) -> None:
        self._mark_populated_locked()
        if key in self._items:
            return
        self._items[key] = deltas
        self._push_locked(self._queue, key)

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Queue a relist: Sync/Replaced for each object, then tombstones for what is gone.
        See the module documentation for the rules."""
        action = DeltaType.REPLACED if self._emit_delta_type_replaced else DeltaType.SYNC
        prepared: list[tuple[str, Any]] = []
        for item in items:
            key = self.key_of(item)
            prepared.append((key, self._transform(item)))
        with self._lock:
            keys = set()
            for key, obj in prepared:
                keys.add(key)
                self._append_locked(key, action, obj)

            queued_deletions = 0
            for key in [k for k in self._items if k not in keys]:
                newest = self._items[key][-1].object
                if isinstance(newest, DeletedFinalStateUnknown):
                    newest = newest.obj
                queued_deletions += 1
                self._append_locked(
                    key, DeltaType.DELETED, DeletedFinalStateUnknown(key, newest)
                )

            if self._known_objects is not None:
                for key in self._known_objects.list_keys():
                    if key in keys or self._items.get(key):
                        continue
                    try:
                        deleted, exists = self._known_objects.get_by_key(key)
                    except Exception as err:
                        deleted, exists = None, True
                        _log.error(
                            "Unexpected error %s during lookup of key %s, placing "
                            "DeleteFinalStateUnknown marker without object",
                            err,
                            key,
                        )
                    if not exists:
                        deleted = None
                        _log.info(
                            "Key %s does not exist in known objects store, placing "
                            "DeleteFinalStateUnknown marker without object",
                            key,
                        )
                    queued_deletions += 1
                    self._append_locked(
                        key, DeltaType.DELETED, DeletedFinalStateUnknown(key, deleted)
                    )

            if not self._populated:
                self._initial_population_count = len(keys) + queued_deletions
                self._mark_populated_locked()

    def resync(self) -> None:
        """Queue ``Sync`` for each known object with nothing queued (no-op without known
        objects). Lookup failures are logged and skipped."""
        known = self._known_objects
        if known is None:
            return
        with self._lock:
            for key in known.list_keys():
                try:
                    obj, exists = known.get_by_key(key)
                except Exception as err:
                    _log.error(
                        "Unexpected error %s during lookup of key %s, unable to queue "
                        "object for sync",
                        err,
                        key,
                    )
                    continue
                if not exists:
                    _log.info(
                        "Key %s does not exist in known objects store, unable to queue "
                        "object for sync",
                        key,
                    )
                    continue
                obj_key = self.key_of(obj)
                if self._items.get(obj_key):
                    continue  # an event is queued: syncing the stale object would race it
                self._append_locked(obj_key, DeltaType.SYNC, obj)

    # -- reads ----------------------------------------------------------------------------
    def list(self) -> _Objects:
        """The newest object of each queued key."""
        with self._lock:
            return [deltas[-1].object for deltas in self._items.values()]

    def list_keys(self) -> _Keys:
        """Queued keys in pop order."""
        with self._lock:
            return list(self._queue)

    def get(self, obj: Any) -> tuple[Any, bool]:
        """A copy of the :class:`Deltas` queued for ``obj``'s key."""
        return self.get_by_key(self.key_of(obj))

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """A copy of the :class:`Deltas` queued for ``key``."""
        with self._lock:
            deltas = self._items.get(key)
            if deltas is None:
                return None, False
            return Deltas(deltas), True

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)

    # -- pop ------------------------------------------------------------------------------
    def pop(self, process: PopProcessFunc, timeout: float | None = None) -> Deltas:
        """Wait for the oldest key, remove it and run ``process(deltas,
        is_in_initial_list)`` under the lock; return the deltas.

        ``RequeueError`` from ``process`` puts the deltas back unless the key was queued
        again meanwhile (then its ``err``, if any, is raised); any other exception
        propagates with the item removed. Raises
        :class:`~client_cache.errors.FIFOClosedError` once closed and empty, and
        ``TimeoutError`` if ``timeout`` passes first.
        """
        with self._lock:
            while True:
                in_initial_list = self._wait_for_item_locked(timeout)
                key = self._queue.popleft()
                deltas = self._items.pop(key, None)
                if deltas is None:
                    _log.error("Inconceivable! %r was in the queue but not the items; ignoring",
                               key)
                    continue
                self._process_locked(
                    process,
                    deltas,
                    in_initial_list,
                    key=key,
                    depth=len(self._queue),
                    requeue=self._add_if_not_present_locked,
                )
                return deltas


def new_delta_fifo_with_options(opts: DeltaFIFOOptions) -> DeltaFIFO:
    """A new :class:`DeltaFIFO` (Go ``NewDeltaFIFOWithOptions``)."""
    return DeltaFIFO(opts)


def new_delta_fifo(
    key_func: KeyFunc | None, known_objects: KeyListerGetter | None
) -> DeltaFIFO:
    """Deprecated constructor kept for parity (Go ``NewDeltaFIFO``); it never emits
    ``Replaced``. Prefer :func:`new_delta_fifo_with_options`."""
    return DeltaFIFO(DeltaFIFOOptions(key_function=key_func, known_objects=known_objects))
