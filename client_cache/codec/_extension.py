"""The codec's native part, ``client_cache.codec._codec``, loaded once for every codec
module: :data:`codec` (typed by ``_codec.pyi``) and :data:`AVAILABLE`.

The modules that use it read both at call time (``extension.codec.decode``), so a test
can turn the native part off for the whole codec at once (``AVAILABLE = False``, the
``codec_impl`` fixture) and run the Python twins. :mod:`client_cache.util._native` says
when the part is not loaded: not built, built from other sources, or
``CLIENT_CACHE_NATIVE=0``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from client_cache.util import _native as native

__all__ = ["AVAILABLE", "codec"]

if TYPE_CHECKING:
    from client_cache.codec import _codec as codec
else:
    codec = native.load("codec._codec")

AVAILABLE: bool = native.load("codec._codec") is not None
"""Whether the native part is loaded; never use :data:`codec` when it is False."""
