"""Tracking when a consumer has caught up with its informer (Go ``tools/cache/synctrack``).

A handler registration is "synced" when its informer is synced *and* every object of the
initial list has been delivered to the handler. :class:`SingleFileTracker` counts the
initial notifications in flight for one handler; :class:`AsyncTracker` tracks a set of keys
being processed concurrently; :class:`Lazy` caches a value until told it changed.

``has_synced`` always asks the upstream first, outside any lock, as upstream does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from client_cache.util._sync_signal import notify_sync_changed

__all__ = ["AsyncTracker", "Lazy", "SingleFileTracker"]

T = TypeVar("T", bound=Hashable)
V = TypeVar("V")

class SingleFileTracker:
    """Counts initial notifications still being handled by one consumer (Go
    ``SingleFileTracker``). ``finished`` more often than ``start`` is a logic error and
    raises ``RuntimeError``."""

    def __init__(self, upstream_has_synced: Callable[[], bool], name: str = "") -> None:
        self.upstream_has_synced = upstream_has_synced
        self.name = name
        self._count = 0
        self._lock = threading.Lock()

    def start(self) -> None:
        """An initial notification is being handled (Go ``Start``)."""
        with self._lock:
            self._count += 1

    def finished(self) -> None:
        """An initial notification has been handled (Go ``Finished``)."""
        with self._lock:
            self._count -= 1
            if self._count < 0:
                raise RuntimeError(
                    "synctrack: negative counter; this logic error means HasSynced may "
                    "return incorrect value"
                )
            done = self._count == 0
        if done:
            notify_sync_changed()

    def has_synced(self) -> bool:
        """True when the upstream has synced and no initial notification is in flight (Go
        ``HasSynced``)."""
        if not self.upstream_has_synced():
            return False
        with self._lock:
            return self._count <= 0


class AsyncTracker(Generic[T]):
    """Tracks keys whose initial processing has not finished (Go ``AsyncTracker``)."""

    def __init__(self, upstream_has_synced: Callable[[], bool], name: str = "") -> None:
        self.upstream_has_synced = upstream_has_synced
        self.name = name
        self._waiting: set[T] = set()
        self._lock = threading.Lock()

    def start(self, key: T) -> None:
        """``key`` is being processed (Go ``Start``)."""
        with self._lock:
            self._waiting.add(key)

    def finished(self, key: T) -> None:
        """``key`` has been processed (Go ``Finished``)."""
        with self._lock:
            self._waiting.discard(key)
            done = not self._waiting
        if done:
            notify_sync_changed()

    def has_synced(self) -> bool:
        """True when the upstream has synced and no key is being processed (Go
        ``HasSynced``)."""
        if not self.upstream_has_synced():
            return False
        with self._lock:
            return not self._waiting


class _Entry(Generic[V]):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.has_value = False
        self.value: V | None = None


class Lazy(Generic[V]):
    """A value computed on first use and recomputed after :meth:`notify` (Go ``Lazy``).

    Concurrent :meth:`get` calls share one evaluation; an evaluation that raises is not
    cached (the next ``get`` tries again); a slow evaluation started before a ``notify``
    never fills the entry that ``notify`` created.
    """

    def __init__(self, evaluate: Callable[[], V]) -> None:
        self.evaluate = evaluate
        self._lock = threading.Lock()
        self._entry: _Entry[V] | None = None

    def notify(self) -> None:
        """Forget the cached value: the next ``get`` computes it again (Go ``Notify``)."""
        with self._lock:
            self._entry = _Entry()

    def get(self) -> V:
        """The value, computed when it was forgotten (Go ``Get``)."""
        with self._lock:
            if self._entry is None:
                self._entry = _Entry()
            entry = self._entry
        with entry.lock:
            if entry.has_value:
                return entry.value  # type: ignore[return-value]
            value = self.evaluate()
            entry.value = value
            entry.has_value = True
            return value
