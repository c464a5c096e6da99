"""subscription.py: store subscriptions (kube-rs shared store subscribers, seed 000)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from client_cache import meta_namespace_key_func, new_indexer, new_store
from client_cache.api.watch import EventType
from client_cache.subscription import SubscriberLaggedError, Subscription
from tests.fixtures import pod


def p(name: str, rv: str = "1") -> dict[str, Any]:
    return pod(name, "ns", rv=rv)


def kinds(sub: Subscription, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        event = sub.get(timeout=5)
        assert event is not None
        out.append((event.type.value, event.object["metadata"]["name"]))
    return out


def test_events_follow_the_store_in_order() -> None:
    store = new_indexer(meta_namespace_key_func, {})
    sub = store.subscribe()
    store.add(p("a"))
    store.update(p("a", "2"))
    store.add(p("b"))
    store.delete(p("a"))
    assert kinds(sub, 4) == [("ADDED", "a"), ("MODIFIED", "a"), ("ADDED", "b"),
                             ("DELETED", "a")]
    store.delete(p("missing"))  # nothing changed: nothing sent
    assert sub.get(timeout=0) is None


def test_replace_sends_what_changed() -> None:
    store = new_store(meta_namespace_key_func)
    store.replace([p("keep"), p("bump"), p("gone")])
    sub = store.subscribe()
    store.replace([p("keep"), p("bump", "2"), p("new")])
    events = sorted(kinds(sub, 3))
    assert events == [("ADDED", "new"), ("DELETED", "gone"), ("MODIFIED", "bump")]
    assert sub.get(timeout=0) is None  # "keep" kept its resourceVersion: no event


def test_a_subscriber_reads_at_least_what_it_was_told() -> None:
    """Events are fed after the store changed: the store already holds the object."""
    store = new_indexer(meta_namespace_key_func, {})
    sub = store.subscribe()
    seen: list[bool] = []

    def consume() -> None:
        for event in sub:
            obj, exists = store.get(event.object)
            seen.append(exists and meta_rv(obj) >= meta_rv(event.object))

    reader = threading.Thread(target=consume, name="test-subscriber", daemon=True)
    reader.start()
    for i in range(200):
        store.add(p(f"o{i % 10}", str(i + 1)))
    sub.close()
    reader.join(5)
    assert not reader.is_alive()
    assert len(seen) == 200 and all(seen)


def meta_rv(obj: Any) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_a_slow_subscriber_drops_oldest_and_is_told_once() -> None:
    store = new_store(meta_namespace_key_func)
    slow = store.subscribe(buffer=3)
    fast = store.subscribe(buffer=100)
    for i in range(10):
        store.add(p(f"o{i}"))  # never blocks, although nobody reads "slow"
    assert len(kinds(fast, 10)) == 10
    with pytest.raises(SubscriberLaggedError) as lagged:
        slow.get(timeout=0)
    assert lagged.value.missed == 7 and slow.missed == 7
    assert kinds(slow, 3) == [("ADDED", "o7"), ("ADDED", "o8"), ("ADDED", "o9")]
    assert slow.get(timeout=0) is None  # told once; usable afterwards
    store.add(p("later"))
    assert kinds(slow, 1) == [("ADDED", "later")]


def test_close_ends_iteration_after_draining_and_unsubscribes() -> None:
    store = new_store(meta_namespace_key_func)
    with store.subscribe() as sub:
        store.add(p("a"))
    store.add(p("b"))  # after close: not delivered
    assert [e.type for e in sub] == [EventType.ADDED]
    assert sub.closed


def test_get_wakes_on_close_and_on_stop() -> None:
    store = new_store(meta_namespace_key_func)
    sub = store.subscribe()
    stop = threading.Event()
    results: list[Any] = []
    waiter = threading.Thread(target=lambda: results.append(sub.get(stop=stop)),
                              name="test-subscriber", daemon=True)
    waiter.start()
    stop.set()
    waiter.join(1)
    assert not waiter.is_alive() and results == [None]
    iterating = threading.Thread(target=lambda: results.append(list(sub)),
                                 name="test-subscriber", daemon=True)
    iterating.start()
    store.close_subscriptions()
    iterating.join(1)
    assert not iterating.is_alive() and results[-1] == []


def test_bad_buffer() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        new_store(meta_namespace_key_func).subscribe(buffer=0)
