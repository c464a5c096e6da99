"""The shared informer factory against the embedded API server, through the real client."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration, CoreV1Api, V1Pod

from client_cache import DeletedFinalStateUnknown
from client_cache.api.labels import parse
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.errors import ApiStatusError, is_not_found
from client_cache.informers import (
    SharedInformerFactoryOptions,
    UnknownResourceError,
    new_shared_informer_factory,
    new_shared_informer_factory_with_options,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import eventually

PODS = GroupVersionResource("", "v1", "pods")


class Recording:
    """A handler that records (kind, key) and wakes waiters."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.events: list[tuple[str, str]] = []

    def _key(self, obj: Any) -> str:
        if isinstance(obj, DeletedFinalStateUnknown):
            return f"tombstone:{obj.key}"
        md = obj["metadata"] if isinstance(obj, dict) else obj.metadata.to_dict()
        return f"{md.get('namespace') or ''}/{md['name']}"

    def _record(self, kind: str, obj: Any) -> None:
        with self.cond:
            self.events.append((kind, self._key(obj)))
            self.cond.notify_all()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._record("update", new)

    def on_delete(self, obj: Any) -> None:
        self._record("delete", obj)

    def wait_for(self, event: tuple[str, str], timeout: float = 10) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: event in self.events, timeout), (event, self.events)


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer(bookmark_interval=0.2) as srv:
        yield srv


def test_factory_informers_handlers_listers(server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    core.create_namespaced_pod("default", {"metadata": {"name": "web-0", "labels": {"app": "web"}}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}, "data": {"a": "1"}})
    factory = new_shared_informer_factory(server.api_client(), 0)
    pods = factory.core().v1().pods()
    configmaps = factory.core().v1().config_maps()
    assert factory.for_resource(PODS).informer() is pods.informer()  # shared
    pod_events, cm_events = Recording(), Recording()
    pods.informer().add_event_handler(pod_events)
    configmaps.informer().add_event_handler(cm_events)
    stop = threading.Event()
    factory.start(stop)
    try:
        synced = factory.wait_for_cache_sync(stop)
        assert synced == {PODS: True, GroupVersionResource("", "v1", "configmaps"): True}
        pod_events.wait_for(("add", "default/web-0"))
        cm_events.wait_for(("add", "default/cfg"))
        # listers answer from the cache
        assert pods.lister().by_namespace("default").get("web-0")["metadata"]["name"] == "web-0"
        assert [p["metadata"]["name"] for p in pods.lister().list(parse("app=web"))] == ["web-0"]
        with pytest.raises(ApiStatusError) as info:
            pods.lister().by_namespace("default").get("missing")
        assert is_not_found(info.value) and str(info.value) == 'pod "missing" not found'
        # updates and deletes
        core.patch_namespaced_pod("web-0", "default", {"metadata": {"labels": {"v": "2"}}})
        pod_events.wait_for(("update", "default/web-0"))
        core.create_namespaced_pod("default", {"metadata": {"name": "web-1"}})
        pod_events.wait_for(("add", "default/web-1"))
        core.delete_namespaced_pod("web-1", "default")
        pod_events.wait_for(("delete", "default/web-1"))
        # a delete missed while the watch is down comes back as a tombstone after relist
        server.fail_next(1, 500, watch_only=True)
        server.abort_watches()
        core.delete_namespaced_pod("web-0", "default")
        pod_events.wait_for(("delete", "tombstone:default/web-0"), timeout=15)
        # a handler added late gets synthetic adds and reports synced
        late = Recording()
        core.create_namespaced_config_map("default", {"metadata": {"name": "cfg2"}})
        cm_events.wait_for(("add", "default/cfg2"))
        registration = configmaps.informer().add_event_handler(late)
        late.wait_for(("add", "default/cfg"))
        late.wait_for(("add", "default/cfg2"))
        eventually(registration.has_synced, 5)
        # removing a handler stops its notifications
        configmaps.informer().remove_event_handler(registration)
        core.create_namespaced_config_map("default", {"metadata": {"name": "cfg3"}})
        cm_events.wait_for(("add", "default/cfg3"))
        assert ("add", "default/cfg3") not in late.events
    finally:
        stop.set()
        factory.shutdown(2.0)
    assert all(not t.is_alive() for t in factory._threads)


