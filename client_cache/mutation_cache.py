"""A cache of your own recent writes layered over an informer's store (Go
``tools/cache/mutation_cache.go``).

After a controller writes an object it knows a newer version than its informer may have
seen. Record it with :meth:`MutationCache.mutation`; ``get_by_key`` and ``by_index`` then
return whichever of the two is newer by resourceVersion (compared as unsigned integers, as
etcd's are). The remembered writes live in an LRU of 100 entries, each kept for ``ttl``
seconds. With ``include_adds``, objects you created that the informer has not seen yet are
returned too; without it, a key the backing store lacks is "not found" (a create cannot be
told from a later delete).

Objects without metadata are returned as stored and never compared. A resourceVersion that
is not an unsigned integer raises ``ValueError`` on comparison (Go panics).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Protocol, runtime_checkable

from client_cache.api import meta
from client_cache.errors import MetaAccessError
from client_cache.index import Indexer
from client_cache.store import Store, deletion_handling_meta_namespace_key_func
from client_cache.util.clock import REAL_CLOCK, PassiveClock
from client_cache.util.runtime import handle_error

__all__ = [
    "LRUExpireCache",
    "MutationCache",
    "ResourceVersionComparator",
    "new_integer_resource_version_mutation_cache",
]

_log = logging.getLogger(__name__)

_Objects = list[Any]

LRU_SIZE = 100
"""Capacity of the mutation LRU (upstream's constant)."""


class LRUExpireCache:
    """A size-bounded LRU whose entries also expire (apimachinery ``LRUExpireCache``).

    ``get`` refreshes recency and drops an expired entry; ``keys`` lists unexpired keys from
    least to most recently used without touching recency.
    """

    def __init__(self, max_size: int, clock: PassiveClock = REAL_CLOCK) -> None:
        if max_size <= 0:
            raise ValueError("max_size must be > 0")
        self._max = max_size
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[Any, float]] = OrderedDict()

    def add(self, key: str, value: Any, ttl: float) -> None:
        """Store ``value`` under ``key`` for ``ttl`` seconds, dropping the least recently
        used entry when full (Go ``Add``)."""
        with self._lock:
            self._entries[key] = (value, self._clock.monotonic() + ttl)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def get(self, key: str) -> tuple[Any, bool]:
        """``(value, True)`` for a live entry (which becomes the most recently used),
        ``(None, False)`` otherwise (Go ``Get``)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None, False
            if self._clock.monotonic() > entry[1]:
                del self._entries[key]
                return None, False
            self._entries.move_to_end(key)
            return entry[0], True

    def remove(self, key: str) -> None:
        """Drop the entry under ``key`` (Go ``Remove``)."""
        with self._lock:
            self._entries.pop(key, None)

    def keys(self) -> list[str]:
        """The keys of the entries not yet expired (Go ``Keys``)."""
        with self._lock:
            now = self._clock.monotonic()
            return [k for k, (_, expires) in self._entries.items() if now <= expires]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


@runtime_checkable
class ResourceVersionComparator(Protocol):
    """Orders objects by resourceVersion: negative, zero or positive (Go
    ``ResourceVersionComparator``)."""

    def compare_resource_version(self, lhs: Any, rhs: Any) -> int:
        """Negative, 0 or positive as ``lhs``'s resourceVersion is older than, equal to or
        newer than ``rhs``'s (Go ``CompareResourceVersion``)."""
        ...


class _EtcdObjectVersioner:
    @staticmethod
    def object_resource_version(obj: Any) -> int:
        version = meta.get_resource_version(obj)
        if not version:
            return 0
        if not version.isdigit():
            raise ValueError(f"resourceVersion {version!r} is not an unsigned integer")
        return int(version)

    def compare_resource_version(self, lhs: Any, rhs: Any) -> int:
        left = self.object_resource_version(lhs)
        right = self.object_resource_version(rhs)
        return (left > right) - (left < right)


def _has_meta(obj: Any) -> bool:
    try:
        meta.accessor(obj)
    except MetaAccessError:
        return False
    return True


