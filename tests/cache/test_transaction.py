"""Store transactions and batch processing (client-go v0.35 ``Transaction``,
``processDeltasInBatch``, the informer's ``HandleBatchDeltas``)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from client_cache.api.watch import EventType
from client_cache.controller import ResourceEventHandlerFuncs, process_deltas_in_batch
from client_cache.delta_fifo import Delta, DeltaType, ReplacedAllInfo
from client_cache.errors import ClientCacheError
from client_cache.shared_informer import (
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
)
from client_cache.store import (
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
    new_indexer,
    new_store,
)
from client_cache.testing.fake_controller_source import FakeControllerSource
from client_cache.thread_safe_store import ThreadSafeMap
from client_cache.transaction import (
    ThreadSafeStoreTransaction,
    Transaction,
    TransactionError,
    TransactionStore,
    TransactionType,
)
from tests.fixtures import pod, running

ADD, UPDATE, DELETE = TransactionType.ADD, TransactionType.UPDATE, TransactionType.DELETE


def by_node(obj: Any) -> list[str]:
    node = obj["spec"]["nodeName"]
    if node == "broken":
        raise ValueError("no index for a broken node")
    return [node]


def on_node(name: str, node: str) -> dict[str, Any]:
    return pod(name, "default", spec={"nodeName": node})


def test_a_map_transaction_applies_every_write_in_order() -> None:
    store = ThreadSafeMap({"node": by_node})
    store.add("ns/a", on_node("a", "n1"))
    events = store.subscribe()
    store.transaction(
        ThreadSafeStoreTransaction(Transaction(on_node("b", "n1"), ADD), "ns/b"),
        ThreadSafeStoreTransaction(Transaction(on_node("a", "n2"), UPDATE), "ns/a"),
        ThreadSafeStoreTransaction(Transaction(None, DELETE), "ns/b"),
        ThreadSafeStoreTransaction(Transaction(on_node("c", "n2"), ADD), "ns/c"),
    )
    assert sorted(store.list_keys()) == ["ns/a", "ns/c"]
    assert store.index_keys("node", "n1") == []
    assert sorted(store.index_keys("node", "n2")) == ["ns/a", "ns/c"]
    kinds = [events.get(1.0).type for _ in range(4)]
    assert kinds == [EventType.ADDED, EventType.MODIFIED, EventType.DELETED, EventType.ADDED]


def test_a_failed_write_changes_nothing_and_the_others_still_apply() -> None:
    store = ThreadSafeMap({"node": by_node})
    store.add("ns/a", on_node("a", "n1"))
    with pytest.raises(TransactionError) as caught:
        store.transaction(
            ThreadSafeStoreTransaction(Transaction(on_node("b", "n1"), ADD), "ns/b"),
            ThreadSafeStoreTransaction(Transaction(on_node("a", "broken"), UPDATE), "ns/a"),
            ThreadSafeStoreTransaction(Transaction(on_node("c", "n3"), ADD), "ns/c"),
        )
    err = caught.value
    assert err.successful_indices == [0, 2] and err.total_transactions == 3
    assert len(err.errors) == 1 and "broken" in str(err.errors[0])
    assert str(err).startswith("failed to execute (1/3) transactions failed due to:")
    assert store.get("ns/a")[0]["spec"]["nodeName"] == "n1"  # the failed update left it
    assert sorted(store.index_keys("node", "n1")) == ["ns/a", "ns/b"]
    assert store.index_keys("node", "n3") == ["ns/c"]


def test_a_store_transaction_keys_each_object_and_reports_positions_in_its_input() -> None:
    indexer = new_indexer(meta_namespace_key_func, {"node": by_node})
    assert isinstance(indexer, TransactionStore)
    assert isinstance(new_store(meta_namespace_key_func), TransactionStore)
    unkeyable: dict[str, Any] = {"metadata": {}}  # no name: the key function raises
    with pytest.raises(TransactionError) as caught:
        indexer.transaction(  # type: ignore[attr-defined]
            Transaction(on_node("a", "n1"), ADD),
            Transaction(unkeyable, ADD),
            Transaction(on_node("b", "broken"), ADD),
            Transaction(on_node("c", "n1"), ADD),
        )
    assert caught.value.successful_indices == [0, 3]
    assert caught.value.total_transactions == 4 and len(caught.value.errors) == 2
    assert sorted(indexer.list_keys()) == ["default/a", "default/c"]
    indexer.transaction(Transaction(on_node("a", "n1"), DELETE))  # type: ignore[attr-defined]
    assert indexer.list_keys() == ["default/c"]


def test_a_swap_transaction_returns_what_each_key_held_before_its_write() -> None:
    indexer = new_indexer(meta_namespace_key_func, {"node": by_node})
    first, second = on_node("a", "n1"), on_node("a", "n2")
    indexer.add(first)
    previous, error = indexer.swap_transaction(  # type: ignore[attr-defined]
        Transaction(second, UPDATE),
        Transaction({"metadata": {}}, ADD),  # no key: fails alone
        Transaction(on_node("b", "n1"), ADD),
        Transaction(second, DELETE),
    )
    assert previous == [(first, True), (None, False), (None, False), (second, True)]
    assert error is not None and error.successful_indices == [0, 2, 3]
    assert indexer.list_keys() == ["default/b"]
    assert indexer.swap_transaction() == ([], None)  # type: ignore[attr-defined]


class Recorder:
    """A handler that records each call and what the store held when it came."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.calls: list[tuple[str, str, list[str]]] = []

    def _record(self, kind: str, obj: Any) -> None:
        name = obj.key if isinstance(obj, DeletedFinalStateUnknown) else obj["metadata"]["name"]
        self.calls.append((kind, name, sorted(self.store.list_keys())))

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record("add" if not is_in_initial_list else "add-initial", obj)

    def on_update(self, old: Any, new: Any) -> None:
        assert old is not new
        self._record("update", new)

    def on_delete(self, obj: Any) -> None:
        self._record("delete", obj)


