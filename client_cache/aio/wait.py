"""Waiting for an object's condition from a coroutine (kube-rs ``await_condition`` is
async; here it is the threaded :func:`client_cache.informers.wait.await_condition` on a
worker thread)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from client_cache.api.schema import GroupVersionResource
from client_cache.informers.conditions import Condition
from client_cache.informers.wait import await_condition

__all__ = ["await_condition_async"]


async def await_condition_async(source: Any, name: str, condition: Condition, *,
                                namespace: str = "",
                                resource: GroupVersionResource | None = None,
                                timeout: float | None = None) -> Any:
    """:func:`~client_cache.informers.wait.await_condition` without blocking the event
    loop: the wait runs on a thread of the loop's default executor and ``condition`` is
    asked there (keep it quick and free of the loop's objects). Cancelling the awaiting
    task ends the wait (its watch stopped, its handler removed) and raises
    ``CancelledError``."""
    stop = threading.Event()
    future = asyncio.get_running_loop().run_in_executor(None, lambda: await_condition(
        source, name, condition, namespace=namespace, resource=resource, timeout=timeout,
        stop=stop))
    try:
        return await future
    except asyncio.CancelledError:
        stop.set()  # the thread's wait ends at once and cleans up; its answer is dropped
        raise
