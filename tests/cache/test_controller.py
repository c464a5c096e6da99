"""controller.go (controller_test.go), including the package examples."""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from client_cache import (
    DeletedFinalStateUnknown,
    deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func,
    new_store,
)
from client_cache.controller import (
    Config,
    FilteringResourceEventHandler,
    ResourceEventHandlerDetailedFuncs,
    ResourceEventHandlerFuncs,
    new_controller,
    new_informer,
    new_transforming_informer,
    process_deltas,
)
from client_cache.delta_fifo import (
    Delta,
    DeltaFIFOOptions,
    Deltas,
    DeltaType,
    new_delta_fifo_with_options,
)
from client_cache.listwatch import ListWatch
from client_cache.testing.fake_controller_source import FakeControllerSource
from tests.fixtures import pod as make_pod


def pod(name: str) -> dict[str, Any]:
    return make_pod(name, rv="")


def test_example_low_level_controller_deletes_everything() -> None:
    """The tools/cache package Example: a Config controller that deletes every object it
    sees from the source and reports the deleted keys."""
    source = FakeControllerSource()
    downstream = new_store(deletion_handling_meta_namespace_key_func)
    fifo = new_delta_fifo_with_options(DeltaFIFOOptions(
        key_function=meta_namespace_key_func, known_objects=downstream))
    deleted: list[str] = []
    lock = threading.Lock()
    all_done = threading.Event()
    names = ["a-hello", "b-controller", "c-framework"]

    def process(obj: Any, is_in_initial_list: bool) -> None:
        for d in obj:
            if d.type is DeltaType.DELETED:
                downstream.delete(d.object)
                with lock:
                    deleted.append(fifo.key_of(d.object))
                    if len(deleted) == len(names):
                        all_done.set()
            else:
                downstream.add(d.object)
                source.delete(d.object)  # delete everything we see

    stop = threading.Event()
    controller = new_controller(Config(
        queue=fifo, lister_watcher=source, process=process, full_resync_period=0.1))
    runner = threading.Thread(target=controller.run, args=(stop,), name="example-controller",
                              daemon=True)
    runner.start()
    for name in names:
        source.add(pod(name))
    assert all_done.wait(10)
    stop.set()
    runner.join(1.0)
    source.shutdown()
    assert not runner.is_alive()
    assert sorted(deleted) == names
    assert controller.has_synced()


