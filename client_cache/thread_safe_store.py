"""A key/object map with secondary indices, safe for concurrent use
(Go ``tools/cache/thread_safe_store.go``).

:class:`ThreadSafeStore` is the protocol, :class:`ThreadSafeMap` the implementation. Every
operation takes one lock, so a reader never sees an object without its index entries or the
other way round.

Differences from Go, all in the direction of safety:

* an index function that raises makes ``add``/``update``/``replace``/``add_indexers`` raise
  :class:`~client_cache.errors.IndexFuncError` (Go panics); every index value is computed
  before anything is changed, so the map and all its indices are exactly as before. With
  an index error handler (:meth:`ThreadSafeMap.set_index_error_handler`, which an
  informer sets) the object is stored instead and left out of that index alone, and the
  handler is told: an informer must not hide an object because one index cannot read it;
* index values are remembered per key, so an update or delete removes the entries the old
  object was indexed under even if someone (wrongly) mutated the stored object in place;
  an update whose values are unchanged only swaps the object in its index entries;
* ``get_indexers`` returns a copy, and every list returned is a snapshot that later writes
  do not change;
* ``replace`` builds the new content and its indices outside the lock and swaps them in at
  once, so readers keep getting the previous complete state while a relist is applied
  (kube-rs's store swap);
* an index maps each value to ``{key: object}`` rather than to a set of keys (Go's
  ``Index``), so ``by_index`` copies one dict's values in C instead of looking every key
  up in the item map (measured 2026-11-24, 100,000 pods: 1,000-object namespace lookups
  5.7k/s -> 130k/s, no cost to adds or memory). The public ``Index`` and ``Indices``
  aliases keep Go's shape; ``index_keys`` still answers keys.

Additions of the port (kube-rs ``Store`` guarantees, seed 000): readiness
(:meth:`ThreadSafeMap.wait_until_ready`, set by the first ``replace`` or by the store's
owner with :meth:`ThreadSafeMap.mark_ready`, as an informer does when it has synced) and
subscriptions (:meth:`ThreadSafeMap.subscribe`; see :mod:`client_cache.subscription`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from client_cache.api import meta
from client_cache.api.watch import Event, EventType
from client_cache.errors import (
    IndexerConflictError,
    IndexFuncError,
    IndexNotFoundError,
    MetaAccessError,
)
from client_cache.informer_metrics import StoreMetrics
from client_cache.subscription import DEFAULT_SUBSCRIBER_BUFFER, Subscription
from client_cache.transaction import (
    ThreadSafeStoreTransaction,
    TransactionError,
    TransactionType,
)
from client_cache.util.features import ATOMIC_FIFO, feature_gates
from client_cache.util.stop import on_stop

if TYPE_CHECKING:
    from client_cache.index import Indexers, IndexFunc, Indices

__all__ = ["IndexQueries", "ThreadSafeMap", "ThreadSafeStore", "new_thread_safe_store"]

# Aliases so that annotations inside classes with a ``list`` method mean the builtin.
_Objects = list[Any]
_Keys = list[str]

_MISSING: Any = object()
_EMPTY: dict[str, Any] = {}  # never written

_Values = dict[str, Sequence[str]]
# index value -> {key: object}: the entries of one index; index name -> those
_Postings = dict[str, dict[str, Any]]
_AllPostings = dict[str, _Postings]
"""index name -> the values one object produced for it."""


@runtime_checkable
class IndexQueries(Protocol):
    """The index operations shared by :class:`~client_cache.index.Indexer` and
    :class:`ThreadSafeStore` (Go declares them on both)."""

    def index(self, index_name: str, obj: Any) -> _Objects:
        """The objects that share an index value of ``obj`` under ``index_name`` (Go
        ``Index``)."""
        ...

    def index_keys(self, index_name: str, indexed_value: str) -> _Keys:
        """The keys of the objects indexed under ``indexed_value`` in ``index_name`` (Go
        ``IndexKeys``)."""
        ...

    def list_index_func_values(self, index_name: str) -> _Keys:
        """Every value present in the index ``index_name`` (Go ``ListIndexFuncValues``)."""
        ...

    def by_index(self, index_name: str, indexed_value: str) -> _Objects:
        """The objects indexed under ``indexed_value`` in ``index_name`` (Go ``ByIndex``)."""
        ...

    def get_indexers(self) -> Indexers:
        """The index functions by name (Go ``GetIndexers``)."""
        ...

    def add_indexers(self, new_indexers: Indexers) -> None:
        """Add index functions; existing objects are indexed by them at once (Go
        ``AddIndexers``)."""
        ...


@runtime_checkable
class ThreadSafeStore(IndexQueries, Protocol):
    """Concurrent storage of objects by key with indices (Go ``ThreadSafeStore``).

    Callers supply the keys. ``add`` and ``update`` are the same operation, ``delete`` of a
    missing key does nothing, ``replace(items, rv)`` swaps the whole content and rebuilds
    every index. The index methods behave as on :class:`~client_cache.index.Indexer`.
    Returned objects are shared with the store and must not be mutated.
    """

    def add(self, key: str, obj: Any) -> None:
        """Store ``obj`` under ``key`` and index it (Go ``Add``)."""
        ...

    def update(self, key: str, obj: Any) -> None:
        """Store ``obj`` under ``key``, re-indexing it (Go ``Update``)."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key`` and its index entries (Go ``Delete``)."""
        ...

    def get(self, key: str) -> tuple[Any, bool]:
        """``(object, True)`` for ``key``, ``(None, False)`` when absent (Go ``Get``)."""
        ...

    def list(self) -> _Objects:
        """Every stored object (Go ``List``)."""
        ...

    def list_keys(self) -> _Keys:
        """The keys of every stored object (Go ``ListKeys``)."""
        ...

    def replace(self, items: Mapping[str, Any], resource_version: str) -> None:
        """Make the contents exactly ``items`` (key -> object), rebuilding the indexes (Go
        ``Replace``)."""
        ...

    def resync(self) -> None:
        """A no-op, as in Go (Go ``Resync``)."""
        ...

    def __len__(self) -> int: ...


