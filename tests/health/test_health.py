"""Informer health, sync timeouts and the log lines an operator reads, on the embedded
server."""

from __future__ import annotations

import logging
import os
import signal
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import prometheus_client
import pytest
from kubernetes.client import CoreV1Api

from client_cache import CacheSyncTimeoutError, ResourceEventHandlerFuncs
from client_cache import reflector_status as status_module
from client_cache.api.schema import GroupVersionResource
from client_cache.health import display_resource, informers_check, serve
from client_cache.informers.factory import new_shared_informer_factory
from client_cache.metrics.prometheus import InformerCollector
from client_cache.runtime import Action, Controller, ControllerConfig
from client_cache.testing.apiserver import EmbeddedApiServer, EmbeddedApiServerProcess
from client_cache.util.runtime import handle_error
from tests.fixtures import eventually, http_get


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer(bookmark_interval=0.2) as srv:
        yield srv


class Running:
    """A factory with the pods informer on ``server``'s client, stopped at exit."""

    def __init__(self, server: EmbeddedApiServer) -> None:
        self.api = server.api_client()
        self.factory = new_shared_informer_factory(self.api, 0)
        self.informer = self.factory.core().v1().pods().informer()
        self.stop = threading.Event()

    def start(self) -> Running:
        self.factory.start(self.stop)
        return self

    def close(self) -> None:
        self.stop.set()
        assert self.factory.shutdown(5) == []
        self.api.close()


def make_pod(server: EmbeddedApiServer, name: str) -> None:
    api = server.api_client()
    try:
        CoreV1Api(api).create_namespaced_pod("default", {"metadata": {"name": name}})
    finally:
        api.close()


def test_display_names() -> None:
    assert display_resource("pods") == "pods"
    assert display_resource("apps/v1/deployments") == "apps/v1 deployments"
    assert display_resource("samplecontroller.k8s.io/v1alpha1/foos") == \
        "foos.samplecontroller.k8s.io"


def test_health_through_sync_outage_and_return(server: EmbeddedApiServer) -> None:
    """Not started, then synced; unhealthy once failing for longer than the threshold
    while the server is gone; healthy again when it is back."""
    make_pod(server, "a")
    running = Running(server)
    before = running.informer.health()
    assert (before.started, before.synced, before.healthy, before.lists) == (
        False, False, True, 0)
    running.informer.status.failing_after = 0.5
    running.start()
    try:
        assert running.factory.wait_for_cache_sync(running.stop, timeout=10)
        synced = running.informer.health()
        assert synced.synced and synced.healthy and synced.lists == 1
        assert synced.last_list is not None and synced.consecutive_failures == 0
        server.stop()  # connections cut, then refused
        eventually(lambda: not running.informer.health().healthy, 20, "never unhealthy")
        down = running.informer.health()
        assert down.consecutive_failures >= 1 and "failing for" in down.reason
        # the watch cut short counts as the first failure; the refused attempts follow
        eventually(lambda: "refused" in running.informer.health().last_error.lower(), 20,
                   "no refused attempt counted")
        revived = EmbeddedApiServer(server.port, bookmark_interval=0.2, store=server.store)
        revived.start()
        try:
            eventually(lambda: running.informer.health().healthy, 40, "never healthy again")
            back = running.informer.health()
            assert back.consecutive_failures == 0 and back.relists + back.watch_restarts >= 1
        finally:
            running.close()
            revived.stop()
    finally:
        running.stop.set()


def test_handler_counts_and_buffers(server: EmbeddedApiServer,
                                    caplog: pytest.LogCaptureFixture) -> None:
    for name in ("a", "b", "c"):
        make_pod(server, name)
    gate = threading.Event()
    running = Running(server)

    def on_add(obj: Any) -> None:
        gate.wait(10)
        if obj["metadata"]["name"] == "b":
            raise ValueError("handler bug")

    running.informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add))
    running.start()
    try:
        # the first notification is in the handler; the other two wait in its buffer
        eventually(lambda: list(running.informer.health().handler_buffers.values()) == [2],
                   10, "the buffer never held two")
        gate.set()
        eventually(lambda: running.informer.health().handled == 3, 10)
        (failed,) = [r for r in caplog.records if "failed, skipping" in r.getMessage()]
        assert (failed.resource, failed.handler) == (  # type: ignore[attr-defined]
            "pods", "test_handler_counts_and_buffers.<locals>.on_add")
        health = running.informer.health()
        assert health.handler_errors == 1 and list(health.handler_buffers.values()) == [0]
        (only,) = running.factory.health().values()
        assert only.handled == 3 and only.resource == "pods"
    finally:
        gate.set()
        running.close()


def test_sync_timeout_names_the_resource_and_its_error(server: EmbeddedApiServer) -> None:
    server.fail_next(1000, 403)
    running = Running(server).start()
    try:
        with pytest.raises(CacheSyncTimeoutError) as caught:
            running.factory.wait_for_cache_sync(running.stop, timeout=1.5)
        assert list(caught.value.unsynced) == ["pods"]
        assert "403" in caught.value.unsynced["pods"]
        assert "pods (" in str(caught.value) and "403" in str(caught.value)
    finally:
        server.clear_faults()
        running.close()


