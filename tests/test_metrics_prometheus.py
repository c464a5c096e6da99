"""The Prometheus export (the [prometheus] extra): a known workload on the embedded server,
then the exact counters in the exposition text scraped from the health server's
/metrics; and the health endpoints' answers (controller-runtime's probe format), also
while a LIST hangs."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import prometheus_client
import pytest
from kubernetes.client import CoreV1Api
from prometheus_client import CollectorRegistry

from client_cache import ResourceEventHandlerFuncs, reflector_metrics
from client_cache.health import serve
from client_cache.informers.factory import new_shared_informer_factory
from client_cache.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaseLock,
    ResourceLockConfig,
    new_leader_elector,
)
from client_cache.leaderelection.metrics import (
    NoopLeaderMetricsProvider,
    set_leader_metrics_provider,
)
from client_cache.metrics.prometheus import register
from client_cache.runtime import (
    Action,
    Controller,
    ControllerConfig,
    reset_controller_metrics_provider_for_tests,
)
from client_cache.schema import GroupVersionResource
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.workqueue import (
    new_item_exponential_failure_rate_limiter,
    new_named_rate_limiting_queue,
)
from client_cache.workqueue.metrics import reset_provider_for_tests
from tests.fixtures import eventually, http_get

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer(bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
def registry() -> Iterator[CollectorRegistry]:
    reset_provider_for_tests()
    reflector_metrics.reset_reflector_metrics_provider_for_tests()
    yield CollectorRegistry()
    reset_provider_for_tests()
    reflector_metrics.reset_reflector_metrics_provider_for_tests()
    reset_controller_metrics_provider_for_tests()
    set_leader_metrics_provider(NoopLeaderMetricsProvider())



def samples(text: str) -> dict[str, float]:
    """``name{labels}`` -> value, for every sample line of the exposition text."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_a_known_workload_in_the_exposition_text(server: EmbeddedApiServer,
                                                 registry: CollectorRegistry) -> None:
    api = server.api_client()
    core = CoreV1Api(api)
    for name in ("a", "b", "c"):
        core.create_namespaced_pod("default", {"metadata": {"name": name}})
    factory = new_shared_informer_factory(api, 0)
    register(registry, factories=[factory])
    pods = factory.core().v1().pods().informer()
    handled: list[str] = []
    pods.add_event_handler(ResourceEventHandlerFuncs(
        add_func=lambda obj: handled.append(obj["metadata"]["name"])))
    queue: Any = new_named_rate_limiting_queue(
        new_item_exponential_failure_rate_limiter(0.001, 0.01), "test-queue")
    for item in ("x", "y", "z"):
        queue.add(item)
    for _ in range(3):
        item, _ = queue.get()
        queue.done(item)
    queue.add_rate_limited("x")  # one retry, back after 1 ms
    item, _ = queue.get()
    queue.forget(item)
    queue.done(item)
    queue.shut_down()
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm1"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm2"}})
    reconciled = threading.Semaphore(0)

    def reconcile(obj: Any, ctx: Any) -> Action:
        reconciled.release()
        return Action.await_change()

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        client_qps=0, events=False, name="metrics-test", concurrency=2))
    runner = threading.Thread(target=controller.run, args=(reconcile,), daemon=True,
                              name="test-controller-run")
    stop = threading.Event()
    lock = LeaseLock("default", "metrics-lease", api, ResourceLockConfig("me"))
    leading = threading.Event()
    elector = new_leader_elector(LeaderElectionConfig(
        lock=lock, name="metrics-lease", lease_duration=2.0, renew_deadline=1.5,
        retry_period=0.2, callbacks=LeaderCallbacks(on_started_leading=lambda _: leading.set(),
                                  on_stopped_leading=lambda: None)))
    electing = threading.Thread(target=elector.run, args=(stop,), daemon=True,
                                name="test-elector")
    factory.start(stop)
    runner.start()
    electing.start()
    try:
        assert factory.wait_for_cache_sync(stop, timeout=10)
        core.create_namespaced_pod("default", {"metadata": {"name": "d"}})
        core.create_namespaced_pod("default", {"metadata": {"name": "e"}})
        eventually(lambda: len(handled) == 5, 10)
        assert reconciled.acquire(timeout=10) and reconciled.acquire(timeout=10)
        assert leading.wait(10)
        with serve(registry=registry, factory=factory) as health:
            status, text = http_get(health.url + "/metrics")
            assert status == 200
            got = samples(text)
            expected = {
                'workqueue_adds_total{name="test-queue"}': 4.0,
                'workqueue_retries_total{name="test-queue"}': 1.0,
                'workqueue_depth{name="test-queue"}': 0.0,
                'workqueue_work_duration_seconds_count{name="test-queue"}': 4.0,
                'workqueue_queue_duration_seconds_count{name="test-queue"}': 4.0,
                'reflector_lists_total{name="pods"}': 1.0,
                'reflector_items_per_list_sum{name="pods"}': 3.0,
                'client_cache_informer_synced{resource="pods"}': 1.0,
                'client_cache_informer_healthy{resource="pods"}': 1.0,
                'client_cache_informer_lists_total{resource="pods"}': 1.0,
                'client_cache_informer_relists_total{resource="pods"}': 0.0,
                'client_cache_informer_events_handled_total{resource="pods"}': 5.0,
                'client_cache_informer_handler_errors_total{resource="pods"}': 0.0,
                'controller_runtime_reconcile_total{controller="metrics-test",'
                'result="success"}': 2.0,
                'controller_runtime_reconcile_errors_total{controller="metrics-test"}': 0.0,
                'controller_runtime_max_concurrent_reconciles{controller="metrics-test"}': 2.0,
                'controller_runtime_reconcile_time_seconds_count{controller="metrics-test"}':
                    2.0,
                'leader_election_master_status{name="metrics-lease"}': 1.0,
            }
            assert {k: got.get(k) for k in expected} == expected
            assert got['client_cache_informer_handler_buffer_depth{handler="0:test_a_known_'
                       'workload_in_the_exposition_text.<locals>.<lambda>",resource="pods"}'] == 0
    finally:
        controller.shutdown()
        stop.set()
        runner.join(10)
        electing.join(10)
        assert factory.shutdown(5) == []
        api.close()
    assert not runner.is_alive() and not electing.is_alive()