def test_a_batch_is_applied_as_one_transaction_before_any_handler_call() -> None:
    indexer = new_indexer(deletion_handling_meta_namespace_key_func, {"node": by_node})
    indexer.add(on_node("old", "n1"))
    indexer.add(on_node("gone", "n1"))
    handler = Recorder(indexer)
    process_deltas_in_batch(handler, indexer, [
        Delta(DeltaType.REPLACED, on_node("new", "n1")),
        Delta(DeltaType.UPDATED, on_node("old", "n2")),
        Delta(DeltaType.DELETED, DeletedFinalStateUnknown("default/gone", None)),
        Delta(DeltaType.SYNC, on_node("other", "n1")),
    ], True)
    after = ["default/new", "default/old", "default/other"]
    assert handler.calls == [("add-initial", "new", after), ("update", "old", after),
                             ("delete", "default/gone", after),
                             ("add-initial", "other", after)]


def test_a_partly_failed_batch_calls_the_handler_only_for_what_was_applied() -> None:
    indexer = new_indexer(meta_namespace_key_func, {"node": by_node})
    handler = Recorder(indexer)
    with pytest.raises(ClientCacheError, match="not all items in the batch successfully "
                       "processed: failed to execute \\(1/3\\)"):
        process_deltas_in_batch(handler, indexer, [
            Delta(DeltaType.ADDED, on_node("a", "n1")),
            Delta(DeltaType.ADDED, on_node("b", "broken")),
            Delta(DeltaType.ADDED, on_node("c", "n1")),
        ], False)
    assert [(kind, name) for kind, name, _ in handler.calls] == [("add", "a"), ("add", "c")]


def test_a_batch_of_an_unsupported_type_applies_nothing() -> None:
    indexer = new_indexer(meta_namespace_key_func, {})
    handler = Recorder(indexer)
    relist = ReplacedAllInfo([pod("b", "default")], "5", ["default/b"])
    with pytest.raises(ClientCacheError, match="ReplacedAll is not supported in batch"):
        process_deltas_in_batch(handler, indexer, [
            Delta(DeltaType.ADDED, pod("a", "default")),
            Delta(DeltaType.REPLACED_ALL, relist),
        ], False)
    assert indexer.list_keys() == [] and handler.calls == []
    # alone, as a RealFIFO pops it, a whole relist is applied as process_deltas does
    process_deltas_in_batch(handler, indexer, [Delta(DeltaType.REPLACED_ALL, relist)], True)
    assert handler.calls == [("add-initial", "b", ["default/b"])]