def _run_index_func(name: str, func: IndexFunc, obj: Any, key: str | None) -> Sequence[str]:
    try:
        values = func(obj)
    except Exception as err:
        raise IndexFuncError(name, key, err) from err
    if type(values) is list:  # what index functions return: no ABC check (0.2 us)
        return values
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise IndexFuncError(
            name,
            key,
            TypeError(f"index function returned {type(values).__name__}, not a list of str"),
        )
    return values


def _unindex(index: _Postings, key: str, values: Sequence[str]) -> None:
    for value in values:
        keys = index.get(value)
        if keys is not None:
            keys.pop(key, None)
            if not keys:
                # Empty sets are dropped so that the index does not grow without bound
                # over churning values (kubernetes issue 84959).
                del index[value]


def _index(index: _Postings, key: str, obj: Any, values: Sequence[str]) -> None:
    for value in values:
        keys = index.get(value)
        if keys is None:
            index[value] = {key: obj}
        else:
            keys[key] = obj


IndexErrorHandler = Callable[[str, "str | None", BaseException], None]
"""Told of an index function that failed on an object (the index's name, the object's key,
the error) when the object is stored without that index's entries instead; a port
addition (:meth:`ThreadSafeMap.set_index_error_handler`). Called with the store's lock
held: it must be quick and must not touch the store."""


def _index_values(name: str, func: IndexFunc, obj: Any, key: str | None,
                  on_error: IndexErrorHandler | None) -> Sequence[str]:
    """The values ``func`` indexes ``obj`` under; with ``on_error``, none (and the handler
    told) when it fails, else :class:`~client_cache.errors.IndexFuncError`."""
    if on_error is None:
        return _run_index_func(name, func, obj, key)
    try:
        return _run_index_func(name, func, obj, key)
    except IndexFuncError as err:
        on_error(name, key, err.err)
        return ()


