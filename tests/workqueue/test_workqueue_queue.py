"""workqueue/queue.go (queue_test.go)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import queue
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from client_cache import workqueue
from client_cache.util import _native as native
from client_cache.workqueue import DefaultQueue, QueueConfig
from client_cache.workqueue._core import PyQueueCore
from tests.fixtures import eventually, missing
from tests.workqueue.test_workqueue_metrics import RecordingProvider

# the C core and the Python code
pytestmark = [pytest.mark.usefixtures("native_impl"), pytest.mark.c_path]


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
        with q._cond:  # the core's count of threads asleep in get()
            return q._core.sleepers_locked() == count

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
    with q._cond:
        assert q._core.sleepers_locked() == 0
    got: queue.Queue[str | None] = queue.Queue()
    waiter = threading.Thread(target=lambda: got.put(q.get(timeout=10)[0]),
                              name="test-getter")
    waiter.start()
    def sleeping() -> int:
        with q._cond:
            return q._core.sleepers_locked()
    eventually(lambda: sleeping() == 1, 10)
    q.add("item")
    assert got.get(timeout=10) == "item"
    waiter.join(1)
    assert not waiter.is_alive()


def test_the_c_core_runs_the_queues_it_can(native_impl: str) -> None:
    """The default queue runs on the C core unless turned off; a queue that reports
    metrics or has its own storage always runs the Python code (the core skips both)."""
    assert workqueue.new().c_core == (native_impl == "native")
    metered: workqueue.Typed[str] = workqueue.new_with_config(
        QueueConfig(name="metered", metrics_provider=RecordingProvider()))
    own_storage = workqueue.new_with_config(QueueConfig(queue=TouchRecorder()))
    try:
        assert not metered.c_core
        assert not own_storage.c_core
    finally:
        metered.shut_down()
        own_storage.shut_down()


def test_an_unhashable_item_raises_and_leaves_the_queue_usable() -> None:
    """add and done of an unhashable item raise TypeError, with the queue's lock let go
    and nothing half-done: the queue goes on as before."""
    q: workqueue.Typed[Any] = workqueue.new()
    q.add("first")
    with pytest.raises(TypeError):
        q.add(["not", "hashable"])
    with pytest.raises(TypeError):
        q.done(["not", "hashable"])
    assert q._lock.acquire(blocking=False)  # let go on the error path
    q._lock.release()
    assert q.len() == 1
    assert q.get(timeout=1) == ("first", False)
    q.done("first")
    q.shut_down()
    assert q.get(timeout=1) == (None, True)


class SlowKey:
    """A key whose hash and equality are Python code that lets go of the GIL: another
    thread runs while the queue's locked section is half-way through."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        time.sleep(0)
        return hash(self.name)

    def __eq__(self, other: object) -> bool:
        time.sleep(0)
        return isinstance(other, SlowKey) and other.name == self.name


@pytest.mark.parametrize("key", [str, SlowKey], ids=["str", "python-hash"])
def test_producers_and_workers_keep_the_queue_rules(key: Callable[[str], Any]) -> None:
    """4 producers add 3,000 keys each from 40 names while 4 workers process them, with a
    tiny switch interval so threads interleave inside the queue's sections: no key is
    handed to two workers at once, and every key's last add is followed by a get of it
    (a worker sees the key's last version), so no add is lost."""
    q: workqueue.Typed[Any] = workqueue.new()
    names = [f"key-{i}" for i in range(40)]
    keys = {name: key(name) for name in names}
    lock = threading.Lock()
    version = dict.fromkeys(names, 0)
    seen = dict.fromkeys(names, 0)
    in_flight: set[str] = set()
    problems: list[str] = []

    def produce(seed: int) -> None:
        for j in range(3000):
            name = names[(seed * 7 + j * 13) % len(names)]
            with lock:
                version[name] += 1
            q.add(keys[name])

    def work() -> None:
        while True:
            item, shutdown = q.get(timeout=30)
            if shutdown:
                return
            name = item.name if isinstance(item, SlowKey) else item
            with lock:
                if name in in_flight:
                    problems.append(f"{name} handed to two workers at once")
                in_flight.add(name)
                seen[name] = version[name]
            time.sleep(0)  # "processing": another worker runs meanwhile
            with lock:
                in_flight.discard(name)
            q.done(item)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=work, name=f"test-worker-{i}") for i in range(4)]
        producers = [threading.Thread(target=produce, args=(i,), name=f"test-producer-{i}")
                     for i in range(4)]
        for t in workers + producers:
            t.start()
        for t in producers:
            t.join(60)
        q.shut_down_with_drain()
        for t in workers:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not any(t.is_alive() for t in workers + producers)
    assert problems == []
    assert seen == version
    assert q.len() == 0


