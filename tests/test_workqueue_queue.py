"""workqueue/queue.go (queue_test.go)."""

from __future__ import annotations

import gc
import queue
import threading
import weakref
from typing import Any

import pytest

from client_cache import workqueue
from client_cache.workqueue import DefaultQueue, QueueConfig
from tests.fixtures import eventually


@pytest.mark.parametrize("drain", [False, True], ids=["shut_down", "shut_down_with_drain"])
def test_basic(drain: bool) -> None:
    """TestBasic: 50 producers x 50 adds, 10 consumers; nothing added after shutdown is
    handed out; every consumer exits on shutdown."""
    q: workqueue.Typed[Any] = workqueue.new()
    producers, consumers = 50, 10
    produced = threading.Barrier(producers + 1)
    seen: list[Any] = []
    seen_lock = threading.Lock()

    def produce(i: int) -> None:
        for j in range(50):
            q.add(i * 100 + j % 7)
        produced.wait(10)

    def consume() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            assert item != "added after shutdown!"
            with seen_lock:
                seen.append(item)
            q.done(item)

    threads = [threading.Thread(target=produce, args=(i,), name=f"test-p{i}", daemon=True)
               for i in range(producers)]
    workers = [threading.Thread(target=consume, name=f"test-c{i}", daemon=True)
               for i in range(consumers)]
    for t in threads + workers:
        t.start()
    produced.wait(10)
    if drain:
        q.shut_down_with_drain()
    else:
        q.shut_down()
    q.add("added after shutdown!")
    for t in threads + workers:
        t.join(5)
        assert not t.is_alive()
    assert q.len() == 0
    assert "added after shutdown!" not in seen
    assert set(seen) == {i * 100 + j for i in range(producers) for j in range(7)}


@pytest.mark.parametrize("drain", [False, True])
def test_add_while_processing(drain: bool) -> None:
    """TestAddWhileProcessing: re-adding an item while it is processed hands it out again
    after done, never concurrently."""
    q: workqueue.Typed[int] = workqueue.new()
    in_flight: set[int] = set()
    counts: dict[int, int] = {}
    lock = threading.Lock()
    errors: list[str] = []
    finished = threading.Event()
    total = 50

    def consume() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            assert item is not None
            with lock:
                if item in in_flight:
                    errors.append(f"{item} processed concurrently")
                in_flight.add(item)
                counts[item] = counts.get(item, 0) + 1
                again = counts[item] < 2
            if again:
                q.add(item)
            with lock:
                in_flight.discard(item)
                if len(counts) == total and all(c == 2 for c in counts.values()):
                    finished.set()
            q.done(item)

    workers = [threading.Thread(target=consume, name=f"test-w{i}", daemon=True)
               for i in range(10)]
    for t in workers:
        t.start()
    for i in range(total):
        q.add(i)
    assert finished.wait(10)
    if drain:
        q.shut_down_with_drain()
    else:
        q.shut_down()
    for t in workers:
        t.join(5)
        assert not t.is_alive()
    assert not errors and q.len() == 0


def test_len() -> None:
    """TestLen."""
    q: workqueue.Typed[str] = workqueue.new()
    q.add("foo")
    assert q.len() == 1
    q.add("bar")
    assert q.len() == 2
    q.add("foo")
    assert q.len() == 2 and len(q) == 2


def test_reinsert() -> None:
    """TestReinsert."""
    q: workqueue.Typed[str] = workqueue.new()
    q.add("foo")
    item, _ = q.get()
    assert item == "foo"
    q.add(item)
    q.done(item)
    item, shutdown = q.get(timeout=1)
    assert (item, shutdown) == ("foo", False)
    q.done(item)
    assert q.len() == 0


class TouchRecorder(DefaultQueue[str]):
    def __init__(self) -> None:
        super().__init__()
        self.touched: list[str] = []

    def touch(self, item: str) -> None:
        self.touched.append(item)


def test_collapse() -> None:
    """TestCollapse: a second add of a queued item touches it and is not queued twice."""
    storage = TouchRecorder()
    q = workqueue.new_with_config(QueueConfig(queue=storage))
    q.add("bar")
    q.add("bar")
    item, _ = q.get()
    assert item == "bar"
    q.done(item)
    assert q.len() == 0
    assert storage.touched == ["bar"]


def test_collapse_while_processing() -> None:
    """TestCollapseWhileProcessing: adds during processing collapse into one, handed out
    only after done, without touch."""
    storage = TouchRecorder()
    q = workqueue.new_with_config(QueueConfig(queue=storage))
    q.add("foo")
    item, _ = q.get()
    q.add("foo")
    q.add("foo")
    with pytest.raises(TimeoutError):
        q.get(timeout=0.1)  # nobody else may get foo while it is processed
    got: list[Any] = []
    other = threading.Thread(target=lambda: got.append(q.get(timeout=5)), name="test-other",
                             daemon=True)
    other.start()
    q.done(item)
    other.join(5)
    assert got == [("foo", False)]
    q.done("foo")
    assert q.len() == 0
    assert storage.touched == []


