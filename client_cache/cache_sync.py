"""Waiting for caches to sync (Go ``WaitForCacheSync`` and ``WaitForNamedCacheSync`` in
``tools/cache/shared_informer.go``), re-exported by :mod:`client_cache.shared_informer`.

A port choice: :func:`wait_for_cache_sync` wakes as soon as a queue or handler turns
synced (:mod:`client_cache.util._sync_signal`) instead of polling every 100 ms; it still
re-checks every :data:`SYNCED_POLL_PERIOD` for arbitrary ``synced`` functions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from client_cache.errors import CacheSyncTimeoutError
from client_cache.reflector_status import ReflectorStatus
from client_cache.util._sync_signal import sync_generation, wait_sync_changed
from client_cache.util.runtime import handle_error

__all__ = [
    "SYNCED_POLL_PERIOD",
    "InformerSynced",
    "unsynced_details",
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
