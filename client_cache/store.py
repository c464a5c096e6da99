"""The generic object storage interface and its key functions (Go ``tools/cache/store.go``).

A :class:`Store` holds objects under string keys computed by a *key function*. The usual key
function is :func:`meta_namespace_key_func`, which produces ``"<namespace>/<name>"`` (or
``"<name>"`` for cluster-scoped objects). Stores built here are thread safe; the objects they
hand out are the stored objects themselves, never copies, so callers must treat them as
read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from client_cache.api import meta
from client_cache.errors import InvalidKeyError, KeyFuncError
from client_cache.informer_metrics import StoreMetrics
from client_cache.subscription import DEFAULT_SUBSCRIBER_BUFFER
from client_cache.thread_safe_store import new_thread_safe_store
from client_cache.transaction import ThreadSafeStoreTransaction, Transaction, TransactionError

if TYPE_CHECKING:
    import threading

    from client_cache.index import Indexers, IndexFunc, ReadyIndexer
    from client_cache.subscription import Subscription
    from client_cache.thread_safe_store import ThreadSafeMap

__all__ = [
    "DeletedFinalStateUnknown",
    "ExplicitKey",
    "KeyFunc",
    "KeyGetter",
    "KeyLister",
    "KeyListerGetter",
    "Store",
    "checked_key",
    "deletion_handling_meta_namespace_key_func",
    "meta_namespace_key_func",
    "new_indexer",
    "new_store",
    "split_meta_namespace_key",
]

# Aliases so that annotations inside classes with a ``list`` method mean the builtin.
_Objects = list[Any]
_Keys = list[str]

KeyFunc = Callable[[Any], str]
"""Computes the key of an object; raises on failure (Go ``KeyFunc``)."""


@runtime_checkable
class Store(Protocol):
    """A generic object storage and processing interface (Go ``cache.Store``).

    Objects are stored under the key their key function gives. ``add`` and ``update`` insert
    or replace, ``delete`` removes (a missing key is not an error), ``get`` looks up by the
    key of the given object and ``get_by_key`` by key; both return ``(item, exists)``.
    ``replace`` swaps the whole content for ``items`` (``resource_version`` is the version
    of the list, used by implementations that care). ``resync`` is meaningful only for
    queues; plain stores do nothing. Errors are raised: a failing key function raises
    :class:`~client_cache.errors.KeyFuncError` and leaves the store unchanged.
    """

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

    def list(self) -> _Objects:
        """Every stored object (Go ``List``)."""
        ...

    def list_keys(self) -> _Keys:
        """The keys of every stored object (Go ``ListKeys``)."""
        ...

    def get(self, obj: Any) -> tuple[Any, bool]:
        """``(stored object, True)`` for ``obj``'s key, ``(None, False)`` when absent (Go
        ``Get``)."""
        ...

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """``(stored object, True)`` for ``key``, ``(None, False)`` when absent (Go
        ``GetByKey``)."""
        ...

    def replace(self, items: Iterable[Any], resource_version: str) -> None:
        """Make the contents exactly ``items`` (the result of a list at
        ``resource_version``) (Go ``Replace``)."""
        ...

    def resync(self) -> None:
        """Deliver every stored object again, for a periodic resync (Go ``Resync``)."""
        ...


@runtime_checkable
class KeyLister(Protocol):
    """Something that lists its keys (Go ``KeyLister``)."""

    def list_keys(self) -> _Keys:
        """The keys of every stored object (Go ``ListKeys``)."""
        ...


@runtime_checkable
class KeyGetter(Protocol):
    """Something that looks objects up by key (Go ``KeyGetter``)."""

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """``(stored object, True)`` for ``key``, ``(None, False)`` when absent (Go
        ``GetByKey``)."""
        ...


@runtime_checkable
class KeyListerGetter(KeyLister, KeyGetter, Protocol):
    """Both :class:`KeyLister` and :class:`KeyGetter` (Go ``KeyListerGetter``); what a
    DeltaFIFO needs of its "known objects"."""


class ExplicitKey(str):
    """A string that *is* its own key: :func:`meta_namespace_key_func` returns it as is.

    Used to queue a key without an object (Go ``ExplicitKey``).
    """

    __slots__ = ()


@dataclass(frozen=True, slots=True, repr=False)
class DeletedFinalStateUnknown:
    """A tombstone: the object was deleted while the watch was down, so its final state is
    unknown (Go ``DeletedFinalStateUnknown``).

    A DeltaFIFO puts one in a ``Deleted`` delta when a relist no longer contains an object
    it knew. ``obj`` is the last state the cache had, which may be stale, or ``None`` when
    even that was unavailable. ``key`` is the object's key.
    """

    key: str
    obj: Any

    def __repr__(self) -> str:
        return f"DeletedFinalStateUnknown({self.key!r}, {meta.describe(self.obj)})"


def meta_namespace_key_func(obj: Any) -> str:
    """The default key function: ``"<namespace>/<name>"``, or ``"<name>"`` when the object
    has no namespace (Go ``MetaNamespaceKeyFunc``).

    An :class:`ExplicitKey` is returned unchanged. An object without metadata raises
    :class:`~client_cache.errors.MetaAccessError`. Like Go, an empty name is not an error.
    """
    if type(obj) is dict:  # wire-dict fast path
        md = obj.get("metadata")
        if type(md) is dict:
            ns = md.get("namespace")
            name = md.get("name")
            if type(name) is str and (ns is None or type(ns) is str):
                return f"{ns}/{name}" if ns else name
    elif isinstance(obj, ExplicitKey):
        return str(obj)
    ns, name = meta.namespace_and_name(obj)
    return f"{ns}/{name}" if ns else name


def checked_key(key_func: KeyFunc, obj: Any) -> str:
    """``key_func(obj)``, with any failure raised as
    :class:`~client_cache.errors.KeyFuncError` (Go wraps it in ``KeyError``)."""
    try:
        return key_func(obj)
    except Exception as err:
        raise KeyFuncError(obj, err) from err


def deletion_handling_meta_namespace_key_func(obj: Any) -> str:
    """Like :func:`meta_namespace_key_func`, but a :class:`DeletedFinalStateUnknown` yields
    its stored key (Go ``DeletionHandlingMetaNamespaceKeyFunc``)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key_func(obj)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """Split a key from :func:`meta_namespace_key_func` into ``(namespace, name)``.

    ``"name"`` gives ``("", "name")``; ``"ns/name"`` gives ``("ns", "name")`` (so ``"/name"``
    gives ``("", "name")``); more than one ``/`` raises
    :class:`~client_cache.errors.InvalidKeyError`.
    """
    parts = key.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise InvalidKeyError(key)


