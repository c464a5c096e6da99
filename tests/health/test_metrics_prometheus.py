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
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.health import serve
from client_cache.identity import new_informer_name
from client_cache.informer_metrics import reset_informer_metrics_provider_for_tests
from client_cache.informers.factory import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory,
    new_shared_informer_factory_with_options,
)
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
from client_cache.metrics import prometheus as exporter
from client_cache.metrics.prometheus import register
from client_cache.runtime import (
    Action,
    Controller,
    ControllerConfig,
    ReconcileError,
    TerminalError,
    reset_controller_metrics_provider_for_tests,
)
from client_cache.sharding import (
    NoopShardingMetricsProvider,
    ShardingConfig,
    set_sharding_metrics_provider,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.workqueue import (
    new_item_exponential_failure_rate_limiter,
    new_named_rate_limiting_queue,
)
from client_cache.workqueue.metrics import reset_provider_for_tests
from client_cache.workqueue.priority import LOW_PRIORITY, PriorityQueue, new_priority_queue
from client_cache.workqueue.queue import QueueConfig
from tests.client.test_transport import PODS, RawServer
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
    reset_informer_metrics_provider_for_tests()
    yield CollectorRegistry()
    reset_provider_for_tests()
    reflector_metrics.reset_reflector_metrics_provider_for_tests()
    reset_informer_metrics_provider_for_tests()
    reset_controller_metrics_provider_for_tests()
    set_leader_metrics_provider(NoopLeaderMetricsProvider())
    set_sharding_metrics_provider(NoopShardingMetricsProvider())



def elector_thread(api: Any, lease: str, stop: threading.Event,
                   ) -> tuple[threading.Event, threading.Thread]:
    """An elector for ``lease`` on a thread not started yet, and the event it sets when it
    leads."""
    leading = threading.Event()
    elector = new_leader_elector(LeaderElectionConfig(
        lock=LeaseLock("default", lease, api, ResourceLockConfig("me")), name=lease,
        lease_duration=2.0, renew_deadline=1.5, retry_period=0.2,
        callbacks=LeaderCallbacks(on_started_leading=lambda _: leading.set(),
                                  on_stopped_leading=lambda: None)))
    return leading, threading.Thread(target=elector.run, args=(stop,), daemon=True,
                                     name="test-elector")


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
    factory = new_shared_informer_factory_with_options(api, 0, SharedInformerFactoryOptions(
        informer_name=new_informer_name("metrics-test-informers")))
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
    leading, electing = elector_thread(api, "metrics-lease", stop)
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
                'workqueue_adds_total{controller="",name="test-queue"}': 4.0,
                'workqueue_retries_total{controller="",name="test-queue"}': 1.0,
                'workqueue_depth{controller="",name="test-queue",priority=""}': 0.0,
                # the controller's priority queue: the initial list came in at low
                'workqueue_depth{controller="metrics-test",name="metrics-test",'
                'priority="-100"}': 0.0,
                'workqueue_work_duration_seconds_count{controller="",name="test-queue"}': 4.0,
                'workqueue_queue_duration_seconds_count{controller="",name="test-queue"}': 4.0,
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
            # client-go v0.36's informer series, under the factory's informer name
            ident = ('{group="",name="metrics-test-informers",resource="pods",'
                     'version="v1"}')
            assert got["informer_queued_items" + ident] == 0.0
            # the initial fill, then the two adds (one batch, or two items) and any
            # bookmark: one observation per popped item or batch
            assert got["informer_processing_latency_seconds_count" + ident] >= 2
            assert got["informer_store_resource_version" + ident] == float(
                pods.get_indexer().last_store_sync_resource_version())
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
        assert 'workqueue_adds_total{controller="",name="idempotent"} 1.0' in text
        assert "_created" not in text
        queue.shut_down()
    finally:
        api.close()


#: Every metric the module documentation names, as it appears in the exposition text
#: (a histogram's or summary's ``_count`` series), with its documented label names.
DOCUMENTED: dict[str, set[str]] = {
    "rest_client_requests_total": {"code", "method", "host"},
    "rest_client_request_duration_seconds": {"verb", "host"},
    "rest_client_rate_limiter_duration_seconds": {"verb", "host"},
    "rest_client_request_size_bytes": {"verb", "host"},
    "rest_client_response_size_bytes": {"verb", "host"},
    "rest_client_request_retries_total": {"code", "verb", "host"},
    "workqueue_depth": {"name", "controller", "priority"},
    "workqueue_adds_total": {"name", "controller"},
    "workqueue_queue_duration_seconds": {"name", "controller"},
    "workqueue_work_duration_seconds": {"name", "controller"},
    "workqueue_unfinished_work_seconds": {"name", "controller"},
    "workqueue_longest_running_processor_seconds": {"name", "controller"},
    "workqueue_retries_total": {"name", "controller"},
    "reflector_lists_total": {"name"},
    "reflector_list_duration_seconds": {"name"},
    "reflector_items_per_list": {"name"},
    "reflector_watches_total": {"name"},
    "reflector_watch_duration_seconds": {"name"},
    "reflector_items_per_watch": {"name"},
    "reflector_last_resource_version": {"name"},
    "client_cache_informer_synced": {"resource"},
    "client_cache_informer_healthy": {"resource"},
    "client_cache_informer_lists_total": {"resource"},
    "client_cache_informer_relists_total": {"resource"},
    "client_cache_informer_watch_restarts_total": {"resource"},
    "client_cache_informer_watch_events_total": {"resource"},
    "client_cache_informer_consecutive_failures": {"resource"},
    "client_cache_informer_last_watch_activity_age_seconds": {"resource"},
    "client_cache_informer_queue_depth": {"resource"},
    "client_cache_informer_events_handled_total": {"resource"},
    "client_cache_informer_handler_errors_total": {"resource"},
    "client_cache_informer_handler_buffer_depth": {"resource", "handler"},
    "controller_runtime_reconcile_total": {"controller", "result"},
    "controller_runtime_reconcile_errors_total": {"controller"},
    "controller_runtime_terminal_reconcile_errors_total": {"controller"},
    "controller_runtime_reconcile_panics_total": {"controller"},
    "controller_runtime_reconcile_timeouts_total": {"controller"},
    "controller_runtime_reconcile_time_seconds": {"controller"},
    "controller_runtime_max_concurrent_reconciles": {"controller"},
    "controller_runtime_active_workers": {"controller"},
    "leader_election_master_status": {"name"},
}
_SERIES_SUFFIX = {"rest_client_request_duration_seconds",
                  "rest_client_rate_limiter_duration_seconds", "rest_client_request_size_bytes",
                  "rest_client_response_size_bytes",
                  "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds",
                  "reflector_list_duration_seconds", "reflector_items_per_list",
                  "reflector_watch_duration_seconds", "reflector_items_per_watch",
                  "controller_runtime_reconcile_time_seconds"}


def series(text: str) -> dict[str, list[dict[str, str]]]:
    """Metric name -> the label sets of its samples in the exposition text."""
    out: dict[str, list[dict[str, str]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head = line.rsplit(" ", 1)[0]
        name, _, rest = head.partition("{")
        labels = dict(pair.split("=", 1) for pair in rest.rstrip("}").split(",") if pair)
        out.setdefault(name, []).append({k: v.strip('"') for k, v in labels.items()})
    return out


def test_every_documented_metric_is_scraped_with_its_labels(
        server: EmbeddedApiServer, registry: CollectorRegistry) -> None:
    """Issue 59: after real work (a throttled runtime controller whose reconciles end in
    every result controller-runtime counts, Events, a leader election, a retried request),
    /metrics has every name the module documents, with the documented labels; the
    reconcile time has controller-runtime's buckets."""

    for name in DOCUMENTED:
        assert f"``{name}" in (exporter.__doc__ or "") or name.removesuffix("_total") in (
            exporter.__doc__ or ""), name
    api = server.api_client()
    core = CoreV1Api(api)
    names = ("ok", "later", "again", "failing", "terminal", "panic")
    for name in names:
        core.create_namespaced_config_map("default", {"metadata": {"name": name}})
    factory = new_shared_informer_factory(api, 0)
    register(registry, factories=[factory])
    factory.core().v1().pods().informer().add_event_handler(ResourceEventHandlerFuncs())
    asked_again: set[str] = set()

    def reconcile(obj: Any, ctx: Any) -> Action:
        name = obj["metadata"]["name"]
        ctx.recorder.event(obj, "Normal", "Seen", "reconciled")
        if name == "later":
            return Action.requeue(60)
        if name == "again" and name not in asked_again:
            asked_again.add(name)
            return Action.requeue_with_backoff()
        if name == "failing":
            raise ReconcileError("not yet")
        if name == "terminal":
            raise TerminalError("never")
        if name == "panic":
            return obj["no such field"]  # type: ignore[no-any-return]
        return Action.await_change()

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        client_qps=100, client_burst=100, name="scraped", shutdown_timeout=5))
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(reconcile,),
                              kwargs={"stop": stop}, daemon=True, name="test-controller-run")
    leading, electing = elector_thread(api, "scraped-lease", stop)
    dying = RawServer("serve-then-die", "serve")
    runner.start()
    electing.start()
    try:
        lw = ClientListerWatcher(dying.client(), PODS)
        lw.list(ListOptions())
        lw.list(ListOptions())  # a dead pooled connection: one retried request
        assert leading.wait(10)
        with serve(registry=registry, factory=factory) as health:
            def scraped() -> dict[str, list[dict[str, str]]]:
                return series(http_get(health.url + "/metrics")[1])

            def results() -> set[str]:
                return {s.get("result", "") for s in
                        scraped().get("controller_runtime_reconcile_total", [])
                        if s.get("controller") == "scraped"}
            eventually(lambda: results() >= {"success", "error", "requeue", "requeue_after"},
                       15, lambda: f"results so far: {results()}")
            # the terminal failure is one of the errors, not necessarily the first counted
            eventually(lambda: samples(http_get(health.url + "/metrics")[1]).get(
                'controller_runtime_terminal_reconcile_errors_total{controller="scraped"}'
            ) == 1.0, 15, "no terminal failure counted")
            eventually(lambda: any(s.get("method") == "POST" and s.get("code") == "201"
                                   for s in scraped().get("rest_client_requests_total", [])),
                       15, "no Event was posted")
            got = scraped()
            text = http_get(health.url + "/metrics")[1]
        for name, labels in DOCUMENTED.items():
            key = name + "_count" if name in _SERIES_SUFFIX else name
            assert key in got, f"{key} not scraped"
            assert all(set(sample) == labels for sample in got[key]), (key, got[key])
        values = samples(text)
        # one terminal failure, not retried; the panic is retried with backoff
        assert values['controller_runtime_terminal_reconcile_errors_total'
                      '{controller="scraped"}'] == 1.0
        assert values['controller_runtime_reconcile_panics_total{controller="scraped"}'] >= 1
        assert values['controller_runtime_reconcile_errors_total{controller="scraped"}'] >= 3
        assert 'workqueue_adds_total{controller="scraped",name="scraped"}' in text
        assert 'controller_runtime_reconcile_time_seconds_bucket{controller="scraped",' \
               'le="0.15"}' in text  # controller-runtime's buckets, not the default ones
        assert 'rest_client_request_retries_total{code="<error>"' in text
        assert 'rest_client_rate_limiter_duration_seconds_count{' in text
    finally:
        controller.shutdown()
        stop.set()
        runner.join(10)
        electing.join(10)
        dying.close()
        assert factory.shutdown(5) == []
        api.close()
    assert not runner.is_alive() and not electing.is_alive()


