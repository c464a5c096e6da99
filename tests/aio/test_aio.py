"""client_cache.aio: work queues, handlers, event iterators, cache sync and the runtime
from an event loop, on the embedded server; the loop is never blocked and nothing is left
behind."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import queue
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.aio import (
    AsyncHandler,
    CallCancelledError,
    EventsOverflowError,
    LoopCaller,
    events,
    low_latency_sync,
    wait_for_cache_sync_async,
)
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import EventType
from client_cache.codec._wire import gc_paused
from client_cache.errors import CacheSyncTimeoutError, ClientCacheError
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory,
    new_shared_informer_factory_with_options,
)
from client_cache.runtime import Action, Controller, ControllerConfig
from client_cache.shared_informer import SharedIndexInformer, wait_for_cache_sync
from client_cache.testing.apiserver import EmbeddedApiServer, EmbeddedApiServerProcess
from client_cache.workqueue import (
    default_controller_rate_limiter,
    new,
    new_typed_rate_limiting_queue,
)

PODS = GroupVersionResource("", "v1", "pods")


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


@contextlib.contextmanager
def pods_informer(server: EmbeddedApiServer) -> Iterator[SharedIndexInformer]:
    """A started pods informer; stopped and joined afterwards."""
    factory = new_shared_informer_factory(server.api_client(), 0)
    informer = factory.core().v1().pods().informer()
    stop = factory.start()
    try:
        yield informer
    finally:
        stop.set()
        assert factory.shutdown(5) == []


# -- work queues ----------------------------------------------------------------------------
def test_get_async_waits_without_blocking_the_loop() -> None:
    queue = new()

    async def main() -> tuple[Any, int]:
        ticks = 0
        getter = asyncio.ensure_future(queue.get_async())
        threading.Timer(0.2, queue.add, args=("a",)).start()
        while not getter.done():  # the loop keeps running while the getter waits
            ticks += 1
            await asyncio.sleep(0.01)
        return await getter, ticks

    (item, shutdown), ticks = asyncio.run(main())
    assert (item, shutdown) == ("a", False)
    assert ticks >= 5
    queue.done("a")
    queue.shut_down()


def test_a_cancelled_get_async_takes_nothing() -> None:
    queue = new()

    async def main() -> None:
        getter = asyncio.ensure_future(queue.get_async())
        await asyncio.sleep(0)  # it waits now
        getter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await getter

    asyncio.run(main())
    queue.add("a")
    assert queue.get(timeout=1) == ("a", False)  # still there for a thread
    queue.shut_down()


def test_async_for_over_a_rate_limited_queue_until_shutdown() -> None:
    queue = new_typed_rate_limiting_queue(default_controller_rate_limiter())
    seen: list[str] = []

    async def worker() -> None:
        async for key in queue:
            with queue.processing(key):
                seen.append(key)
                if key == "bad" and queue.num_requeues(key) == 0:
                    raise RuntimeError("first try fails")
                if len(seen) == 4:
                    queue.shut_down()

    async def main() -> None:
        task = asyncio.ensure_future(worker())
        for key in ("a", "bad", "b"):
            queue.add(key)
        await asyncio.wait_for(task, 10)

    asyncio.run(main())
    # "bad" failed, was requeued with its backoff and came back; shutdown ended the loop
    assert seen == ["a", "bad", "b", "bad"]
    assert queue.num_requeues("bad") == 0  # forgotten after the success


def test_threads_and_coroutines_share_a_queue_without_duplicates() -> None:
    queue = new()
    taken: list[Any] = []
    lock = threading.Lock()

    def thread_worker() -> None:
        for item in queue:
            with lock:
                taken.append(item)
            queue.done(item)

    async def main() -> None:
        async def coroutine_worker() -> None:
            async for item in queue:
                taken.append(item)
                queue.done(item)
                await asyncio.sleep(0)

        tasks = [asyncio.ensure_future(coroutine_worker()) for _ in range(3)]
        threads = [threading.Thread(target=thread_worker, name=f"test-worker-{i}")
                   for i in range(2)]
        for thread in threads:
            thread.start()
        for i in range(2000):
            queue.add(i)
            if i % 100 == 0:
                await asyncio.sleep(0)
        queue.shut_down()  # the workers still get everything queued, then shutdown
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        for thread in threads:
            thread.join(5)

    asyncio.run(main())
    assert sorted(taken) == list(range(2000))


# -- handlers -------------------------------------------------------------------------------
def test_async_handler_runs_in_order_one_at_a_time_on_the_loop(
        server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    for i in range(20):
        core.create_namespaced_pod("default", pod(f"p{i:02d}"))
    seen: list[tuple[str, str]] = []
    active = 0
    overlap = False

    async def main() -> None:
        nonlocal active, overlap
        loop_thread = threading.current_thread()
        done = asyncio.Event()

        async def record(kind: str, obj: Any) -> None:
            nonlocal active, overlap
            assert threading.current_thread() is loop_thread
            active += 1
            overlap = overlap or active > 1
            await asyncio.sleep(0.001)  # give a second delivery a chance to overlap
            seen.append((kind, obj["metadata"]["name"]))
            active -= 1
            if obj["metadata"]["name"] == "last":
                done.set()

        async def added(obj: Any) -> None:
            await record("add", obj)

        async def updated(old: Any, new: Any) -> None:
            await record("update", new)

        with pods_informer(server) as informer:
            informer.add_event_handler(AsyncHandler(on_add=added, on_update=updated))
            await wait_for_cache_sync_async(informer, timeout=10)
            await asyncio.to_thread(core.patch_namespaced_pod, "p03", "default",
                                    {"metadata": {"labels": {"x": "1"}}})
            await asyncio.to_thread(core.create_namespaced_pod, "default", pod("last"))
            await asyncio.wait_for(done.wait(), 10)

    asyncio.run(main())
    assert not overlap
    assert seen[:20] == [("add", f"p{i:02d}") for i in range(20)]
    assert seen[20:] == [("update", "p03"), ("add", "last")]


def test_a_failing_coroutine_is_counted_and_delivery_goes_on(
        server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    for name in ("bad", "good"):
        core.create_namespaced_pod("default", pod(name))
    handled: list[str] = []

    async def main() -> None:
        async def added(obj: Any) -> None:
            if obj["metadata"]["name"] == "bad":
                raise ValueError("boom")
            handled.append(obj["metadata"]["name"])

        with pods_informer(server) as informer:
            registration = informer.add_event_handler(AsyncHandler(on_add=added))
            # woken when the handler has handled the initial list
            await wait_for_cache_sync_async(registration.has_synced, timeout=10)
            assert informer.health().handler_errors == 1

    asyncio.run(main())
    assert handled == ["good"]


def test_stopping_the_informer_cancels_a_running_coroutine(server: EmbeddedApiServer) -> None:
    CoreV1Api(server.api_client()).create_namespaced_pod("default", pod("stuck"))
    cancelled = threading.Event()

    async def main() -> None:
        started = asyncio.Event()

        async def never_ends(obj: Any) -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        with pods_informer(server) as informer:
            informer.add_event_handler(AsyncHandler(on_add=never_ends))
            await asyncio.wait_for(started.wait(), 10)
        # pods_informer's exit stopped it: the handler thread ended (shutdown returned no
        # thread), and the coroutine is cancelled once the loop runs again
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert cancelled.is_set()


def test_a_handler_on_a_closed_loop_fails_instead_of_blocking(
        server: EmbeddedApiServer) -> None:
    CoreV1Api(server.api_client()).create_namespaced_pod("default", pod("p"))
    loop = asyncio.new_event_loop()
    calls: list[Any] = []

    async def added(obj: Any) -> None:
        calls.append(obj)

    handler = AsyncHandler(on_add=added, loop=loop)
    loop.close()
    with pods_informer(server) as informer:
        registration = informer.add_event_handler(handler)
        assert wait_for_cache_sync(threading.Event(), registration.has_synced, timeout=10)
        assert informer.health().handler_errors == 1
    assert calls == []


def test_async_handler_needs_a_loop_outside_a_coroutine() -> None:
    async def added(obj: Any) -> None:
        pass

    with pytest.raises(ClientCacheError, match="loop="):
        AsyncHandler(on_add=added)
    with pytest.raises(ValueError, match="not both"):
        AsyncHandler(on_add=added, on_add_detailed=added,  # type: ignore[arg-type]
                     loop=asyncio.new_event_loop())


# -- event iterators ------------------------------------------------------------------------
def test_events_yields_the_list_then_changes_and_unregisters_on_close(
        server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    core.create_namespaced_pod("default", pod("a"))
    got: list[tuple[EventType, str, bool]] = []

    async def main(informer: SharedIndexInformer) -> None:
        async with contextlib.aclosing(events(informer)) as stream:
            async for event in stream:
                got.append((event.type, event.object["metadata"]["name"],
                            event.is_in_initial_list))
                if event.object["metadata"]["name"] == "a" and event.type is EventType.ADDED:
                    await asyncio.to_thread(core.create_namespaced_pod, "default", pod("b"))
                elif event.object["metadata"]["name"] == "b":
                    if event.type is EventType.ADDED:
                        await asyncio.to_thread(core.delete_namespaced_pod, "b", "default")
                    elif event.type is EventType.DELETED:
                        break
        assert informer.processor.listener_list() == []  # the handler is gone
        assert asyncio.all_tasks() == {asyncio.current_task()}

    with pods_informer(server) as informer:
        asyncio.run(main(informer))
    assert got[0] == (EventType.ADDED, "a", True)
    assert got[1] == (EventType.ADDED, "b", False)
    assert got[-1] == (EventType.DELETED, "b", False)
    assert {kind for kind, *_ in got[2:-1]} <= {EventType.MODIFIED}  # deletion's updates


def test_events_end_when_the_informer_stops(server: EmbeddedApiServer) -> None:
    factory = new_shared_informer_factory(server.api_client(), 0)
    informer = factory.core().v1().pods().informer()
    stop = factory.start()

    async def main() -> int:
        count = 0
        threading.Timer(0.3, stop.set).start()
        async for _ in events(informer):
            count += 1
        return count

    assert asyncio.run(asyncio.wait_for(main(), 10)) == 0
    assert factory.shutdown(5) == []


def test_events_fail_policy_ends_with_an_overflow_error(server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    for i in range(10):
        core.create_namespaced_pod("default", pod(f"p{i}"))

    async def main(informer: SharedIndexInformer) -> list[str]:
        names: list[str] = []
        stream = events(informer, max_size=3, overflow="fail")
        with pytest.raises(EventsOverflowError, match="more than 3 events behind"):
            async for event in stream:
                if not names:  # fall behind until the other 9 were handed over
                    listener = informer.processor.listener_list()[0]
                    await wait_for_cache_sync_async(listener.has_synced, timeout=10)
                names.append(event.object["metadata"]["name"])
        assert informer.processor.listener_list() == []
        return names

    with pods_informer(server) as informer:
        names = asyncio.run(main(informer))
    # what the consumer had taken (p0, and p1 if it came before the others) and the 3
    # events held, in order, then the error
    assert names == [f"p{i}" for i in range(len(names))]
    assert 3 <= len(names) <= 4


class HandOverInformer:
    """Just enough informer for events(): it keeps the handler the iterator registers,
    so a test can call it from a thread of its own."""

    def __init__(self) -> None:
        self.handler: Any = None
        self.registered = threading.Event()

    def add_event_handler(self, handler: Any) -> object:
        self.handler = handler
        self.registered.set()
        return handler

    def remove_event_handler(self, registration: object) -> None:
        assert registration is self.handler
        self.handler = None


class FillingProducer:
    """A thread handing ``{"n": i}`` for i in range(count) to the handler that an
    ``events()`` iterator registers on a :class:`HandOverInformer`: 0 first, the rest once
    :meth:`start` has taken 0, so that they fill the iterator's room the same way every
    run. ``handed`` receives each number once its ``on_add`` returned."""

    def __init__(self, count: int) -> None:
        self.informer = HandOverInformer()
        self.handed = queue.Queue[int]()
        self._first_taken = threading.Event()
        self._thread = threading.Thread(target=self._produce, args=(count,),
                                        name="test-producer")

    def _produce(self, count: int) -> None:
        self.informer.registered.wait(10)
        for i in range(count):
            self.informer.handler.on_add({"n": i}, False)
            self.handed.put(i)
            if i == 0:
                assert self._first_taken.wait(10)

    async def start(self, max_size: int) -> tuple[Any, list[int]]:
        """The iterator, and the numbers it gave: [0]."""
        stream = events(self.informer, max_size=max_size)
        first = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0)  # registered
        self._thread.start()
        seen = [(await first).object["n"]]
        self._first_taken.set()
        return stream, seen

    async def handed_over(self, count: int) -> list[int]:
        """The next ``count`` numbers handed over, waiting for them off the loop."""
        return await asyncio.get_running_loop().run_in_executor(
            None, lambda: [self.handed.get(timeout=10) for _ in range(count)])

    def join(self) -> None:
        self._thread.join(1)
        assert not self._thread.is_alive()


def test_the_wait_policy_holds_the_handler_thread_until_there_is_room() -> None:
    producer = FillingProducer(6)

    async def main() -> list[int]:
        stream, seen = await producer.start(max_size=3)
        # 0 taken, 1-3 held: the 5th notification waits for room
        assert await producer.handed_over(4) == [0, 1, 2, 3]
        await asyncio.sleep(0.05)
        assert producer.handed.empty()
        async for event in stream:
            seen.append(event.object["n"])
            if event.object["n"] == 5:
                break
        return seen

    assert asyncio.run(main()) == [0, 1, 2, 3, 4, 5]
    producer.join()
    assert [producer.handed.get_nowait() for _ in range(2)] == [4, 5]


def test_a_producer_held_for_room_resumes_once_half_the_room_is_free() -> None:
    """A producer held for room is not woken by every take (it and the loop would trade
    the interpreter lock once per event while a backlog drains) but once half of
    ``max_size`` is free; then it hands over without waiting until the room is full."""
    producer = FillingProducer(8)

    async def main() -> list[int]:
        stream, seen = await producer.start(max_size=4)
        # 0 taken, 1-4 held: the producer waits with 5
        assert await producer.handed_over(5) == [0, 1, 2, 3, 4]
        seen.append((await stream.__anext__()).object["n"])  # 3 held
        await asyncio.sleep(0.05)
        assert producer.handed.empty()  # that take did not wake it
        seen.append((await stream.__anext__()).object["n"])  # 2 held: it resumes
        assert await producer.handed_over(2) == [5, 6]  # 7 waits
        async for event in stream:
            seen.append(event.object["n"])
            if event.object["n"] == 7:
                break
        return seen

    assert asyncio.run(main()) == list(range(8))
    producer.join()
    assert producer.handed.get_nowait() == 7


def test_a_producer_waiting_for_room_returns_when_the_informer_stops() -> None:
    informer = HandOverInformer()
    handed = queue.Queue[int]()

    def produce() -> None:
        informer.registered.wait(10)
        handler = informer.handler
        for i in range(3):  # 0 taken, 1 held, 2 waits until handler_stopped
            handler.on_add({"n": i}, False)
            handed.put(i)

    async def main() -> list[int]:
        loop = asyncio.get_running_loop()
        stream = events(informer, max_size=1)
        first = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0)
        producer.start()
        seen = [(await first).object["n"]]
        assert await loop.run_in_executor(None, handed.get, True, 10) == 0
        assert await loop.run_in_executor(None, handed.get, True, 10) == 1
        await asyncio.sleep(0.05)
        assert producer.is_alive()
        informer.handler.handler_stopped()  # as a stopping informer does, from its thread
        await loop.run_in_executor(None, producer.join, 1)
        assert not producer.is_alive()
        return seen + [event.object["n"] async for event in stream]

    producer = threading.Thread(target=produce, name="test-producer")
    # the event held is still handed out; the one that waited for room is dropped
    assert asyncio.run(main()) == [0, 1]
    assert [handed.get_nowait() for _ in range(handed.qsize())] == [2]


def test_draining_a_backlog_gives_the_loop_turns() -> None:
    """A consumer that falls behind and then drains never holds the loop for long: other
    tasks run while the backlog is still there (asyncio.Queue.get alone would hand out
    all of it in one turn)."""
    informer = HandOverInformer()
    backlog = 2000
    taken = 0
    seen_by_other: list[int] = []

    async def other() -> None:
        while taken < backlog:
            seen_by_other.append(taken)
            await asyncio.sleep(0)

    async def main() -> None:
        nonlocal taken
        stream = events(informer, max_size=backlog)
        first = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0)
        for i in range(backlog):  # all queued before the consumer takes any
            informer.handler.on_add({"n": i}, False)
        await first
        taken = 1
        others = asyncio.ensure_future(other())
        async for _ in stream:
            began = time.perf_counter()
            while time.perf_counter() - began < 20e-6:  # a little work per event: 40 ms
                pass
            taken += 1
            if taken == backlog:
                break
        await others

    asyncio.run(asyncio.wait_for(main(), 10))
    assert any(0 < n < backlog for n in seen_by_other[1:])


def test_cancelling_the_consumer_removes_its_handler(server: EmbeddedApiServer) -> None:
    async def main(informer: SharedIndexInformer) -> None:
        async def consume() -> None:
            async for _ in events(informer):
                pass
            raise AssertionError("the informer did not stop")

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0)  # the task runs to its first wait: registered by then
        assert len(informer.processor.listener_list()) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert informer.processor.listener_list() == []
        assert asyncio.all_tasks() == {asyncio.current_task()}  # no task left behind

    with pods_informer(server) as informer:
        asyncio.run(main(informer))


def test_bad_event_options_are_refused() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="max_size"):
            await events(object(), max_size=0).__anext__()
        with pytest.raises(ValueError, match="overflow"):
            await events(object(), overflow="drop").__anext__()  # type: ignore[arg-type]

    asyncio.run(main())


# -- cache sync -----------------------------------------------------------------------------
def test_wait_for_cache_sync_async(server: EmbeddedApiServer) -> None:
    factory = new_shared_informer_factory(server.api_client(), 0)
    pods = factory.core().v1().pods().informer()

    async def main() -> None:
        with pytest.raises(CacheSyncTimeoutError, match="pods"):
            await wait_for_cache_sync_async(pods, timeout=0.2)  # not started
        stop = factory.start()
        try:
            await wait_for_cache_sync_async(pods, pods.has_synced, timeout=10)
            assert pods.has_synced()
        finally:
            stop.set()

    asyncio.run(main())
    assert factory.shutdown(5) == []


def test_a_factory_waits_for_its_informers_from_a_coroutine(
        server: EmbeddedApiServer, fill_path: str) -> None:
    factory = new_shared_informer_factory(server.api_client(), 0)
    pods = factory.core().v1().pods().informer()
    maps = factory.core().v1().config_maps().informer()

    async def main() -> None:
        # each informer's first fill refused; the retries come 0.8 s+ later (a refused
        # watch-list falls back to a LIST at once, as in client-go: both are refused)
        server.fail_next(4 if fill_path == "watch-list" else 2, 403)
        stop = factory.start()
        try:
            with pytest.raises(CacheSyncTimeoutError, match="pods") as failed:
                await wait_for_cache_sync_async(factory, timeout=0.3)
            assert "configmaps" in str(failed.value)
            await wait_for_cache_sync_async(factory, timeout=10)
            assert pods.has_synced() and maps.has_synced()
        finally:
            stop.set()

    asyncio.run(main())
    assert factory.shutdown(5) == []


# -- the runtime ----------------------------------------------------------------------------
@pytest.mark.parametrize("own_loop", [True, False])
def test_the_runtime_runs_async_reconcilers(server: EmbeddedApiServer, own_loop: bool) -> None:
    core = CoreV1Api(server.api_client())
    for i in range(6):
        core.create_namespaced_pod("default", pod(f"p{i}"))
    reconciled: list[str] = []
    active = 0
    most = 0
    loop_threads: set[str] = set()
    failed_once: set[str] = set()
    everything = threading.Event()

    async def reconcile(obj: Any, ctx: Any) -> Action:
        nonlocal active, most
        loop_threads.add(threading.current_thread().name)
        active += 1
        most = max(most, active)
        await asyncio.sleep(0.2)  # long enough for the other workers to start theirs
        active -= 1
        name = obj["metadata"]["name"]
        if name == "p0" and name not in failed_once:
            failed_once.add(name)
            raise RuntimeError("transient")
        reconciled.append(name)
        if len(set(reconciled)) == 6:
            everything.set()
        return Action.await_change()

    async def error_policy(obj: Any, err: BaseException, ctx: Any) -> Action:
        return Action.requeue(0.05)

    def run(loop: asyncio.AbstractEventLoop | None) -> Any:
        factory = new_shared_informer_factory(server.api_client(), 0)
        controller = Controller(factory, PODS).with_config(
            ControllerConfig(concurrency=3, events=False, loop=loop))
        threading.Thread(target=lambda: (everything.wait(20), controller.shutdown()),
                         name="test-shutdown").start()
        return controller.run(reconcile, error_policy)

    if own_loop:
        summary = run(None)
        assert loop_threads == {"controller-pods-loop"}
    else:
        async def main() -> Any:
            return await asyncio.to_thread(run, asyncio.get_running_loop())
        summary = asyncio.run(main())
        assert loop_threads == {"MainThread"}
    assert sorted(set(reconciled)) == [f"p{i}" for i in range(6)]
    assert summary.errors == 1
    assert 1 < most <= 3  # concurrency holds for coroutines too


def test_shutdown_cancels_async_reconciles_past_the_deadline(
        server: EmbeddedApiServer) -> None:
    CoreV1Api(server.api_client()).create_namespaced_pod("default", pod("slow"))
    started = threading.Event()
    cancelled = threading.Event()

    async def reconcile(obj: Any, ctx: Any) -> Action:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return Action.await_change()

    factory = new_shared_informer_factory(server.api_client(), 0)
    controller = Controller(factory, PODS).with_config(
        ControllerConfig(events=False, shutdown_timeout=0.2))
    threading.Thread(target=lambda: (started.wait(20), controller.shutdown()),
                     name="test-shutdown").start()
    began = time.monotonic()
    summary = controller.run(reconcile)
    assert time.monotonic() - began < 20
    assert cancelled.is_set()
    # still running at the deadline: reported, then cancelled (its thread ended)
    assert [ref.key() for ref in summary.unfinished] == ["default/slow"]


# -- the bridge -----------------------------------------------------------------------------
def test_an_owned_loop_ends_with_close_and_is_collected() -> None:
    caller = LoopCaller(name="test-owned-loop")

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert caller.call(answer()) == 42
    loop = weakref.ref(caller.loop)
    caller.close()
    assert not any(t.name == "test-owned-loop" for t in threading.enumerate())
    with pytest.raises(ClientCacheError, match="closed"):
        caller.call(answer())
    del caller
    gc.collect()
    assert loop() is None


def test_a_cancel_between_submitting_and_waiting_is_not_lost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """cancel_all (a handler stopping) right after a call was submitted to the loop and
    before the call waits for it: the call still ends, cancelled (it used to wait for
    the coroutine, here one that never ends)."""
    caller = LoopCaller(name="test-cancel-race")
    submit = asyncio.run_coroutine_threadsafe

    def submit_then_cancel(coro: Any, loop: asyncio.AbstractEventLoop) -> Any:
        future = submit(coro, loop)
        caller.cancel_all()
        return future

    monkeypatch.setattr(asyncio, "run_coroutine_threadsafe", submit_then_cancel)
    try:
        with pytest.raises(CallCancelledError):
            caller.call(asyncio.Event().wait())
    finally:
        monkeypatch.undo()
        caller.close()


# -- the loop is not blocked ----------------------------------------------------------------
LAG_OBJECTS = 10_000


def measure_loop_lag(low_latency: bool) -> tuple[list[float], dict[str, Any]]:
    """Sorted lags of a probe sleeping 1 ms at a time on the loop while 10,000 pods sync
    into an informer and reach an AsyncHandler and an events() consumer (and, in the
    low-latency mode, for 0.3 s after the block, where a deferred collection would show),
    with the control probe's result over the same window."""
    with EmbeddedApiServerProcess() as srv:
        srv.control("load", count=LAG_OBJECTS, namespace="default", kind="pods")
        core = CoreV1Api(srv.api_client())
        deadline = time.monotonic() + 60
        while True:  # the load runs inside the server process
            listed = core.list_namespaced_pod("default", limit=1)
            if len(listed.items) + (listed.metadata.remaining_item_count or 0) >= LAG_OBJECTS:
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)

        async def main() -> list[float]:
            handled = 0
            streamed = 0
            lags: list[float] = []
            finished = asyncio.Event()

            async def added(obj: Any) -> None:
                nonlocal handled
                handled += 1

            async def probe() -> None:
                while not finished.is_set():
                    began = time.monotonic()
                    await asyncio.sleep(0.001)
                    lags.append(time.monotonic() - began - 0.001)

            factory = new_shared_informer_factory_with_options(
                srv.api_client(), 0, SharedInformerFactoryOptions(use_watch_list=low_latency))
            informer = factory.core().v1().pods().informer()
            informer.add_event_handler(AsyncHandler(on_add=added))

            async def consume() -> None:
                nonlocal streamed
                async for _ in events(informer):
                    streamed += 1

            probing = asyncio.ensure_future(probe())
            consuming = asyncio.ensure_future(consume())
            control.start()
            tuned = low_latency_sync() if low_latency else contextlib.nullcontext()
            try:
                with tuned:
                    stop = factory.start()
                    await wait_for_cache_sync_async(factory, timeout=60)
                    while handled < LAG_OBJECTS or streamed < LAG_OBJECTS:
                        await asyncio.sleep(0.05)
                if low_latency:
                    await asyncio.sleep(0.3)
            finally:
                finished.set()
                await probing  # before the control's result is read, which blocks the loop
                control.finish()
                stop.set()
                await asyncio.wait_for(consuming, 5)
                assert factory.shutdown(5) == []
                gc.unfreeze()
            return lags

        control = ControlProbe()
        lags = sorted(asyncio.run(main()))
    base = control.result
    print(f"loop lag over {len(lags)} probes: median {lags[len(lags) // 2] * 1000:.2f} ms, "
          f"p99 {lags[int(len(lags) * 0.99)] * 1000:.1f} ms, max {lags[-1] * 1000:.0f} ms, "
          f"{sum(lag > 0.010 for lag in lags)} over 10 ms; control: median "
          f"{base['median'] * 1000:.2f} ms, max {base['max'] * 1000:.0f} ms, "
          f"{base['late']} of {base['probes']} over 10 ms")
    return lags, base


