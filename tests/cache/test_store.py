"""store.go: Store over ThreadSafeStore, key functions, KeyError (store_test.go)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod

from client_cache import (
    DeletedFinalStateUnknown,
    ExplicitKey,
    IndexFuncError,
    InvalidKeyError,
    KeyFuncError,
    MetaAccessError,
    Store,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
    new_indexer,
    new_store,
    split_meta_namespace_key,
)
from client_cache.testing import check_indexer_consistency
from tests.fixtures import StoreObject, by_val, pod, store_key_func


def do_test_store(store: Store) -> None:
    """Upstream ``doTestStore`` with our own values."""
    store.add(StoreObject("k1", "alpha"))
    item, exists = store.get(StoreObject("k1", ""))
    assert exists and item.val == "alpha"

    store.update(StoreObject("k1", "beta"))
    item, exists = store.get(StoreObject("k1", ""))
    assert exists and item.val == "beta"

    store.delete(StoreObject("k1", ""))
    item, exists = store.get(StoreObject("k1", ""))
    assert not exists and item is None

    store.add(StoreObject("x", "v1"))
    store.add(StoreObject("y", "v2"))
    store.add(StoreObject("z", "v3"))
    assert sorted(o.val for o in store.list()) == ["v1", "v2", "v3"]

    store.replace([StoreObject("p", "pp"), StoreObject("q", "qq")], "0")
    assert sorted(o.val for o in store.list()) == ["pp", "qq"]
    assert sorted(store.list_keys()) == ["p", "q"]


def test_cache() -> None:
    do_test_store(new_store(store_key_func))


def test_index() -> None:
    """Upstream ``TestIndex`` / ``doTestIndex``."""
    indexer = new_indexer(store_key_func, {"by_val": by_val})
    expected = {"red": {"a", "c"}, "green": {"e"}, "blue": {"g"}}
    for value, ids in expected.items():
        for id_ in ids:
            indexer.add(StoreObject(id_, value))
    for value, ids in expected.items():
        found = {o.id for o in indexer.index("by_val", StoreObject("probe", value))}
        assert found == ids
    check_indexer_consistency(indexer)


def test_key_error_unwraps() -> None:
    """Upstream ``TestKeyError``: the wrapped error is reachable through the chain."""
    inner = RuntimeError("boom")
    err = KeyFuncError(100, inner)
    assert err.unwrap() is inner
    assert err.__cause__ is inner
    nested = KeyFuncError(100, KeyFuncError(100, inner))
    chain = []
    cur: BaseException | None = nested
    while cur is not None:
        chain.append(cur)
        cur = cur.__cause__
    assert inner in chain
    assert str(err) == "couldn't create key for object 100: boom"


def test_store_key_error_leaves_store_unchanged() -> None:
    store = new_store(meta_namespace_key_func)
    store.add(pod("keep", "ns"))
    bad = {"no": "metadata"}
    for op in (store.add, store.update, store.delete, store.get):
        with pytest.raises(KeyFuncError) as info:
            op(bad)
        assert isinstance(info.value.err, MetaAccessError)
        assert info.value.obj is bad
    with pytest.raises(KeyFuncError):
        store.replace([pod("new", "ns"), bad], "7")
    assert store.list_keys() == ["ns/keep"]


def test_swap_stores_and_returns_what_was_there() -> None:
    """swap stores an object as add does and returns what get would have returned
    before; a key error or an index error changes nothing."""
    def picky(obj: Any) -> list[str]:
        if obj.val == "bad":
            raise ValueError("cannot index bad")
        return [obj.val]

    indexer = new_indexer(store_key_func, {"by_val": by_val, "picky": picky})
    first = StoreObject("a", "red")
    assert indexer.swap(first) == (None, False)
    second = StoreObject("a", "blue")
    old, existed = indexer.swap(second)
    assert existed and old is first
    assert indexer.get_by_key("a") == (second, True)
    assert indexer.index_keys("by_val", "blue") == ["a"]
    assert indexer.index_keys("by_val", "red") == []
    with pytest.raises(IndexFuncError):
        indexer.swap(StoreObject("a", "bad"))
    with pytest.raises(KeyFuncError):
        new_store(meta_namespace_key_func).swap({"no": "metadata"})
    assert indexer.get_by_key("a") == (second, True)
    assert indexer.index_keys("by_val", "blue") == ["a"]
    check_indexer_consistency(indexer)


def test_replace_later_duplicate_wins_and_rebuilds_indices() -> None:
    indexer = new_indexer(store_key_func, {"by_val": by_val})
    indexer.add(StoreObject("old", "gone"))
    indexer.replace([StoreObject("a", "one"), StoreObject("a", "two"), StoreObject("b", "one")],
                    "12")
    assert sorted(indexer.list_keys()) == ["a", "b"]
    assert indexer.get_by_key("a")[0].val == "two"
    assert indexer.index_keys("by_val", "one") == ["b"]
    assert indexer.index_keys("by_val", "two") == ["a"]
    assert indexer.index_keys("by_val", "gone") == []
    assert "gone" not in indexer.list_index_func_values("by_val")
    check_indexer_consistency(indexer)


def test_replace_index_error_leaves_store_unchanged() -> None:
    def picky(obj: Any) -> list[str]:
        if obj.val == "bad":
            raise ValueError("cannot index bad")
        return [obj.val]

    indexer = new_indexer(store_key_func, {"picky": picky})
    indexer.add(StoreObject("a", "x"))
    with pytest.raises(IndexFuncError) as info:
        indexer.replace([StoreObject("b", "y"), StoreObject("c", "bad")], "3")
    assert info.value.index_name == "picky" and info.value.key == "c"
    assert indexer.list_keys() == ["a"]
    assert indexer.index_keys("picky", "x") == ["a"]
    assert indexer.list_index_func_values("picky") == ["x"]


def test_delete_missing_is_noop_and_get_by_key_never_raises() -> None:
    store = new_store(meta_namespace_key_func)
    store.delete(pod("ghost", "ns"))
    assert store.get_by_key("a/b/c") == (None, False)
    store.resync()  # a no-op for plain stores
    assert store.list() == []


def test_stored_none_is_found() -> None:
    store = new_store(lambda obj: "fixed")
    store.add(None)
    assert store.get_by_key("fixed") == (None, True)


def test_meta_namespace_key_func_shapes() -> None:
    assert meta_namespace_key_func(pod("a", "ns")) == "ns/a"
    assert meta_namespace_key_func(pod("node-1")) == "node-1"
    model = V1Pod(metadata=V1ObjectMeta(name="m", namespace="team"))
    assert meta_namespace_key_func(model) == "team/m"
    assert meta_namespace_key_func(V1Pod(metadata=V1ObjectMeta(name="c"))) == "c"
    # an empty name is not an error, as in Go
    assert meta_namespace_key_func({"metadata": {}}) == ""
    # ExplicitKey passes through untouched
    key = ExplicitKey("some/explicit")
    assert meta_namespace_key_func(key) == "some/explicit"
    assert type(meta_namespace_key_func(key)) is str


@pytest.mark.parametrize(
    "bad",
    [
        {},
        {"metadata": None},
        {"metadata": "text"},
        "a plain string",
        42,
        V1Pod(metadata=None),
        {"metadata": {"name": 5}},
        {"metadata": {"name": "x", "namespace": ["list"]}},
    ],
)
def test_meta_namespace_key_func_rejects_objects_without_meta(bad: Any) -> None:
    with pytest.raises(MetaAccessError) as info:
        meta_namespace_key_func(bad)
    assert "object has no meta" in str(info.value)
    assert type(bad).__name__ in str(info.value)


def test_deletion_handling_key_func() -> None:
    tomb = DeletedFinalStateUnknown("ns/gone", None)
    assert deletion_handling_meta_namespace_key_func(tomb) == "ns/gone"
    assert deletion_handling_meta_namespace_key_func(pod("here", "ns")) == "ns/here"
    with pytest.raises(MetaAccessError):
        deletion_handling_meta_namespace_key_func(object())


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("name", ("", "name")),
        ("ns/name", ("ns", "name")),
        ("/name", ("", "name")),
        ("", ("", "")),
        ("ns/", ("ns", "")),
    ],
)
def test_split_meta_namespace_key(key: str, expected: tuple[str, str]) -> None:
    assert split_meta_namespace_key(key) == expected


@pytest.mark.parametrize("key", ["a/b/c", "//", "ns/name/extra/more"])
def test_split_meta_namespace_key_malformed(key: str) -> None:
    with pytest.raises(InvalidKeyError) as info:
        split_meta_namespace_key(key)
    assert str(info.value) == f"unexpected key format: {key!r}"
    assert isinstance(info.value, ValueError)


def test_split_round_trips_key_func() -> None:
    for obj in (pod("a", "ns"), pod("b")):
        ns, name = split_meta_namespace_key(meta_namespace_key_func(obj))
        assert (ns, name) == (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