def _build_indices(indexers: Mapping[str, IndexFunc], items: Mapping[str, Any],
                   on_error: IndexErrorHandler | None = None,
                   ) -> tuple[dict[str, dict[str, Sequence[str]]], _AllPostings]:
    """Every index of ``indexers`` over ``items``: (per-key values, indices)."""
    new_values: dict[str, dict[str, Sequence[str]]] = {}
    new_indices: _AllPostings = {}
    for name, func in indexers.items():
        per_key: dict[str, Sequence[str]] = {}
        index: _Postings = {}
        for key, obj in items.items():
            values = _index_values(name, func, obj, key, on_error)
            if values:
                per_key[key] = values
                _index(index, key, obj, values)
        new_values[name] = per_key
        new_indices[name] = index
    return new_values, new_indices


def _resource_version(obj: Any) -> str:
    try:
        return meta.get_resource_version(obj)
    except Exception:  # an object without metadata (a test's, a tombstone's)
        return ""


def _changed(old: Any, new: Any) -> bool:
    try:
        return meta.get_resource_version(old) != meta.get_resource_version(new) or \
            not meta.get_resource_version(new)
    except MetaAccessError:
        return True


class ThreadSafeMap:
    """The :class:`ThreadSafeStore` implementation (Go ``threadSafeMap``)."""

    __slots__ = ("_indexers", "_indices", "_items", "_lock", "_metrics", "_on_index_error",
                 "_ready", "_ready_cond", "_rv_source", "_subscribers", "_values")

    def __init__(self, indexers: Indexers | None = None) -> None:
        self._lock = threading.Lock()
        self._ready = False
        self._ready_cond = threading.Condition(self._lock)
        self._subscribers: tuple[Subscription, ...] = ()
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: _AllPostings = {name: {} for name in self._indexers}
        # index name -> key -> the values that key is indexed under (non-empty only).
        self._values: dict[str, dict[str, Sequence[str]]] = {name: {} for name in self._indexers}
        self._on_index_error: IndexErrorHandler | None = None
        # what last_store_sync_resource_version reads: the last object written (its
        # resourceVersion is read when asked, not on every write) or a version as given
        self._rv_source: Any = ""
        self._metrics: StoreMetrics | None = None

    def set_metrics(self, metrics: StoreMetrics) -> None:
        """Record the store's resourceVersion in ``metrics`` at every write from now on
        (Go ``WithThreadSafeStoreMetrics``; nothing is recorded when its identity is not
        reserved)."""
        with self._lock:
            self._metrics = metrics if metrics.resource_version is not None else None

    def _record_locked(self, source: Any) -> None:
        metrics = self._metrics
        if metrics is not None:
            metrics.record(source if type(source) is str else _resource_version(source))

    def set_index_error_handler(self, handler: IndexErrorHandler | None) -> None:
        """From now on, store an object an index function fails on, without that index's
        entries, and tell ``handler`` (None: raise :class:`~client_cache.errors.
        IndexFuncError` and change nothing, the default, as Go's panic). A port addition:
        an informer sets one, so that its handlers still hear of the object."""
        with self._lock:
            self._on_index_error = handler

    # -- writes ---------------------------------------------------------------------------
    def _compute_locked(self, key: str, obj: Any) -> _Values:
        values: _Values = {}
        on_error = self._on_index_error
        for name, func in self._indexers.items():  # a loop, not a comprehension's call
            values[name] = _run_index_func(name, func, obj, key) if on_error is None \
                else _index_values(name, func, obj, key, on_error)
        return values

    def _update_indices_locked(self, key: str, obj: Any, new_values: _Values) -> None:
        for name, new in new_values.items():
            per_key = self._values[name]
            old = per_key.get(key)
            if new:
                per_key[key] = new
            elif old is not None:
                del per_key[key]
            index = self._indices[name]
            if old is not None and len(old) == 1 and len(new) == 1 and old[0] == new[0]:
                index[old[0]][key] = obj  # same value: only the object changes
                continue
            if old:
                _unindex(index, key, old)
            _index(index, key, obj, new)

    def add(self, key: str, obj: Any) -> None:
        """Store ``obj`` under ``key``, replacing any previous object, and index it."""
        with self._lock:
            self._add_locked(key, obj)

    update = add

    def swap(self, key: str, obj: Any) -> tuple[Any, bool]:
        """Store ``obj`` under ``key`` as :meth:`add` does and return what was there
        before, as :meth:`get` would have: ``(old, True)`` or ``(None, False)``, in one
        step under the lock (a port addition: an informer applying an update needs both,
        Go's ``processDeltas`` reads then writes)."""
        with self._lock:
            old = self._items.get(key, _MISSING)
            self._add_locked(key, obj)
        if old is _MISSING:
            return None, False
        return old, True

    def delete(self, key: str, obj: Any = None) -> None:
        """Remove ``key`` and its index entries; a missing key is not an error. ``obj``,
        the deleted object as the server last sent it, makes its resourceVersion the
        store's (Go ``DeleteWithObject``)."""
        with self._lock:
            self._delete_locked(key)
            if obj is not None:
                self._rv_source = obj
                if self._metrics is not None:
                    self._record_locked(obj)

    def bookmark(self, resource_version: str) -> None:
        """Note ``resource_version`` as the store's: the server has sent everything up to
        it (Go ``Bookmark``, v0.36)."""
        with self._lock:
            self._rv_source = resource_version
            if self._metrics is not None:
                self._record_locked(resource_version)

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion of the newest state this store holds: the last object
        written, deleted with its object, the version a ``replace`` or a bookmark gave
        (Go ``LastStoreSyncResourceVersion``, v0.36; ``""`` unless the ``AtomicFIFO`` gate
        is on, as there: without it a relist's deltas are applied one by one and the
        version would run ahead of the content). A port choice: a transaction's deletes
        do not set it, its adds and updates do."""
        if not feature_gates().enabled(ATOMIC_FIFO):
            return ""
        with self._lock:
            source = self._rv_source
        return source if type(source) is str else _resource_version(source)

    def transaction(self, *txns: ThreadSafeStoreTransaction) -> None:
        """Apply ``txns`` in order under one lock (Go ``Transaction``): each adds, updates
        or deletes its object under its key, as :meth:`add`, :meth:`update` and
        :meth:`delete` do. A write whose index function raises changes nothing and the
        others still apply; then :class:`~client_cache.transaction.TransactionError` is
        raised with the positions of those applied."""
        error = self.swap_transaction(*txns)[1]
        if error is not None:
            raise error

    def swap_transaction(
        self, *txns: ThreadSafeStoreTransaction,
    ) -> tuple[list[tuple[Any, bool]], TransactionError | None]:
        """:meth:`transaction`, also returning what each key held before its write, as
        :meth:`swap` does for one: ``([(old, existed), ...], error)``, ``error`` the
        :class:`~client_cache.transaction.TransactionError` :meth:`transaction` would
        raise, or None. A port addition: an informer applying a batch needs both, in one
        step under the lock."""
        done: list[int] = []
        errors: list[BaseException] = []
        previous: list[tuple[Any, bool]] = []
        items = self._items
        with self._lock:
            for i, txn in enumerate(txns):
                old = items.get(txn.key, _MISSING)
                previous.append((None, False) if old is _MISSING else (old, True))
                try:
                    if txn.transaction.type is TransactionType.DELETE:
                        self._delete_locked(txn.key)
                    else:
                        self._add_locked(txn.key, txn.transaction.object)
                except Exception as err:
                    errors.append(err)
                else:
                    done.append(i)
        return previous, (TransactionError(done, len(txns), errors) if errors else None)

    def _add_locked(self, key: str, obj: Any) -> None:
        self._rv_source = obj
        if self._metrics is not None:
            self._record_locked(obj)
        existed = key in self._items if self._subscribers else False
        if self._indexers:
            new_values = self._compute_locked(key, obj)
            self._items[key] = obj
            self._update_indices_locked(key, obj, new_values)
        else:
            self._items[key] = obj
        if self._subscribers:
            self._publish_locked(Event(EventType.MODIFIED if existed else EventType.ADDED, obj))

    def _delete_locked(self, key: str) -> None:
        old = self._items.pop(key, _MISSING)
        if old is _MISSING:
            return
        for name, per_key in self._values.items():
            values = per_key.pop(key, None)
            if values:
                _unindex(self._indices[name], key, values)
        if self._subscribers:
            self._publish_locked(Event(EventType.DELETED, old))

    def replace(self, items: Mapping[str, Any], resource_version: str = "") -> None:
        """Swap the content for ``items`` (copied) with every index rebuilt, in one step:
        the new content is built outside the lock, so readers get the previous complete
        state until the swap. Marks the store ready."""
        new_items = dict(items)
        while True:
            with self._lock:
                indexers = dict(self._indexers)
                on_error = self._on_index_error
            new_values, new_indices = _build_indices(indexers, new_items, on_error)
            with self._lock:
                if self._indexers != indexers:
                    continue  # add_indexers ran meanwhile: build again with all of them
                old_items = self._items
                self._items = new_items
                self._rv_source = resource_version
                if self._metrics is not None:
                    self._record_locked(resource_version)
                self._values = new_values
                self._indices = new_indices
                if self._subscribers:
                    self._publish_replace_locked(old_items, new_items)
                self._mark_ready_locked()
                return

    def add_indexers(self, new_indexers: Indexers) -> None:
        """Register ``new_indexers`` and index every stored object with them.

        A name that is already registered raises
        :class:`~client_cache.errors.IndexerConflictError`; an index function that fails on
        a stored object raises :class:`~client_cache.errors.IndexFuncError`. Either way
        nothing is registered.
        """
        with self._lock:
            conflicts = set(new_indexers) & set(self._indexers)
            if conflicts:
                raise IndexerConflictError(conflicts)
            new_values, new_indices = _build_indices(new_indexers, self._items,
                                                     self._on_index_error)
            self._indexers.update(new_indexers)
            self._values.update(new_values)
            self._indices.update(new_indices)

    def resync(self) -> None:
        """A no-op, as in Go."""

    # -- readiness and subscriptions (port additions, kube-rs Store) -----------------------
    def _mark_ready_locked(self) -> None:
        if not self._ready:
            self._ready = True
            self._ready_cond.notify_all()

    def mark_ready(self) -> None:
        """Declare the first complete list in (the owner of an informer's indexer calls this
        when it has synced; ``replace`` does it by itself). Idempotent."""
        with self._lock:
            self._mark_ready_locked()

    def is_ready(self) -> bool:
        """Whether the first complete list is in (kube-rs ``Store::is_ready``)."""
        return self._ready

    def wait_until_ready(self, timeout: float | None = None,
                         stop: threading.Event | None = None) -> bool:
        """Block until the first complete list is in (True), ``timeout`` seconds pass or
        ``stop`` is set (False). kube-rs ``Store::wait_until_ready``."""
        if self._ready:
            return True
        registration = None if stop is None else on_stop(stop, self._wake_ready_waiters)
        try:
            with self._lock:
                return self._ready_cond.wait_for(
                    lambda: self._ready or (stop is not None and stop.is_set()),
                    timeout) and self._ready
        finally:
            if registration is not None:
                registration.cancel()

    def _wake_ready_waiters(self) -> None:
        with self._lock:
            self._ready_cond.notify_all()

    def subscribe(self, buffer: int = DEFAULT_SUBSCRIBER_BUFFER) -> Subscription:
        """A new :class:`~client_cache.subscription.Subscription` to this store's changes
        from now on (kube-rs ``Store::subscribe``); read the store for the state before."""
        subscription = Subscription(buffer, on_close=self._unsubscribe)
        with self._lock:
            self._subscribers = (*self._subscribers, subscription)
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers = tuple(s for s in self._subscribers if s is not subscription)

    def close_subscriptions(self) -> None:
        """Close every subscription (their iterators end once drained); the store's owner
        calls this when it stops feeding the store."""
        with self._lock:
            subscribers, self._subscribers = self._subscribers, ()
        for subscription in subscribers:
            subscription.close()

    def _publish_locked(self, event: Event) -> None:
        for subscription in self._subscribers:
            subscription.push(event)

    def _publish_replace_locked(self, old_items: dict[str, Any],
                                new_items: dict[str, Any]) -> None:
        """Events for what a replace changed: DELETED for keys that are gone, ADDED for new
        keys, MODIFIED for objects whose resourceVersion changed (or that cannot say)."""
        for key, old in old_items.items():
            if key not in new_items:
                self._publish_locked(Event(EventType.DELETED, old))
        for key, obj in new_items.items():
            old = old_items.get(key, _MISSING)
            if old is _MISSING:
                self._publish_locked(Event(EventType.ADDED, obj))
            elif old is not obj and _changed(old, obj):
                self._publish_locked(Event(EventType.MODIFIED, obj))

    # -- reads ----------------------------------------------------------------------------
    def get(self, key: str) -> tuple[Any, bool]:
        """``(obj, True)`` for a stored key, ``(None, False)`` otherwise. It reads without
        the lock (Go takes the read lock): one dict lookup is atomic, and every write is
        made under the lock in one step, so a reader sees the object before a write or
        after it, never a part (as ``len`` and ``in`` read); 0.15 us less on the path of
        every watch event."""
        obj = self._items.get(key, _MISSING)
        if obj is _MISSING:
            return None, False
        return obj, True

    def list(self) -> _Objects:
        """Snapshot of every stored object."""
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> _Keys:
        """Snapshot of every key."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def _index_locked(self, index_name: str) -> _Postings:
        index = self._indices.get(index_name)
        if index is None or index_name not in self._indexers:
            raise IndexNotFoundError(index_name)
        return index

    def index(self, index_name: str, obj: Any) -> _Objects:
        """Stored objects sharing at least one ``index_name`` value with ``obj``."""
        with self._lock:
            index = self._index_locked(index_name)
            values = _run_index_func(index_name, self._indexers[index_name], obj, None)
            if len(values) == 1:
                return list(index.get(values[0], _EMPTY).values())
            found: dict[str, Any] = {}
            for value in values:
                found.update(index.get(value, _EMPTY))
            return list(found.values())

    def by_index(self, index_name: str, indexed_value: str) -> _Objects:
        """Stored objects indexed under ``indexed_value``."""
        with self._lock:
            return list(self._index_locked(index_name).get(indexed_value, _EMPTY).values())

    def index_keys(self, index_name: str, indexed_value: str) -> _Keys:
        """Sorted keys indexed under ``indexed_value``."""
        with self._lock:
            return sorted(self._index_locked(index_name).get(indexed_value, ()))

    def list_index_func_values(self, index_name: str) -> _Keys:
        """Values present in ``index_name``; ``[]`` for an unknown index (as Go)."""
        with self._lock:
            return list(self._indices.get(index_name, ()))

    def get_indexers(self) -> Indexers:
        """A copy of the registered index functions."""
        with self._lock:
            return dict(self._indexers)

    def __repr__(self) -> str:
        return f"<ThreadSafeMap items={len(self._items)} indexers={sorted(self._indexers)}>"


def new_thread_safe_store(indexers: Indexers, indices: Indices | None = None) -> ThreadSafeMap:
    """A new empty :class:`ThreadSafeMap` with ``indexers`` (Go ``NewThreadSafeStore``).

    ``indices`` exists for signature parity; the store starts empty, so it must be empty
    (or contain only empty indices): a non-empty one raises ``ValueError``.
    """
    if indices and any(indices.values()):
        raise ValueError("new_thread_safe_store: initial indices must be empty")
    return ThreadSafeMap(indexers)
