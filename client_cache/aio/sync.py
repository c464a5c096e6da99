"""Waiting for caches to sync from a coroutine (a port addition)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from client_cache.cache_sync import SYNCED_POLL_PERIOD, unsynced_details
from client_cache.errors import CacheSyncTimeoutError
from client_cache.util._sync_signal import on_sync_changed

__all__ = ["wait_for_cache_sync_async"]


async def wait_for_cache_sync_async(*cache_syncs: Callable[[], bool] | object,
                                    timeout: float | None = None) -> None:
    """Wait until every informer (or ``has_synced`` function) given has synced, without
    blocking the event loop; a :class:`~client_cache.informers.SharedInformerFactory`
    given stands for the informers it has started::

        await wait_for_cache_sync_async(pods, nodes.has_synced, timeout=30)
        await wait_for_cache_sync_async(factory, timeout=60)

    It checks at once, then whenever a queue or handler turns synced, and at least every
    100 ms (as :func:`~client_cache.cache_sync.wait_for_cache_sync`). ``timeout``
    (seconds; None waits as long as it takes) raises
    :class:`~client_cache.errors.CacheSyncTimeoutError` naming what did not sync, with its
    last list/watch error. Cancel the awaiting task to stop waiting (the informers keep
    running: they are stopped by their own stop event)."""
    checks = [_has_synced(x) for x in _expanded(cache_syncs)]
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else time.monotonic() + timeout
    changed = asyncio.Event()

    def wake() -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nothing waits any more
            loop.call_soon_threadsafe(changed.set)

    cancel = on_sync_changed(wake)
    try:
        while True:
            changed.clear()
            if all(check() for check in checks):
                return
            left = SYNCED_POLL_PERIOD if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise CacheSyncTimeoutError(timeout or 0.0, unsynced_details(
                    [check for check in checks if not check()]))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(changed.wait(), min(left, SYNCED_POLL_PERIOD))
    finally:
        cancel()


def _expanded(cache_syncs: tuple[Callable[[], bool] | object, ...],
              ) -> list[Callable[[], bool] | object]:
    """``cache_syncs`` with each factory (anything with ``started_informers``) replaced
    by the informers it has started."""
    out: list[Callable[[], bool] | object] = []
    for x in cache_syncs:
        started = getattr(x, "started_informers", None)
        out.extend(started() if callable(started) else [x])
    return out


def _has_synced(x: Callable[[], bool] | object) -> Callable[[], bool]:
    """An informer's (or a registration's) ``has_synced``, or ``x`` itself when it is a
    function."""
    method = getattr(x, "has_synced", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    if callable(x):
        return x
    raise TypeError(f"not an informer nor a has_synced function: {type(x).__name__}")
