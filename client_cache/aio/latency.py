"""Keeping an event loop responsive while caches fill (a port addition; Go's runtime has
no global interpreter lock to share).

The informers never run on the user's loop, but they share the process's interpreter
lock with it. Two things hold that lock long enough to stall a loop by tens or hundreds
of milliseconds while a large cache fills:

* decoding one big LIST response (one C call: ~200 ms for 10,000 pods). An informer
  built with ``use_watch_list=True`` (factory or informer options) syncs from a stream of
  one small event per object instead;
* the cyclic garbage collector's full passes over the growing cache (90-200 ms each at
  10,000 pods). :func:`low_latency_sync` pauses it for the sync and then moves what the
  sync built out of its reach.

Both are process-wide trade-offs, so both are the user's choice, never a default.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from client_cache.codec._wire import gc_paused

__all__ = ["low_latency_sync"]

class _Tuning:
    """What the outermost :func:`low_latency_sync` block saved and chose."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.interval = 0.005
        self.freeze = True


_tuning = _Tuning()


@contextmanager
def low_latency_sync(*, switch_interval: float | None = 0.0001,
                     freeze: bool = True) -> Iterator[None]:
    """Run a cache sync with the process tuned for event-loop latency, and put it back
    afterwards::

        with low_latency_sync():
            stop = factory.start()
            await wait_for_cache_sync_async(factory, timeout=60)

    Inside the block the cyclic garbage collector is paused (the same process-wide pause
    the reflector holds over a LIST or a watch-list's initial events,
    :func:`client_cache.codec._wire.gc_paused`, so the two nest;
    reference counting still frees everything without cycles, which is all decoded JSON)
    and the interpreter's thread switch interval is ``switch_interval`` seconds (None
    leaves it; Python's default is 5 ms), so a waiting loop gets the lock back sooner from
    the informer threads. The lock has no queue: while the reflector, the controller and
    the handler threads all have work, the loop may wait a switch interval for each of
    them before its turn, several times per loop iteration (after the selector, after
    each read of its wake-up pipe). Worse, a waiting thread only asks the holder to let
    go once the lock has changed hands not once in a whole interval, and the handler
    threads hand it over many times a millisecond, so the loop mostly gets it by winning a
    race. The default, 0.1 ms, was measured on this project's 2-core machine over
    10,000-pod syncs from a watch-list with an ``AsyncHandler`` and an ``events()``
    consumer (2026-11-26): worst loop lag at most 9 ms in 38 syncs, against 5-16 ms at
    0.5 ms (2 of 8 syncs over 10 ms); the sync took 4-10 % longer. At 1 ms, 10-17 ms
    stalls came in about one sync in ten.

    On exit, with ``freeze`` (the default), ``gc.freeze()`` moves every object alive into
    the permanent generation, so no later collection walks the cache: without it the
    first collection after the block walks everything the sync built, the same stall
    again, just later. The price: objects frozen are not examined for cycles until
    ``gc.unfreeze()``. Cached objects are still freed when replaced or deleted (they hold
    no cycles), but a factory shut down and dropped afterwards may be kept by a cycle
    through its threads: a process that carries on without it should call
    ``gc.unfreeze()`` after its shutdown. Then the collector comes back on (if it was on
    when the pause began and no other pause holds it) and the switch interval is
    restored.

    The settings are process-wide. Blocks may nest or overlap from several threads: the
    first entry saves and sets, the last exit applies ``freeze`` (the first entry's
    choice) and restores. Raises ValueError for a switch interval not above zero."""
    if switch_interval is not None and not switch_interval > 0:
        raise ValueError(f"switch_interval must be above zero, not {switch_interval!r}")
    t = _tuning
    with gc_paused():
        with t.lock:
            if t.depth == 0:
                t.interval = sys.getswitchinterval()
                t.freeze = freeze
                if switch_interval is not None:
                    sys.setswitchinterval(switch_interval)
            t.depth += 1
        try:
            yield
        finally:
            with t.lock:
                t.depth -= 1
                if t.depth == 0:
                    if t.freeze:
                        gc.freeze()
                    sys.setswitchinterval(t.interval)
