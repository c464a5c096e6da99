"""A process-wide *sync change* signal (a port addition; client-go's
``WaitForCacheSync`` polls every 100 ms instead).

A queue calls :func:`notify_sync_changed` when it has turned synced;
:func:`wait_sync_changed` lets ``wait_for_cache_sync`` sleep until then, and
:func:`on_sync_changed` lets a coroutine's waiter be woken from the notifying thread. It
knows nothing of queues or informers: it is a generation counter behind a condition.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

__all__ = ["notify_sync_changed", "on_sync_changed", "sync_generation", "wait_sync_changed"]

_sync_changed = threading.Condition()
_generation = 0


_listeners: dict[int, Callable[[], None]] = {}
_listener_ids = itertools.count()


def notify_sync_changed() -> None:
    """Wake everything waiting in :func:`wait_sync_changed` and call the
    :func:`on_sync_changed` callbacks."""
    global _generation  # noqa: PLW0603 - a process-wide signal by design
    with _sync_changed:
        _generation += 1
        _sync_changed.notify_all()
        listeners = list(_listeners.values())
    for listener in listeners:
        listener()


def on_sync_changed(callback: Callable[[], None]) -> Callable[[], None]:
    """Call ``callback`` (on the notifying thread; it must not block) at every
    :func:`notify_sync_changed` until the returned function is called."""
    with _sync_changed:
        token = next(_listener_ids)
        _listeners[token] = callback

    def cancel() -> None:
        with _sync_changed:
            _listeners.pop(token, None)

    return cancel


def sync_generation() -> int:
    """A counter bumped by every :func:`notify_sync_changed`."""
    with _sync_changed:
        return _generation


def wait_sync_changed(since: int, timeout: float) -> int:
    """Wait until a sync change newer than ``since`` (or ``timeout``); return the
    generation now."""
    with _sync_changed:
        _sync_changed.wait_for(lambda: _generation != since, timeout)
        return _generation