def test_factory_options_models_and_namespace(server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    core.create_namespaced_pod("team-a", {"metadata": {"name": "a", "labels": {"keep": "1"}}})
    core.create_namespaced_pod("team-a", {"metadata": {"name": "b"}})
    core.create_namespaced_pod("team-b", {"metadata": {"name": "c", "labels": {"keep": "1"}}})

    def tweak(options: ListOptions) -> None:
        options.label_selector = "keep=1"

    factory = new_shared_informer_factory_with_options(
        server.api_client(), 0,
        SharedInformerFactoryOptions(namespace="team-a", tweak_list_options=tweak))
    pods = factory.core().v1().pods(models=True)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert all(factory.wait_for_cache_sync(stop).values())
        cached = pods.informer().get_store().list()
        assert [type(p).__name__ for p in cached] == ["V1Pod"]
        assert [p.metadata.name for p in cached] == ["a"]
        assert isinstance(pods.lister().by_namespace("team-a").get("a"), V1Pod)
    finally:
        stop.set()
        factory.shutdown(2.0)
    factory.start(stop)  # after shutdown: refused
    with pytest.raises(AttributeError):
        factory.core().v1().widgets()


@pytest.mark.parametrize("use_watch_list", [True, False])
def test_the_factory_option_picks_the_initial_sync_path(
        server: EmbeddedApiServer, monkeypatch: pytest.MonkeyPatch,
        use_watch_list: bool) -> None:
    """``use_watch_list`` reaches every informer's reflector and overrides the feature-gate
    environment variable either way: the server sees a LIST or none."""
    core = CoreV1Api(server.api_client())
    for name in ("a", "b", "c"):
        core.create_namespaced_pod("default", {"metadata": {"name": name}})
    monkeypatch.setenv("ENABLE_CLIENT_GO_WATCH_LIST_ALPHA", "false" if use_watch_list else "true")
    factory = new_shared_informer_factory_with_options(
        server.api_client(), 0, SharedInformerFactoryOptions(use_watch_list=use_watch_list))
    pods = factory.core().v1().pods()
    lists_before = server.list_requests
    with factory.running(timeout=10):
        assert sorted(p["metadata"]["name"] for p in pods.lister().list()) == ["a", "b", "c"]
        assert server.list_requests - lists_before == (0 if use_watch_list else 1)
    assert factory.shutdown(5) == []


SLOW_EVENTS = int(os.environ.get("CLIENT_CACHE_SLOW_HANDLER_EVENTS", "300"))


def test_slow_handler_does_not_hold_back_a_fast_one(server: EmbeddedApiServer) -> None:
    """One handler sleeps 10 ms per event, another counts: the fast one finishes long
    before the slow one, and both see every event in order per key."""
    factory = new_shared_informer_factory(server.api_client(), 0)
    informer = factory.core().v1().config_maps().informer()
    lock = threading.Lock()
    fast: list[str] = []
    slow: list[str] = []
    fast_done, slow_done = threading.Event(), threading.Event()

    def record(target: list[str], done: threading.Event, delay: float) -> Any:
        def on_update(old: Any, new: Any) -> None:
            if delay:
                time.sleep(delay)  # the handler's own work, not a synchronisation
            with lock:
                target.append(new["data"]["i"])
                if len(target) == SLOW_EVENTS:
                    done.set()
        return on_update

    informer.add_event_handler(ResourceEventHandlerFuncs(update_func=record(fast, fast_done, 0)))
    informer.add_event_handler(ResourceEventHandlerFuncs(
        update_func=record(slow, slow_done, 0.01)))
    rtype = server.store.lookup("", "v1", "configmaps")
    assert rtype is not None
    obj = server.store.create(rtype, "default", {"metadata": {"name": "counter"},
                                                 "data": {"i": "-1"}})
    stop = threading.Event()
    factory.start(stop)
    try:
        assert all(factory.wait_for_cache_sync(stop).values())
        start = time.monotonic()
        for i in range(SLOW_EVENTS):
            obj["data"]["i"] = str(i)
            obj = server.store.update(rtype, "default", "counter", obj)
        assert fast_done.wait(30)
        fast_time = time.monotonic() - start
        assert not slow_done.is_set()  # the slow one is still far behind
        assert slow_done.wait(SLOW_EVENTS * 0.05 + 10)
        slow_time = time.monotonic() - start
        assert fast_time < slow_time / 2
        expected = [str(i) for i in range(SLOW_EVENTS)]
        assert fast == expected and slow == expected
    finally:
        stop.set()
        factory.shutdown(2.0)


def test_for_resource_of_a_resource_the_server_does_not_serve_waits_for_it(
        server: EmbeddedApiServer, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 59, 67: for_resource hands out the informer of a resource not served (yet)
    without asking the server; once started, its 404 is one WARNING naming it and
    asking for its CRD; check_served is the way to fail at once."""
    factory = new_shared_informer_factory(server.api_client(), 0)
    for gvr in (GroupVersionResource("", "v1", "podz"),
                GroupVersionResource("nope.example.com", "v1", "things"),
                GroupVersionResource("apps", "v9", "deployments")):
        assert factory.for_resource(gvr).resource == gvr
        with pytest.raises(UnknownResourceError, match="no informer found for"):
            factory.check_served(gvr)
        with pytest.raises(LookupError):
            factory.check_served(gvr)
    with pytest.raises(UnknownResourceError, match=r"\(it serves v1: .*configmaps"):
        factory.check_served(GroupVersionResource("", "v1", "configmap"))
    assert factory.for_resource(PODS).resource == PODS  # served: fine
    factory.check_served(GroupVersionResource("apps", "v1", "deployments"))
    stop = threading.Event()
    try:
        factory.start(stop)
        eventually(lambda: any("does not serve podz (yet)" in r.getMessage()
                               and "CustomResourceDefinition installed?" in r.getMessage()
                               and r.levelname == "WARNING" for r in caplog.records), 10)
        assert not factory.for_resource(GroupVersionResource("", "v1", "podz")) \
            .informer().has_synced()
    finally:
        stop.set()
        factory.shutdown(5)


def test_building_informers_never_asks_a_hung_server() -> None:
    """Issue 67: for_resource blocked 30 s on discovery against a server that accepts and
    never answers; it asks nothing now."""
    hung = socket.create_server(("127.0.0.1", 0))  # the kernel accepts; nobody answers
    api = ApiClient(Configuration(host=f"http://127.0.0.1:{hung.getsockname()[1]}"))
    try:
        factory = new_shared_informer_factory(api, 0)
        started = time.monotonic()
        for gvr in (GroupVersionResource("", "v1", "podz"), PODS,
                    GroupVersionResource("example.com", "v1", "widgets")):
            factory.for_resource(gvr)
        assert time.monotonic() - started < 0.5
    finally:
        api.close()
        hung.close()


def test_shutdown_names_a_handler_thread_blocked_in_user_code(
        server: EmbeddedApiServer, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 59: a handler blocked in user code keeps its thread past the informer's
    stop; shutdown returns its name and says so in one WARNING (it returned [] and logged
    nothing)."""
    api = server.api_client()
    CoreV1Api(api).create_namespaced_pod("default", {"metadata": {"name": "a"}})
    factory = new_shared_informer_factory(api, 0)
    entered, release = threading.Event(), threading.Event()

    def stuck(obj: Any) -> None:
        entered.set()
        release.wait(30)

    factory.core().v1().pods().informer().add_event_handler(
        ResourceEventHandlerFuncs(add_func=stuck))
    stop = threading.Event()
    factory.start(stop)
    try:
        assert entered.wait(10)
        stop.set()
        with caplog.at_level(logging.WARNING, logger="client_cache.informers"):
            alive = factory.shutdown(2.0)
        assert alive == ["informer-handler-pods"]
        [record] = [r for r in caplog.records if "still running" in r.getMessage()]
        assert record.levelno == logging.WARNING
        assert "informer-handler-pods" in record.getMessage()
    finally:
        release.set()
        stop.set()
        api.close()
    assert factory.shutdown(5) == []