def test_get_async_is_woken_by_add_and_by_done_from_threads() -> None:
    """A coroutine waiting in get_async wakes when a thread adds an item, and when a
    thread's done() puts back an item that was added while being processed."""
    q: workqueue.Typed[str] = workqueue.new()

    async def wait_for_item_added_by(action: Callable[[], None]) -> tuple[str | None, bool]:
        getter = asyncio.ensure_future(q.get_async())
        while not q._async_waiters:  # let the getter run until it waits
            await asyncio.sleep(0)
        thread = threading.Thread(target=action, name="test-adder")
        thread.start()
        try:
            return await asyncio.wait_for(getter, 10)
        finally:
            thread.join(10)

    assert asyncio.run(wait_for_item_added_by(lambda: q.add("a"))) == ("a", False)
    q.add("a")  # added while processing: done() puts it back in line
    assert asyncio.run(wait_for_item_added_by(lambda: q.done("a"))) == ("a", False)
    q.done("a")
    q.shut_down()


def work_until_shut_down(q: workqueue.Typed[str], got: queue.Queue[str]) -> None:
    while True:
        item, shutdown = q.get(timeout=10)
        if shutdown:
            return
        assert item is not None
        got.put(item)
        q.done(item)


def test_a_shut_down_queue_and_its_core_are_freed() -> None:
    """After a worker drains it and it shuts down, nothing keeps the queue (or, on the C
    path, its core) alive: both are freed once the last reference goes."""
    q: workqueue.Typed[str] = workqueue.new()
    got: queue.Queue[str] = queue.Queue()
    worker = threading.Thread(target=work_until_shut_down, args=(q, got), name="test-worker")
    worker.start()
    for i in range(100):
        q.add(f"item-{i}")
    assert sorted(got.get(timeout=10) for _ in range(100)) == sorted(
        f"item-{i}" for i in range(100))
    q.shut_down()
    worker.join(5)
    assert not worker.is_alive()
    refs = [weakref.ref(q)] + ([weakref.ref(q._core)] if q.c_core else [])
    del q, worker
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


@pytest.mark.native_only
def test_the_native_core_has_exactly_its_python_specifications_methods() -> None:
    """client_cache.workqueue._core.PyQueueCore is the native QueueCore's specification:
    the same methods and attributes, and the queue keeps no state beside its core."""
    module = native.load("workqueue._queue")
    if module is None:
        missing("client_cache.workqueue._queue was not built")
    spec = {n for n in dir(PyQueueCore) if not n.startswith("_")} | {"lock"}
    assert {n for n in dir(module.QueueCore) if not n.startswith("_")} == spec
    q: workqueue.Typed[str] = workqueue.new()
    for state in ("_dirty", "_processing", "_getters", "_shutting_down", "_drain", "_queue"):
        assert not hasattr(q, state), state


class Flaky:
    """An item whose hash and equality fail while ``broken`` is set."""

    broken = False

    def __hash__(self) -> int:
        if Flaky.broken:
            raise RuntimeError("hash failed")
        return 7

    def __eq__(self, other: object) -> bool:
        if Flaky.broken:
            raise RuntimeError("eq failed")
        return self is other