def test_operator_log_lines(server: EmbeddedApiServer, caplog: pytest.LogCaptureFixture,
                            monkeypatch: pytest.MonkeyPatch, fill_path: str) -> None:
    """INFO at LIST (or watch-list) start and sync (count, duration); WARNING for a slow
    one and for a relist after 410 (with the resourceVersion); one record per failed
    attempt, with the resource named as people write it and a hint for 403."""
    stream = fill_path == "watch-list"
    make_pod(server, "a")
    monkeypatch.setattr(status_module, "SLOW_LIST_SECONDS", -1.0)  # every LIST is "slow"
    caplog.set_level(logging.INFO)
    running = Running(server).start()
    try:
        assert running.factory.wait_for_cache_sync(running.stop, timeout=10)

        def texts() -> list[tuple[str, str]]:
            return [(r.levelname, r.getMessage()) for r in caplog.records]

        slow = "slow watch-list" if stream else "slow LIST"
        eventually(lambda: any(level == "WARNING" and "pods: cache filled with 1 items" in t
                               and slow in t for level, t in texts()), 10)
        start = ("pods: listing from resourceVersion '(latest)' (watch-list stream)"
                 if stream else "pods: listing from resourceVersion '0'")
        assert ("INFO", start) in texts()
        eventually(lambda: server.watch_requests >= 1, 10)  # the watch is open
        caplog.clear()
        rv = running.informer.last_sync_resource_version()
        # the relist after the 410 is refused once; a refused watch-list falls back to a
        # LIST at once, as in client-go, so there both are refused
        server.fail_next(2 if stream else 1, 403)
        server.send_watch_error(410)
        eventually(lambda: running.informer.health().lists == 2, 20, "no relist")
        loud = [(r.levelname, r.getMessage()) for r in caplog.records
                if r.levelno >= logging.WARNING]
        assert any(f"resourceVersion {rv} is too old for the watch" in text
                   for _, text in loud)
        failures = [text for _, text in loud if "list/watch failed" in text]
        assert len(failures) == 1, loud  # one line, not a WARNING plus an ERROR
        assert failures[0].startswith("pods: list/watch failed (attempt 1): ")
        # every reflector record carries the resource, for formatters that filter on it
        ours = [r for r in caplog.records if r.name == "client_cache.reflector"]
        assert ours and all(getattr(r, "resource", None) == "pods" for r in ours)
        assert "403" in failures[0] and "RBAC does not allow verb 'list'" in failures[0]
    finally:
        running.close()


def test_library_logging_defaults(caplog: pytest.LogCaptureFixture) -> None:
    assert any(isinstance(h, logging.NullHandler)
               for h in logging.getLogger("client_cache").handlers)
    try:
        raise RuntimeError("boom")
    except RuntimeError as err:
        handle_error(err)
    (record,) = [r for r in caplog.records if r.getMessage() == "boom"]
    assert record.exc_info is not None and record.exc_info[1] is not None


