"""The JSON decoder for LIST bodies and watch events.

``orjson`` when it is installed (``pip install client_cache[fast]``), else the standard
library's ``json``. Measured by ``make bench`` (bench/bench_wire.py) on a 3 KB pod event:
stdlib ``json.loads`` about 36 us, ``orjson.loads`` about 15 us, ``msgspec`` about 16 us;
orjson is the better-known of the two fast ones and needs no schema, so it is the choice.
Both produce the same plain dicts and lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["BACKEND", "loads"]

loads: Callable[[bytes | str], Any]

try:
    import orjson
except ImportError:  # pragma: no cover - depends on the environment
    loads = json.loads
    BACKEND = "json"
else:
    loads = orjson.loads
    BACKEND = "orjson"