def test_example_new_informer() -> None:
    """The NewInformer Example: deletes everything added and reports deletions."""
    source = FakeControllerSource()
    deleted: list[str] = []
    done = threading.Event()

    def on_add(obj: Any) -> None:
        source.delete(obj)

    def on_delete(obj: Any) -> None:
        deleted.append(deletion_handling_meta_namespace_key_func(obj))
        if len(deleted) == 3:
            done.set()

    store, controller = new_informer(
        source, None, 0.1, ResourceEventHandlerFuncs(add_func=on_add, delete_func=on_delete))
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(stop,), name="example-informer",
                              daemon=True)
    runner.start()
    for name in ("a-hello", "b-controller", "c-framework"):
        source.add(pod(name))
    assert done.wait(10)
    stop.set()
    runner.join(1.0)
    source.shutdown()
    assert sorted(deleted) == ["a-hello", "b-controller", "c-framework"]
    assert store.list() == []


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.calls.append(("add", obj["metadata"]["name"], is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self.calls.append(("update", old["metadata"]["name"], new["metadata"].get("rv")))

    def on_delete(self, obj: Any) -> None:
        name = obj.key if isinstance(obj, DeletedFinalStateUnknown) else obj["metadata"]["name"]
        self.calls.append(("delete", name))


class ReadThenWrite:
    """A store without ``swap``: process_deltas reads it, then adds or updates, as Go's
    does; its writes are recorded."""

    def __init__(self) -> None:
        self.inner = new_store(deletion_handling_meta_namespace_key_func)
        self.writes: list[str] = []

    def get(self, obj: Any) -> tuple[Any, bool]:
        return self.inner.get(obj)

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        return self.inner.get_by_key(key)

    def add(self, obj: Any) -> None:
        self.writes.append("add")
        self.inner.add(obj)

    def update(self, obj: Any) -> None:
        self.writes.append("update")
        self.inner.update(obj)

    def delete(self, obj: Any) -> None:
        self.inner.delete(obj)

    def list(self) -> list[Any]:
        return self.inner.list()


@pytest.mark.parametrize("swapping", [True, False], ids=["swap", "get-then-write"])
def test_process_deltas_rules(swapping: bool) -> None:
    """An Added for a known object is an update; a relisted unknown object is an add;
    tombstones reach on_delete. The same with a store that swaps (the library's) and one
    that can only be read, then written."""
    store: Any = new_store(deletion_handling_meta_namespace_key_func) if swapping \
        else ReadThenWrite()
    rec = Recorder()
    a, a2 = pod("a"), {**pod("a"), "metadata": {"name": "a", "rv": "2"}}
    process_deltas(rec, store, Deltas([Delta(DeltaType.REPLACED, a)]), True)
    process_deltas(rec, store, Deltas([Delta(DeltaType.ADDED, a2), Delta(DeltaType.SYNC, a2)]),
                   False)
    process_deltas(rec, store, Deltas([Delta(DeltaType.DELETED,
                                             DeletedFinalStateUnknown("a", a2))]), False)
    assert rec.calls == [("add", "a", True), ("update", "a", "2"), ("update", "a", "2"),
                         ("delete", "a")]
    assert store.list() == []
    if not swapping:
        assert store.writes == ["add", "update", "update"]


def test_filtering_handler() -> None:
    """FilteringResourceEventHandler: entering the filter is an add, leaving a delete."""
    rec = Recorder()
    handler = FilteringResourceEventHandler(
        lambda obj: obj["metadata"].get("keep") == "yes", rec)
    keep = {"metadata": {"name": "x", "keep": "yes"}}
    drop = {"metadata": {"name": "x", "keep": "no"}}
    handler.on_add(drop, True)
    handler.on_add(keep, True)
    handler.on_update(drop, keep)
    handler.on_update(keep, keep)
    handler.on_update(keep, drop)
    handler.on_update(drop, drop)
    handler.on_delete(drop)
    handler.on_delete(keep)
    assert rec.calls == [("add", "x", True), ("add", "x", False), ("update", "x", None),
                         ("delete", "x"), ("delete", "x")]


def test_handler_func_wrappers() -> None:
    seen: list[Any] = []
    funcs = ResourceEventHandlerFuncs(add_func=lambda o: seen.append(("add", o)))
    funcs.on_add("o", True)
    funcs.on_update("a", "b")  # unset: ignored
    funcs.on_delete("o")
    detailed = ResourceEventHandlerDetailedFuncs(add_func=lambda o, i: seen.append((o, i)))
    detailed.on_add("p", True)
    assert seen == [("add", "o"), ("p", True)]


def test_retry_on_error_requeues() -> None:
    source = FakeControllerSource()
    fifo = new_delta_fifo_with_options(DeltaFIFOOptions())
    attempts: list[str] = []
    done = threading.Event()

    def process(obj: Any, initial: bool) -> None:
        attempts.append(obj.newest().object["metadata"]["name"])
        if len(attempts) < 3:
            raise RuntimeError("transient")
        done.set()

    controller = new_controller(Config(queue=fifo, lister_watcher=source, process=process,
                                       retry_on_error=True))
    stop = threading.Event()
    source.add(pod("flaky"))
    runner = threading.Thread(target=controller.run, args=(stop,), name="retry-controller",
                              daemon=True)
    runner.start()
    assert done.wait(10)
    stop.set()
    runner.join(1.0)
    source.shutdown()
    assert attempts == ["flaky", "flaky", "flaky"]
    assert controller.last_sync_resource_version() == "1"


@pytest.mark.parametrize("bad", ["not deltas", 42])
def test_informer_process_rejects_non_deltas(bad: Any) -> None:
    source = FakeControllerSource()
    _, controller = new_informer(source, None, 0, Recorder())
    process = controller.config.process  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="not Deltas"):
        process(bad, False)


def test_transforming_informer() -> None:
    """TestTransformingInformer: every object is transformed once, events in order."""
    source = FakeControllerSource()
    first = pod("pod1")
    first["spec"] = {"gen": "1"}
    source.add(first)
    second = pod("pod1")
    second["spec"] = {"gen": "2"}
    source.modify(second)
    events: list[tuple[str, Any]] = []
    cond = threading.Condition()

    def transform(obj: Any) -> Any:
        out = {**obj, "spec": {**obj.get("spec", {}), "hostname": "new-hostname",
                               "nodeName": "nodename"}}
        out["metadata"] = {**obj["metadata"], "resourceVersion": ""}
        return out

    def record(kind: str) -> Any:
        def handler(*objs: Any) -> None:
            with cond:
                events.append((kind, tuple(o["spec"].get("gen") for o in objs)))
                cond.notify_all()
        return handler

    store, controller = new_transforming_informer(
        source, None, 0,
        ResourceEventHandlerFuncs(add_func=record("add"), update_func=record("update"),
                                  delete_func=record("delete")), transform)
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(stop,), name="transforming",
                              daemon=True)
    runner.start()

    def wait(n: int) -> None:
        with cond:
            assert cond.wait_for(lambda: len(events) >= n, 5), events

    try:
        wait(1)
        pod2 = pod("pod2")
        pod2["spec"] = {"gen": "1"}
        source.add(pod2)
        wait(2)
        pod2b = pod("pod2")
        pod2b["spec"] = {"gen": "2"}
        source.modify(pod2b)
        wait(3)
        source.delete(second)
        wait(4)
    finally:
        stop.set()
        runner.join(1.0)
        source.shutdown()
    assert events == [("add", ("2",)), ("add", ("1",)), ("update", ("1", "2")),
                      ("delete", ("2",))]
    assert [o["spec"]["hostname"] for o in store.list()] == ["new-hostname"]
    assert all(o["metadata"]["resourceVersion"] == "" for o in store.list())


