"""Issue 70: ``ControllerConfig.reconcile_timeout`` (controller-runtime
``ReconciliationTimeout``, kopf ``timeout=``) and ``cache_sync_timeout``
(``CacheSyncTimeout``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.errors import CacheSyncTimeoutError
from client_cache.informers import SharedInformerFactory, new_shared_informer_factory
from client_cache.runtime import (
    Action,
    Context,
    Controller,
    ControllerConfig,
    NoopControllerMetricsProvider,
    ReconcileTimeoutError,
    reset_controller_metrics_provider_for_tests,
    set_controller_metrics_provider,
)
from client_cache.runtime._timeouts import Watchdog
from client_cache.runtime.objectref import ObjectRef
from tests.fixtures import HungServer, eventually

NS = "default"
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
TIMEOUT = 0.3


class Timeouts(NoopControllerMetricsProvider):
    """Counts ``controller_runtime_reconcile_timeouts_total``."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Lock()

    def new_reconcile_timeouts_metric(self, name: str) -> Any:
        provider = self

        class Counter:
            def inc(self, amount: float = 1.0) -> None:
                with provider.lock:
                    provider.count += int(amount)
        return Counter()


@pytest.fixture
def timeouts() -> Iterator[Timeouts]:
    provider = Timeouts()
    set_controller_metrics_provider(provider)
    yield provider
    reset_controller_metrics_provider_for_tests()


def _workers(name: str) -> list[str]:
    return sorted(t.name for t in threading.enumerate()
                  if t.name.startswith(f"controller-{name}-worker-"))


def test_a_hung_reconcile_fails_by_timeout_and_does_not_stop_the_others(
        core: CoreV1Api, factory: SharedInformerFactory, timeouts: Timeouts,
        caplog: pytest.LogCaptureFixture) -> None:
    """One worker; ``stuck`` ignores its ctx and waits for the test. Past the timeout a
    new worker reconciles ``other``; ``stuck``, changed meanwhile, is not reconciled a
    second time while its call runs; once the call returns, the attempt is a
    ReconcileTimeoutError for the error policy, whatever it returned, and the replaced
    worker ends."""
    release = threading.Event()
    cond = threading.Condition()
    calls: list[str] = []
    failures: list[BaseException] = []
    running: set[str] = set()
    overlaps: list[str] = []

    def hang_here(name: str) -> None:
        release.wait(30)

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        name = obj["metadata"]["name"]
        with cond:
            if name in running:
                overlaps.append(name)
            running.add(name)
            calls.append(name)
            cond.notify_all()
        try:
            if name == "stuck" and calls.count("stuck") == 1:
                hang_here(name)
        finally:
            with cond:
                running.discard(name)
        return Action.await_change()

    def error_policy(obj: Any, err: BaseException, ctx: Context[Any]) -> Action:
        with cond:
            failures.append(err)
            cond.notify_all()
        return Action.requeue(0.01)

    core.create_namespaced_config_map(NS, {"metadata": {"name": "stuck"}})
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="hangs", events=False, concurrency=1, reconcile_timeout=TIMEOUT))
    with caplog.at_level(logging.ERROR, "client_cache.runtime.controller"), \
            controller.running(reconcile, error_policy=error_policy):
        with cond:
            assert cond.wait_for(lambda: "stuck" in calls, 10)
        core.create_namespaced_config_map(NS, {"metadata": {"name": "other"}})
        core.patch_namespaced_config_map("stuck", NS, {"data": {"x": "1"}})
        with cond:  # a replacement worker reconciles it while stuck's call hangs
            assert cond.wait_for(lambda: "other" in calls, 10), calls
            assert calls.count("stuck") == 1 and not failures
        assert timeouts.count == 1
        assert len(_workers("hangs")) == 2  # the stuck one and its replacement
        release.set()
        with cond:
            assert cond.wait_for(lambda: failures and calls.count("stuck") >= 2, 10), calls
        assert isinstance(failures[0], ReconcileTimeoutError)
        assert "past its 0.3 s timeout" in str(failures[0])
        eventually(lambda: len(_workers("hangs")) == 1)
    assert not overlaps
    stuck_lines = [r for r in caplog.records if "still running past its 0.3 s" in r.getMessage()]
    assert len(stuck_lines) == 1, [r.getMessage() for r in caplog.records]
    assert "in hang_here" in stuck_lines[0].getMessage()  # the stack of its thread
    assert "stuck" in stuck_lines[0].getMessage()


