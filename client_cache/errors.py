"""Exceptions raised by client_cache.

Go returns error values; this port raises exceptions. Every exception the library raises on
purpose derives from :class:`ClientCacheError`, so ``except ClientCacheError`` catches all of
them. Where an exception also means what a builtin means (bad value, wrong type) it derives
from that builtin too, so generic handlers keep working.

This module exports them all; they are written in two: :mod:`client_cache.cache_errors`
(the library's own) and :mod:`client_cache.status_errors` (errors shaped like a Kubernetes
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

from client_cache import cache_errors, status_errors
from client_cache.cache_errors import *  # noqa: F403 - this module re-exports them
from client_cache.status_errors import *  # noqa: F403

__all__: list[str] = []
__all__ += cache_errors.__all__
__all__ += status_errors.__all__