class PlainStore:
    """A store without transactions: one write at a time, ``fail`` refused."""

    def __init__(self, fail: str) -> None:
        self.items: dict[str, Any] = {}
        self.fail = fail

    def _write(self, obj: Any) -> None:
        if obj["metadata"]["name"] == self.fail:
            raise ValueError(f"refused {self.fail}")
        self.items[meta_namespace_key_func(obj)] = obj

    add = update = _write

    def delete(self, obj: Any) -> None:
        self.items.pop(meta_namespace_key_func(obj), None)

    def get(self, obj: Any) -> tuple[Any, bool]:
        key = meta_namespace_key_func(obj)
        return self.items.get(key), key in self.items

    def list_keys(self) -> list[str]:
        return list(self.items)


def test_a_store_without_transactions_gets_each_delta_and_one_error_for_all() -> None:
    store = PlainStore(fail="b")
    assert not isinstance(store, TransactionStore)
    handler = Recorder(store)
    with pytest.raises(ClientCacheError, match="unexpected error when handling deltas: "
                       "\\['refused b'\\]"):
        process_deltas_in_batch(handler, store, [  # type: ignore[arg-type]
            Delta(DeltaType.ADDED, pod("a", "default")),
            Delta(DeltaType.ADDED, pod("b", "default")),
            Delta(DeltaType.ADDED, pod("c", "default")),
        ], False)
    # one delta at a time: each call saw the store as it was then
    assert handler.calls == [("add", "a", ["default/a"]),
                             ("add", "c", ["default/a", "default/c"])]


class TransactionOnlyStore(PlainStore):
    """A TransactionStore of a caller's own: ``transaction`` and no ``swap_transaction``;
    it records each transaction's types."""

    def __init__(self) -> None:
        super().__init__(fail="")
        self.seen: list[list[str]] = []

    def transaction(self, *txns: Transaction) -> None:
        self.seen.append([t.type.value for t in txns])
        for txn in txns:
            if txn.type is DELETE:
                self.delete(txn.object)
            else:
                self.add(txn.object)


def test_a_store_with_only_transaction_gets_adds_and_updates_as_read_before() -> None:
    store = TransactionOnlyStore()
    assert isinstance(store, TransactionStore) and not hasattr(store, "swap_transaction")
    store.add(pod("old", "default"))
    handler = Recorder(store)
    process_deltas_in_batch(handler, store, [  # type: ignore[arg-type]
        Delta(DeltaType.UPDATED, pod("old", "default")),
        Delta(DeltaType.ADDED, pod("new", "default")),
        Delta(DeltaType.DELETED, pod("old", "default")),
    ], False)
    # Go's typing of the writes: an Update where the key held an object, else an Add
    assert store.seen == [[UPDATE.value, ADD.value, DELETE.value]]
    after = ["default/new"]
    assert handler.calls == [("update", "old", after), ("add", "new", after),
                             ("delete", "old", after)]


@pytest.mark.parametrize("gate", ["", "false"])
def test_a_real_fifo_informer_processes_its_initial_list_in_batches_unless_gated_off(
        gate: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBE_FEATURE_InOrderInformersBatchProcess", gate)
    source = FakeControllerSource()
    for i in range(20):
        source.add(pod(f"p{i:02d}", "default"))
    informer = new_shared_index_informer_with_options(
        source, None, SharedIndexInformerOptions(use_real_fifo=True, atomic_relist=False))
    batches: list[int] = []  # a per-event RealFIFO: the atomic one lists as one item
    singles: list[int] = []
    handle_batch, handle_one = informer.handle_batch_deltas, informer.handle_deltas

    def batch(deltas: list[Delta], is_in_initial_list: bool) -> None:
        batches.append(len(deltas))
        handle_batch(deltas, is_in_initial_list)

    def one(deltas: Any, is_in_initial_list: bool) -> None:
        singles.append(len(deltas))
        handle_one(deltas, is_in_initial_list)

    informer.handle_batch_deltas = batch  # type: ignore[method-assign]
    informer.handle_deltas = one  # type: ignore[method-assign]
    added: list[str] = []
    done = threading.Event()

    def on_add(obj: Any) -> None:
        added.append(obj["metadata"]["name"])
        if len(added) == 20:
            done.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add))
    with running(informer):
        assert done.wait(5)
        assert added == [f"p{i:02d}" for i in range(20)]  # in order either way
        assert sorted(informer.get_indexer().list_keys()) == [
            f"default/p{i:02d}" for i in range(20)]
        if gate == "":
            assert batches == [20] and singles == []  # the initial list: one batch
        else:
            assert batches == [] and singles == [1] * 20
    source.shutdown()
