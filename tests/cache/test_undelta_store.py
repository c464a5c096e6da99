"""undelta_store.go (undelta_store_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from client_cache import KeyFuncError, new_undelta_store
from tests.cache.test_store import do_test_store
from tests.fixtures import StoreObject, store_key_func


class Recorder:
    def __init__(self) -> None:
        self.pushes: list[list[Any]] = []

    def __call__(self, items: list[Any]) -> None:
        self.pushes.append(items)


def test_undelta_store_is_a_store() -> None:
    """TestUndeltaStore."""
    do_test_store(new_undelta_store(lambda items: None, store_key_func))


def test_update_calls_push() -> None:
    """TestUpdateCallsPush."""
    rec = Recorder()
    store = new_undelta_store(rec, store_key_func)
    store.add(StoreObject("a", "2"))
    store.update(StoreObject("a", "1"))
    assert len(rec.pushes) == 2
    assert rec.pushes[-1] == [StoreObject("a", "1")]


def test_delete_calls_push() -> None:
    """TestDeleteCallsPush: the last push is an empty (non-None) list."""
    rec = Recorder()
    store = new_undelta_store(rec, store_key_func)
    store.add(StoreObject("a", "2"))
    store.delete(StoreObject("a", ""))
    assert len(rec.pushes) == 2
    assert rec.pushes[-1] == [] and rec.pushes[-1] is not None


def test_reads_do_not_call_push() -> None:
    """TestReadsDoNotCallPush."""
    rec = Recorder()
    store = new_undelta_store(rec, store_key_func)
    store.list()
    store.get(StoreObject("a", ""))
    store.get_by_key("a")
    store.list_keys()
    assert rec.pushes == []


def test_replace_calls_push() -> None:
    """TestReplaceCallsPush."""
    rec = Recorder()
    store = new_undelta_store(rec, store_key_func)
    store.replace([StoreObject("a", "1")], "0")
    assert rec.pushes == [[StoreObject("a", "1")]]


def test_failed_write_does_not_push() -> None:
    rec = Recorder()
    store = new_undelta_store(rec, store_key_func)
    with pytest.raises(KeyFuncError):
        store.add("not a store object")
    assert rec.pushes == []
