"""A key/object map with secondary indices, safe for concurrent use
(Go ``tools/cache/thread_safe_store.go``).

:class:`ThreadSafeStore` is the protocol, :class:`ThreadSafeMap` the implementation. Every
operation takes one lock, so a reader never sees an object without its index entries or the
other way round.

Differences from Go, all in the direction of safety:

* an index function that raises makes ``add``/``update``/``replace``/``add_indexers`` raise
  :class:`~client_cache.errors.IndexFuncError` (Go panics); every index value is computed
  before anything is changed, so the map and all its indices are exactly as before;
* index values are remembered per key, so an update or delete removes the entries the old
  object was indexed under even if someone (wrongly) mutated the stored object in place;
  an update whose values are unchanged touches nothing;
* ``get_indexers`` returns a copy, and every list returned is a snapshot that later writes
  do not change.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from client_cache.errors import IndexerConflictError, IndexFuncError, IndexNotFoundError

if TYPE_CHECKING:
    from client_cache.index import Index, Indexers, IndexFunc, Indices

__all__ = ["ThreadSafeMap", "ThreadSafeStore", "new_thread_safe_store"]

# Aliases so that annotations inside classes with a ``list`` method mean the builtin.
_Objects = list[Any]
_Keys = list[str]

_MISSING: Any = object()

_Values = dict[str, Sequence[str]]
"""index name -> the values one object produced for it."""


@runtime_checkable
class ThreadSafeStore(Protocol):
    """Concurrent storage of objects by key with indices (Go ``ThreadSafeStore``).

    Callers supply the keys. ``add`` and ``update`` are the same operation, ``delete`` of a
    missing key does nothing, ``replace(items, rv)`` swaps the whole content and rebuilds
    every index. The index methods behave as on :class:`~client_cache.index.Indexer`.
    Returned objects are shared with the store and must not be mutated.
    """

    def add(self, key: str, obj: Any) -> None: ...
    def update(self, key: str, obj: Any) -> None: ...
    def delete(self, key: str) -> None: ...
    def get(self, key: str) -> tuple[Any, bool]: ...
    def list(self) -> _Objects: ...
    def list_keys(self) -> _Keys: ...
    def replace(self, items: Mapping[str, Any], resource_version: str) -> None: ...
    def index(self, index_name: str, obj: Any) -> _Objects: ...
    def index_keys(self, index_name: str, indexed_value: str) -> _Keys: ...
    def list_index_func_values(self, index_name: str) -> _Keys: ...
    def by_index(self, index_name: str, indexed_value: str) -> _Objects: ...
    def get_indexers(self) -> Indexers: ...
    def add_indexers(self, new_indexers: Indexers) -> None: ...
    def resync(self) -> None: ...
    def __len__(self) -> int: ...


def _run_index_func(name: str, func: IndexFunc, obj: Any, key: str | None) -> Sequence[str]:
    try:
        values = func(obj)
    except Exception as err:
        raise IndexFuncError(name, key, err) from err
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise IndexFuncError(
            name,
            key,
            TypeError(f"index function returned {type(values).__name__}, not a list of str"),
        )
    return values


def _unindex(index: Index, key: str, values: Sequence[str]) -> None:
    for value in values:
        keys = index.get(value)
        if keys is not None:
            keys.discard(key)
            if not keys:
                # Empty sets are dropped so that the index does not grow without bound
                # over churning values (kubernetes issue 84959).
                del index[value]


def _index(index: Index, key: str, values: Sequence[str]) -> None:
    for value in values:
        keys = index.get(value)
        if keys is None:
            index[value] = {key}
        else:
            keys.add(key)


class ThreadSafeMap:
    """The :class:`ThreadSafeStore` implementation (Go ``threadSafeMap``)."""

    __slots__ = ("_indexers", "_indices", "_items", "_lock", "_values")

    def __init__(self, indexers: Indexers | None = None) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, Any] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: Indices = {name: {} for name in self._indexers}
        # index name -> key -> the values that key is indexed under (non-empty only).
        self._values: dict[str, dict[str, Sequence[str]]] = {name: {} for name in self._indexers}

    # -- writes ---------------------------------------------------------------------------
    def _compute_locked(self, key: str, obj: Any) -> _Values:
        return {
            name: _run_index_func(name, func, obj, key) for name, func in self._indexers.items()
        }

    def _update_indices_locked(self, key: str, new_values: _Values) -> None:
        for name, new in new_values.items():
            per_key = self._values[name]
            old = per_key.get(key)
            if new:
                per_key[key] = new
            elif old is not None:
                del per_key[key]
            if old is not None and len(old) == 1 and len(new) == 1 and old[0] == new[0]:
                continue
            index = self._indices[name]
            if old:
                _unindex(index, key, old)
            _index(index, key, new)

    def add(self, key: str, obj: Any) -> None:
        """Store ``obj`` under ``key``, replacing any previous object, and index it."""
        with self._lock:
            if self._indexers:
                new_values = self._compute_locked(key, obj)
                self._items[key] = obj
                self._update_indices_locked(key, new_values)
            else:
                self._items[key] = obj

    update = add

    def delete(self, key: str) -> None:
        """Remove ``key`` and its index entries; a missing key is not an error."""
        with self._lock:
            if self._items.pop(key, _MISSING) is _MISSING:
                return
            for name, per_key in self._values.items():
                old = per_key.pop(key, None)
                if old:
                    _unindex(self._indices[name], key, old)

    def replace(self, items: Mapping[str, Any], resource_version: str = "") -> None:
        """Swap the content for ``items`` (copied) and rebuild every index from scratch."""
        new_items = dict(items)
        with self._lock:
            new_values: dict[str, dict[str, Sequence[str]]] = {}
            new_indices: Indices = {}
            for name, func in self._indexers.items():
                per_key: dict[str, Sequence[str]] = {}
                index: Index = {}
                for key, obj in new_items.items():
                    values = _run_index_func(name, func, obj, key)
                    if values:
                        per_key[key] = values
                        _index(index, key, values)
                new_values[name] = per_key
                new_indices[name] = index
            self._items = new_items
            self._values = new_values
            self._indices = new_indices

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
            built: list[tuple[str, IndexFunc, dict[str, Sequence[str]], Index]] = []
            for name, func in new_indexers.items():
                per_key: dict[str, Sequence[str]] = {}
                index: Index = {}
                for key, obj in self._items.items():
                    values = _run_index_func(name, func, obj, key)
                    if values:
                        per_key[key] = values
                        _index(index, key, values)
                built.append((name, func, per_key, index))
            for name, func, per_key, index in built:
                self._indexers[name] = func
                self._values[name] = per_key
                self._indices[name] = index

    def resync(self) -> None:
        """A no-op, as in Go."""

    # -- reads ----------------------------------------------------------------------------
    def get(self, key: str) -> tuple[Any, bool]:
        """``(obj, True)`` for a stored key, ``(None, False)`` otherwise."""
        with self._lock:
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

    def _index_locked(self, index_name: str) -> Index:
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
                keys: set[str] | tuple[()] = index.get(values[0], ())
            else:
                keys = set()
                for value in values:
                    keys |= index.get(value, set())
            items = self._items
            return [items[key] for key in keys]

    def by_index(self, index_name: str, indexed_value: str) -> _Objects:
        """Stored objects indexed under ``indexed_value``."""
        with self._lock:
            keys = self._index_locked(index_name).get(indexed_value, ())
            items = self._items
            return [items[key] for key in keys]

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
