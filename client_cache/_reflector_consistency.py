"""The watch-list consistency check a reflector runs when asked (Go
``tools/cache/reflector_data_consistency_detector.go``).

With ``KUBE_WATCHLIST_INCONSISTENCY_DETECTOR`` set to a true value, a reflector that synced
from a watch-list compares what it streamed with an exact LIST at the same
resourceVersion, and fails (Go panics) when they differ: a test-time check that costs one
more LIST per sync.
"""

from __future__ import annotations

import logging
from typing import Any

from client_cache.api import meta
from client_cache.api.lists import RESOURCE_VERSION_MATCH_EXACT, ListOptions, list_items
from client_cache.errors import ClientCacheError
from client_cache.listwatch import ListerWatcher
from client_cache.store import meta_namespace_key_func
from client_cache.util._env import env_true

__all__ = [
    "DataInconsistencyError",
    "check_watch_list_consistency_if_requested",
]


class DataInconsistencyError(ClientCacheError):
    """The watch-list result differs from an exact LIST at the same resourceVersion."""


def check_watch_list_consistency_if_requested(
    name: str, rv: str, lister_watcher: ListerWatcher, streamed: list[Any],
    log: logging.Logger | logging.LoggerAdapter[logging.Logger],
) -> None:
    """When ``KUBE_WATCHLIST_INCONSISTENCY_DETECTOR`` is true and ``rv`` names a version,
    LIST exactly at ``rv`` and raise :class:`DataInconsistencyError` unless it holds the
    same objects (uid, resourceVersion, key) as ``streamed``; the reflector ``name``
    appears in the warning and the error (Go
    ``checkWatchListDataConsistencyIfRequested``)."""
    if not env_true("KUBE_WATCHLIST_INCONSISTENCY_DETECTOR") or rv in ("", "0"):
        return
    log.warning("data consistency check for %s is enabled, this will result in an "
                "additional call to the API server.", name)
    listed = list_items(lister_watcher.list(ListOptions(
        resource_version=rv, resource_version_match=RESOURCE_VERSION_MATCH_EXACT)))
    if _summary(listed) != _summary(streamed):
        raise DataInconsistencyError(f"data inconsistency detected for {name}, panicking!")


def _summary(objs: list[Any]) -> list[tuple[str, str, str]]:
    out = []
    for obj in objs:
        acc = meta.accessor(obj)
        out.append((acc.uid, acc.resource_version, meta_namespace_key_func(obj)))
    return sorted(out)