def test_transforming_informer_resync_does_not_retransform() -> None:
    """TestTransformingInformerRace: Sync deltas from resync skip the transform."""
    source = FakeControllerSource()
    for i in range(5):
        p = pod(f"pod-{i}")
        p["metadata"]["labels"] = {"to-be-transformed": "true"}
        source.add(p)
    errors: list[str] = []
    transformed = threading.Semaphore(0)

    def transform(obj: Any) -> Any:
        labels = obj["metadata"].get("labels", {})
        if labels.get("to-be-transformed") == "false":
            errors.append(obj["metadata"]["name"])
        out = {**obj, "metadata": {**obj["metadata"], "labels": {"to-be-transformed": "false"}}}
        transformed.release()
        return out

    resynced = threading.Semaphore(0)
    store, controller = new_transforming_informer(
        source, None, 1.0, ResourceEventHandlerFuncs(update_func=lambda o, n: resynced.release()),
        transform)
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(stop,), name="resync-transform",
                              daemon=True)
    runner.start()
    try:
        for _ in range(5):
            assert transformed.acquire(timeout=5)
        for _ in range(5):  # one full resync round (resync period 1 s) reached the handler
            assert resynced.acquire(timeout=5)
    finally:
        stop.set()
        runner.join(2.0)
        source.shutdown()
    assert errors == []
    assert all(o["metadata"]["labels"]["to-be-transformed"] == "false" for o in store.list())


def test_hammer_controller() -> None:
    """TestHammerController: concurrent random changes, no deadlock, final state right."""
    source = FakeControllerSource()
    seen: dict[str, str] = {}
    lock = threading.Lock()

    def on_upsert(*objs: Any) -> None:
        obj = objs[-1]
        with lock:
            seen[obj["metadata"]["name"]] = obj["metadata"]["resourceVersion"]

    def on_delete(obj: Any) -> None:
        with lock:
            key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else obj["metadata"]["name"]
            seen.pop(key, None)

    store, controller = new_informer(source, None, 0.1, ResourceEventHandlerFuncs(
        add_func=on_upsert, update_func=on_upsert, delete_func=on_delete))
    assert not controller.has_synced()
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(stop,), name="hammer", daemon=True)
    runner.start()

    def hammer(seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(100):
            name = f"p{rnd.randrange(10)}"
            roll = rnd.random()
            if roll < 0.5:
                source.add(pod(name))
            elif roll < 0.8:
                source.modify(pod(name))
            else:
                source.delete(pod(name))

    workers = [threading.Thread(target=hammer, args=(i,), name=f"hammer-{i}", daemon=True)
               for i in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(10)
    final_rv = source.list()["metadata"]["resourceVersion"]
    queue = controller.config.queue  # type: ignore[attr-defined]
    deadline = time.monotonic() + 10
    # The reflector records a version when it queues an event; the store is up to date
    # once the queue is empty too (len() waits for a process call in flight).
    while not (controller.last_sync_resource_version() == final_rv and len(queue) == 0):
        assert time.monotonic() < deadline, "the informer did not catch up"
        time.sleep(0.005)
    stop.set()
    runner.join(2.0)
    source.shutdown()
    assert controller.has_synced()
    want = {o["metadata"]["name"] for o in source.list()["items"]}
    assert {o["metadata"]["name"] for o in store.list()} == want


def test_update_transitions() -> None:
    """TestUpdate: updates only ever go from→to, to→to or from→from; a final update
    deletes the pod from the source; every deletion is observed."""
    source = FakeControllerSource()
    invalid: list[tuple[str, str]] = []
    deleted = threading.Semaphore(0)
    allowed = {("from", "to"), ("to", "to"), ("from", "from")}

    def check(obj: Any) -> str:
        return str(obj["metadata"]["labels"]["check"])

    def on_update(old: Any, new: Any) -> None:
        if (check(old), check(new)) not in allowed:
            invalid.append((check(old), check(new)))
        if new["metadata"]["labels"].get("final") == "true":
            source.delete(new)

    watching = threading.Event()

    def watch(options: Any) -> Any:
        w = source.watch(options)
        watching.set()
        return w

    lister_watcher = ListWatch(source.list, watch)
    _, controller = new_informer(lister_watcher, None, 0, ResourceEventHandlerFuncs(
        update_func=on_update, delete_func=lambda obj: deleted.release()))
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(stop,), name="update-test",
                              daemon=True)
    runner.start()
    assert watching.wait(5)  # as upstream: write only once the informer watches

    def writer(i: int) -> None:
        base = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"a-{i}-0", "labels": {"check": "from"}}}
        source.add(base)
        source.modify({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": f"a-{i}-0",
                                    "labels": {"check": "to", "final": "true"}}})

    writers = [threading.Thread(target=writer, args=(i,), name=f"update-writer-{i}",
                                daemon=True) for i in range(3)]
    for w in writers:
        w.start()
    for w in writers:
        w.join(5)
    for _ in range(3):
        assert deleted.acquire(timeout=10)
    stop.set()
    runner.join(2.0)
    source.shutdown()
    assert invalid == []