def test_drainage_using_shut_down_with_drain() -> None:
    """TestQueueDrainageUsingShutDownWithDrain."""
    q: workqueue.Typed[str] = workqueue.new()
    q.add("foo")
    q.add("bar")
    first, _ = q.get()
    second, _ = q.get()
    drained = threading.Event()
    t = threading.Thread(target=lambda: (q.shut_down_with_drain(), drained.set()),
                         name="test-drain", daemon=True)
    t.start()
    assert q.get(timeout=5) == (None, True)  # shutting down and empty
    assert not drained.wait(0.05)  # still two items in flight
    q.done(first)
    assert not drained.wait(0.05)
    q.done(second)
    assert drained.wait(5)
    t.join(1)


def test_no_drainage_using_shut_down() -> None:
    """TestNoQueueDrainageUsingShutDown: shut_down returns at once."""
    q: workqueue.Typed[str] = workqueue.new()
    q.add("foo")
    q.add("bar")
    q.get()
    q.get()
    q.shut_down()
    assert q.shutting_down()


def test_force_shutdown_releases_drain() -> None:
    """TestForceQueueShutdownUsingShutDown."""
    q: workqueue.Typed[str] = workqueue.new()
    q.add("foo")
    q.add("bar")
    q.get()
    q.get()
    drained = threading.Event()
    t = threading.Thread(target=lambda: (q.shut_down_with_drain(), drained.set()),
                         name="test-drain2", daemon=True)
    t.start()
    assert q.get(timeout=5) == (None, True)
    assert not drained.is_set()
    q.shut_down()  # cancels the drain without done()
    assert drained.wait(5)
    t.join(1)


def test_drainage_with_dirty_item() -> None:
    """TestQueueDrainageUsingShutDownWithDrainWithDirtyItem."""
    q: workqueue.Typed[str] = workqueue.new()
    q.add("foo")
    item, _ = q.get()
    q.add("foo")  # dirty while processing
    drained = threading.Event()
    t = threading.Thread(target=lambda: (q.shut_down_with_drain(), drained.set()),
                         name="test-drain3", daemon=True)
    t.start()
    assert q.get(timeout=5) == (None, True)
    q.done(item)  # foo goes back in line even while shutting down
    assert q.get(timeout=5) == ("foo", False)
    assert not drained.is_set()
    q.done("foo")
    assert q.get(timeout=5) == (None, True)
    assert drained.wait(5)
    t.join(1)


def test_garbage_collection() -> None:
    """TestGarbageCollection: the queue keeps no reference to a processed item."""

    class Item:
        pass

    q: workqueue.Typed[Any] = workqueue.new()
    obj = Item()
    ref = weakref.ref(obj)
    q.add(obj)
    got, _ = q.get()
    q.done(got)
    del obj, got
    gc.collect()
    assert ref() is None


def test_done_for_unknown_item_is_ignored() -> None:
    q: workqueue.Typed[str] = workqueue.new()
    q.add("queued")
    q.done("queued")  # never handed out: upstream would queue it twice
    q.done("never-seen")
    assert q.len() == 1
    assert q.get(timeout=1) == ("queued", False)
    q.done("queued")
    q.done("queued")  # a second done is harmless
    q.shut_down()
    assert q.get(timeout=1) == (None, True)


def test_get_timeout() -> None:
    q: workqueue.Typed[str] = workqueue.new()
    with pytest.raises(TimeoutError):
        q.get(timeout=0.01)


def test_every_blocked_getter_is_woken_once_per_item() -> None:
    """add and done wake a getter only when one waits (the fast path skips the wake-up):
    with getters blocked, each item reaches exactly one of them, none is left waiting."""
    q: workqueue.Typed[str] = workqueue.new()
    got: list[str] = []
    lock = threading.Lock()

    def getter() -> None:
        item, shutdown = q.get(timeout=10)
        assert not shutdown and item is not None
        with lock:
            got.append(item)

    def blocked(count: int) -> bool:
        with q._cond:  # the queue's own list of threads asleep in get()
            return len(q._getters) == count

    threads = [threading.Thread(target=getter, name=f"test-getter-{i}") for i in range(4)]
    for t in threads:
        t.start()
    eventually(lambda: blocked(4), 10)
    for item in ("item-0", "item-1", "item-2", "busy"):
        q.add(item)
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    assert sorted(got) == ["busy", "item-0", "item-1", "item-2"]
    q.add("busy")  # dirty while processing: done() queues it again and wakes the getter
    late = threading.Thread(target=getter, name="test-getter-late")
    late.start()
    eventually(lambda: blocked(1), 10)
    q.done("busy")
    late.join(10)
    assert not late.is_alive()
    assert got.count("busy") == 2


def test_a_getter_that_timed_out_leaves_nothing_behind_for_add_to_wake() -> None:
    """A get() that timed out is no longer a sleeper: the next add wakes the getter that
    does wait (a stale entry would swallow that wake-up and leave it asleep)."""
    q: workqueue.Typed[str] = workqueue.new()
    with pytest.raises(TimeoutError):
        q.get(timeout=0.05)
    assert len(q._getters) == 0
    got: queue.Queue[str | None] = queue.Queue()
    waiter = threading.Thread(target=lambda: got.put(q.get(timeout=10)[0]),
                              name="test-getter")
    waiter.start()
    eventually(lambda: len(q._getters) == 1, 10)
    q.add("item")
    assert got.get(timeout=10) == "item"
    waiter.join(1)
    assert not waiter.is_alive()
