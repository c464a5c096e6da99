"""Detects code that mutates objects handed out by a cache (Go
``tools/cache/mutation_detector.go``).

Objects from stores and handlers are shared, never copied, so mutating one corrupts every
reader's view. When the environment variable ``KUBE_CACHE_MUTATION_DETECTOR`` is true at
import time (``1``, ``t``, ``true``... as Go's ``ParseBool``),
:func:`new_cache_mutation_detector` returns a detector that keeps a deep copy of every object
the informer adds and compares every second; otherwise a no-op detector. It leaks memory by
design (copies are retained for two minutes), so use it in tests only.

On a mutation it logs ``CACHE <name>[<i>] ALTERED!`` with the object's name and the
top-level fields that changed (never their values: the object may be a Secret) and calls the
``failure_func``; without one it raises :class:`CacheMutationError` from ``run`` (Go
panics). Works for wire dicts, models and dynamic objects alike (compared with ``==``).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from client_cache.api import meta
from client_cache.errors import ClientCacheError, MetaAccessError
from client_cache.store import DeletedFinalStateUnknown
from client_cache.util._env import env_true

__all__ = [
    "ENV_VAR",
    "CacheMutationError",
    "DefaultCacheMutationDetector",
    "MutationDetector",
    "mutation_detection_enabled",
    "new_cache_mutation_detector",
]

_log = logging.getLogger(__name__)

ENV_VAR = "KUBE_CACHE_MUTATION_DETECTOR"

_ENABLED = env_true(ENV_VAR)


def mutation_detection_enabled() -> bool:
    """Whether ``KUBE_CACHE_MUTATION_DETECTOR`` was true when the module was imported."""
    return _ENABLED


class CacheMutationError(ClientCacheError):
    """A cached object was modified in place."""


@runtime_checkable
class MutationDetector(Protocol):
    """Receives objects to watch and checks them until ``stop`` is set; ``enabled`` False
    means ``run`` does nothing (the informer then starts no thread for it)."""

    enabled: bool

    def add_object(self, obj: Any) -> None:
        """Keep a copy of ``obj`` to compare it against later (Go ``AddObject``)."""
        ...

    def run(self, stop: threading.Event) -> None:
        """Compare the kept copies with the objects every period until ``stop`` is set; a
        difference is reported as a mutated cache object (Go ``Run``)."""
        ...


class _DummyMutationDetector:
    enabled = False

    def add_object(self, obj: Any) -> None:
        pass

    def run(self, stop: threading.Event) -> None:
        pass


@dataclass
class _CachedObject:
    cached: Any
    copied: Any


class DefaultCacheMutationDetector:
    """Keeps deep copies and compares them with the live objects every ``period`` seconds.
    Objects are retained for between ``retain_duration`` and twice that."""

    enabled = True

    def __init__(
        self,
        name: str,
        period: float = 1.0,
        retain_duration: float = 120.0,
        failure_func: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        self.period = period
        self.retain_duration = retain_duration
        self.failure_func = failure_func
        self._compare_lock = threading.Lock()
        self._added_lock = threading.Lock()
        self._added: list[_CachedObject] = []
        self._cached: list[_CachedObject] = []
        self._retained: list[_CachedObject] = []
        self._last_rotated = time.monotonic()

    def add_object(self, obj: Any) -> None:
        """Start watching ``obj`` (tombstones and objects without metadata are ignored)."""
        if isinstance(obj, DeletedFinalStateUnknown):
            return
        try:
            meta.accessor(obj)
        except MetaAccessError:
            return
        entry = _CachedObject(obj, copy.deepcopy(obj))
        with self._added_lock:
            self._added.append(entry)

    def added_count(self) -> int:
        """How many objects were added and not yet moved into the compared set."""
        with self._added_lock:
            return len(self._added)

    def run(self, stop: threading.Event) -> None:
        """Compare every ``period`` seconds until ``stop`` is set."""
        while True:
            if time.monotonic() - self._last_rotated > self.retain_duration:
                self._retained = self._cached
                self._cached = []
                self._last_rotated = time.monotonic()
            self.compare_objects()
            if stop.wait(self.period):
                return

    def compare_objects(self) -> None:
        """Check every watched object once; report a mutation as documented."""
        with self._compare_lock:
            with self._added_lock:
                self._cached.extend(self._added)
                self._added = []
            altered = False
            for objects in (self._cached, self._retained):
                for i, entry in enumerate(objects):
                    if entry.cached != entry.copied:
                        altered = True
                        _log.error(
                            "CACHE %s[%d] ALTERED! %s, changed fields: %s",
                            self.name,
                            i,
                            meta.describe(entry.copied),
                            _changed_fields(entry.copied, entry.cached),
                        )
            if altered:
                message = f"cache {self.name} modified"
                if self.failure_func is not None:
                    self.failure_func(message)
                    return
                raise CacheMutationError(message)


def new_cache_mutation_detector(name: str, enabled: bool | None = None) -> MutationDetector:
    """A detector named ``name``: the real one when enabled (``enabled`` overrides the
    environment variable), else a no-op (Go ``NewCacheMutationDetector``)."""
    if not (_ENABLED if enabled is None else enabled):
        return _DummyMutationDetector()
    _log.warning("Mutation detector is enabled, this will result in memory leakage.")
    return DefaultCacheMutationDetector(name)


def _changed_fields(before: Any, now: Any) -> str:
    """The names of the top-level fields that differ (``"?"`` for objects that are not
    mappings or models)."""
    def fields(obj: Any) -> dict[str, Any]:
        if isinstance(obj, dict):
            return obj
        return dict(getattr(obj, "__dict__", {}))

    old, new = fields(before), fields(now)
    changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    return ", ".join(changed) or "?"
