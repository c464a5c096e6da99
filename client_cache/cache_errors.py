"""The exceptions client_cache's cache raises for its own reasons: bad keys and objects,
index misuse, closed queues, requeues and sync timeouts; it also names the few defined
below it (:class:`StopRequestedError` in :mod:`client_cache.util.errors`,
:class:`SelectorParseError` in :mod:`client_cache.api.labels`,
:class:`MetaAccessError` in :mod:`client_cache.api.meta`). :mod:`client_cache.errors` says
which Go error each stands for and exports them all.

Every one derives from :class:`ClientCacheError`; where one also means what a builtin means
(a bad value, a wrong type, a missing entry) it derives from that builtin too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from client_cache.api.labels import SelectorParseError
from client_cache.api.meta import MetaAccessError, describe
from client_cache.util.errors import ClientCacheError, StopRequestedError

__all__ = [
    "CacheSyncTimeoutError",
    "ClientCacheError",
    "FIFOClosedError",
    "HeapClosedError",
    "IndexFuncError",
    "IndexNotFoundError",
    "IndexerConflictError",
    "InvalidKeyError",
    "KeyFuncError",
    "MetaAccessError",
    "ObjectNotFoundError",
    "RequeueError",
    "SelectorParseError",
    "StopRequestedError",
    "ZeroLengthDeltasError",
]


class KeyFuncError(ClientCacheError):
    """A key function could not compute the key of ``obj`` (Go ``cache.KeyError``).

    ``err`` is the underlying exception; it is also set as ``__cause__`` so that the
    exception chain plays the role of Go's ``errors.Unwrap`` / ``errors.Is``.
    """

    def __init__(self, obj: Any, err: BaseException) -> None:
        self.obj = obj
        self.err = err
        super().__init__(f"couldn't create key for object {describe(obj)}: {err}")
        self.__cause__ = err

    def unwrap(self) -> BaseException:
        """Return the wrapped error, as Go's ``Unwrap``."""
        return self.err


class InvalidKeyError(ClientCacheError, ValueError):
    """A cache key is not of the form ``name`` or ``namespace/name``."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"unexpected key format: {key!r}")


class IndexNotFoundError(ClientCacheError, LookupError):
    """An index name was used that has no registered index function."""

    def __init__(self, index_name: str) -> None:
        self.index_name = index_name
        super().__init__(f"Index with name {index_name} does not exist")


class IndexerConflictError(ClientCacheError, ValueError):
    """``add_indexers`` was given names that are already registered."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = sorted(names)
        super().__init__(f"indexer conflict: {self.names}")


class IndexFuncError(ClientCacheError):
    """An index function raised while indexing an object.

    client-go panics in this case; the port raises instead and guarantees that the store and
    its indices are exactly as they were before the call.
    """

    def __init__(self, index_name: str, key: str | None, err: BaseException) -> None:
        self.index_name = index_name
        self.key = key
        self.err = err
        where = f"for key {key!r} " if key is not None else ""
        super().__init__(
            f"unable to calculate an index entry {where}on index {index_name!r}: {err}"
        )
        self.__cause__ = err


class CacheSyncTimeoutError(ClientCacheError, TimeoutError):
    """Caches did not sync in time; ``unsynced`` maps each resource that did not (as
    people write it) to its last list/watch error ("" when none was seen: still listing
    or not started)."""

    def __init__(self, timeout: float, unsynced: dict[str, str]) -> None:
        details = "; ".join(f"{name} ({error or 'no error seen'})"
                            for name, error in unsynced.items())
        super().__init__(f"caches not synced after {timeout:g} s: {details}")
        self.timeout = timeout
        self.unsynced = unsynced


class FIFOClosedError(ClientCacheError):
    """``pop`` was called on (or was waiting in) a closed queue (Go ``ErrFIFOClosed``)."""

    def __init__(self, message: str = "DeltaFIFO: manipulating with closed queue") -> None:
        super().__init__(message)


class RequeueError(ClientCacheError):
    """Raised by a ``pop`` process function to put the item back in the queue
    (Go ``ErrRequeue``).

    ``pop`` re-adds the item (unless its key was queued again meanwhile) and then raises
    ``err`` if one is given, or returns normally when ``err`` is ``None``.
    """

    def __init__(self, err: BaseException | None = None) -> None:
        self.err = err
        super().__init__(
            str(err) if err is not None
            else "the popped item should be requeued without returning an error"
        )


class ZeroLengthDeltasError(ClientCacheError):
    """A key was asked of an empty ``Deltas`` (Go ``ErrZeroLengthDeltasObject``)."""

    def __init__(self) -> None:
        super().__init__("0 length Deltas object; can't get key")


class HeapClosedError(ClientCacheError):
    """The heap is closed (Go's ``"heap is closed"`` error)."""

    def __init__(self) -> None:
        super().__init__("heap is closed")


class ObjectNotFoundError(ClientCacheError, LookupError):
    """``Heap.delete`` of a key that is not in the heap (Go ``"object not found"``)."""

    def __init__(self) -> None:
        super().__init__("object not found")
