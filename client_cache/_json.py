"""The JSON decoder for LIST bodies and watch events.

``orjson`` when it is installed (``pip install client_cache[fast]``), else the standard
library's ``json``. Measured by ``make bench`` (bench/bench_wire.py) on a 3 KB pod event:
stdlib ``json.loads`` about 36 us, ``orjson.loads`` about 15 us, ``msgspec`` about 16 us;
orjson is the better-known of the two fast ones and needs no schema, so it is the choice.
Both produce the same plain dicts and lists.

A large body (a LIST of thousands of objects) turns into millions of new dicts and lists
at once, and Python's cyclic garbage collector would run many times during the decode,
each time walking every object already alive (the whole cache): a 40 MB list of 20k pods
took 0.91 s with the collector on and 0.29 s with it off. :func:`loads` therefore pauses
the collector while it decodes a body of :data:`GC_PAUSE_THRESHOLD` bytes or more (and
only if it was on; the JSON it builds has no reference cycles, so nothing is missed).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

__all__ = ["BACKEND", "GC_PAUSE_THRESHOLD", "loads"]

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
    if len(data) < GC_PAUSE_THRESHOLD or not gc.isenabled():
        return _decode(data)
    gc.disable()
    try:
        return _decode(data)
    finally:
        gc.enable()
