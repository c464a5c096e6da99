"""Exceptions raised by client_cache.

Go returns error values; this port raises exceptions. Every exception the library raises on
purpose derives from :class:`ClientCacheError`, so ``except ClientCacheError`` catches all of
them. Where an exception also means what a builtin means (bad value, wrong type) it derives
from that builtin too, so generic handlers keep working.

This module exports them all (it defines none and imports only the two modules that
do, which import nothing of the cache layer but :mod:`client_cache.api.meta`); they are
written in two: :mod:`client_cache.cache_errors`
(the library's own) and :mod:`client_cache.api.errors` (errors shaped like a Kubernetes
``Status``, with their constructors and predicates, Go's ``apimachinery/pkg/api/errors``).

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

from client_cache.api.errors import (
    ApiStatusError,
    describe_error,
    find_api_error,
    from_api_exception,
    from_status,
    has_status_cause,
    is_already_exists,
    is_bad_request,
    is_conflict,
    is_connection_refused,
    is_expired,
    is_forbidden,
    is_gone,
    is_internal_error,
    is_not_found,
    is_resource_expired,
    is_timeout,
    is_too_large_resource_version,
    is_too_many_requests,
    is_unauthorized,
    new_already_exists,
    new_bad_request,
    new_conflict,
    new_gone,
    new_internal_error,
    new_not_found,
    new_resource_expired,
    new_status_error,
    new_timeout_error,
    new_too_large_resource_version,
    new_too_many_requests,
    reason_for_error,
    server_unreachable,
    suggests_client_delay,
)
from client_cache.cache_errors import (
    CacheSyncTimeoutError,
    ClientCacheError,
    FIFOClosedError,
    HeapClosedError,
    IndexerConflictError,
    IndexFuncError,
    IndexNotFoundError,
    InvalidKeyError,
    KeyFuncError,
    MetaAccessError,
    ObjectNotFoundError,
    RequeueError,
    SelectorParseError,
    StopRequestedError,
    ZeroLengthDeltasError,
)

__all__ = [
    "ApiStatusError",
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
    "describe_error",
    "find_api_error",
    "from_api_exception",
    "from_status",
    "has_status_cause",
    "is_already_exists",
    "is_bad_request",
    "is_conflict",
    "is_connection_refused",
    "is_expired",
    "is_forbidden",
    "is_gone",
    "is_internal_error",
    "is_not_found",
    "server_unreachable",
    "is_resource_expired",
    "is_timeout",
    "is_too_large_resource_version",
    "is_too_many_requests",
    "is_unauthorized",
    "new_already_exists",
    "new_bad_request",
    "new_conflict",
    "new_gone",
    "new_internal_error",
    "new_not_found",
    "new_resource_expired",
    "new_status_error",
    "new_timeout_error",
    "new_too_large_resource_version",
    "new_too_many_requests",
    "reason_for_error",
    "suggests_client_delay",
]
