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
"""

from __future__ import annotations

import contextlib
import gc
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["BACKEND", "GC_PAUSE_THRESHOLD", "gc_paused", "loads"]

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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off for the block, if it was on when the first of
    any nested or concurrent blocks began; it comes back on when the last one ends. The
    reflector holds it over a whole LIST and the queue's ``replace``: building the cache
    allocates millions of acyclic dicts and lists, and every collection triggered meanwhile
    would walk all of them again (a 50,000-pod sync spent a quarter of its time there)."""
    global _pauses, _paused_by_us  # noqa: PLW0603 - one process-wide pause counter
    with _pause_lock:
        if _pauses == 0:
            _paused_by_us = gc.isenabled()
            if _paused_by_us:
                gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _paused_by_us:
                _paused_by_us = False
                gc.enable()
