"""Several store writes applied under one lock (Go ``tools/cache/store.go`` and
``thread_safe_store.go`` transactions, client-go v0.35+).

An informer on a :class:`~client_cache.the_real_fifo.RealFIFO` pops its items in batches
and applies each batch to its indexer as one transaction
(:func:`~client_cache.controller.process_deltas_in_batch`): one lock for the whole batch,
so a reader never waits between its items and the informer does not take the lock once
per object. A store that can do this is a :class:`TransactionStore`; the stores of
:func:`~client_cache.store.new_store` and :func:`~client_cache.store.new_indexer` are.

Each write stands alone: one that fails (a key function or an index function raising)
leaves the store as it was for that object and does not stop the others. The store then
raises :class:`TransactionError`, which lists the positions of the writes that were
applied (Go returns the same ``*TransactionError``; a Python store raises it).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

from client_cache.errors import ClientCacheError

__all__ = [
    "ThreadSafeStoreTransaction",
    "Transaction",
    "TransactionError",
    "TransactionStore",
    "TransactionType",
]


class TransactionType(str, enum.Enum):
    """What one write of a transaction does (Go ``TransactionType``)."""

    ADD = "Add"
    UPDATE = "Update"
    DELETE = "Delete"


class Transaction(NamedTuple):
    """One write of a store transaction: ``object`` added, updated or deleted (Go
    ``Transaction``); the store computes its key. A named tuple: a batch makes one per
    object."""

    object: Any
    type: TransactionType


class ThreadSafeStoreTransaction(NamedTuple):
    """One write of a :class:`~client_cache.thread_safe_store.ThreadSafeMap` transaction,
    its key already computed (Go ``ThreadSafeStoreTransaction``)."""

    transaction: Transaction
    key: str


class TransactionError(ClientCacheError):
    """Some writes of a transaction failed (Go ``TransactionError``):
    ``successful_indices`` are the positions, in the order given, of the writes that were
    applied; ``errors`` the failures, in order; ``total_transactions`` how many writes
    there were."""

    def __init__(self, successful_indices: Sequence[int], total_transactions: int,
                 errors: Sequence[BaseException]) -> None:
        self.successful_indices = list(successful_indices)
        self.total_transactions = total_transactions
        self.errors = list(errors)
        super().__init__(
            f"failed to execute ({len(self.errors)}/{total_transactions}) transactions "
            f"failed due to: {[str(err) for err in self.errors]}")


@runtime_checkable
class TransactionStore(Protocol):
    """A store that applies several writes under one lock (Go ``TransactionStore``)."""

    def transaction(self, *txns: Transaction) -> None:
        """Apply ``txns`` in order under one lock; raises :class:`TransactionError` when
        any failed (the others are applied)."""
        ...