class _Cache:
    """A :class:`Store` (and, with indexers, an ``Indexer``) over a ThreadSafeStore.

    This is Go's unexported ``cache`` type: it computes keys with its key function and
    delegates storage and indexing to a thread-safe map. Build it with :func:`new_store` or
    :func:`new_indexer`.
    """

    __slots__ = ("__weakref__", "_key_func", "_storage")

    def __init__(self, storage: ThreadSafeMap, key_func: KeyFunc) -> None:
        self._storage = storage
        self._key_func = key_func

    def _key(self, obj: Any) -> str:
        return checked_key(self._key_func, obj)

    def add(self, obj: Any) -> None:
        """Insert ``obj`` (or replace the object stored under its key)."""
        self._storage.add(self._key(obj), obj)

    def update(self, obj: Any) -> None:
        """Same as :meth:`add`."""
        self._storage.update(self._key(obj), obj)

    def swap(self, obj: Any) -> tuple[Any, bool]:
        """Store ``obj`` (as :meth:`add`) and return what its key held before, as
        :meth:`get` would have: one key computation and one lock instead of two (a port
        addition; :func:`~client_cache.controller.process_deltas` uses it when a store
        has it). A key error raises before anything changes."""
        return self._storage.swap(checked_key(self._key_func, obj), obj)  # _key, inlined

    def transaction(self, *txns: Transaction) -> None:
        """Apply ``txns`` in order under the map's one lock (Go ``Transaction``; this makes
        the store a :class:`~client_cache.transaction.TransactionStore`). Every key is
        computed first; a write whose key cannot be computed, or whose index function
        raises, fails alone, and :class:`~client_cache.transaction.TransactionError` then
        gives the positions in ``txns`` of the writes applied."""
        error = self.swap_transaction(*txns)[1]
        if error is not None:
            raise error

    def swap_transaction(
        self, *txns: Transaction,
    ) -> tuple[list[tuple[Any, bool]], TransactionError | None]:
        """:meth:`transaction`, also returning what each object's key held before its
        write, ``(old, existed)`` per transaction (``(None, False)`` for one whose key
        could not be computed), and the error :meth:`transaction` would raise, or None
        (a port addition: an informer applies a batch with it, each key computed once)."""
        keyed: list[ThreadSafeStoreTransaction] = []
        positions: list[int] = []
        errors: list[BaseException] = []
        for i, txn in enumerate(txns):
            try:
                keyed.append(ThreadSafeStoreTransaction(txn, self._key(txn.object)))
            except Exception as err:
                errors.append(err)
            else:
                positions.append(i)
        done = positions
        swapped, error = self._storage.swap_transaction(*keyed)
        if error is not None:
            done = [positions[j] for j in error.successful_indices]
            errors.extend(error.errors)
        previous: list[tuple[Any, bool]] = [(None, False)] * len(txns)
        for position, before in zip(positions, swapped, strict=True):
            previous[position] = before
        return previous, (TransactionError(done, len(txns), errors) if errors else None)

    def delete(self, obj: Any) -> None:
        """Remove the object stored under ``obj``'s key; a missing key is not an error.
        ``obj``'s resourceVersion becomes the store's unless it is a tombstone."""
        self._storage.delete(self._key(obj),
                             None if isinstance(obj, DeletedFinalStateUnknown) else obj)

    def bookmark(self, resource_version: str) -> None:
        """Note ``resource_version`` as the store's (Go ``Bookmark``, v0.36): an
        informer's store hears of each watch bookmark."""
        self._storage.bookmark(resource_version)

    def set_metrics(self, metrics: StoreMetrics) -> None:
        """Record the store's resourceVersion in ``metrics`` at each write (Go
        ``WithStoreMetrics``)."""
        self._storage.set_metrics(metrics)

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion of the newest state the store holds (Go
        ``LastStoreSyncResourceVersion``, v0.36; ``""`` unless the ``AtomicFIFO`` gate is
        on): what a controller compares with the version of its own last write."""
        return self._storage.last_store_sync_resource_version()

    def list(self) -> _Objects:
        """A snapshot list of every stored object (no defined order)."""
        return self._storage.list()

    def list_keys(self) -> _Keys:
        """A snapshot list of every key (no defined order)."""
        return self._storage.list_keys()

    def get(self, obj: Any) -> tuple[Any, bool]:
        """Look up the object stored under ``obj``'s key: ``(item, exists)``."""
        return self._storage.get(self._key(obj))

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """Look up by key: ``(item, exists)``; never raises."""
        return self._storage.get(key)

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Replace the whole content with ``items`` (later duplicates of a key win).

        Every key is computed first: a key error raises and leaves the store unchanged.
        ``resource_version`` becomes the store's (:meth:`last_store_sync_resource_version`).
        """
        new = {checked_key(self._key_func, item): item for item in items}
        self._storage.replace(new, resource_version)

    def resync(self) -> None:
        """A no-op for plain stores."""

    # Indexer methods ------------------------------------------------------------------
    def index(self, index_name: str, obj: Any) -> _Objects:
        """Objects whose ``index_name`` values intersect those of ``obj``."""
        return self._storage.index(index_name, obj)

    def index_keys(self, index_name: str, indexed_value: str) -> _Keys:
        """Sorted keys of the objects indexed under ``indexed_value``."""
        return self._storage.index_keys(index_name, indexed_value)

    def list_index_func_values(self, index_name: str) -> _Keys:
        """Every value currently present in the index ``index_name``."""
        return self._storage.list_index_func_values(index_name)

    def by_index(self, index_name: str, indexed_value: str) -> _Objects:
        """Objects indexed under ``indexed_value`` in ``index_name``."""
        return self._storage.by_index(index_name, indexed_value)

    def set_index_error_handler(
            self, handler: Callable[[str, str | None, BaseException], None] | None) -> None:
        """Store objects an index function fails on, without that index's entries, and
        tell ``handler`` (see :meth:`ThreadSafeMap.set_index_error_handler
        <client_cache.thread_safe_store.ThreadSafeMap.set_index_error_handler>`)."""
        self._storage.set_index_error_handler(handler)

    def get_indexers(self) -> Indexers:
        """A copy of the registered index functions."""
        return self._storage.get_indexers()

    def add_indexers(self, new_indexers: Indexers) -> None:
        """Register more index functions and index the existing objects with them."""
        self._storage.add_indexers(new_indexers)

    def __len__(self) -> int:
        return len(self._storage)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} items={len(self)}>"

    # Readiness and subscriptions (port additions, kube-rs Store) -----------------------
    def mark_ready(self) -> None:
        """Declare the first complete list in (``replace`` does it by itself)."""
        self._storage.mark_ready()

    def is_ready(self) -> bool:
        """Whether the first complete list is in (kube-rs ``Store::is_ready``)."""
        return self._storage.is_ready()

    def wait_until_ready(self, timeout: float | None = None,
                         stop: threading.Event | None = None) -> bool:
        """Block until the first complete list is in (True) or ``timeout`` passes or
        ``stop`` is set (False); kube-rs ``Store::wait_until_ready``."""
        return self._storage.wait_until_ready(timeout, stop)

    def subscribe(self, buffer: int = DEFAULT_SUBSCRIBER_BUFFER) -> Subscription:
        """Events for every later change, fed after the store changed
        (:mod:`client_cache.subscription`; kube-rs ``Store::subscribe``)."""
        return self._storage.subscribe(buffer)

    def close_subscriptions(self) -> None:
        """End every subscription's iteration (the store's feeder stopped)."""
        self._storage.close_subscriptions()


def new_store(key_func: KeyFunc) -> Store:
    """A thread-safe :class:`Store` keyed by ``key_func`` (Go ``NewStore``)."""
    return _Cache(new_thread_safe_store({}, {}), key_func)


def new_indexer(key_func: KeyFunc, indexers: dict[str, IndexFunc]) -> ReadyIndexer:
    """A thread-safe ``Indexer`` keyed by ``key_func`` and indexed by ``indexers``
    (Go ``NewIndexer``)."""
    return _Cache(new_thread_safe_store(indexers, {}), key_func)