def test_a_sharded_controller_exports_the_shard_metrics(
        server: EmbeddedApiServer, registry: CollectorRegistry) -> None:
    """Issue 62: two sharded controllers of one ring: members, keys owned, handovers (the
    second's keys came from the first) and drain times, labelled by ring."""
    api = server.api_client()
    core = CoreV1Api(api)
    for i in range(20):
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
    register(registry)

    def controller(identity: str) -> Controller[Any]:
        return Controller(new_shared_informer_factory(server.api_client(), 0), CONFIGMAPS,
                          config=ControllerConfig(name="cms", events=False,
                                                  sharding=ShardingConfig(
                                                      "default", "cms", identity, 2.0, 1.5,
                                                      0.5)))

    def found() -> dict[str, float]:
        return samples(prometheus_client.generate_latest(registry).decode())

    first = controller("first")
    with first.running(lambda obj, ctx: Action.await_change()):
        eventually(lambda: found().get('shard_keys_owned{ring="cms"}') == 20)
        with controller("second").running(lambda obj, ctx: Action.await_change()):
            # both members write the one gauge of this process: wait for the two-member
            # state rather than read one instant
            eventually(lambda: found().get('shard_handovers_total{ring="cms"}', 0) > 0
                       and found().get('shard_members{ring="cms"}') == 2
                       and found().get('shard_drain_duration_seconds_count{ring="cms"}', 0)
                       >= 1, 15, lambda: str({k: v for k, v in found().items()
                                              if k.startswith("shard_")}))


