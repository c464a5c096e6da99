"""expiration_cache.go (expiration_cache_test.go) plus TTL behaviour under freezegun."""

from __future__ import annotations

import queue
from typing import Any

import pytest
from freezegun import freeze_time

from client_cache import (
    ExpirationCache,
    FakeExpirationPolicy,
    KeyFuncError,
    TimestampedEntry,
    TTLPolicy,
    new_expiration_store,
    new_fake_expiration_store,
    new_ttl_store,
)
from client_cache.util.clock import FakeClock
from tests.fixtures import pod

T0 = 1_763_800_000.0


def key(obj: Any) -> str:
    return str(obj["metadata"]["name"])


def entry_key(entry: TimestampedEntry) -> str:
    return key(entry.obj)


def test_ttl_expiration_basic() -> None:
    """TestTTLExpirationBasic: everything expires; the delete is reported."""
    deleted: queue.Queue[str] = queue.Queue()
    store = new_fake_expiration_store(
        key, deleted, FakeExpirationPolicy(set(), entry_key), FakeClock(T0)
    )
    store.add(pod("foo"))
    assert store.get(pod("foo")) == (None, False)
    assert deleted.get(timeout=5) == "foo"


def test_re_add_expired_item() -> None:
    """TestReAddExpiredItem."""
    deleted: queue.Queue[str] = queue.Queue()
    policy = FakeExpirationPolicy(set(), entry_key)
    store = new_fake_expiration_store(key, deleted, policy, FakeClock(T0))
    store.add(pod("foo", labels={"v": "bar"}))
    assert store.get(pod("foo")) == (None, False)
    assert deleted.get(timeout=5) == "foo"
    store.add(pod("foo", labels={"v": "different_bar"}))
    policy.never_expire = {"foo"}
    obj, exists = store.get_by_key("foo")
    assert exists and obj["metadata"]["labels"]["v"] == "different_bar"


def test_ttl_list() -> None:
    """TestTTLList: List returns the unexpired objects and deletes the others."""
    deleted: queue.Queue[str] = queue.Queue()
    store = new_fake_expiration_store(
        key, deleted, FakeExpirationPolicy({"foo1"}, entry_key), FakeClock(T0)
    )
    for name in ("foo", "foo1", "foo2"):
        store.add(pod(name))
    assert [o["metadata"]["name"] for o in store.list()] == ["foo1"]
    assert {deleted.get(timeout=5), deleted.get(timeout=5)} == {"foo", "foo2"}
    assert store.list_keys() == ["foo1"]


def test_ttl_policy_boundaries() -> None:
    """TestTTLPolicy: exactly TTL old is not expired; TTL <= 0 never expires."""
    clock = FakeClock(T0)
    ttl = 30.0
    policy = TTLPolicy(ttl, clock)
    assert not policy.is_expired(TimestampedEntry(None, T0 - ttl))
    assert not policy.is_expired(TimestampedEntry(None, T0))
    assert policy.is_expired(TimestampedEntry(None, T0 - ttl - 1))
    for never in (0.0, -1.0):
        assert not TTLPolicy(never, clock).is_expired(TimestampedEntry(None, T0 - 1e9))


def test_fake_store_without_channel_does_not_delete() -> None:
    store = new_fake_expiration_store(key, None, FakeExpirationPolicy(set(), entry_key),
                                      FakeClock(T0))
    store.add(pod("foo"))
    assert store.get_by_key("foo") == (None, False)  # reported expired...
    assert store.list_keys() == ["foo"]  # ...but upstream's fake drops the delete


def test_ttl_store_with_freezegun() -> None:
    with freeze_time("2026-11-22 10:00:00") as frozen:
        store = new_ttl_store(key, 30)
        store.add(pod("a"))
        frozen.tick(20)
        store.add(pod("b"))
        frozen.tick(10)  # a is exactly 30 s old: kept
        assert sorted(o["metadata"]["name"] for o in store.list()) == ["a", "b"]
        frozen.tick(1)
        assert store.get_by_key("a") == (None, False)
        assert store.get_by_key("b")[1]
        store.update(pod("b"))  # refreshes the timestamp
        frozen.tick(25)
        assert store.get_by_key("b")[1]
        store.replace([pod("c"), pod("d")], "9")
        frozen.tick(31)
        assert store.list() == []
        assert sorted(store.list_keys()) == []  # list() deleted the expired entries


def test_expiration_store_custom_policy_and_delete() -> None:
    class NamePolicy:
        def is_expired(self, entry: TimestampedEntry) -> bool:
            return str(entry.key).startswith("old")

    store = new_expiration_store(key, NamePolicy())
    store.add(pod("old-1"))
    store.add(pod("new-1"))
    assert [o["metadata"]["name"] for o in store.list()] == ["new-1"]
    store.delete(pod("new-1"))
    assert store.list() == []
    store.resync()
    with pytest.raises(KeyFuncError):
        store.add({"no": "name"})
    assert isinstance(store, ExpirationCache)


def test_a_ttl_store_goes_by_the_monotonic_clock_not_the_wall() -> None:
    """Issue 59: a step of the wall clock forward does not empty a TTL store, nor does a
    step back keep a 0.5 s entry past its time."""
    clock = FakeClock(T0)
    store = new_ttl_store(key, 0.5, clock)
    store.add({"metadata": {"name": "a"}})
    clock.step_wall(3600.0)  # forward an hour
    assert [key(o) for o in store.list()] == ["a"]
    clock.step_wall(-7200.0)  # then back two
    clock.step(0.6)
    assert store.list() == []
    assert store.get_by_key("a") == (None, False)
