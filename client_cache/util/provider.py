"""One process-wide, replaceable provider (of metrics), the documented exception to "no
mutable module state": :class:`ProviderSlot` holds it behind a lock."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

__all__ = ["ProviderSlot"]

P = TypeVar("P")


class ProviderSlot(Generic[P]):
    """The current provider; ``default`` until :meth:`set` replaces it."""

    def __init__(self, default: P) -> None:
        self._lock = threading.Lock()
        self._default = default
        self._provider = default

    def set(self, provider: P) -> None:
        """Use ``provider`` from now on (for what is built afterwards)."""
        with self._lock:
            self._provider = provider

    def get(self) -> P:
        """The current provider."""
        with self._lock:
            return self._provider

    def reset(self) -> None:
        """Back to the default."""
        self.set(self._default)