def test_a_priority_queue_depth_is_labelled_by_priority_up_to_a_bound() -> None:
    registry = CollectorRegistry()
    provider = exporter.WorkqueueProvider(registry).for_controller("pq")
    queue: PriorityQueue[str] = new_priority_queue(QueueConfig(
        name="pq", metrics_provider=provider))
    try:
        for priority in range(exporter.MAX_PRIORITY_LABELS + 5):
            queue.add_with_priority(f"item-{priority}", priority)
        queue.add_with_priority("raised", LOW_PRIORITY)
        queue.add_with_priority("raised", 3)  # moves from -100 to 3
        depth = {k: v for k, v in samples(
            prometheus_client.generate_latest(registry).decode()).items()
            if k.startswith("workqueue_depth")}
        label = 'workqueue_depth{{controller="pq",name="pq",priority="{}"}}'.format
        assert depth[label("3")] == 2.0
        # the priorities past the bound (25..29; -100 came and went)
        assert depth[label("other")] == 5.0
        assert len(depth) == exporter.MAX_PRIORITY_LABELS + 1
        while queue.len():
            item, _ = queue.get(timeout=1)
            queue.done(item)
        assert set(samples(prometheus_client.generate_latest(registry).decode())
                   [k] for k in depth) == {0.0}
    finally:
        queue.shut_down()
