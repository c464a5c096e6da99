"""shared_informer.go (shared_informer_test.go), scenario by scenario."""

from __future__ import annotations

import gc
import logging
import queue
import random
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from client_cache import _processor as processor_module
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.errors import ClientCacheError
from client_cache.shared_informer import (
    SharedIndexInformer,
    SharedIndexInformerOptions,
    is_done,
    new_shared_index_informer_with_options,
    new_shared_informer,
    wait_for,
    wait_for_cache_sync,
    wait_for_named_cache_sync,
)
from client_cache.testing.fake_controller_source import FakeControllerSource
from client_cache.util.clock import FakeClock
from tests.fixtures import eventually
from tests.fixtures import pod as make_pod


def pod(name: str, **labels: str) -> dict[str, Any]:
    return make_pod(name, "ns", labels, rv="", uid=name)


class TestListener:
    """Upstream's ``testListener``: records names from adds and updates."""

    __test__ = False

    def __init__(self, name: str = "listener") -> None:
        self.name = name
        self.cond = threading.Condition()
        self.received: set[str] = set()
        self.events: list[tuple[str, str]] = []
        self.hold = threading.Lock()

    def _record(self, kind: str, obj: Any) -> None:
        with self.hold, self.cond:
            self.received.add(obj["metadata"]["name"])
            self.events.append((kind, obj["metadata"]["name"]))
            self.cond.notify_all()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._record("update", new)

    def on_delete(self, obj: Any) -> None:
        with self.cond:
            self.events.append(("delete", getattr(obj, "key", None) or obj["metadata"]["name"]))
            self.cond.notify_all()

    def ok(self, *expected: str, timeout: float = 5) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.received == set(expected), timeout)

    def reset(self) -> None:
        with self.cond:
            self.received.clear()
            self.events.clear()


@pytest.fixture
def source() -> Iterator[FakeControllerSource]:
    src = FakeControllerSource()
    yield src
    src.shutdown()


def start(informer: SharedIndexInformer) -> tuple[threading.Event, threading.Thread]:
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="test-informer",
                              daemon=True)
    thread.start()
    return stop, thread