class BadEq:
    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        raise ValueError("no equality")


@pytest.fixture
def flaky() -> Iterator[None]:
    Flaky.broken = False
    yield
    Flaky.broken = False


def test_an_item_that_cannot_be_hashed_or_compared_is_refused_at_add() -> None:
    """Issue 59: refused with a TypeError naming the type, and nothing kept."""
    q: workqueue.Typed[Any] = workqueue.new()
    with pytest.raises(TypeError, match="hashable and comparable: list"):
        q.add([1, 2])
    with pytest.raises(TypeError, match="hashable and comparable: BadEq"):
        q.add(BadEq())
    assert q.len() == 0
    q.add("fine")
    assert q.get(timeout=1) == ("fine", False)
    q.shut_down()


def test_an_item_whose_hash_fails_after_it_was_added_is_never_lost(flaky: None) -> None:
    """get() raises TypeError and leaves it in line; done() raises TypeError, takes it out
    of processing by identity and lets a draining shutdown end."""
    q: workqueue.Typed[Any] = workqueue.new()
    item = Flaky()
    q.add(item)
    Flaky.broken = True
    with pytest.raises(TypeError, match="hashable and comparable: Flaky"):
        q.get(timeout=1)
    assert q.len() == 1  # still in line
    Flaky.broken = False
    assert q.get(timeout=1) == (item, False)
    Flaky.broken = True
    drained = threading.Event()
    drainer = threading.Thread(target=lambda: (q.shut_down_with_drain(), drained.set()),
                               name="test-drain")
    drainer.start()
    with pytest.raises(TypeError, match="hashable and comparable"):
        q.done(item)
    assert drained.wait(5), "shut_down_with_drain never returned"
    drainer.join(1)


class FailsOnCall:
    """An item whose hash fails at its ``fail_at``-th call from when ``armed`` is set."""

    def __init__(self) -> None:
        self.calls = 0
        self.fail_at = 0

    def __hash__(self) -> int:
        if self.fail_at:
            self.calls += 1
            if self.calls == self.fail_at:
                raise RuntimeError("hash failed")
        return 11

    def __eq__(self, other: object) -> bool:
        return self is other


@pytest.mark.parametrize("fail_at", [1, 2, 3, 4])
@pytest.mark.parametrize("metrics", [False, True], ids=["plain", "with-metrics"])
def test_an_item_whose_hash_fails_at_any_call_inside_done_stays_consistent(
        fail_at: int, metrics: bool) -> None:
    """Issue 67: whichever use of the item's hash fails, inside done() or after it (in
    the Python core the third escaped as a raw error and the item stayed in processing,
    blocking a draining shutdown), a failure is a TypeError naming the type, nothing
    else is lost and the drain returns."""
    config: workqueue.QueueConfig[Any] = workqueue.QueueConfig(
        name="hash-fails" if metrics else "")
    q: workqueue.Typed[Any] = workqueue.new_with_config(config)
    item = FailsOnCall()
    q.add(item)
    q.add("other")
    assert q.get(timeout=1) == (item, False)
    q.add(item)  # dirty while processed: done() would put it in line again
    item.fail_at = fail_at
    drained = threading.Event()
    drainer = threading.Thread(target=lambda: (q.shut_down_with_drain(), drained.set()),
                               name="test-drain")
    drainer.start()
    handed: list[Any] = []
    pending: list[Any] = [item]
    while pending or not handed or handed[-1] is not None:
        if pending:
            with contextlib.suppress(TypeError):
                q.done(pending.pop())
            continue
        try:
            got, shutdown = q.get(timeout=1)
        except TypeError as err:  # its hash failed as it was taken: still in line
            assert "FailsOnCall" in str(err)
            continue
        handed.append(None if shutdown else got)
        if not shutdown:
            pending.append(got)
    assert "other" in handed
    assert drained.wait(5), "shut_down_with_drain never returned"
    drainer.join(1)