def median_allowance() -> float:
    """How much later than the control's the loop's median probe may be: 1 ms, scaled by
    how far the 1-minute load exceeds the core count (at load 11 on 2 cores the median
    was 0.3-1.2 ms over the control's, 2026-11-29: a preempted interpreter-lock holder
    delays the loop by a time slice, which a bare loop elsewhere does not pay)."""
    return 0.001 * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def test_loop_lag_during_a_10000_object_sync() -> None:
    """The default sync (one LIST, the collector as the process has it). The library runs
    nothing long on the loop; what delays it is the interpreter lock held elsewhere in
    the process: decoding the LIST response (one C call, ~200 ms for 10,000 pods) and the
    cyclic garbage collector's full passes over the growing cache (90-200 ms each). The
    test bounds how often the loop is late; the low-latency test below bounds the worst.

    A loaded machine delays every loop: a control probe in a process of its own (a bare
    event loop, no library) runs over the same window, and the bounds are on what this
    loop suffers beyond the control's. Above a 1-minute load of the core count, the
    operating system also preempts whichever of this process's threads holds the
    interpreter lock, which a bare loop elsewhere does not see (at load 10 on 2 cores,
    2026-11-29: 2 runs in 2 over the late bound); there the test holds the median only,
    and says so, as the low-latency test below does with its bound."""
    quiet = os.getloadavg()[0] <= (os.cpu_count() or 1)
    lags, base = measure_loop_lag(low_latency=False)
    late = sum(lag > 0.010 for lag in lags)
    assert lags[len(lags) // 2] < median_allowance() + base["median"]
    if quiet:
        assert late / len(lags) <= 0.02 + base["late"] / max(1, base["probes"])
    else:
        print("loaded machine: the bound on late probes is not applied")


def test_loop_lag_stays_under_10_ms_with_a_low_latency_sync() -> None:
    """Synced from a watch-list stream inside ``low_latency_sync()``: 999 probes in 1,000
    are less than 10 ms late beyond the control probe's 99.9th percentile, during the sync
    and after it (the bound was on the single worst probe until issue 67). Measured on
    this project's machine, quiet, 2026-11-24: p99 about 2 ms, max 4-10 ms over 8 runs
    (before the events() iterator stopped taking a lock the handler's thread holds and
    started giving the loop turns while draining, max 12-27 ms). On a
    slower machine later that day it failed about one run in five at 13-25 ms: the loop
    took the queue's lock in has_synced while the controller thread held it, and waited a
    1 ms switch interval behind each of 3-4 busy informer threads. With has_synced
    lock-free and a 0.5 ms interval: max 3-10 ms over 56 runs on 3.11 and 3.13, none
    failed; but a CI run on 2026-11-25 failed at 12 ms, and on 2026-11-26 2 syncs in 8
    went over 10 ms here (5-16 ms), right after the sync, while the controller thread
    popped the 10,000 items and the handler threads passed the interpreter lock around.
    At 0.1 ms: max 4-9 ms over 38 runs of this test on 3.10, 3.11 and 3.13, none failed
    (and 5 of 5 passed with another process burning a core: max 6-12 ms, control 4-7).

    That bound needs a machine with a core to spare. On a loaded one the operating system
    preempts whichever informer thread holds the interpreter lock, and the loop waits for
    that thread's next time slice (up to ~60 ms seen at load 4 on 2 cores): that happens to
    any threaded Python process and a bare loop in another process does not see it. So
    when the 1-minute load is above the core count the test holds the median only, as
    the default test does there, and says so."""
    quiet = os.getloadavg()[0] <= (os.cpu_count() or 1)
    lags, base = measure_loop_lag(low_latency=True)
    assert lags[len(lags) // 2] < median_allowance() + base["median"]
    if quiet:
        # the bound is on the 99.9th percentile, the control's beside it: a single
        # sample's maximum (what the test held before, issue 67) is one preemption of one
        # thread by the operating system, and failed 1 run in 6 at a load of about 2
        p999 = lags[min(len(lags) - 1, int(len(lags) * 0.999))]
        assert p999 < 0.010 + base["p999"], (p999, base)
    else:
        print("loaded machine: the 10 ms bound is not applied")


def test_low_latency_sync_pauses_the_collector_then_freezes_and_restores() -> None:
    interval = sys.getswitchinterval()
    assert gc.isenabled()
    try:
        frozen = gc.get_freeze_count()
        with low_latency_sync(switch_interval=0.002):
            assert not gc.isenabled()
            assert sys.getswitchinterval() == 0.002
            with low_latency_sync(switch_interval=0.0005):  # nested: the first one's settings
                assert sys.getswitchinterval() == 0.002
            assert not gc.isenabled()  # still inside the outer block
            kept = [{"spec": [i]} for i in range(1000)]
        assert gc.isenabled()
        assert sys.getswitchinterval() == interval
        assert gc.get_freeze_count() >= frozen + 2 * len(kept)  # each list and its dict
        gc.unfreeze()

        with pytest.raises(RuntimeError), low_latency_sync(freeze=False, switch_interval=None):
            assert sys.getswitchinterval() == interval
            raise RuntimeError("the sync failed")
        assert gc.isenabled()
        assert gc.get_freeze_count() == 0
        with contextlib.ExitStack() as stack:  # a reflector's LIST pause ends first
            stack.enter_context(gc_paused())
            with low_latency_sync():
                stack.close()
                assert not gc.isenabled()  # still paused for the sync
            assert gc.isenabled()
        gc.unfreeze()
        gc.disable()  # a process that runs without the collector keeps it off
        with low_latency_sync():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
        sys.setswitchinterval(interval)
    with pytest.raises(ValueError, match="above zero"), low_latency_sync(switch_interval=0):
        pass


class ControlProbe:
    """The loop-lag probe on a bare event loop in a process of its own: how late the
    machine alone makes a loop. ``start``, ``finish``, then ``result``."""

    SCRIPT = (
        "import asyncio, json, statistics, sys, threading, time\n"
        "done = threading.Event()\n"
        "threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()\n"
        "async def main():\n"
        "    lags = []\n"
        "    while not done.is_set():\n"
        "        began = time.monotonic()\n"
        "        await asyncio.sleep(0.001)\n"
        "        lags.append(time.monotonic() - began - 0.001)\n"
        "    lags.sort()\n"
        "    at = lambda q: lags[min(len(lags) - 1, int(len(lags) * q))] if lags else 0.0\n"
        "    print(json.dumps({'probes': len(lags), 'late': sum(x > 0.010 for x in lags),\n"
        "                      'median': statistics.median(lags) if lags else 0.0,\n"
        "                      'p999': at(0.999), 'max': max(lags, default=0.0)}))\n"
        "print('started', flush=True)\n"
        "asyncio.run(main())\n")

    def __init__(self) -> None:
        self.result: dict[str, Any] = {}
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT], text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._proc.stdout is not None
        assert self._proc.stdout.readline() == "started\n"

    def finish(self) -> None:
        assert self._proc is not None
        out, _ = self._proc.communicate("", timeout=30)
        self.result = json.loads(out)


def test_writes_with_kubernetes_asyncio_from_an_async_reconcile(
        server: EmbeddedApiServer) -> None:
    """The other asyncio client, ``kubernetes_asyncio``, works beside the bridge the same
    way as ``kubernetes.aio`` (examples/async_operator.py): its session belongs to the
    loop the reconciles run on."""
    from kubernetes_asyncio import client as kac  # noqa: PLC0415 - a test extra

    core = CoreV1Api(server.api_client())
    for i in range(3):
        core.create_namespaced_pod("default", pod(f"p{i}"))

    async def main() -> Any:
        writes = kac.ApiClient(kac.Configuration(host=server.url))
        config_maps = kac.CoreV1Api(writes)
        factory = new_shared_informer_factory(server.api_client(), 0)
        controller = Controller(factory, PODS).with_config(ControllerConfig(
            events=False, loop=asyncio.get_running_loop()))
        written: set[str] = set()

        async def reconcile(obj: Any, ctx: Any) -> Action:
            name = obj["metadata"]["name"] + "-cm"
            await config_maps.create_namespaced_config_map(
                "default", {"metadata": {"name": name}})
            written.add(name)
            if len(written) == 3:
                controller.shutdown()
            return Action.await_change()

        try:
            return await asyncio.wait_for(asyncio.to_thread(controller.run, reconcile), 30)
        finally:
            await writes.close()
            assert asyncio.all_tasks() == {asyncio.current_task()}  # nothing left running

    summary = asyncio.run(main())
    assert summary.errors == 0
    names = {c.metadata.name for c in core.list_namespaced_config_map("default").items}
    assert {"p0-cm", "p1-cm", "p2-cm"} <= names