def halt(stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(2.0)
    assert not thread.is_alive()


def wait_for_timers(clock: FakeClock, count: int) -> None:
    """Wait until ``count`` timers wait on the fake clock: the watch's idle timer and the
    resync timer, so that a step cannot slip in before the resync thread re-arms."""
    eventually(lambda: clock.waiter_count() >= count, 5, "timers were not registered")


def label_keys(obj: Any) -> list[str]:
    return sorted(obj["metadata"]["labels"])


def test_indexer(source: FakeControllerSource) -> None:
    """TestIndexer: indexers added before and while running."""
    source.add(pod("pod1", a="1", b="1"))
    source.add(pod("pod2", b="1"))
    informer = new_shared_informer(source, None, 1.0)
    informer.add_indexers({"labels": label_keys})
    stop, thread = start(informer)
    try:
        assert wait_for_cache_sync(stop, informer.has_synced)
        assert [o["metadata"]["name"] for o in informer.get_indexer().by_index("labels", "a")] == [
            "pod1"]
        listener = TestListener()
        informer.add_event_handler(listener)
        source.add(pod("pod3", a="1"))
        assert listener.ok("pod1", "pod2", "pod3")
        names = {o["metadata"]["name"] for o in informer.get_indexer().by_index("labels", "a")}
        assert names == {"pod1", "pod3"}
        informer.add_indexers({"labels-again": label_keys})  # while running
        again = {o["metadata"]["name"]
                 for o in informer.get_indexer().by_index("labels-again", "a")}
        assert again == {"pod1", "pod3"}
        for index in ("labels", "labels-again"):
            assert set(informer.get_indexer().list_index_func_values(index)) == {"a", "b"}
    finally:
        halt(stop, thread)


def test_listener_resync_periods(source: FakeControllerSource) -> None:
    """TestListenerResyncPeriods: on the fake clock only the due listeners resync."""
    source.add(pod("pod1"))
    source.add(pod("pod2"))
    clock = FakeClock(1000.0)
    informer = new_shared_index_informer_with_options(
        source, None, SharedIndexInformerOptions(resync_period=1.0, clock=clock))
    l1, l2, l3 = TestListener("l1"), TestListener("l2"), TestListener("l3")
    informer.add_event_handler_with_resync_period(l1, 0)
    informer.add_event_handler_with_resync_period(l2, 2.0)
    informer.add_event_handler_with_resync_period(l3, 3.0)
    stop, thread = start(informer)
    try:
        for listener in (l1, l2, l3):
            assert listener.ok("pod1", "pod2")
        for listener in (l1, l2, l3):
            listener.reset()
        wait_for_timers(clock, 2)
        clock.step(2.0)
        assert l2.ok("pod1", "pod2")
        assert l1.received == set() and l3.received == set()
        l2.reset()
        wait_for_timers(clock, 2)
        clock.step(1.0)
        assert l3.ok("pod1", "pod2")
        assert l1.received == set() and l2.received == set()
    finally:
        halt(stop, thread)


def test_resync_check_period(source: FakeControllerSource) -> None:
    """TestResyncCheckPeriod: the check period drops to the smallest request before start."""
    informer = new_shared_index_informer_with_options(
        source, None, SharedIndexInformerOptions(resync_period=12 * 3600, clock=FakeClock(0)))
    l1 = informer.add_event_handler_with_resync_period(TestListener(), 0)
    assert informer.resync_check_period == 12 * 3600 and l1.resync_period == 0  # type: ignore[attr-defined]
    l2 = informer.add_event_handler_with_resync_period(TestListener(), 60)
    assert informer.resync_check_period == 60 and l2.resync_period == 60  # type: ignore[attr-defined]
    l3 = informer.add_event_handler_with_resync_period(TestListener(), 55)
    assert informer.resync_check_period == 55
    assert [reg.resync_period for reg in (l1, l2, l3)] == [0, 60, 55]  # type: ignore[attr-defined]
    l4 = informer.add_event_handler_with_resync_period(TestListener(), 5)
    assert informer.resync_check_period == 5
    assert [reg.resync_period for reg in (l1, l2, l3, l4)] == [0, 60, 55, 5]  # type: ignore[attr-defined]
    small = informer.add_event_handler_with_resync_period(TestListener(), 0.2)
    assert small.resync_period == 1.0  # type: ignore[attr-defined]  # the 1 s minimum


def test_error_handling(source: FakeControllerSource) -> None:
    """TestSharedInformerErrorHandling."""
    source.list_error = RuntimeError("Access Denied")
    informer = new_shared_informer(source, None, 1.0)
    seen: list[BaseException] = []
    got = threading.Event()

    def handler(reflector: Any, err: BaseException) -> None:
        seen.append(err)
        got.set()

    informer.set_watch_error_handler(handler)
    stop, thread = start(informer)
    try:
        assert got.wait(5)
        assert "Access Denied" in str(seen[0])
    finally:
        halt(stop, thread)
    with pytest.raises(ClientCacheError, match="informer has already started"):
        informer.set_watch_error_handler(handler)
    with pytest.raises(ClientCacheError, match="informer has already started"):
        informer.set_transform(None)


def test_transformer(source: FakeControllerSource) -> None:
    """TestSharedInformerTransformer."""
    source.add(pod("pod1"))
    source.add(pod("pod2"))
    informer = new_shared_informer(source, None, 1.0)

    def upper(obj: Any) -> Any:
        return {**obj, "metadata": {**obj["metadata"], "name": obj["metadata"]["name"].upper()}}

    informer.set_transform(upper)
    listener = TestListener()
    informer.add_event_handler(listener)
    stop, thread = start(informer)
    try:
        assert listener.ok("POD1", "POD2")
    finally:
        halt(stop, thread)


def test_remove_handlers(source: FakeControllerSource) -> None:
    """TestSharedInformerRemoveHandler / RemoveForeignHandler / MultipleRegistration /
    RemovingRemovedSharedInformer."""
    informer1 = new_shared_informer(source, None, 1.0)
    informer2 = new_shared_informer(source, None, 1.0)
    handler = TestListener()
    reg1 = informer1.add_event_handler(handler)
    reg2 = informer1.add_event_handler(handler)  # the same handler twice
    assert reg1 is not reg2 and len(informer1.processor.listeners) == 2
    informer2.remove_event_handler(reg1)  # foreign: nothing happens
    assert len(informer1.processor.listeners) == 2 and len(informer2.processor.listeners) == 0
    informer1.remove_event_handler(reg1)
    assert len(informer1.processor.listeners) == 1
    informer1.remove_event_handler(reg1)  # twice: fine
    informer1.remove_event_handler(reg2)
    assert len(informer1.processor.listeners) == 0
    with pytest.raises(TypeError, match="invalid key type"):
        informer1.remove_event_handler("not a registration")  # type: ignore[arg-type]


def test_state_and_stopped_informer(source: FakeControllerSource) -> None:
    """TestStateSharedInformer / TestAddOnStoppedSharedInformer /
    TestRemoveOnStoppedSharedInformer."""
    informer = new_shared_informer(source, None, 0)
    listener = TestListener()
    reg = informer.add_event_handler(listener)
    assert not informer._started and not informer.is_stopped()
    source.add(pod("pod1"))
    stop, thread = start(informer)
    assert listener.ok("pod1")
    assert informer._started and not informer.is_stopped()
    halt(stop, thread)
    assert informer.is_stopped() and informer._started
    with pytest.raises(ClientCacheError) as info:
        informer.add_event_handler_with_resync_period(TestListener(), 1)
    assert str(info.value).endswith("was not added to shared informer because it has stopped "
                                    "already")
    informer.remove_event_handler(reg)
    with pytest.raises(ClientCacheError, match="stopped already"):
        informer.add_indexers({"x": label_keys})


def test_remove_while_active(source: FakeControllerSource) -> None:
    """TestRemoveWhileActive."""
    informer = new_shared_informer(source, None, 0)
    listener = TestListener()
    reg = informer.add_event_handler(listener)
    stop, thread = start(informer)
    try:
        source.add(pod("pod1"))
        assert listener.ok("pod1")
        informer.remove_event_handler(reg)
        assert reg not in informer.processor.listeners
        other = TestListener()
        informer.add_event_handler(other)
        source.add(pod("pod2"))
        assert other.ok("pod1", "pod2")
        assert listener.received == {"pod1"}
    finally:
        halt(stop, thread)


class BusyHandler:
    """A handler caught in the middle of a call when it is removed: ``on_add`` waits
    until the informer tells it it has stopped (``handler_stopped``)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self.entered.set()
        self.released.wait(10)

    def on_update(self, old: Any, new: Any) -> None:
        pass

    def on_delete(self, obj: Any) -> None:
        pass

    def handler_stopped(self) -> None:
        self.released.set()


def test_nothing_of_a_removed_handler_outlives_the_removal(
        source: FakeControllerSource) -> None:
    """remove_event_handler returns once the handler's delivery thread has ended, so the
    handler is collectable at once (a stopped controller is, in the runtime's tests)."""
    informer = new_shared_informer(source, None, 0)
    handler = BusyHandler()
    reg = informer.add_event_handler(handler)
    stop, thread = start(informer)
    try:
        source.add(pod("pod1"))
        assert handler.entered.wait(10)
        ref = weakref.ref(handler)
        informer.remove_event_handler(reg)
        del handler, reg
        assert not [t.name for t in threading.enumerate()
                    if t.name.startswith("informer-handler-")]
        gc.collect()
        assert ref() is None
    finally:
        halt(stop, thread)


def test_add_while_active(source: FakeControllerSource) -> None:
    """TestAddWhileActive: a late handler's registration syncs after its synthetic adds."""
    informer = new_shared_informer(source, None, 0)
    l1 = TestListener("l1")
    handle1 = informer.add_event_handler(l1)
    assert not handle1.has_synced()
    stop, thread = start(informer)
    try:
        source.add(pod("pod1"))
        assert l1.ok("pod1")
        assert wait_for_cache_sync(stop, handle1.has_synced)
        l2 = TestListener("l2")
        with l2.hold:  # the handler is busy: its synthetic initial add cannot be handled
            handle2 = informer.add_event_handler(l2)
            assert not handle2.has_synced()
        source.add(pod("pod2"))
        assert l2.ok("pod1", "pod2")
        assert wait_for_cache_sync(stop, handle2.has_synced)
        assert l1.ok("pod1", "pod2")
        assert l2.events[0] == ("add", "pod1")
    finally:
        halt(stop, thread)


def test_handler_exception_does_not_stop_others(source: FakeControllerSource,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    informer = new_shared_informer(source, None, 0)

    class Exploding(TestListener):
        def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            if obj["metadata"]["name"] == "bad":
                raise RuntimeError("handler bug")
            super().on_add(obj, is_in_initial_list)

    bad, good = Exploding("bad"), TestListener("good")
    informer.add_event_handler(bad)
    informer.add_event_handler(good)
    stop, thread = start(informer)
    try:
        source.add(pod("bad"))
        source.add(pod("fine"))
        assert good.ok("bad", "fine")
        assert bad.ok("fine")  # the failing notification was skipped, the next delivered
        assert "handler bug" in caplog.text and "Exploding" in caplog.text
    finally:
        halt(stop, thread)


def test_slow_handler_does_not_block_others(source: FakeControllerSource) -> None:
    informer = new_shared_informer(source, None, 0)
    slow, fast = TestListener("slow"), TestListener("fast")
    informer.add_event_handler(slow)
    informer.add_event_handler(fast)
    stop, thread = start(informer)
    try:
        with slow.hold:  # the slow handler is stuck
            for i in range(50):
                source.add(pod(f"p{i}"))
            assert fast.ok(*[f"p{i}" for i in range(50)])
        assert slow.ok(*[f"p{i}" for i in range(50)])
        assert [n for _, n in slow.events] == [f"p{i}" for i in range(50)]  # in order
    finally:
        halt(stop, thread)


def test_real_fifo_switch(source: FakeControllerSource) -> None:
    source.add(pod("pod1"))
    informer = new_shared_index_informer_with_options(
        source, None, SharedIndexInformerOptions(use_real_fifo=True))
    listener = TestListener()
    informer.add_event_handler(listener)
    stop, thread = start(informer)
    try:
        assert listener.ok("pod1")
        obj = pod("pod1", changed="yes")
        source.modify(obj)
        with listener.cond:
            assert listener.cond.wait_for(lambda: ("update", "pod1") in listener.events, 5)
        assert informer.has_synced()
    finally:
        halt(stop, thread)


def test_wait_for_cache_sync(source: FakeControllerSource) -> None:
    stop = threading.Event()
    flag = threading.Event()
    threading.Timer(0.05, flag.set).start()
    start_time = time.monotonic()
    assert wait_for_cache_sync(stop, flag.is_set)
    assert time.monotonic() - start_time < 2
    stop.set()
    assert not wait_for_cache_sync(stop, lambda: False)
    assert not wait_for_named_cache_sync("ctl", stop, lambda: False)
    assert wait_for_named_cache_sync("ctl", stop, lambda: True)
    informer = new_shared_informer(source, None, 0)
    assert not informer.has_synced() and informer.last_sync_resource_version() == ""
    assert not informer.get_controller().has_synced()


def test_has_synced_does_not_wait_for_the_informers_lock(
        source: FakeControllerSource) -> None:
    """``has_synced`` takes no lock: adding a handler to a running informer holds the
    informer's lock while it replays the cache, and an event loop asking whether the
    informer synced must not wait for that."""
    source.add(pod("a"))
    informer = new_shared_informer(source, None, 0)
    stop, thread = start(informer)
    try:
        assert wait_for_cache_sync(stop, informer.has_synced)
        answers: queue.Queue[bool] = queue.Queue()
        with informer._started_lock:  # as add_event_handler holds it during its replay
            asker = threading.Thread(target=lambda: answers.put(informer.has_synced()),
                                     name="test-has-synced", daemon=True)
            asker.start()
            assert answers.get(timeout=5) is True
    finally:
        halt(stop, thread)


def test_handler_abuse(source: FakeControllerSource) -> None:
    """TestSharedInformerHandlerAbuse: handlers added and removed concurrently with
    changes; after stop, adding fails only with "stopped already"."""
    informer = new_shared_informer(source, None, 1.0)
    stop, thread = start(informer)
    failures: list[str] = []
    workers_done = threading.Event()
    active = [20]
    active_lock = threading.Lock()

    def worker(seed: int) -> None:
        rnd = random.Random(seed)
        registrations: list[Any] = []
        try:
            while True:
                if rnd.random() < 0.6 or not registrations:
                    try:
                        registrations.append(
                            informer.add_event_handler_with_resync_period(TestListener(), 1.0))
                    except ClientCacheError as err:
                        if "stopped already" not in str(err):
                            failures.append(str(err))
                        return
                else:
                    informer.remove_event_handler(registrations.pop(rnd.randrange(
                        len(registrations))))
                time.sleep(0)
        finally:
            with active_lock:
                active[0] -= 1
                if active[0] == 0:
                    workers_done.set()

    workers = [threading.Thread(target=worker, args=(i,), name=f"abuse-{i}", daemon=True)
               for i in range(20)]
    for w in workers:
        w.start()
    rnd = random.Random(7)
    for _ in range(2000):
        name = f"p{rnd.randrange(50)}"
        roll = rnd.random()
        if roll < 0.5:
            source.add(pod(name))
        elif roll < 0.8:
            source.modify(pod(name, v=str(rnd.random())))
        else:
            source.delete(pod(name))
    halt(stop, thread)
    assert workers_done.wait(10)
    for w in workers:
        w.join(1.0)
    assert failures == []


def test_watch_disruption_relist_syncs_only_due_handlers(source: FakeControllerSource) -> None:
    """TestSharedInformerWatchDisruption (the core of it): after a relist, an object with an
    unchanged resourceVersion is a sync notification, delivered only to handlers due for
    resync; changed or new objects go to everyone."""
    source.add(pod("pod1"))
    source.add(pod("pod2"))
    clock = FakeClock(1000.0)
    informer = new_shared_index_informer_with_options(
        source, None, SharedIndexInformerOptions(resync_period=1.0, clock=clock))
    quiet, resyncing = TestListener("quiet"), TestListener("resyncing")
    informer.add_event_handler_with_resync_period(quiet, 0)
    informer.add_event_handler_with_resync_period(resyncing, 1.0)
    stop, thread = start(informer)
    try:
        assert quiet.ok("pod1", "pod2") and resyncing.ok("pod1", "pod2")
        # the watch must be open, or it would replay the "dropped" changes
        eventually(lambda: source.broadcaster.watcher_count() > 0, 5)
        source.add_drop_watch(pod("pod3"))
        source.modify_drop_watch(pod("pod2", changed="yes"))
        quiet.reset()
        resyncing.reset()
        wait_for_timers(clock, 2)
        clock.step(1.0)  # the resync round marks only the resyncing listener as due
        assert resyncing.ok("pod1", "pod2")  # periodic resync (stale cache: pod2 unchanged)
        resyncing.reset()
        source.reset_watch()  # the watch ends; the next watch from the old RV is expired
        deadline = time.monotonic() + 10
        while ("add", "pod3") not in quiet.events:
            if clock.has_waiters():
                clock.step(2.0)  # past any backoff
            assert time.monotonic() < deadline, quiet.events
            time.sleep(0.01)
        assert quiet.ok("pod2", "pod3")  # relist: changed and new objects, no pod1 sync
        assert resyncing.ok("pod1", "pod2", "pod3")
    finally:
        halt(stop, thread)


def test_initialization_and_start_races(source: FakeControllerSource) -> None:
    """TestSharedInformerInitializationRace / TestSharedInformerStartRace: handlers added
    and options set concurrently with run must neither deadlock nor corrupt state."""
    for _ in range(5):
        informer = new_shared_informer(source, None, 1.0)
        stop = threading.Event()
        errors: list[BaseException] = []

        def add_handlers(target: SharedIndexInformer = informer,
                         errs: list[BaseException] = errors) -> None:
            for _ in range(20):
                try:
                    target.add_event_handler_with_resync_period(TestListener(), 1.0)
                    target.set_transform(None)
                except ClientCacheError as err:
                    if "already started" not in str(err) and "stopped already" not in str(err):
                        errs.append(err)

        adder = threading.Thread(target=add_handlers, name="race-adder", daemon=True)
        runner = threading.Thread(target=informer.run, args=(stop,), name="race-run",
                                  daemon=True)
        adder.start()
        runner.start()
        adder.join(5)
        stop.set()
        runner.join(2.0)
        assert not runner.is_alive() and not adder.is_alive()
        assert errors == []


# --- kube-rs Store guarantees (seed 000) ----------------------------------------------------

def generation_of(objects: list[Any]) -> str:
    """"old", "new" or "mixed": which relist the snapshot ``objects`` comes from."""
    names = {o["metadata"]["name"] for o in objects}
    gens = {o["metadata"]["labels"].get("gen") for o in objects}
    if names == {f"p{i}" for i in range(RELIST)} and gens == {"1"}:
        return "old"
    if names == {f"p{i}" for i in range(RELIST // 5, RELIST + RELIST // 5)} and gens == {"2"}:
        return "new"
    return "mixed"


RELIST = 300


def test_atomic_relist_never_shows_a_half_applied_list(source: FakeControllerSource) -> None:
    """A relist after a 410 (the watch from the old resourceVersion is expired) swaps the
    indexer in one step: a reader polling the lister without pause and every handler
    notification see either the complete old list or the complete new one. (Without
    ``atomic_relist`` they often catch a mixed state, not always: the deterministic proof
    of the ordering is test_the_real_fifo's one-step test.)"""
    for i in range(RELIST):
        source.add(pod(f"p{i}", gen="1"))
    clock = FakeClock(1000.0)
    informer = new_shared_index_informer_with_options(
        source, None, SharedIndexInformerOptions(clock=clock, atomic_relist=True))
    seen_by_handlers: list[str] = []
    relisting = threading.Event()
    initial_adds: list[None] = []
    initial_delivered = threading.Event()

    def on_any(*objs: Any) -> None:
        if relisting.is_set():
            seen_by_handlers.append(generation_of(informer.get_indexer().list()))
        else:
            initial_adds.append(None)
            if len(initial_adds) == RELIST:
                initial_delivered.set()

    informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=on_any, update_func=on_any, delete_func=on_any))
    switch_interval = sys.getswitchinterval()
    stop, thread = start(informer)
    reader_seen: set[str] = set()
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            reader_seen.add(generation_of(informer.get_indexer().list()))

    try:
        assert informer.get_indexer().wait_until_ready(timeout=5)
        assert generation_of(informer.get_indexer().list()) == "old"
        # The handler gets the initial adds after the indexer holds them: a relist started
        # before the last one is delivered would have that add see the old list.
        assert initial_delivered.wait(10)
        eventually(lambda: source.broadcaster.watcher_count() > 0, 5)
        fifth = RELIST // 5
        for i in range(fifth):
            source.delete_drop_watch(pod(f"p{i}", gen="1"))
        for i in range(fifth, RELIST):
            source.modify_drop_watch(pod(f"p{i}", gen="2"))
        for i in range(RELIST, RELIST + fifth):
            source.add_drop_watch(pod(f"p{i}", gen="2"))
        reader = threading.Thread(target=read, name="test-reader", daemon=True)
        reader.start()
        relisting.set()
        sys.setswitchinterval(1e-5)
        source.reset_watch()
        deadline = time.monotonic() + 20
        while len(seen_by_handlers) < RELIST + fifth:  # deletions, updates, adds
            if clock.has_waiters():
                clock.step(2.0)  # past any backoff
            assert time.monotonic() < deadline, len(seen_by_handlers)
            time.sleep(0.01)
        done.set()
        reader.join(5)
        assert set(seen_by_handlers) == {"new"}
        assert reader_seen <= {"old", "new"} and "new" in reader_seen
    finally:
        sys.setswitchinterval(switch_interval)
        done.set()
        halt(stop, thread)


def test_informer_marks_its_indexer_ready_and_closes_subscriptions(
        source: FakeControllerSource) -> None:
    source.add(pod("a"))
    informer = new_shared_index_informer_with_options(source, None,
                                                      SharedIndexInformerOptions())
    indexer = informer.get_indexer()
    sub = indexer.subscribe()
    assert not indexer.is_ready()
    stop, thread = start(informer)
    try:
        assert indexer.wait_until_ready(timeout=5)
        assert [o["metadata"]["name"] for o in indexer.list()] == ["a"]
        event = sub.get(timeout=5)
        assert event is not None and event.object["metadata"]["name"] == "a"
        source.add(pod("b"))
        event = sub.get(timeout=5)
        assert event is not None and event.object["metadata"]["name"] == "b"
    finally:
        halt(stop, thread)
    assert sub.closed and list(sub) == []


def test_an_empty_first_list_is_ready(source: FakeControllerSource) -> None:
    informer = new_shared_index_informer_with_options(source, None,
                                                      SharedIndexInformerOptions())
    stop, thread = start(informer)
    try:
        assert informer.get_indexer().wait_until_ready(timeout=5)
    finally:
        halt(stop, thread)


# -- client-go v0.36: sync checkers and the slow-handler line ----------------------------------
def test_sync_checkers_are_done_when_the_informer_and_each_handler_are(
        source: FakeControllerSource) -> None:
    """HasSyncedChecker: the informer's is done when its cache is filled, a registration's
    once its handler has handled the initial list; wait_for wakes on them, not a poll."""
    source.add(pod("a"))
    informer = new_shared_informer(source, None, 0)
    gate = threading.Event()

    class Held(TestListener):
        def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
            assert gate.wait(10)
            super().on_add(obj, is_in_initial_list)

    registration = informer.add_event_handler(Held())
    synced, handled = informer.has_synced_checker(), registration.has_synced_checker()
    assert synced is informer.has_synced_checker()  # one per informer
    assert "informer" in synced.name() and "event handler" in handled.name()
    assert not is_done(synced) and not is_done(handled)
    stop, thread = start(informer)
    try:
        assert wait_for(stop, "the informer", synced, timeout=10)
        assert not is_done(handled)  # its handler still holds the initial add
        assert not wait_for(stop, "", handled, timeout=0.05)  # gives up at its timeout
        gate.set()
        assert wait_for(stop, "the handler", synced, handled, timeout=10)
    finally:
        gate.set()
        halt(stop, thread)


def test_wait_for_returns_when_stopped(source: FakeControllerSource) -> None:
    informer = new_shared_informer(source, None, 0)  # never run: never synced
    stop = threading.Event()
    checker = informer.has_synced_checker()
    waiter = threading.Thread(target=lambda: results.append(
        wait_for(stop, "never", checker)), name="test-wait-for", daemon=True)
    results: list[bool] = []
    waiter.start()
    stop.set()
    waiter.join(1)
    assert results == [False]


def test_a_checker_of_a_stopped_informer_does_not_outlive_it(
        source: FakeControllerSource) -> None:
    """A checker listens to the process-wide sync signal until it is done; one of an
    informer that stopped before syncing stops listening, so it can be collected."""
    source.list_error = RuntimeError("never lists")  # the informer never syncs
    informer = new_shared_informer(source, None, 0)
    registration = informer.add_event_handler(TestListener())
    checkers = [weakref.ref(informer.has_synced_checker()),
                weakref.ref(registration.has_synced_checker())]
    stop, thread = start(informer)
    halt(stop, thread)
    after = weakref.ref(informer.has_synced_checker())  # asked after the stop: closed too
    assert not is_done(informer.has_synced_checker())
    del informer, registration
    gc.collect()
    assert [ref() for ref in (*checkers, after)] == [None, None, None]


def test_a_slow_handler_call_is_logged_with_handler_resource_and_duration(
        source: FakeControllerSource, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # every call is "slow": the test does not need a handler that sleeps
    monkeypatch.setattr(processor_module, "SLOW_HANDLER_SECONDS", -1.0)
    caplog.set_level(logging.INFO, logger="client_cache._processor")
    source.add(pod("a"))
    source.add(pod("b"))
    informer: SharedIndexInformer = new_shared_index_informer_with_options(
        source, None, SharedIndexInformerOptions(object_description="pods"))
    listener = TestListener()
    registration = informer.add_event_handler(listener)
    stop, thread = start(informer)
    try:
        assert listener.ok("a", "b")
    finally:
        halt(stop, thread)
    (line,) = [r for r in caplog.records if "took" in r.getMessage()]  # one per 10 s
    text = line.getMessage()
    assert text.startswith("event handler ") and " of pods took " in text
    assert "on the add of " in text and "ns/a" in text
    assert line.handler == registration.name
    assert line.resource == "pods"
    assert line.duration >= 0

