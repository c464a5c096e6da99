"""Sharing repeated strings between cached objects (a port addition; Go's decoder gives
each object its own strings too, but a Go string costs 16 bytes plus its bytes, a Python
one 40 to 80 bytes plus its bytes).

Most of a cached object's strings repeat from one object to the next: ``"v1"``,
``"Running"``, ``"True"``, ``"IfNotPresent"``, label values, image names, node names,
timestamps written in the same second. A JSON decoder makes a new ``str`` for every one
(it shares dict keys, not values). :func:`share` walks a freshly decoded object and puts
in place of each such string an equal one it has seen before, so the cache holds one copy.
The list-watch does it to every object it decodes (LIST items, watch events; dicts and
struct mode's structs) unless told not to (``ClientListerWatcher(share_strings=False)``,
or ``CLIENT_CACHE_SHARE_STRINGS=0`` in the environment for every list-watch); a LIST
body is decoded and shared one item at a time (:func:`split_list` says why). Measured on
the embedded server's sample pods: the objects alone (tracemalloc) went from 11,476 to
8,527 bytes per pod as dicts and from 6,957 to 4,243 as structs, for 3-4 us per pod on
top of a 9-12 us decode; a whole informer synced by a LIST of 50,000 pods, in RSS per
pod, from 13,795 to 10,357 as dicts and from 8,733 to 5,570 as structs.

What is shared, and what it costs:

* str values (not dict keys) of 2 to 64 characters, inside dicts, lists, tuples and
  ``msgspec`` structs, walked in place (a struct's tuple is replaced by an equal tuple);
  other objects (``kubernetes`` models among them) are not entered;
* the strings seen are kept in a fixed table of 32,768 entries, two per bucket, the
  most recent first: it never grows (about 2.5 MB when full of typical strings), a string
  that keeps coming back stays, and one seen once is soon replaced. A missed share costs
  nothing but memory;
* the walk is C (``client_cache._sharing``, built when the package is installed where a
  C compiler is). Without it, :data:`AVAILABLE` is False and :func:`share` returns its
  argument untouched: a walk in Python would cost more than the decode it follows;
* objects are changed in place, so only freshly decoded objects nobody else holds yet
  should be given; equal strings are interchangeable, so the values read are the same.
  The walk holds the GIL and runs no Python code (on a free-threaded build, importing the
  C part turns the GIL back on, as CPython does for every extension that does not declare
  otherwise).
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

__all__ = ["AVAILABLE", "SHARE_STRINGS_ENV", "clear_table", "share", "shared_by_default",
           "split_list", "table_stats"]

T = TypeVar("T")

#: The environment variable that turns sharing off for every list-watch when it is "0".
SHARE_STRINGS_ENV = "CLIENT_CACHE_SHARE_STRINGS"

_sharing: Any
try:
    from client_cache import _sharing  # type: ignore[attr-defined, no-redef]
except ImportError:  # pragma: no cover - the package was installed without a C compiler
    _sharing = None

#: Whether the C walker is installed (else :func:`share` does nothing).
AVAILABLE = _sharing is not None


def shared_by_default() -> bool:
    """Whether list-watches share strings by default: the C walker is installed and
    ``CLIENT_CACHE_SHARE_STRINGS`` is not ``0``."""
    return AVAILABLE and os.environ.get(SHARE_STRINGS_ENV, "1").strip() != "0"


def share(obj: T) -> T:
    """``obj`` with its short string values replaced, in place, by equal ones seen
    before (see the module documentation); ``obj`` itself is returned. Untouched when
    the C walker is not installed."""
    if _sharing is None:  # pragma: no cover - depends on the installation
        return obj
    result: T = _sharing.share(obj)
    return result


def split_list(body: bytes) -> tuple[bytes, list[memoryview]] | None:
    """A LIST body as its envelope (the body with its ``items`` array emptied: kind,
    apiVersion, metadata) and each item's JSON, a view into ``body``; None when the body
    is not an object with one ``items`` array, or the C part is not installed.

    Why: decoding a whole LIST body at once and sharing afterwards frees the decoder's
    copies only when all the items exist, scattered among them, so the process keeps the
    memory (a 50,000-pod LIST measured the same RSS with sharing as without). Decoded and
    shared one item at a time, each item's freed copies are reused by the next. Only the
    structure is followed here (strings with their escapes, nesting); the decoder that
    reads the envelope and the items checks them."""
    if _sharing is None:  # pragma: no cover - depends on the installation
        return None
    found = _sharing.list_items(body)
    if found is None:
        return None
    start, end, spans = found
    view = memoryview(body)
    envelope = b"".join((view[:start], b"[]", view[end:]))
    bounds = iter(spans)
    return envelope, [view[s:e] for s, e in zip(bounds, bounds, strict=False)]  # pairs


def table_stats() -> dict[str, int]:
    """The table's counters: ``hits`` (strings replaced), ``misses`` (strings kept and
    remembered), ``held`` (entries in use), ``slots`` and ``max_length``. All 0 when the
    C walker is not installed."""
    if _sharing is None:  # pragma: no cover - depends on the installation
        return {"hits": 0, "misses": 0, "held": 0, "slots": 0, "max_length": 0}
    counters: dict[str, int] = _sharing.stats()
    return counters


def clear_table() -> None:
    """Forget every string the table holds and reset its counters."""
    if _sharing is not None:
        _sharing.clear()