def test_a_reconcile_waiting_on_its_context_returns_at_the_deadline(
        core: CoreV1Api, factory: SharedInformerFactory) -> None:
    seen: list[tuple[bool, float | None]] = []
    failed = threading.Event()
    errors: list[BaseException] = []

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        woke = ctx.stopping.wait(30)
        seen.append((woke and ctx.expired(), ctx.deadline))
        return Action.await_change()

    def error_policy(obj: Any, err: BaseException, ctx: Context[Any]) -> Action:
        errors.append(err)
        failed.set()
        return Action.await_change()

    core.create_namespaced_config_map(NS, {"metadata": {"name": "patient"}})
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="patient", events=False, reconcile_timeout=TIMEOUT))
    with controller.running(reconcile, error_policy=error_policy):
        assert failed.wait(10)
    assert seen[0][0] and seen[0][1] is not None
    assert isinstance(errors[0], ReconcileTimeoutError)
    assert not [t for t in threading.enumerate() if t.name.startswith("controller-patient-")]


def test_a_reconcile_within_its_timeout_is_untouched(
        core: CoreV1Api, factory: SharedInformerFactory, timeouts: Timeouts) -> None:
    done = threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        assert ctx.deadline is not None and not ctx.expired()
        done.set()
        return Action.await_change()

    core.create_namespaced_config_map(NS, {"metadata": {"name": "quick"}})
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="quick", events=False, reconcile_timeout=30.0))
    with controller.running(reconcile):
        assert done.wait(10)
    assert controller.summary().errors == 0 and timeouts.count == 0


@pytest.mark.parametrize("value", [0, -1.0])
@pytest.mark.parametrize("field", ["reconcile_timeout", "cache_sync_timeout"])
def test_a_timeout_that_is_not_positive_is_refused(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=f"{field} must be positive"):
        ControllerConfig(**{field: value})


def test_caches_not_synced_within_cache_sync_timeout_fail_the_run() -> None:
    """controller-runtime's ``CacheSyncTimeout``: a server that never answers the LIST."""
    raised: list[BaseException] = []
    with HungServer() as hung:
        factory = new_shared_informer_factory(hung.api_client(), 0)
        controller: Controller[Any] = Controller(
            factory, CONFIGMAPS, kind="ConfigMap", namespaced=True, config=ControllerConfig(
                name="unsynced", events=False, cache_sync_timeout=0.5))

        def run() -> None:
            try:
                controller.run(lambda obj, ctx: Action.await_change())
            except BaseException as err:
                raised.append(err)
        runner = threading.Thread(target=run, name="test-unsynced", daemon=True)
        runner.start()
        runner.join(15)
        assert not runner.is_alive()
    assert len(raised) == 1 and isinstance(raised[0], CacheSyncTimeoutError), raised
    assert "configmaps" in str(raised[0]) and "0.5 s" in str(raised[0])
    eventually(lambda: not [t for t in threading.enumerate()
                            if t.name.startswith("controller-unsynced")])


def test_running_raises_the_runs_cache_sync_timeout_before_its_block() -> None:
    """``running()`` with no wait limit of its own: the run's ``cache_sync_timeout``
    failure is raised in the caller, and the block never runs on a dead controller."""
    with HungServer() as hung:
        factory = new_shared_informer_factory(hung.api_client(), 0)
        controller: Controller[Any] = Controller(
            factory, CONFIGMAPS, kind="ConfigMap", namespaced=True, config=ControllerConfig(
                name="unsynced-block", events=False, cache_sync_timeout=0.5))
        with pytest.raises(CacheSyncTimeoutError, match=r"after 0\.5 s: configmaps"), \
                controller.running(lambda obj, ctx: Action.await_change(), timeout=None):
            pytest.fail("the block ran although the run had failed")
    eventually(lambda: not [t for t in threading.enumerate()
                            if t.name.startswith("controller-unsynced-block")])


def test_the_watchdog_holds_about_the_running_calls_not_every_call() -> None:
    """10,000 quick calls under a 300 s timeout: the deadlines of the calls that returned
    are dropped long before they come due."""
    watchdog = Watchdog("heap", 300.0, 1, lambda: None, lambda: None).start()
    try:
        stopping = threading.Event()
        running = watchdog.begin(ObjectRef("long-running"), stopping)
        for i in range(10_000):
            watchdog.end(watchdog.begin(ObjectRef(f"quick-{i}"), stopping))
        assert len(watchdog._heap) <= 130, len(watchdog._heap)
        assert any(entry[2] is running for entry in watchdog._heap)
    finally:
        watchdog.stop()
    assert not watchdog._thread.is_alive()
