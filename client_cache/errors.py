"""Exceptions raised by client_cache.

Go returns error values; this port raises exceptions. Every exception the library raises on
purpose derives from :class:`ClientCacheError`, so ``except ClientCacheError`` catches all of
them. Where an exception also means what a builtin means (bad value, wrong type) it derives
from that builtin too, so generic handlers keep working.

Mapping from client-go:

=================================  ===========================================
Go                                 Python
=================================  ===========================================
``cache.KeyError{Obj, Err}``       :class:`KeyFuncError` (``obj``, ``err``)
``"object has no meta: %v"``       :class:`MetaAccessError`
``"unexpected key format: %q"``    :class:`InvalidKeyError`
``"Index with name %s does..."``   :class:`IndexNotFoundError`
``"indexer conflict: %v"``         :class:`IndexerConflictError`
panic in ``updateIndices``         :class:`IndexFuncError` (the store is unchanged)
labels/fields parse errors         :class:`SelectorParseError`
``apierrors.StatusError``          :class:`ApiStatusError`
``ErrFIFOClosed``                  :class:`FIFOClosedError`
``ErrRequeue{Err}``                :class:`RequeueError`
``ErrZeroLengthDeltasObject``      :class:`ZeroLengthDeltasError`
``"heap is closed"``               :class:`HeapClosedError`
``"object not found"`` (heap)      :class:`ObjectNotFoundError`
=================================  ===========================================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "ApiStatusError",
    "ClientCacheError",
    "FIFOClosedError",
    "HeapClosedError",
    "ObjectNotFoundError",
    "RequeueError",
    "ZeroLengthDeltasError",
    "IndexFuncError",
    "IndexNotFoundError",
    "IndexerConflictError",
    "InvalidKeyError",
    "KeyFuncError",
    "MetaAccessError",
    "SelectorParseError",
    "is_not_found",
    "new_not_found",
]


class ClientCacheError(Exception):
    """Base class of every exception client_cache raises on purpose."""


class KeyFuncError(ClientCacheError):
    """A key function could not compute the key of ``obj`` (Go ``cache.KeyError``).

    ``err`` is the underlying exception; it is also set as ``__cause__`` so that the
    exception chain plays the role of Go's ``errors.Unwrap`` / ``errors.Is``.
    """

    def __init__(self, obj: Any, err: BaseException) -> None:
        self.obj = obj
        self.err = err
        super().__init__(f"couldn't create key for object {_short_repr(obj)}: {err}")
        self.__cause__ = err

    def unwrap(self) -> BaseException:
        """Return the wrapped error, as Go's ``Unwrap``."""
        return self.err


class MetaAccessError(ClientCacheError, TypeError):
    """The object carries no usable ``metadata`` (Go: ``"object has no meta: %v"``)."""

    def __init__(self, obj: Any, detail: str) -> None:
        self.obj = obj
        self.obj_type = type(obj)
        super().__init__(
            f"object has no meta: {type(obj).__module__}.{type(obj).__qualname__}: {detail}"
        )


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


class SelectorParseError(ClientCacheError, ValueError):
    """A label or field selector string (or requirement) is invalid."""


class ApiStatusError(ClientCacheError):
    """An error with the shape of a Kubernetes ``Status`` (Go ``apierrors.StatusError``).

    ``code`` is the HTTP status code, ``reason`` the machine-readable ``StatusReason``
    (``"NotFound"``, ``"Expired"``, ...), ``message`` the human text and ``details`` the
    ``StatusDetails`` as a wire dict (``name``, ``group``, ``kind``, ``causes``...).
    """

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        super().__init__(message)

    def status(self) -> dict[str, Any]:
        """The wire form of the ``Status`` object this error stands for."""
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = dict(self.details)
        return out


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


def new_not_found(group: str, resource: str, name: str) -> ApiStatusError:
    """Build the 404 error listers raise (Go ``apierrors.NewNotFound``).

    The message is ``<resource>[.<group>] "<name>" not found``.
    """
    qualified = f"{resource}.{group}" if group else resource
    return ApiStatusError(
        404,
        "NotFound",
        f'{qualified} "{name}" not found',
        {"name": name, "group": group, "kind": resource},
    )


def is_not_found(err: BaseException) -> bool:
    """True when ``err`` is an :class:`ApiStatusError` with reason NotFound (or code 404
    and no known reason)."""
    if not isinstance(err, ApiStatusError):
        return False
    return err.reason == "NotFound" or (err.reason in ("", "Unknown") and err.code == 404)


def _short_repr(obj: Any, limit: int = 200) -> str:
    text = repr(obj)
    return text if len(text) <= limit else text[: limit - 3] + "..."
