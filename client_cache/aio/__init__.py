"""The asyncio bridge: use informers, listers, work queues and the controller runtime
from an event loop (a port addition; Go has no event loop to bridge to).

The library stays threaded: informers list, watch and deliver on their own threads,
which never run on, nor block, the user's event loop. What this package adds:

* :class:`AsyncHandler`: an event handler made of ``async def`` callbacks, run on the
  user's loop in order, one at a time per handler;
* :func:`events`: ``async for event in events(informer)``, bounded, with a stated
  overflow policy;
* :func:`wait_for_cache_sync_async`, for informers, ``has_synced`` functions and
  factories alike (the cache layer imports nothing of this package: these are functions
  of the informer here, not methods of it there);
* ``await queue.get_async()`` and ``async for key in queue`` on every work queue;
* the controller runtime takes ``async def reconcile`` (and an async ``error_policy``),
  run on ``ControllerConfig.loop`` or on a loop the runtime owns, and ``async def``
  per-object daemons and timers (:mod:`client_cache.runtime.daemons`: a daemon awaits
  ``ctx.sleep(seconds)`` and is cancelled at the end of its grace);
* :class:`LoopCaller`, the piece all of these stand on;
* :func:`await_condition_async`: wait for one object's condition on a watch;
* :func:`low_latency_sync`: keep the loop responsive while a large cache fills (with
  ``use_watch_list=True`` on the factory or informer).

Listers answer from memory without blocking: call them directly from coroutines.
Writes go through an async client (``kubernetes.aio`` or ``kubernetes_asyncio``); see
``examples/async_operator.py``.
"""

from client_cache.aio.bridge import CallCancelledError, LoopCaller, is_async_callable
from client_cache.aio.events import EventsOverflowError, InformerEvent, Overflow, events
from client_cache.aio.handler import AsyncHandler
from client_cache.aio.latency import low_latency_sync
from client_cache.aio.sync import wait_for_cache_sync_async
from client_cache.aio.wait import await_condition_async

__all__ = [
    "AsyncHandler",
    "await_condition_async",
    "CallCancelledError",
    "EventsOverflowError",
    "InformerEvent",
    "LoopCaller",
    "Overflow",
    "events",
    "is_async_callable",
    "low_latency_sync",
    "wait_for_cache_sync_async",
]
