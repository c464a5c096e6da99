"""The base class of every exception client_cache raises on purpose: the bottom of the
package's error classes, so that each layer (util, the codec, the cache and the layers
above it) derives its errors from one class without importing a layer above it.
:mod:`client_cache.errors` exports it with the others and says which Go error each
stands for.
"""

from __future__ import annotations

__all__ = ["ClientCacheError"]


class ClientCacheError(Exception):
    """Base class of every exception client_cache raises on purpose: ``except
    ClientCacheError`` catches them all. Where one also means what a builtin means (a bad
    value, a wrong type, a missing entry) it derives from that builtin too."""
