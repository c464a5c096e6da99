"""Waiting for caches to sync (Go ``WaitForCacheSync`` and ``WaitForNamedCacheSync`` in
``tools/cache/shared_informer.go``), re-exported by :mod:`client_cache.shared_informer`.

A port choice: :func:`wait_for_cache_sync` wakes as soon as a queue or handler turns
synced (:mod:`client_cache.util._sync_signal`) instead of polling every 100 ms; it still
re-checks every :data:`SYNCED_POLL_PERIOD` for arbitrary ``synced`` functions.

client-go v0.36's waits without polling: a :class:`DoneChecker` (an informer's and a
handler registration's ``has_synced_checker()``) names what it waits for and hands out
a ``threading.Event`` set once it is done, Go's closed channel; :func:`wait_for` waits
for several, woken only by their completion and by ``stop`` (Go ``WaitFor``), and
:func:`is_done` asks one without blocking.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from client_cache.errors import CacheSyncTimeoutError
from client_cache.reflector_status import ReflectorStatus
from client_cache.util._sync_signal import (
    on_sync_changed,
    sync_generation,
    wait_sync_changed,
)
from client_cache.util.runtime import handle_error
from client_cache.util.stop import on_stop

__all__ = [
    "SYNCED_POLL_PERIOD",
    "DoneChecker",
    "InformerSynced",
    "SyncChecker",
    "is_done",
    "unsynced_details",
    "wait_for",
    "wait_for_cache_sync",
    "wait_for_named_cache_sync",
]

# the informers' records, as before these functions had a module of their own
_log = logging.getLogger("client_cache.shared_informer")

SYNCED_POLL_PERIOD = 0.1
"""Seconds between two checks of ``synced`` functions that nothing wakes a wait for."""

InformerSynced = Callable[[], bool]
"""A function telling whether a cache has synced (Go ``InformerSynced``)."""


def wait_for_cache_sync(stop: threading.Event, *cache_syncs: InformerSynced,
                        timeout: float | None = None) -> bool:
    """Wait until every ``cache_syncs`` function returns True (True) or ``stop`` is set
    (False). Checks at once, then whenever a queue or handler turns synced, and at least
    every 100 ms.

    ``timeout`` (seconds; a port addition) bounds the wait: past it,
    :class:`~client_cache.errors.CacheSyncTimeoutError` names what did not sync, with the
    last list/watch error of each (functions that are an informer's ``has_synced`` are
    named by its resource; others by their qualified name)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        generation = sync_generation()
        if all(synced() for synced in cache_syncs):
            return True
        if stop.is_set():
            return False
        left = SYNCED_POLL_PERIOD if deadline is None else deadline - time.monotonic()
        if left <= 0:
            raise CacheSyncTimeoutError(timeout or 0.0, unsynced_details(
                [synced for synced in cache_syncs if not synced()]))
        wait_sync_changed(generation, min(left, SYNCED_POLL_PERIOD))


def unsynced_details(cache_syncs: list[InformerSynced]) -> dict[str, str]:
    """For each function: the informer's resource and last list/watch error, when it is
    an informer's ``has_synced``; its qualified name and "" otherwise."""
    details: dict[str, str] = {}
    for synced in cache_syncs:
        owner = getattr(synced, "__self__", None)
        status = getattr(owner, "status", None)
        if isinstance(status, ReflectorStatus):
            health = status.health(started=True, synced=False)
            details[health.resource] = health.last_error
        else:
            details[getattr(synced, "__qualname__", repr(synced))] = ""
    return details


def wait_for_named_cache_sync(
    controller_name: str, stop: threading.Event, *cache_syncs: InformerSynced
) -> bool:
    """:func:`wait_for_cache_sync` with the upstream log lines."""
    _log.info("Waiting for caches to sync for %s", controller_name)
    if not wait_for_cache_sync(stop, *cache_syncs):
        handle_error(f"unable to sync caches for {controller_name}")
        return False
    _log.info("Caches are synced for %s", controller_name)
    return True


@runtime_checkable
class DoneChecker(Protocol):
    """Something to wait for without polling (Go ``DoneChecker``): :meth:`name` says what,
    :meth:`done` is an event set once it is done (and never cleared)."""

    def name(self) -> str:
        """What is waited for (may be computed: not for a hot path)."""
        ...

    def done(self) -> threading.Event:
        """Set once the activity is done (Go's closed ``Done()`` channel)."""
        ...


def is_done(checker: DoneChecker) -> bool:
    """Whether ``checker`` is done, without blocking (Go ``IsDone``)."""
    return checker.done().is_set()


class SyncChecker:
    """A :class:`DoneChecker` done once ``synced()`` answers True: the event is set by the
    sync change that makes it so (a queue turning synced, a handler finishing its initial
    list: :mod:`client_cache.util._sync_signal`), not by polling. What an informer's and a
    registration's ``has_synced_checker()`` return."""

    def __init__(self, name: str, synced: InformerSynced) -> None:
        self._name = name
        self._synced = synced
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._cancel: Callable[[], None] | None = on_sync_changed(self._check)
        self._check()

    def __repr__(self) -> str:
        return f"<SyncChecker {self._name!r} {'done' if self._event.is_set() else 'waiting'}>"

    def name(self) -> str:
        """What is waited for."""
        return self._name

    def done(self) -> threading.Event:
        """Set once synced."""
        return self._event

    def _check(self) -> None:
        if self._event.is_set() or not self._synced():
            return
        self._event.set()
        self.close()

    def close(self) -> None:
        """Stop listening for sync changes (the informer or the handler stopped: it will
        not sync now); the event stays as it is. Called by their ``stop``, so a checker
        of something that never synced does not outlive it in the process-wide signal's
        listeners."""
        with self._lock:
            cancel, self._cancel = self._cancel, None
        if cancel is not None:
            cancel()


def wait_for(stop: threading.Event, what: str, *checkers: DoneChecker,
             timeout: float | None = None) -> bool:
    """Wait until every checker is done (True) or ``stop`` is set or ``timeout`` seconds
    pass (False), woken only by a checker finishing or by ``stop`` (Go ``WaitFor``, where
    the context carries the stop and the deadline). With ``what``, INFO lines say what
    is waited for, each instance done, and, on giving up, the instances not done."""
    if what:
        _log.info("Waiting for %s", what)
    deadline = None if timeout is None else time.monotonic() + timeout
    woken = threading.Event()
    # every checker's event and the stop event wake this wait when set
    hooks = [on_stop(event, woken.set) for event in (stop, *(c.done() for c in checkers))]
    pending = list(checkers)
    try:
        while True:
            woken.clear()
            for checker in [c for c in pending if is_done(c)]:
                pending.remove(checker)
                if what:
                    _log.info("Done waiting for %s: %s", what, checker.name())
            if not pending:
                return True
            if stop.is_set():
                break
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            woken.wait(left)
    finally:
        for hook in hooks:
            hook.cancel()
    if what:
        _log.info("Timed out waiting for %s: %s", what,
                  ", ".join(sorted(c.name() for c in pending)))
    return False
