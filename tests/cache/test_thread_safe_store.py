"""thread_safe_store.go (thread_safe_store_test.go) plus the port's safety guarantees."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from client_cache import (
    IndexerConflictError,
    IndexFuncError,
    IndexNotFoundError,
    ThreadSafeMap,
    new_indexer,
    new_thread_safe_store,
)
from client_cache.testing import check_indexer_consistency
from tests.fixtures import StoreObject, by_val, store_key_func


def test_delete_removes_empty_sets_from_index() -> None:
    """Upstream TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex."""
    store = new_thread_safe_store({"self": lambda obj: [obj]}, {})
    store.add("key-one", "key-one")
    assert store.index_keys("self", "key-one") == ["key-one"]
    assert store.list_index_func_values("self") == ["key-one"]
    store.delete("key-one")
    assert store.list_index_func_values("self") == []
    assert store.index_keys("self", "key-one") == []


def test_add_keeps_non_empty_set_post_delete_from_index() -> None:
    """Upstream TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex."""
    store = new_thread_safe_store({"const": lambda obj: ["bucket"]}, {})
    store.add("stay", "stay")
    store.add("leave", "leave")
    assert store.index_keys("const", "bucket") == ["leave", "stay"]
    store.delete("leave")
    assert store.list_index_func_values("const") == ["bucket"]
    assert store.index_keys("const", "bucket") == ["stay"]


def test_indexing_functions_with_multiple_values() -> None:
    """Upstream TestThreadSafeStoreIndexingFunctionsWithMultipleValues (same sequence)."""
    store = new_thread_safe_store({"split": lambda obj: obj.split(",")}, {})

    def check(expected: dict[str, list[str]]) -> None:
        for value, keys in expected.items():
            assert store.index_keys("split", value) == keys, value
        present = {v for v, keys in expected.items() if keys}
        assert set(store.list_index_func_values("split")) == present

    store.add("k1", "red")
    store.add("k2", "blue")
    check({"red": ["k1"], "blue": ["k2"]})
    store.update("k2", "red,blue")
    check({"red": ["k1", "k2"], "blue": ["k2"]})
    store.update("k1", "red,blue")
    check({"red": ["k1", "k2"], "blue": ["k1", "k2"]})
    store.add("k3", "red,blue,green")
    check({"red": ["k1", "k2", "k3"], "blue": ["k1", "k2", "k3"], "green": ["k3"]})
    store.update("k1", "red")
    check({"red": ["k1", "k2", "k3"], "blue": ["k2", "k3"], "green": ["k3"]})
    store.update("k2", "blue")
    check({"red": ["k1", "k3"], "blue": ["k2", "k3"], "green": ["k3"]})
    store.delete("k1")
    check({"red": ["k3"], "blue": ["k2", "k3"], "green": ["k3"]})
    store.delete("k3")
    check({"red": [], "blue": ["k2"], "green": []})


def test_update_touches_only_changed_values() -> None:
    calls: list[str] = []

    def tracking(obj: str) -> list[str]:
        calls.append(obj)
        return [obj.split(":", maxsplit=1)[0]]

    store = new_thread_safe_store({"prefix": tracking}, {})
    store.add("a", "same:1")
    entries_before = store._indices["prefix"]["same"]  # the value's entries themselves
    store.update("a", "same:2")
    # the old object is not re-indexed (values are remembered); the value's entries stay,
    # holding the new object
    assert calls == ["same:1", "same:2"]
    assert store._indices["prefix"]["same"] is entries_before
    assert store.index_keys("prefix", "same") == ["a"]
    assert store.by_index("prefix", "same") == ["same:2"]


def test_stale_index_entries_removed_even_if_object_mutated_in_place() -> None:
    store = new_thread_safe_store({"val": lambda obj: [obj["v"]]}, {})
    obj = {"v": "before"}
    store.add("k", obj)
    obj["v"] = "mutated"  # forbidden, but must not corrupt the index
    store.update("k", {"v": "after"})
    assert store.list_index_func_values("val") == ["after"]


def test_unknown_index_name() -> None:
    store = new_thread_safe_store({"v": lambda obj: [obj]}, {})
    for call in (
        lambda: store.index("nope", "x"),
        lambda: store.by_index("nope", "x"),
        lambda: store.index_keys("nope", "x"),
    ):
        with pytest.raises(IndexNotFoundError) as info:
            call()
        assert str(info.value) == "Index with name nope does not exist"
    assert store.list_index_func_values("nope") == []
    assert store.by_index("v", "unknown-value") == []


def test_index_func_error_on_add_leaves_store_unchanged() -> None:
    def fragile(obj: Any) -> list[str]:
        if obj == "explode":
            raise RuntimeError("index func failed")
        return [obj]

    store = new_thread_safe_store({"ok": lambda obj: ["all"], "fragile": fragile}, {})
    store.add("k", "fine")
    with pytest.raises(IndexFuncError) as info:
        store.update("k", "explode")
    assert info.value.key == "k" and info.value.index_name == "fragile"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert store.get("k") == ("fine", True)
    assert store.index_keys("fragile", "fine") == ["k"]
    assert store.index_keys("ok", "all") == ["k"]
    with pytest.raises(IndexFuncError):
        store.add("new", "explode")
    assert store.list_keys() == ["k"]
    assert store.index_keys("ok", "all") == ["k"]


def test_index_func_returning_a_string_is_rejected() -> None:
    store = new_thread_safe_store({"bad": lambda obj: "abc"}, {})
    with pytest.raises(IndexFuncError, match="not a list of str"):
        store.add("k", "v")
    assert store.list_keys() == []


def test_add_indexers_on_non_empty_store() -> None:
    indexer = new_indexer(store_key_func, {"by_val": by_val})
    indexer.add(StoreObject("a", "x"))
    indexer.add(StoreObject("b", "y"))
    indexer.add_indexers({"by_id": lambda obj: [obj.id]})
    assert indexer.index_keys("by_id", "a") == ["a"]
    assert indexer.index_keys("by_val", "y") == ["b"]
    assert sorted(indexer.get_indexers()) == ["by_id", "by_val"]
    check_indexer_consistency(indexer)


def test_add_indexers_conflict_and_failure_register_nothing() -> None:
    indexer = new_indexer(store_key_func, {"by_val": by_val})
    indexer.add(StoreObject("a", "x"))
    with pytest.raises(IndexerConflictError) as info:
        indexer.add_indexers({"by_val": by_val, "fresh": by_val})
    assert str(info.value) == "indexer conflict: ['by_val']"
    assert sorted(indexer.get_indexers()) == ["by_val"]

    def failing(obj: Any) -> list[str]:
        raise KeyError("no")

    with pytest.raises(IndexFuncError):
        indexer.add_indexers({"fresh": by_val, "failing": failing})
    assert sorted(indexer.get_indexers()) == ["by_val"]
    with pytest.raises(IndexNotFoundError):
        indexer.by_index("fresh", "x")


def test_get_indexers_returns_a_copy() -> None:
    indexer = new_indexer(store_key_func, {"by_val": by_val})
    got = indexer.get_indexers()
    got["extra"] = by_val
    assert list(indexer.get_indexers()) == ["by_val"]


def test_reads_are_snapshots() -> None:
    indexer = new_indexer(store_key_func, {"by_val": by_val})
    indexer.add(StoreObject("a", "x"))
    listed, keys = indexer.list(), indexer.list_keys()
    by_index, idx_keys = indexer.by_index("by_val", "x"), indexer.index_keys("by_val", "x")
    values = indexer.list_index_func_values("by_val")
    indexer.add(StoreObject("b", "x"))
    indexer.delete(StoreObject("a", ""))
    indexer.replace([StoreObject("z", "q")], "9")
    assert [o.id for o in listed] == ["a"] and keys == ["a"]
    assert [o.id for o in by_index] == ["a"] and idx_keys == ["a"]
    assert values == ["x"]


def test_replace_copies_the_given_mapping() -> None:
    store = new_thread_safe_store({}, {})
    items = {"a": 1}
    store.replace(items, "5")
    items["b"] = 2
    assert store.list_keys() == ["a"]


def test_initial_indices_must_be_empty() -> None:
    assert len(new_thread_safe_store({}, {"x": {}})) == 0
    with pytest.raises(ValueError):
        new_thread_safe_store({}, {"x": {"v": {"k"}}})


def test_index_with_multiple_values_unions() -> None:
    store = new_thread_safe_store({"split": lambda obj: obj.split(",")}, {})
    store.add("a", "p,q")
    store.add("b", "q,r")
    store.add("c", "s")
    assert sorted(store.index("split", "p,r")) == ["p,q", "q,r"]
    assert sorted(store.index("split", "q")) == ["p,q", "q,r"]
    assert store.index("split", "zz") == []


def test_concurrent_writers_and_readers_keep_indices_consistent() -> None:
    """4 writers and 4 readers on one indexer for 2 s; then every index matches a rescan."""
    indexer = new_indexer(
        store_key_func,
        {
            "by_val": by_val,
            "by_parts": lambda obj: sorted(set(obj.val.split("-"))),
        },
    )
    stop = threading.Event()
    errors: list[BaseException] = []
    writes = [0] * 4
    reads = [0] * 4
    values = ["a", "b", "c", "a-b", "b-c", "a-b-c", "d"]

    def writer(n: int) -> None:
        rnd = random.Random(n)
        try:
            while not stop.is_set():
                key = f"k{rnd.randrange(200)}"
                op = rnd.random()
                if op < 0.45:
                    indexer.add(StoreObject(key, rnd.choice(values)))
                elif op < 0.8:
                    indexer.update(StoreObject(key, rnd.choice(values)))
                elif op < 0.98:
                    indexer.delete(StoreObject(key, ""))
                else:
                    indexer.replace(
                        [StoreObject(f"k{i}", rnd.choice(values)) for i in range(50)], "1"
                    )
                writes[n] += 1
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    def reader(n: int) -> None:
        rnd = random.Random(100 + n)
        try:
            while not stop.is_set():
                value = rnd.choice(values)
                for obj in indexer.by_index("by_val", value):
                    assert obj.val == value
                for key in indexer.index_keys("by_parts", "b"):
                    assert isinstance(key, str)
                for obj in indexer.index("by_parts", StoreObject("probe", "c")):
                    assert "c" in obj.val.split("-")
                indexer.list()
                reads[n] += 1
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [
        threading.Thread(target=writer, args=(i,), name=f"test-writer-{i}", daemon=True)
        for i in range(4)
    ] + [
        threading.Thread(target=reader, args=(i,), name=f"test-reader-{i}", daemon=True)
        for i in range(4)
    ]
    for t in threads:
        t.start()
    # The test's duration is the workload, not a synchronisation: the threads are
    # stopped by the event and joined below.
    stop.wait(2.0)
    stop.set()
    for t in threads:
        t.join(5)
        assert not t.is_alive()
    assert not errors, errors
    assert sum(writes) > 1000 and sum(reads) > 100, (writes, reads)
    check_indexer_consistency(indexer)


def test_consistency_helper_detects_corruption() -> None:
    indexer = new_indexer(store_key_func, {"by_val": by_val})
    indexer.add(StoreObject("a", "x"))
    check_indexer_consistency(indexer)
    storage = indexer._storage  # type: ignore[attr-defined]
    entries = storage._indices["by_val"]["x"]
    entries["ghost"] = entries["a"]
    with pytest.raises(AssertionError, match="by_val"):
        check_indexer_consistency(indexer)
    del entries["ghost"]
    stored = entries["a"]
    entries["a"] = StoreObject("a", "x")  # an equal object that is not the stored one
    with pytest.raises(AssertionError, match="not stored"):
        check_indexer_consistency(indexer)
    entries["a"] = stored
    storage._indices["by_val"]["stale"] = {"a": stored}
    with pytest.raises(AssertionError, match="values"):
        check_indexer_consistency(indexer)


# --- kube-rs Store guarantees (seed 000): atomic replace, readiness ------------------------

def test_replace_keeps_readers_on_the_previous_complete_state() -> None:
    """While a replace builds the new content (here: an index function held on purpose),
    readers get the old content and old index, complete; then everything at once."""
    building = threading.Event()
    release = threading.Event()

    def slow_index(obj: str) -> list[str]:
        if obj.startswith("new"):
            building.set()
            assert release.wait(5)
        return [obj[:3]]

    store = new_thread_safe_store({"prefix": slow_index}, {})
    store.replace({f"old{i}": f"old{i}" for i in range(5)}, "1")
    writer = threading.Thread(
        target=store.replace, args=({f"new{i}": f"new{i}" for i in range(5)}, "2"),
        name="test-replace", daemon=True)
    writer.start()
    assert building.wait(5)
    assert sorted(store.list_keys()) == [f"old{i}" for i in range(5)]  # not blocked
    assert sorted(store.by_index("prefix", "old")) == [f"old{i}" for i in range(5)]
    assert store.by_index("prefix", "new") == []
    release.set()
    writer.join(5)
    assert sorted(store.list_keys()) == [f"new{i}" for i in range(5)]
    assert store.by_index("prefix", "old") == []
    assert store.list_index_func_values("prefix") == ["new"]


def test_replace_picks_up_indexers_added_meanwhile() -> None:
    building = threading.Event()
    release = threading.Event()

    def slow_index(obj: str) -> list[str]:
        if obj == "new":
            building.set()
            assert release.wait(5)
        return [obj]

    store = new_thread_safe_store({"self": slow_index}, {})
    writer = threading.Thread(target=store.replace, args=({"new": "new"}, "1"),
                              name="test-replace", daemon=True)
    writer.start()
    assert building.wait(5)
    store.add_indexers({"upper": lambda obj: [obj.upper()]})
    release.set()
    writer.join(5)
    assert store.by_index("upper", "NEW") == ["new"]
    assert store.by_index("self", "new") == ["new"]


def test_wait_until_ready() -> None:
    store = new_indexer(store_key_func, {})
    assert not store.is_ready()
    assert store.wait_until_ready(timeout=0.01) is False
    stop = threading.Event()
    results: list[bool] = []
    waiter = threading.Thread(target=lambda: results.append(store.wait_until_ready(stop=stop)),
                              name="test-ready", daemon=True)
    waiter.start()
    stop.set()  # wakes the waiter: not ready
    waiter.join(1)
    assert not waiter.is_alive() and results == [False]
    waiter = threading.Thread(target=lambda: results.append(store.wait_until_ready()),
                              name="test-ready", daemon=True)
    waiter.start()
    store.add(StoreObject("a", "1"))  # a single write is not a complete list
    assert not store.is_ready()
    store.replace([StoreObject("a", "1")])
    waiter.join(1)
    assert not waiter.is_alive() and results == [False, True]
    assert store.wait_until_ready(timeout=0) is True


def test_mark_ready_by_the_owner() -> None:
    store = new_indexer(store_key_func, {})
    store.mark_ready()
    store.mark_ready()  # idempotent
    assert store.is_ready() and store.wait_until_ready(0)


def test_with_an_index_error_handler_a_failing_index_leaves_out_only_that_object() -> None:
    """Issue 59 (an informer's store): the object is stored and found through the other
    indices; the failing index skips it; the handler is told (index, key, error) for adds,
    updates, replace and add_indexers alike. Without a handler the store raises and
    changes nothing, as before."""
    def bad(obj: Any) -> list[str]:
        if obj.get("bad"):
            raise ValueError("cannot read")
        return [obj["ns"]]

    told: list[tuple[str, str | None, str]] = []
    store = ThreadSafeMap({"ns": lambda o: [o["ns"]], "bad": bad})
    store.set_index_error_handler(lambda i, k, e: told.append((i, k, str(e))))
    store.add("a", {"ns": "x", "bad": True})
    store.add("b", {"ns": "x"})
    assert store.get("a") == ({"ns": "x", "bad": True}, True)
    assert sorted(store.index_keys("ns", "x")) == ["a", "b"]
    assert store.index_keys("bad", "x") == ["b"]
    assert told == [("bad", "a", "cannot read")]
    store.replace({"c": {"ns": "y", "bad": True}}, "1")
    assert store.list_keys() == ["c"] and store.index_keys("bad", "y") == []
    store.add_indexers({"also": bad})
    assert [t[:2] for t in told] == [("bad", "a"), ("bad", "c"), ("also", "c")]
    strict = ThreadSafeMap({"bad": bad})
    with pytest.raises(IndexFuncError):
        strict.add("a", {"ns": "x", "bad": True})
    assert strict.list_keys() == []