def test_the_runtime_reports_its_informers(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    factory = new_shared_informer_factory(api, 0)
    controller: Controller[None] = Controller(
        factory, GroupVersionResource("", "v1", "configmaps"),
        config=ControllerConfig(client_qps=0, events=False)).watches(
        GroupVersionResource("", "v1", "pods"), lambda obj: [])
    runner = threading.Thread(target=controller.run,
                              args=(lambda obj, ctx: Action.await_change(),),
                              name="test-controller-run", daemon=True)
    runner.start()
    try:
        eventually(lambda: all(h.synced for h in controller.health().values())
                   and len(controller.health()) == 2, 10)
        assert list(controller.health()) == ["configmaps", "pods"]
        with serve(healthz={"controller": informers_check(controller)}) as health, \
                urllib.request.urlopen(health.url + "/healthz/controller",
                                       timeout=5) as answer:
            assert (answer.status, answer.read()) == (200, b"ok")
    finally:
        controller.shutdown()
        runner.join(10)
        api.close()
    assert not runner.is_alive()


def test_readyz_waits_for_every_informer_and_the_controller(server: EmbeddedApiServer) -> None:
    """Issue 67: /readyz answered 200 before any informer had started. It now fails until
    every informer requested from the factory has started and synced, and a controller
    given to serve() is ready only while it runs with its caches synced."""
    api = server.api_client()
    factory = new_shared_informer_factory(api, 0)
    controller: Controller[None] = Controller(
        factory, GroupVersionResource("", "v1", "configmaps"),
        config=ControllerConfig(client_qps=0, events=False))
    stop = threading.Event()
    runner = threading.Thread(target=controller.run,
                              args=(lambda obj, ctx: Action.await_change(),),
                              kwargs={"stop": stop}, name="test-controller-run", daemon=True)
    try:
        with serve(factory=factory, controller=controller) as health:
            status, body = http_get(health.url + "/readyz?verbose")
            assert status == 500, body
            assert "[-]caches failed: not synced: configmaps (not started)" in body
            assert "[-]controller failed: not running" in body
            runner.start()
            eventually(lambda: http_get(health.url + "/readyz") == (200, "ok"), 10,
                       "never ready")
            assert controller.ready() is None
            controller.shutdown()
            runner.join(10)
            status, body = http_get(health.url + "/readyz?verbose")
            assert status == 500 and "[-]controller failed: not running" in body
    finally:
        stop.set()
        controller.shutdown()
        if runner.ident is not None:
            runner.join(10)
        factory.shutdown(5)
        api.close()
    assert not runner.is_alive()


def test_a_killed_server_turns_health_and_both_probes_red_and_its_return_green() -> None:
    """Issue 59: the embedded server's process SIGKILLed: refused reconnects are failed
    attempts, so the informer turns unhealthy after its threshold and /healthz and
    /readyz answer 500 naming the resource and the error (they stayed 200: the refused
    watch restarts were logged at DEBUG and never counted); back to 200 by themselves
    when the server is back."""
    server = EmbeddedApiServerProcess(bookmark_interval=0.2).start()
    api = server.api_client()
    stop = threading.Event()
    factory = new_shared_informer_factory(api, 0)
    informer = factory.core().v1().pods().informer()
    informer.status.failing_after = 0.5
    try:
        with serve(factory=factory) as health:
            factory.start(stop)
            assert factory.wait_for_cache_sync(stop, timeout=20)
            eventually(lambda: http_get(health.url + "/readyz") == (200, "ok"), 10)
            # an event through the watch: it is no "very short watch" when it is cut
            CoreV1Api(api).create_namespaced_pod("default", {"metadata": {"name": "a"}})
            eventually(lambda: informer.get_indexer().get_by_key("default/a")[1], 10)
            assert server.pid is not None
            os.kill(server.pid, signal.SIGKILL)
            eventually(lambda: http_get(health.url + "/healthz")[0] == 500, 20,
                       "/healthz stayed 200 with the server dead")
            for probe in ("/healthz", "/readyz"):
                status, body = http_get(health.url + probe)
                assert status == 500 and "[-]informers failed: pods: failing for" in body
            eventually(lambda: "refused" in informer.health().last_error.lower(), 20)
            eventually(lambda: informer.health().consecutive_failures >= 2, 20,
                       "the refused attempts after the first were not counted")
            server.stop()
            server.start()  # the same port, an empty store
            eventually(lambda: http_get(health.url + "/healthz") == (200, "ok"), 40,
                       "/healthz never recovered")
            eventually(lambda: http_get(health.url + "/readyz") == (200, "ok"), 40)
            assert informer.health().consecutive_failures == 0
    finally:
        stop.set()
        assert factory.shutdown(5) == []
        api.close()
        server.stop()



def test_an_index_function_that_raises_does_not_hide_the_object(
        server: EmbeddedApiServer, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 59: the object is cached and delivered, the failing index skips it, and the
    informer's health, a metric and one log line per (index, reason) say so (the object
    was left out of the cache and no handler heard of it)."""
    def by_team(obj: Any) -> list[str]:
        labels = obj["metadata"].get("labels") or {}
        if "broken" in labels:
            raise KeyError("team")
        return [labels.get("team", "")]

    running = Running(server)
    running.informer.add_indexers({"team": by_team})
    seen: list[str] = []
    running.informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=lambda obj: seen.append(obj["metadata"]["name"]),
        update_func=lambda old, new: seen.append(new["metadata"]["name"])))
    api = server.api_client()
    core = CoreV1Api(api)
    core.create_namespaced_pod("default", {"metadata": {"name": "ok",
                                                        "labels": {"team": "a"}}})
    core.create_namespaced_pod("default", {"metadata": {"name": "odd",
                                                        "labels": {"broken": "1"}}})
    with caplog.at_level(logging.ERROR, logger="client_cache.reflector"):
        running.start()
        try:
            assert running.factory.wait_for_cache_sync(running.stop, timeout=10)
            eventually(lambda: sorted(seen) == ["odd", "ok"], 10)
            indexer = running.informer.get_indexer()
            assert indexer.get_by_key("default/odd")[1]
            assert [o["metadata"]["name"] for o in indexer.by_index("team", "a")] == ["ok"]
            core.patch_namespaced_pod("odd", "default", {"metadata": {"annotations": {"x": "1"}}})
            eventually(lambda: seen.count("odd") == 2, 10)
            assert running.informer.health().index_errors == {"team": 2}
            registry = prometheus_client.CollectorRegistry()
            registry.register(InformerCollector([running.factory]))
            assert registry.get_sample_value("client_cache_informer_index_errors_total",
                                             {"resource": "pods", "index": "team"}) == 2
        finally:
            running.close()
            api.close()
    lines = [r for r in caplog.records if "index 'team' failed" in r.getMessage()]
    assert len(lines) == 1 and "default/odd" in lines[0].getMessage()
    assert "KeyError" in lines[0].getMessage()
