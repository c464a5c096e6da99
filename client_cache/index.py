"""Indexers: stores that also keep secondary indices (Go ``tools/cache/index.go``).

An *index function* maps an object to zero or more string values ("index values"). An
index named ``N`` maps each value to the set of keys of the objects that produced it, so
``by_index(N, value)`` answers "which objects have this value" without a scan. The standard
index is :data:`NAMESPACE_INDEX`, built by :func:`meta_namespace_index_func`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from client_cache.api import meta
from client_cache.store import Store
from client_cache.thread_safe_store import IndexQueries

if TYPE_CHECKING:
    import threading

    from client_cache.informer_metrics import StoreMetrics
    from client_cache.subscription import Subscription

__all__ = [
    "NAMESPACE_INDEX",
    "Index",
    "IndexFunc",
    "Indexer",
    "Indexers",
    "Indices",
    "ReadyIndexer",
    "index_func_to_key_func_adapter",
    "meta_namespace_index_func",
]

# Aliases so that annotations inside classes with a ``list`` method mean the builtin.
_Objects = list[Any]
_Keys = list[str]

IndexFunc = Callable[[Any], Sequence[str]]
"""Computes the index values of an object; raises on failure (Go ``IndexFunc``)."""

Indexers = dict[str, IndexFunc]
"""Index name -> index function (Go ``Indexers``)."""

Index = dict[str, set[str]]
"""Index value -> set of object keys (Go ``Index``)."""

Indices = dict[str, Index]
"""Index name -> index (Go ``Indices``)."""

NAMESPACE_INDEX = "namespace"
"""Name of the index built by :func:`meta_namespace_index_func` (Go ``NamespaceIndex``)."""


@runtime_checkable
class Indexer(Store, IndexQueries, Protocol):
    """A :class:`~client_cache.store.Store` with named indices (Go ``cache.Indexer``).

    * ``index(name, obj)``: the stored objects that share at least one ``name`` value with
      ``obj`` (the index function is run on ``obj``);
    * ``index_keys(name, value)``: the keys indexed under ``value``, sorted;
    * ``list_index_func_values(name)``: every value present in the index (an unknown index
      name gives an empty list);
    * ``by_index(name, value)``: the stored objects indexed under ``value``;
    * ``get_indexers()`` / ``add_indexers(new)``: the registered index functions; adding
      indexes the objects already stored.

    An unknown index name raises :class:`~client_cache.errors.IndexNotFoundError` (except in
    ``list_index_func_values``); an unknown value gives an empty result.
    """

@runtime_checkable
class ReadyIndexer(Indexer, Protocol):
    """An :class:`Indexer` that also tells when it holds its first complete list and hands
    out subscriptions to its changes (kube-rs ``Store``; a port addition). The indexers
    :func:`~client_cache.store.new_indexer` builds, and so every informer's, are such.

    * ``mark_ready()`` / ``is_ready()`` / ``wait_until_ready(timeout, stop)``: readiness,
      set by the first ``replace`` or by the store's owner;
    * ``subscribe(buffer)`` / ``close_subscriptions()``: see :mod:`client_cache.subscription`;
    * ``set_index_error_handler(handler)``: objects an index function fails on are stored
      without that index's entries (an informer's choice, see
      :mod:`client_cache.thread_safe_store`);
    * ``last_store_sync_resource_version()`` / ``bookmark(rv)``: the resourceVersion of
      the newest state held (client-go v0.36 adds both to every ``Store``; here the
      indexers have them, and so every informer's).
    """

    def last_store_sync_resource_version(self) -> str:
        """The resourceVersion of the newest state this indexer holds (``""`` unless the
        ``AtomicFIFO`` gate is on; Go ``LastStoreSyncResourceVersion``)."""
        ...

    def bookmark(self, resource_version: str) -> None:
        """Note ``resource_version`` as the indexer's (Go ``Bookmark``)."""
        ...

    def set_metrics(self, metrics: StoreMetrics) -> None:
        """Record the resourceVersion in ``metrics`` at each write (Go
        ``WithStoreMetrics``)."""
        ...

    def mark_ready(self) -> None:
        """Declare the first complete list stored: ``wait_until_ready`` returns."""
        ...

    def is_ready(self) -> bool:
        """True once the first complete list is stored."""
        ...

    def wait_until_ready(self, timeout: float | None = None,
                         stop: threading.Event | None = None) -> bool:
        """Wait until the first complete list is stored (True), ``timeout`` seconds pass or
        ``stop`` is set (False)."""
        ...

    def set_index_error_handler(
            self, handler: Callable[[str, str | None, BaseException], None] | None) -> None:
        """Store an object an index function fails on without that index's entries, and
        tell ``handler`` (None: raise and change nothing)."""
        ...

    def subscribe(self, buffer: int = ...) -> Subscription:
        """A :class:`~client_cache.subscription.Subscription` that receives each object
        applied from now on (``buffer`` events held at most)."""
        ...

    def close_subscriptions(self) -> None:
        """End every subscription (their iteration stops)."""
        ...


def meta_namespace_index_func(obj: Any) -> _Keys:
    """Index an object by its namespace: ``[namespace]`` (``[""]`` when cluster-scoped).

    Go returns ``[""]`` together with an error for an object without metadata; the port
    raises :class:`~client_cache.errors.MetaAccessError`.
    """
    return [meta.get_namespace(obj)]


def index_func_to_key_func_adapter(index_func: IndexFunc) -> Callable[[Any], str]:
    """Turn an index function that yields exactly one value into a key function
    (Go ``IndexFuncToKeyFuncAdapter``).

    The key function raises ``ValueError`` when the index function yields more than one
    value (``"too many keys: ..."``) or none (``"unexpected empty indexKeys"``).
    """

    def key_func(obj: Any) -> str:
        values = index_func(obj)
        if len(values) > 1:
            raise ValueError(f"too many keys: {list(values)}")
        if len(values) == 0:
            raise ValueError("unexpected empty indexKeys")
        return values[0]

    return key_func
