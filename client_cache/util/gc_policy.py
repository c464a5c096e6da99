"""Fewer full passes of the cyclic garbage collector while caches run (a port addition;
Go's collector does not walk a Python heap).

A cache keeps every object it holds alive for as long as the object is current, and each
watch event replaces one object by a newly decoded one. Python's collector promotes the
new objects to its oldest generation and, once a quarter of that generation is new, walks
all of it, the whole cache included. ``make bench-micro`` (``bench/bench_gc.py``)
measures it: on this project's machine, under load, 10,000 cached pods and 60,000
MODIFIED events from the replay source to one handler took 5.3 s of CPU with the default
thresholds (19 full passes, about two thirds of it), 1.7 s with the collector off and
2.3-2.7 s with full passes ten times rarer.

So while any reflector runs, :func:`spaced_full_collections` multiplies the collector's
third threshold (``gc.get_threshold()[2]``: how many middle-generation passes come before
a full one may run; 10 by default) by :data:`SPACING`. Young garbage is still found as
soon as before; only cyclic garbage that already lived through two passes waits longer
for a full pass. ``gc.collect()`` still does a full pass at once.

The factor then follows what full passes find (a ``gc.callbacks`` hook): after a full pass
that freed fewer than :data:`FEW_COLLECTED` objects it doubles, up to
:data:`MAX_SPACING`; after one that freed more it goes back to :data:`SPACING`. A cache
that only churns (each event replaces an acyclic object, which reference counting frees)
gives the full passes nothing to find: 10,000 cached pods and 100,000 mixed events from
the replay source to one handler saw 7 full passes of about 130 ms each at a factor of
10 (2 of them the benchmark's own ``gc.collect()``), which freed 48 objects in all. With
the factor adapting, the events went through at 17.6-23.7k/s (median 22.1k) against
16.8-20.0k/s (median 18.1k) at a fixed 10 (5 alternated runs each). A program whose
cycles do outlive the young passes keeps the factor at 10.

This is process-wide, so it is bounded and undone: it is set when the first reflector
starts and put back when the last one stops, unless something else changed the threshold
meanwhile (then that value stays). It is set even while the collector is paused (as
inside :func:`client_cache.aio.low_latency_sync`, where informers are typically started),
so it holds once the collector is back on; nothing is changed when the first threshold is
0 (automatic collection off). Turn it off with :func:`set_enabled` (``False``) or the
environment variable ``CLIENT_CACHE_GC_SPACING=0`` before the informers start.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FEW_COLLECTED", "MAX_SPACING", "SPACING", "active", "enabled", "factor",
           "set_enabled", "spaced_full_collections"]

#: The factor applied to the collector's third threshold while caches run.
SPACING = 10
#: The most the factor grows to while full passes find (almost) nothing.
MAX_SPACING = 100
#: A full pass that frees fewer objects than this did not pay for its walk.
FEW_COLLECTED = 1000


class _State:
    """The count of running blocks and what the first of them changed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.enabled = os.environ.get("CLIENT_CACHE_GC_SPACING", "1") != "0"
        self.saved: int | None = None  # the third threshold before the first block
        self.set_to: int | None = None  # what the first block set it to
        self.factor = SPACING  # the current factor (see the module documentation)


_state = _State()


def enabled() -> bool:
    """Whether running reflectors space out full collections (see the module
    documentation)."""
    return _state.enabled


def active() -> int:
    """How many :func:`spaced_full_collections` blocks are running (one per running
    reflector)."""
    with _state.lock:
        return _state.users


def factor() -> int:
    """The factor the third threshold is multiplied by while blocks run (:data:`SPACING`
    to :data:`MAX_SPACING`; see the module documentation)."""
    return _state.factor


def set_enabled(value: bool) -> None:
    """Turn the spacing on or off for blocks entered from now on; blocks already running
    keep what they set until the last of them ends."""
    with _state.lock:
        _state.enabled = value


@contextmanager
def spaced_full_collections() -> Iterator[None]:
    """Space out the collector's full passes for the block (nested and concurrent blocks
    share one change; see the module documentation). The reflector runs inside one."""
    _enter()
    try:
        yield
    finally:
        _exit()


def _enter() -> None:
    with _state.lock:
        _state.users += 1
        if _state.users > 1 or not _state.enabled:
            return
        first, second, third = gc.get_threshold()
        if first == 0:
            return
        _state.factor = SPACING
        _state.saved, _state.set_to = third, third * SPACING
        gc.set_threshold(first, second, _state.set_to)
        gc.callbacks.append(_after_collection)


def _exit() -> None:
    with _state.lock:
        _state.users -= 1
        if _state.users > 0 or _state.saved is None:
            return
        saved, set_to = _state.saved, _state.set_to
        _state.saved = _state.set_to = None
        _state.factor = SPACING
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(_after_collection)
        first, second, third = gc.get_threshold()
        if third == set_to:
            gc.set_threshold(first, second, saved)


def _after_collection(phase: str, info: dict[str, int]) -> None:
    """The ``gc.callbacks`` hook: after a full pass, double the factor (up to
    :data:`MAX_SPACING`) when it freed fewer than :data:`FEW_COLLECTED` objects, else put it
    back to :data:`SPACING`. It runs inside the collector, in whatever thread allocated, so
    it never waits: when the lock is taken (by another thread, or by this one, which
    collected while holding it) this pass is not counted."""
    if phase != "stop" or info.get("generation") != 2:
        return
    if not _state.lock.acquire(blocking=False):
        return
    try:
        if _state.saved is None or _state.set_to is None:
            return  # the last block ended
        few = info.get("collected", 0) < FEW_COLLECTED
        factor = min(_state.factor * 2, MAX_SPACING) if few else SPACING
        first, second, third = gc.get_threshold()
        if factor == _state.factor or third != _state.set_to:
            return  # nothing to change, or someone else set the threshold: theirs stands
        _state.factor = factor
        _state.set_to = _state.saved * factor
        gc.set_threshold(first, second, _state.set_to)
    finally:
        _state.lock.release()
