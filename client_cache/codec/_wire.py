"""The JSON decoder for LIST bodies and watch events.

``orjson`` when it is installed (``pip install client_cache[fast]``), else the standard
library's ``json``. Measured by ``make bench-micro`` (bench/bench_wire.py) on a 3 KB pod event:
stdlib ``json.loads`` about 36 us, ``orjson.loads`` about 15 us, ``msgspec`` about 16 us;
orjson is the better-known of the two fast ones and needs no schema, so it is the choice.
Both produce the same plain dicts and lists.

A large body (a LIST of thousands of objects) turns into millions of new dicts and lists
at once, and Python's cyclic garbage collector would run many times during the decode,
each time walking every object already alive (the whole cache): a 40 MB list of 20k pods
took 0.91 s with the collector on and 0.29 s with it off. :func:`loads` therefore pauses
the collector while it decodes a body of :data:`GC_PAUSE_THRESHOLD` bytes or more (and
only if it was on; the JSON it builds has no reference cycles, so nothing is missed).
The reflector holds the same pause (:func:`gc_paused`) over a whole LIST and the queue's
``replace``, and over a watch-list's initial events and their ``replace``: a sync of
50,000 pods took 7.8 s with collections and 6.4 s without (the collector is process-wide,
so other threads run without it for those seconds too).

When the last pause of a sync ends, everything it built is promoted to the collector's
oldest generation without being walked (:func:`gc_paused`, ``promote``): otherwise the
first young collections after the pause would walk the whole new cache, two or three
times, while the informer still delivers the sync (0.40-0.48 s of a 30,000-pod sync of
1.4-1.65 s from a socket-speed source, measured with ``py-spy``; 1.0-1.35 s after).
"""

from __future__ import annotations

import contextlib
import gc
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["BACKEND", "GC_PAUSE_THRESHOLD", "Loads", "gc_paused", "loads"]

Loads = Callable[[bytes], Any]
"""A function decoding a whole body (JSON bytes) into wire objects, as :func:`loads`
does; the codec's decoders and readers take one."""

#: Bodies at least this long are decoded with the garbage collector paused.
GC_PAUSE_THRESHOLD = 256 * 1024

_decode: Callable[[bytes | str], Any]

try:
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    _decode = json.loads
    BACKEND = "json"
else:
    _decode = orjson.loads
    BACKEND = "orjson"


def loads(data: bytes | str) -> Any:
    """Decode one JSON document (see the module documentation)."""
    if len(data) < GC_PAUSE_THRESHOLD:
        return _decode(data)
    with gc_paused():
        return _decode(data)


_pause_lock = threading.Lock()
_pauses = 0
_paused_by_us = False
_promote = False  # a block of the current pause asked for promotion


@contextlib.contextmanager
def gc_paused(promote: bool = False) -> Iterator[None]:
    """Keep the cyclic garbage collector off for the block, if it was on when the first of
    any nested or concurrent blocks began; it comes back on when the last one ends. The
    reflector holds it over a whole LIST and the queue's ``replace``: building the cache
    allocates millions of acyclic dicts and lists, and every collection triggered meanwhile
    would walk all of them again (a 50,000-pod sync spent a quarter of its time there).

    ``promote`` (the reflector's sync asks for it): when the last block ends, before the
    collector comes back on, every object it tracks is moved to its oldest generation
    without being examined (``gc.freeze()`` then at once ``gc.unfreeze()``, which splice
    the generations' lists). What a sync built is long-lived; left in the youngest
    generation it would be walked by the next young collection, then again by the middle
    one, while the informer is still delivering the sync. Nothing stays frozen; cyclic
    garbage any thread made just before the end waits for the next full pass instead of a
    young one. Not done when fewer objects are young than a young collection takes
    anyway (the first threshold: as after :func:`client_cache.aio.low_latency_sync`,
    which freezes everything and so empties the young generation), nor when the process has
    frozen objects of its own (``gc.get_freeze_count()`` is not 0, e.g. before a fork):
    the unfreeze would release them too. That check walks the frozen objects (60 ms
    for 320,000 seen), so a process that keeps some pays it once per sync. A port addition:
    Go's collector has no generations."""
    global _pauses, _paused_by_us, _promote  # noqa: PLW0603 - one process-wide pause
    with _pause_lock:
        if _pauses == 0:
            _paused_by_us = gc.isenabled()
            if _paused_by_us:
                gc.disable()
        _pauses += 1
        _promote = _promote or promote
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0:
                if _promote and _paused_by_us:
                    _promote_young()
                _promote = False
                if _paused_by_us:
                    _paused_by_us = False
                    gc.enable()


def _promote_young() -> None:
    """Move every tracked object to the collector's oldest generation unexamined, when
    the young generation holds more than a young collection takes and the process has
    no frozen objects of its own (see :func:`gc_paused`)."""
    threshold = gc.get_threshold()[0]
    if 0 < threshold <= gc.get_count()[0] and gc.get_freeze_count() == 0:
        gc.freeze()  # every generation into the permanent one, unexamined
        gc.unfreeze()  # and back into the oldest: promoted without a walk
