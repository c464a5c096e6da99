"""The exceptions the codec raises: every malformed input, whichever decoder (native or
Python) reads it, raises a :class:`DecodeError`, a ``ValueError`` (so ``except
ValueError`` keeps working) and a :class:`~client_cache.errors.ClientCacheError`.
"""

from __future__ import annotations

from typing import Any

from client_cache.util.errors import ClientCacheError

__all__ = ["DecodeError", "WatchDecodeError"]


class DecodeError(ClientCacheError, ValueError):
    """A body, event or frame is not what its encoding allows (Go: the error a
    ``runtime.Decoder`` returns)."""


class WatchDecodeError(DecodeError):
    """A watch frame is not an event. ``events`` holds the events of the same chunk
    decoded before it: a stream watcher delivers them first, then the error as an
    ``ERROR`` event, and ends the watch (Go's ``ClientWatchDecoding`` reporter)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.events: list[Any] = []
