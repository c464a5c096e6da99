"""The Python surface over the Go one: iterating a work queue, processing an item in a
with-block, and running a factory's informers in a with-block."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache import CacheSyncTimeoutError
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.informers.factory import new_shared_informer_factory
from client_cache.runtime import Action, Controller, ControllerConfig
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.util.chan import Chan
from client_cache.workqueue import (
    new,
    new_item_exponential_failure_rate_limiter,
    new_rate_limiting_queue,
)


def rate_limited() -> Any:
    return new_rate_limiting_queue(new_item_exponential_failure_rate_limiter(0.001, 0.01))


def test_iteration_ends_at_shutdown_after_the_queued_items() -> None:
    queue: Any = new()
    for item in ("a", "b", "c"):
        queue.add(item)
    seen: list[str] = []
    worker_done = threading.Event()

    def worker() -> None:
        for item in queue:
            seen.append(item)
            queue.done(item)
        worker_done.set()

    thread = threading.Thread(target=worker, name="test-worker", daemon=True)
    thread.start()
    queue.shut_down()
    assert worker_done.wait(5) and seen == ["a", "b", "c"]
    thread.join(1)


def test_processing_forgets_on_success_and_requeues_on_error(
        caplog: pytest.LogCaptureFixture) -> None:
    queue = rate_limited()
    queue.add("k")
    key, _ = queue.get()
    with queue.processing(key):
        raise ValueError("reconcile failed")  # reported and swallowed: the loop goes on
    assert queue.num_requeues("k") == 1
    assert any("reconcile failed" in r.getMessage() and r.exc_info
               for r in caplog.records if r.levelno == logging.ERROR)
    key, _ = queue.get(timeout=5)  # back after its backoff
    assert key == "k"
    with queue.processing(key):
        pass
    assert queue.num_requeues("k") == 0 and queue.len() == 0
    queue.add("k")
    key, _ = queue.get()
    with pytest.raises(KeyError), queue.processing(key, reraise=True):
        raise KeyError("propagated")
    assert queue.num_requeues("k") == 1
    queue.shut_down()


def test_a_for_loop_worker_survives_a_failing_item() -> None:
    queue = rate_limited()
    handled: list[str] = []
    for item in ("ok-1", "bad", "ok-2"):
        queue.add(item)
    attempts = {"bad": 0}

    def reconcile(key: str) -> None:
        if key == "bad" and attempts["bad"] == 0:
            attempts["bad"] += 1
            raise RuntimeError("first try fails")
        handled.append(key)
        if len(handled) == 3:
            queue.shut_down()

    for key in queue:
        with queue.processing(key):
            reconcile(key)
    assert sorted(handled) == ["bad", "ok-1", "ok-2"]


def test_factory_running_block(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    CoreV1Api(api).create_namespaced_pod("default", {"metadata": {"name": "web-0"}})
    factory = new_shared_informer_factory(api, 0)
    pods = factory.core().v1().pods()
    before = {t.name for t in threading.enumerate()}
    with factory.running(timeout=10) as stop:
        assert not stop.is_set()
        assert pods.lister().by_namespace("default").get("web-0")["metadata"]["name"] == \
            "web-0"
    assert stop.is_set()
    # every library thread ended (the server's connection threads close on their own)
    assert not {t.name for t in threading.enumerate()} - before - {
        t.name for t in threading.enumerate() if t.name.startswith("apiserver-")}
    api.close()


def test_factory_running_times_out_by_name(server: EmbeddedApiServer) -> None:
    server.fail_next(1000, 403)
    api = server.api_client()
    factory = new_shared_informer_factory(api, 0)
    factory.core().v1().pods()
    with pytest.raises(CacheSyncTimeoutError, match="pods"), factory.running(timeout=1):
        pytest.fail("the block must not run")
    assert not [t for t in threading.enumerate() if t.name.startswith("informer-")]
    server.clear_faults()
    api.close()


def test_start_without_a_stop_event_returns_one(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    factory = new_shared_informer_factory(api, 0)
    factory.core().v1().pods()
    stop = factory.start()
    assert isinstance(stop, threading.Event)
    assert all(factory.wait_for_cache_sync(stop, timeout=10).values())
    stop.set()
    assert factory.shutdown(5) == []
    api.close()


def test_for_item_in_chan_until_closed() -> None:
    chan: Chan[int] = Chan(10)
    for value in (1, 2, 3):
        chan.send(value)
    chan.close()
    assert list(chan) == [1, 2, 3]


def test_a_watch_iterates_and_is_a_context_manager(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    lw = ClientListerWatcher(api, GroupVersionResource("", "v1", "pods"), "default")
    rv = lw.list(ListOptions())["metadata"]["resourceVersion"]
    core = CoreV1Api(api)
    names: list[str] = []
    with lw.watch(ListOptions(resource_version=rv)) as watch:
        for name in ("a", "b"):
            core.create_namespaced_pod("default", {"metadata": {"name": name}})
        for event in watch:
            names.append(event.object["metadata"]["name"])
            if len(names) == 2:
                break
    assert names == ["a", "b"]
    assert list(watch) == []  # stopped at the end of the block: the channel is closed
    api.close()


def test_informer_running_block(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    CoreV1Api(api).create_namespaced_pod("default", {"metadata": {"name": "p"}})
    informer = new_shared_informer_factory(api, 0).core().v1().pods().informer()
    with informer.running(timeout=10) as stop:
        assert informer.has_synced()
        assert [o["metadata"]["name"] for o in informer.get_store().list()] == ["p"]
    assert stop.is_set() and informer.is_stopped()
    assert not [t for t in threading.enumerate() if t.name == "informer-pods"]
    api.close()


def test_controller_running_block(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    factory = new_shared_informer_factory(api, 0)
    seen = threading.Event()
    controller: Controller[None] = Controller(
        factory, GroupVersionResource("", "v1", "configmaps"),
        config=ControllerConfig(client_qps=0, events=False, name="blocky"))

    def reconcile(obj: Any, ctx: Any) -> Action:
        seen.set()
        return Action.await_change()

    with controller.running(reconcile, timeout=10) as running:
        assert running is controller
        assert all(h.synced for h in controller.health().values())
        assert seen.wait(10)
    assert controller.summary().reconciles >= 1
    assert not [t for t in threading.enumerate() if t.name == "controller-blocky"]
    api.close()