@runtime_checkable
class MutationCache(Protocol):
    """``get_by_key``/``by_index`` that prefer newer recorded mutations (Go
    ``MutationCache``)."""

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """The newer of the cached object and the one recorded by ``mutation`` for ``key``
        (Go ``GetByKey``)."""
        ...

    def by_index(self, index_name: str, index_key: str) -> _Objects:
        """The indexed objects, each replaced by a newer recorded mutation if any (Go
        ``ByIndex``)."""
        ...

    def mutation(self, obj: Any) -> None:
        """Record ``obj`` as the result of a write, until the cache catches up or the TTL
        passes (Go ``Mutation``)."""
        ...


class _MutationCache:
    def __init__(
        self,
        backing: Store,
        indexer: Indexer | None,
        ttl: float,
        include_adds: bool,
        clock: PassiveClock,
    ) -> None:
        self._lock = threading.Lock()
        self._backing = backing
        self._indexer = indexer
        self._mutations = LRUExpireCache(LRU_SIZE, clock)
        self._include_adds = include_adds
        self._ttl = ttl
        self._comparator: ResourceVersionComparator = _EtcdObjectVersioner()

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        with self._lock:
            obj, exists = self._backing.get_by_key(key)
            if not exists:
                if not self._include_adds:
                    return None, False
                obj, exists = self._mutations.get(key)
                if not exists:
                    return None, False
            if not _has_meta(obj):
                return obj, True
            return self._newer_object_locked(key, obj), True

    def by_index(self, index_name: str, index_key: str) -> _Objects:
        with self._lock:
            if self._indexer is None:
                raise ValueError("no indexer has been provided to the mutation cache")
            items: list[Any] = []
            seen: set[str] = set()
            for key in self._indexer.index_keys(index_name, index_key):
                seen.add(key)
                obj, exists = self._indexer.get_by_key(key)
                if not exists:
                    continue
                items.append(self._newer_object_locked(key, obj) if _has_meta(obj) else obj)
            if self._include_adds:
                func = self._indexer.get_indexers()[index_name]
                lru_keys = self._mutations.keys()  # oldest first; reading keeps LRU order
                for key in lru_keys:
                    updated, ok = self._mutations.get(key)
                    if not ok or key in seen:
                        continue
                    try:
                        values = func(updated)
                    except Exception as err:
                        _log.debug(
                            "Unable to calculate an index entry for mutation cache entry %s: %s",
                            key,
                            err,
                        )
                        continue
                    if index_key in values:
                        items.append(updated)
            return items

    def _newer_object_locked(self, key: str, backing: Any) -> Any:
        mutated, exists = self._mutations.get(key)
        if not exists or not _has_meta(mutated):
            return backing
        if self._comparator.compare_resource_version(backing, mutated) >= 0:
            self._mutations.remove(key)
            return backing
        return mutated

    def mutation(self, obj: Any) -> None:
        """Remember ``obj`` as written (ignored if an even newer write is remembered)."""
        with self._lock:
            try:
                key = deletion_handling_meta_namespace_key_func(obj)
            except Exception as err:
                handle_error(err)  # a nice-to-have: never fail the caller
                return
            if _has_meta(obj):
                mutated, exists = self._mutations.get(key)
                if (
                    exists
                    and _has_meta(mutated)
                    and self._comparator.compare_resource_version(obj, mutated) < 0
                ):
                    return
            self._mutations.add(key, obj, self._ttl)


def new_integer_resource_version_mutation_cache(
    backing_cache: Store,
    indexer: Indexer | None,
    ttl: float,
    include_adds: bool,
    clock: PassiveClock = REAL_CLOCK,
) -> MutationCache:
    """A :class:`MutationCache` comparing resourceVersions as integers (Go
    ``NewIntegerResourceVersionMutationCache``; ``clock`` is a port addition for tests)."""
    return _MutationCache(backing_cache, indexer, ttl, include_adds, clock)
