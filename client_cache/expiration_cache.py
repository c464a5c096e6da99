"""A store whose entries expire (Go ``tools/cache/expiration_cache.go`` and
``expiration_cache_fakes.go``).

Each object is kept with the time it was added (a :class:`TimestampedEntry`). Expiry is
lazy: ``get``/``get_by_key``/``list`` ask the :class:`ExpirationPolicy` about each entry
they touch and delete the expired ones as they go; ``list_keys`` does not check expiry.
``update`` is ``add`` (it refreshes the timestamp) and ``replace`` stamps every entry with
the same time. Time comes from an injectable clock, as upstream's ``clock.Clock``, and is
its monotonic reading: a step of the wall clock neither empties the store nor keeps an
entry past its time (``freezegun`` moves both readings in tests).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from client_cache.store import KeyFunc, Store, checked_key
from client_cache.thread_safe_store import ThreadSafeMap, ThreadSafeStore
from client_cache.util.clock import REAL_CLOCK, PassiveClock

__all__ = [
    "ExpirationCache",
    "ExpirationPolicy",
    "FakeExpirationPolicy",
    "TTLPolicy",
    "TimestampedEntry",
    "new_expiration_store",
    "new_fake_expiration_store",
    "new_ttl_store",
]

_Objects = list[Any]
_Keys = list[str]


@dataclass
class TimestampedEntry:
    """A stored object and when it was added: the store's clock's monotonic reading, in
    seconds."""

    obj: Any
    timestamp: float
    key: str = ""


@runtime_checkable
class ExpirationPolicy(Protocol):
    """Decides whether an entry has expired (Go ``ExpirationPolicy``)."""

    def is_expired(self, entry: TimestampedEntry) -> bool:
        """True when ``entry`` should be dropped from the cache (Go ``IsExpired``)."""
        ...


@dataclass
class TTLPolicy:
    """Expire entries older than ``ttl`` seconds (Go ``TTLPolicy``).

    An entry exactly ``ttl`` old has not expired (strictly greater is needed); a ``ttl`` of
    zero or less never expires anything.
    """

    ttl: float
    clock: PassiveClock = field(default_factory=lambda: REAL_CLOCK)

    def is_expired(self, entry: TimestampedEntry) -> bool:
        """True when ``entry`` is older than the TTL (Go ``IsExpired``)."""
        return self.ttl > 0 and self.clock.monotonic() - entry.timestamp > self.ttl


class ExpirationCache:
    """See the module documentation. Build with :func:`new_ttl_store` or
    :func:`new_expiration_store`."""

    def __init__(
        self,
        key_func: KeyFunc,
        policy: ExpirationPolicy,
        clock: PassiveClock = REAL_CLOCK,
        storage: ThreadSafeStore | None = None,
    ) -> None:
        self._storage: ThreadSafeStore = storage if storage is not None else ThreadSafeMap()
        self._key_func = key_func
        self._policy = policy
        self._clock = clock
        # Serialises writes with the check-and-delete of an expired entry, so a fresh add
        # is never deleted because of the entry it replaced.
        self._expiration_lock = threading.Lock()

    def _key(self, obj: Any) -> str:
        return checked_key(self._key_func, obj)

    def _get_or_expire(self, key: str) -> tuple[Any, bool]:
        with self._expiration_lock:
            entry, exists = self._storage.get(key)
            if not exists:
                return None, False
            if self._policy.is_expired(entry):
                self._storage.delete(key)
                return None, False
            return entry.obj, True

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """The unexpired object stored under ``key`` (an expired one is deleted)."""
        return self._get_or_expire(key)

    def get(self, obj: Any) -> tuple[Any, bool]:
        """The unexpired object stored under ``obj``'s key."""
        return self._get_or_expire(self._key(obj))

    def list(self) -> _Objects:
        """Every unexpired object; expired entries met on the way are deleted."""
        out: list[Any] = []
        for entry in self._storage.list():
            obj, exists = self._get_or_expire(entry.key)
            if exists:
                out.append(obj)
        return out

    def list_keys(self) -> _Keys:
        """Every stored key, expired or not (as upstream)."""
        return self._storage.list_keys()

    def add(self, obj: Any) -> None:
        """Store ``obj`` stamped with the current time."""
        key = self._key(obj)
        with self._expiration_lock:
            self._storage.add(key, TimestampedEntry(obj, self._clock.monotonic(), key))

    update = add

    def delete(self, obj: Any) -> None:
        """Remove the entry with ``obj``'s key."""
        key = self._key(obj)
        with self._expiration_lock:
            self._storage.delete(key)

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Replace the content, every entry stamped with the same current time."""
        now = self._clock.monotonic()
        entries: dict[str, TimestampedEntry] = {}
        for obj in items:
            key = self._key(obj)
            entries[key] = TimestampedEntry(obj, now, key)
        with self._expiration_lock:
            self._storage.replace(entries, resource_version)

    def resync(self) -> None:
        """A no-op."""


def new_ttl_store(key_func: KeyFunc, ttl: float, clock: PassiveClock = REAL_CLOCK) -> Store:
    """A store whose entries expire ``ttl`` seconds after they were added, on ``clock``'s
    monotonic reading (Go ``NewTTLStore``; the clock is a port addition, as upstream's
    ``NewFakeExpirationStore`` takes one)."""
    return ExpirationCache(key_func, TTLPolicy(ttl, clock), clock)


def new_expiration_store(key_func: KeyFunc, policy: ExpirationPolicy) -> Store:
    """A store whose entries expire when ``policy`` says so (Go ``NewExpirationStore``)."""
    return ExpirationCache(key_func, policy)


@dataclass
class FakeExpirationPolicy:
    """Every entry is expired unless the key ``retrieve_key_func(entry)`` is in
    ``never_expire`` (Go ``FakeExpirationPolicy``)."""

    never_expire: set[str] = field(default_factory=set)
    retrieve_key_func: KeyFunc = field(default=lambda entry: str(entry.key))

    def is_expired(self, entry: TimestampedEntry) -> bool:
        """True unless the entry's key is in ``never_expire`` (Go ``IsExpired``)."""
        return self.retrieve_key_func(entry) not in self.never_expire


class _FakeThreadSafeMap(ThreadSafeMap):
    """Deletes report the key on ``deleted_keys``; without that queue, deletes do nothing
    (as upstream's fake)."""

    __slots__ = ("_deleted_keys",)

    def __init__(self, deleted_keys: queue.Queue[str] | None) -> None:
        super().__init__()
        self._deleted_keys = deleted_keys

    def delete(self, key: str, obj: Any = None) -> None:
        if self._deleted_keys is not None:
            super().delete(key, obj)
            self._deleted_keys.put(key)


def new_fake_expiration_store(
    key_func: KeyFunc,
    deleted_keys: queue.Queue[str] | None,
    policy: ExpirationPolicy,
    clock: PassiveClock,
) -> Store:
    """An expiration store for tests whose deletions are reported on ``deleted_keys``
    (Go ``NewFakeExpirationStore``)."""
    return ExpirationCache(key_func, policy, clock, _FakeThreadSafeMap(deleted_keys))
