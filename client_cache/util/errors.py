"""The base class of every exception client_cache raises on purpose, and the stop every
layer raises: the bottom of the package's error classes, so that each layer (util, the
codec, api, client, the cache and the layers above it) derives its errors from one class
without importing a layer above it.
:mod:`client_cache.errors` exports it with the others and says which Go error each
stands for.
"""

from __future__ import annotations

__all__ = ["ClientCacheError", "StopRequestedError"]


class ClientCacheError(Exception):
    """Base class of every exception client_cache raises on purpose: ``except
    ClientCacheError`` catches them all. Where one also means what a builtin means (a bad
    value, a wrong type, a missing entry) it derives from that builtin too."""


class StopRequestedError(ClientCacheError):
    """Work was cut short because its stop event was set (Go ``errorStopRequested`` in the
    reflector, ``ctx.Err()`` in the pager). A fresh instance is raised each time: a shared
    one would keep the frames of its last traceback, and everything they refer to, alive."""

    def __init__(self, message: str = "stop requested") -> None:
        super().__init__(message)