def test_probe_answers_as_controller_runtime(server: EmbeddedApiServer) -> None:
    """Not ready until synced; liveness lists the failing check; /healthz/<name>; the
    endpoint answers while the LIST hangs."""
    api = server.api_client()
    factory = new_shared_informer_factory(api, 0)
    factory.core().v1().pods().informer()
    stop = threading.Event()
    broken = {"on": False}

    def custom() -> str | None:
        return "disk full" if broken["on"] else None

    server.latency = 3.0  # every request, the LIST included, hangs 3 s
    with serve(factory=factory, healthz={"custom": custom}) as health:
        factory.start(stop)
        try:
            status, body = http_get(health.url + "/readyz")
            assert status == 500
            assert body == ("[-]caches failed: not synced: pods\n[+]informers ok\n[+]ping ok\n"
                            "readyz check failed\n")
            assert http_get(health.url + "/healthz") == (200, "ok")
            assert http_get(health.url + "/healthz?verbose") == (
                200, "[+]custom ok\n[+]informers ok\n[+]ping ok\nhealthz check passed\n")
            broken["on"] = True
            assert http_get(health.url + "/healthz") == (
                500, "[-]custom failed: disk full\n[+]informers ok\n[+]ping ok\n"
                     "healthz check failed\n")
            assert http_get(health.url + "/healthz?exclude=custom") == (200, "ok")
            assert http_get(health.url + "/healthz/custom") == (
                500, "internal server error: disk full\n")
            assert http_get(health.url + "/healthz/ping") == (200, "ok")
            assert http_get(health.url + "/healthz/nope")[0] == 404
            server.latency = 0.0
            assert factory.wait_for_cache_sync(stop, timeout=20)
            eventually(lambda: http_get(health.url + "/readyz") == (200, "ok"), 10)
        finally:
            stop.set()
            assert factory.shutdown(5) == []
            api.close()
    assert not [t for t in threading.enumerate() if t.name == "health-server"]


def test_the_collector_does_not_keep_a_factory_alive(server: EmbeddedApiServer,
                                                     registry: CollectorRegistry) -> None:
    api = server.api_client()
    factory = new_shared_informer_factory(api, 0)
    collector = register(registry, factories=[factory])
    alive = weakref.ref(factory)
    assert list(collector.collect())  # reads it while it exists
    del factory
    gc.collect()
    assert alive() is None
    assert all(not family.samples for family in collector.collect())
    api.close()


def test_register_is_idempotent_and_exports_no_created_twins(
        server: EmbeddedApiServer, registry: CollectorRegistry) -> None:
    """Issue 59: a second register() with one registry returns the first collector (it
    raised DuplicateTimeseries), with the new factories added; no ``*_created`` series."""
    api = server.api_client()
    try:
        first_factory = new_shared_informer_factory(api, 0)
        second_factory = new_shared_informer_factory(api, 0)
        first = register(registry, factories=[first_factory])
        assert register(registry, factories=[second_factory]) is first
        queue: Any = new_named_rate_limiting_queue(
            new_item_exponential_failure_rate_limiter(0.001, 0.01), "idempotent")
        queue.add("k")
        text = prometheus_client.generate_latest(registry).decode()
        assert 'workqueue_adds_total{name="idempotent"} 1.0' in text
        assert "_created" not in text
        queue.shut_down()
    finally:
        api.close()
