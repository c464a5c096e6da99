"""runtime/controller.py: the Controller on the embedded API server (triggers, reasons,
readiness gate, hold, concurrency bound, requeue, error policy, shutdown, sources)."""

from __future__ import annotations

import gc
import itertools
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiException, AppsV1Api, CoreV1Api, EventsV1Api

from client_cache.api.labels import everything
from client_cache.api.schema import GroupVersionResource
from client_cache.informers import SharedInformerFactory, new_shared_informer_factory
from client_cache.informers.factory import UnknownResourceError
from client_cache.listwatch import ListWatch, new_list_watch_from_client
from client_cache.runtime import (
    Action,
    Context,
    Controller,
    ControllerConfig,
    ObjectRef,
    ReasonKind,
    ReconcileError,
    ReconcileReason,
    ReconcileRequest,
    RunSummary,
    TerminalError,
    controller_owner_ref,
    finalizer,
    reset_controller_metrics_provider_for_tests,
    set_controller_metrics_provider,
)
from client_cache.shared_informer import (
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import HungServer, eventually

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
SECRETS = GroupVersionResource("", "v1", "secrets")
DEPLOYMENTS = GroupVersionResource("apps", "v1", "deployments")
NS = "default"


def cm(core: CoreV1Api, name: str, **labels: str) -> Any:
    return core.create_namespaced_config_map(NS, {"metadata": {"name": name,
                                                               "labels": labels}})


class Recorder:
    """A reconcile that records (name, reason kind) and wakes waiters."""

    def __init__(self, action: Action | None = None) -> None:
        self.cond = threading.Condition()
        self.calls: list[tuple[str, ReasonKind]] = []
        self.reasons: list[ReconcileReason] = []
        self.action = action or Action.await_change()

    def __call__(self, obj: Any, ctx: Context[Any]) -> Action:
        with self.cond:
            self.calls.append((obj["metadata"]["name"], ctx.reason.kind))
            self.reasons.append(ctx.reason)
            self.cond.notify_all()
        return self.action

    def wait(self, pred: Callable[[list[tuple[str, ReasonKind]]], bool],
             timeout: float = 10) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: pred(self.calls), timeout), self.calls


class Running:
    """``Controller.run`` on a thread; :meth:`stop` shuts it down and returns the summary."""

    def __init__(self, controller: Controller[Any], reconcile: Any, **kwargs: Any) -> None:
        self.controller = controller
        self.summary: RunSummary | None = None
        self.thread = threading.Thread(target=self._run, args=(reconcile,), kwargs=kwargs,
                                       name="test-controller-run", daemon=True)
        self.thread.start()

    def _run(self, reconcile: Any, **kwargs: Any) -> None:
        self.summary = self.controller.run(reconcile, **kwargs)

    def stop(self, timeout: float = 10) -> RunSummary:
        self.controller.shutdown()
        self.thread.join(timeout)
        assert not self.thread.is_alive()
        assert self.summary is not None
        return self.summary


def no_throttle(**kwargs: Any) -> ControllerConfig:
    return ControllerConfig(client_qps=0, **kwargs)


def test_trigger_self_reasons_and_deletes(server: EmbeddedApiServer, core: CoreV1Api,
                                          factory: SharedInformerFactory) -> None:
    cm(core, "a")
    rec = Recorder()
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    assert (controller.kind, controller.api_version, controller.namespaced) == \
        ("ConfigMap", "v1", True)
    running = Running(controller, rec)
    try:
        rec.wait(lambda calls: ("a", ReasonKind.OBJECT_UPDATED) in calls)
        core.patch_namespaced_config_map("a", NS, {"data": {"k": "v"}})
        rec.wait(lambda calls: len(calls) >= 2)
        cm(core, "b")
        rec.wait(lambda calls: ("b", ReasonKind.OBJECT_UPDATED) in calls)
        before = len(rec.calls)
        core.delete_namespaced_config_map("b", NS)
        cm(core, "c")  # a marker: handled after the delete
        rec.wait(lambda calls: ("c", ReasonKind.OBJECT_UPDATED) in calls)
        assert all(name != "b" for name, _ in rec.calls[before:])  # a delete triggers nothing
    finally:
        summary = running.stop()
    assert summary.errors == 0 and summary.reconciles == len(rec.calls)


def test_owns_maps_children_to_owners_and_recreates_deleted_children(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory) -> None:
    apps = AppsV1Api(server.api_client())

    def reconcile(owner: Any, ctx: Context[Any]) -> Action:
        name = f"{owner['metadata']['name']}-child"
        try:
            apps.read_namespaced_deployment(name, NS)
        except Exception:
            apps.create_namespaced_deployment(NS, {
                "metadata": {"name": name, "ownerReferences": [
                    controller_owner_ref(owner, "ConfigMap", "v1")]},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                         "template": {"metadata": {"labels": {"app": name}}}}})
        return rec(owner, ctx)

    rec = Recorder()
    for i in range(3):
        cm(core, f"owner{i}")
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle()) \
        .owns(DEPLOYMENTS)
    running = Running(controller, reconcile)
    try:
        deployments = factory.for_resource(DEPLOYMENTS).lister()
        eventually(lambda: len(deployments.list(_everything())) == 3, 10)
        apps.delete_namespaced_deployment("owner1-child", NS)
        rec.wait(lambda calls: ("owner1", ReasonKind.RELATED_OBJECT_UPDATED) in calls)
        related = [r.related for r in rec.reasons
                   if r.kind is ReasonKind.RELATED_OBJECT_UPDATED]
        assert ObjectRef("owner1-child", NS, "Deployment", "apps/v1") in related
        eventually(lambda: len(deployments.list(_everything())) == 3, 10,
                   "the deleted child was not recreated")
        # a child owned by something else triggers nothing for us
        apps.create_namespaced_deployment(NS, {
            "metadata": {"name": "stranger", "ownerReferences": [{
                "apiVersion": "v1", "kind": "Secret", "name": "owner0", "uid": "x"}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}}}}})
        cm(core, "marker")
        rec.wait(lambda calls: ("marker", ReasonKind.OBJECT_UPDATED) in calls)
        assert str(ObjectRef("stranger", NS, "Deployment", "apps/v1")) not in map(str, related)
    finally:
        running.stop()


def _everything() -> Any:
    return everything()


def test_watches_mapper_and_sources(server: EmbeddedApiServer, core: CoreV1Api,
                                    factory: SharedInformerFactory) -> None:
    """``watches``: a Secret labelled app=<name> reconciles ConfigMap <name>;
    ``reconcile_on``: refs and requests from a queue; ``reconcile_all_on``: every cached
    primary object."""
    cm(core, "a")
    cm(core, "b")
    refs: queue.Queue[Any] = queue.Queue()
    bulk: queue.Queue[Any] = queue.Queue()
    rec = Recorder()

    def mapper(secret: Any) -> ObjectRef | None:
        app = (secret["metadata"].get("labels") or {}).get("app")
        return ObjectRef(app).within(NS) if app else None

    controller: Controller[Any] = (Controller(factory, CONFIGMAPS, config=no_throttle())
                                   .watches(SECRETS, mapper)
                                   .reconcile_on(refs).reconcile_all_on(bulk))
    running = Running(controller, rec)
    try:
        rec.wait(lambda calls: {n for n, _ in calls} == {"a", "b"})
        core.create_namespaced_secret(NS, {"metadata": {"name": "s", "labels": {"app": "b"}}})
        rec.wait(lambda calls: ("b", ReasonKind.RELATED_OBJECT_UPDATED) in calls)
        refs.put(ObjectRef("a", NS))
        rec.wait(lambda calls: ("a", ReasonKind.UNKNOWN) in calls)
        refs.put(ReconcileRequest(ObjectRef("b", NS, "ConfigMap", "v1"),
                                  ReconcileReason.custom("webhook said so")))
        rec.wait(lambda calls: ("b", ReasonKind.CUSTOM) in calls)
        assert "webhook said so" in map(str, rec.reasons)
        refs.put(ObjectRef("a", NS, "Secret", "v1"))  # another kind: refused
        bulk.put("tick")
        rec.wait(lambda calls: sum(1 for _, k in calls if k is ReasonKind.BULK_RECONCILE) == 2)
        refs.put(ObjectRef("never-existed", NS))
        eventually(lambda: controller.summary().not_found == 1, 10)
    finally:
        summary = running.stop()
    assert summary.not_found == 1


def test_readiness_gate_waits_for_every_cache(server: EmbeddedApiServer, core: CoreV1Api,
                                              factory: SharedInformerFactory) -> None:
    cm(core, "a")
    release = threading.Event()
    real = new_list_watch_from_client(server.api_client(), SECRETS)

    def slow_list(options: Any) -> Any:
        assert release.wait(10)
        return real.list(options)

    # holds its LIST; it says it has no watch-list, so that the informer LISTs through it
    held = ListWatch(list_func=slow_list, watch_func=real.watch,
                     unsupported_watch_list_semantics=True)
    secrets = factory.informer_for(SECRETS, new_func=lambda client, resync:
                                   new_shared_index_informer_with_options(
                                       held, None, SharedIndexInformerOptions()))
    seen_ready: list[bool] = []

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        seen_ready.append(secrets.get_indexer().is_ready())
        return rec(obj, ctx)

    rec = Recorder()
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle()) \
        .watches(SECRETS, lambda s: None)
    running = Running(controller, reconcile)
    try:
        eventually(lambda: controller.pending() == 1, 10, "the add was not scheduled")
        assert rec.calls == []  # the secrets cache is not ready: nothing runs
        release.set()
        rec.wait(lambda calls: len(calls) == 1)
        assert seen_ready == [True]
    finally:
        release.set()
        running.stop()


def test_hold_and_concurrency_bound(server: EmbeddedApiServer, core: CoreV1Api,
                                    factory: SharedInformerFactory) -> None:
    """Never two reconciles of one object at once; at most ``concurrency`` in all; a
    trigger during a reconcile runs once after it."""
    for i in range(6):
        cm(core, f"c{i}")
    lock = threading.Lock()
    active: dict[str, int] = {}
    peak = {"total": 0, "same": 0}
    gate = threading.Event()
    three_running = threading.Event()
    rec = Recorder()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        name = obj["metadata"]["name"]
        with lock:
            active[name] = active.get(name, 0) + 1
            peak["same"] = max(peak["same"], active[name])
            peak["total"] = max(peak["total"], sum(active.values()))
            if sum(active.values()) == 3:
                three_running.set()
        assert gate.wait(10)
        with lock:
            active[name] -= 1
        return rec(obj, ctx)

    controller: Controller[Any] = Controller(factory, CONFIGMAPS,
                                             config=no_throttle(concurrency=3))
    running = Running(controller, reconcile)
    try:
        assert three_running.wait(10)
        running_now = [n for n, c in active.items() if c]
        for name in running_now:  # a trigger while they reconcile
            core.patch_namespaced_config_map(name, NS, {"data": {"x": "1"}})
        eventually(lambda: controller.pending() >= 6, 10)  # 3 waiting + 3 held
        gate.set()
        rec.wait(lambda calls: len(calls) == 9)  # 6 first runs + 1 rerun per held one
        assert sorted(n for n, _ in rec.calls if n in running_now) == \
            sorted(running_now * 2)
    finally:
        gate.set()
        running.stop()
    assert peak == {"total": 3, "same": 1}


def test_requeue_and_error_policies(server: EmbeddedApiServer, core: CoreV1Api,
                                    factory: SharedInformerFactory) -> None:
    cm(core, "flaky")
    cm(core, "requeued")
    cm(core, "policy")
    failures = {"flaky": 2, "policy": 1}
    rec = Recorder()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        name = obj["metadata"]["name"]
        rec(obj, ctx)
        if failures.get(name, 0) > 0:
            failures[name] -= 1
            raise RuntimeError(f"{name} failed")
        if name == "requeued" and ctx.reason.kind is ReasonKind.OBJECT_UPDATED:
            return Action.requeue(0.05)
        return Action.await_change()

    def error_policy(obj: Any, err: BaseException, ctx: Context[Any]) -> Action:
        if obj["metadata"]["name"] == "policy":
            return Action.requeue(0.05)
        return Action.requeue(0.01) if ctx.data == "retry-fast" else Action.await_change()

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    running = Running(controller, reconcile, error_policy=error_policy, data="retry-fast")
    try:
        rec.wait(lambda calls: calls.count(("flaky", ReasonKind.ERROR_POLICY_REQUESTED_RETRY))
                 == 2)
        rec.wait(lambda calls: ("requeued", ReasonKind.RECONCILER_REQUESTED_RETRY) in calls)
        rec.wait(lambda calls: ("policy", ReasonKind.ERROR_POLICY_REQUESTED_RETRY) in calls)
    finally:
        summary = running.stop()
    assert summary.errors == 3 and summary.requeues >= 4


def test_default_error_policy_backs_off(server: EmbeddedApiServer, core: CoreV1Api,
                                        factory: SharedInformerFactory) -> None:
    cm(core, "x")
    rec = Recorder()
    attempts: list[float] = []

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        attempts.append(time.monotonic())
        rec(obj, ctx)
        if len(attempts) < 5:
            raise ValueError("not yet")
        return Action.await_change()

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    running = Running(controller, reconcile)
    try:
        rec.wait(lambda calls: len(calls) == 5)
    finally:
        summary = running.stop()
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert [k for _, k in rec.calls[1:]] == [ReasonKind.ERROR_POLICY_REQUESTED_RETRY] * 4
    assert gaps[3] >= 0.04  # 5, 10, 20, 40 ms: exponential
    assert summary.errors == 4 and summary.reconciles == 5


class RecordingLimiter:
    """A rate limiter that retries at once and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.forgotten: list[str] = []

    def when(self, item: ObjectRef) -> float:
        self.asked.append(item.name)
        return 0.0

    def num_requeues(self, item: ObjectRef) -> int:
        return self.asked.count(item.name)

    def forget(self, item: ObjectRef) -> None:
        self.forgotten.append(item.name)


def fails_three_times(rec: Recorder) -> Any:
    failures = [0]

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        rec(obj, ctx)
        if failures[0] < 3:
            failures[0] += 1
            raise ValueError("not yet")
        return Action.await_change()

    return reconcile


def test_the_configured_rate_limiter_spaces_the_retries_and_is_made_at_each_run(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory) -> None:
    cm(core, "x")
    made: list[RecordingLimiter] = []

    def limiter() -> RecordingLimiter:
        made.append(RecordingLimiter())
        return made[-1]

    controller: Controller[Any] = Controller(factory, CONFIGMAPS,
                                             config=no_throttle(rate_limiter=limiter))
    informers = threading.Event()  # the informers outlive the first run
    try:
        for run in range(2):
            rec = Recorder()
            running = Running(controller, fails_three_times(rec), stop=informers)
            try:
                rec.wait(lambda calls: len(calls) == 4)
            finally:
                summary = running.stop()
            assert summary.errors == 3 and summary.reconciles == 4
            assert len(made) == run + 1  # a fresh limiter for each run
            assert made[-1].asked == ["x"] * 3 and made[-1].forgotten[-1] == "x"
    finally:
        informers.set()
        factory.shutdown(5)
    with pytest.raises(TypeError, match="rate_limiter must be a function"):
        ControllerConfig(rate_limiter=RecordingLimiter())  # type: ignore[arg-type]


def test_graceful_shutdown_waits_for_a_slow_reconcile(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory) -> None:
    cm(core, "slow")
    started = threading.Event()
    saw_stopping = threading.Event()
    shutdown = threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        started.set()
        if ctx.stopping.wait(10):
            saw_stopping.set()
        return Action.requeue(0.01)

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle()) \
        .graceful_shutdown_on(shutdown)
    running = Running(controller, reconcile)
    assert started.wait(10)
    shutdown.set()
    running.thread.join(10)
    assert not running.thread.is_alive() and saw_stopping.is_set()
    assert running.summary is not None
    assert running.summary.reconciles == 1 and running.summary.unfinished == []


def test_shutdown_deadline_reports_unfinished(server: EmbeddedApiServer, core: CoreV1Api,
                                              factory: SharedInformerFactory) -> None:
    cm(core, "stuck")
    started, release = threading.Event(), threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        started.set()
        assert release.wait(10)
        return Action.await_change()

    controller: Controller[Any] = Controller(
        factory, CONFIGMAPS, config=no_throttle(shutdown_timeout=0.1))
    running = Running(controller, reconcile)
    assert started.wait(10)
    summary = running.stop()
    assert summary.unfinished == [ObjectRef("stuck", NS, "ConfigMap", "v1")]
    release.set()  # let the worker end before the leak check
    eventually(lambda: not [t for t in threading.enumerate()
                            if t.name.startswith("controller-configmaps-worker")], 5)


def test_caller_owned_stop_and_shared_watch(server: EmbeddedApiServer, core: CoreV1Api,
                                            factory: SharedInformerFactory) -> None:
    """Two controllers on one factory share the ConfigMap watch; with ``stop`` given, the
    informers outlive ``run`` until the caller sets it, and setting it ends both runs."""
    cm(core, "a")
    first, second = Recorder(), Recorder()
    stop = threading.Event()
    one: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle(name="one"))
    two: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle(name="two"))
    run_one = Running(one, first, stop=stop)
    run_two = Running(two, second, stop=stop)
    try:
        first.wait(lambda calls: len(calls) == 1)
        second.wait(lambda calls: len(calls) == 1)
        eventually(lambda: server.watch_requests == 1, 10, "no watch")
        run_two.stop()
        informer = factory.for_resource(CONFIGMAPS).informer()
        assert not informer.is_stopped()  # the caller owns the informers
        cm(core, "b")
        first.wait(lambda calls: len(calls) == 2)
        # one shared informer: one watch, filled by one LIST or that watch's stream
        assert server.watch_requests == 1
        assert server.list_requests + server.watch_list_requests == 1
    finally:
        stop.set()
        run_one.thread.join(10)
        factory.shutdown(5)
    assert not run_one.thread.is_alive()
    assert second.calls == [("a", ReasonKind.OBJECT_UPDATED)]


@pytest.mark.parametrize("to", ["process", "worker"])
def test_shutdown_on_signal(server: EmbeddedApiServer, core: CoreV1Api,
                            factory: SharedInformerFactory, to: str) -> None:
    """The signal handled on the main thread, in run, whichever thread the OS hands it
    to: here the process (usually the main thread), or the reconciling worker's own
    thread, which does not interrupt a main thread blocked in a lock (a hang before
    client_cache.util.signals)."""
    cm(core, "a")
    previous = signal.getsignal(signal.SIGTERM)
    reconciled = threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        if to == "process":
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        reconciled.set()
        return Action.await_change()

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle()) \
        .shutdown_on_signal()
    summary = controller.run(reconcile)  # on the main thread, as required
    assert reconciled.is_set() and summary.reconciles == 1
    assert signal.getsignal(signal.SIGTERM) is previous
    with pytest.raises(RuntimeError, match="main thread"):
        holder: list[BaseException] = []

        def off_main() -> None:
            try:
                controller.run(reconcile)
            except RuntimeError as err:
                holder.append(err)

        thread = threading.Thread(target=off_main, name="test-off-main", daemon=True)
        thread.start()
        thread.join(5)
        raise holder[0]


def test_finalizer_runs_cleanup_before_the_object_goes(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory) -> None:
    client = server.api_client()
    cm(core, "guarded")
    cleaned: list[str] = []
    applied: list[str] = []
    name = "example.com/cleanup"

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        return finalizer(client, CONFIGMAPS, name, obj,
                         apply=lambda o: applied.append(o["metadata"]["name"]) or
                         Action.await_change(),
                         cleanup=lambda o: cleaned.append(o["metadata"]["name"]) or
                         Action.await_change())

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    running = Running(controller, reconcile)
    try:
        eventually(lambda: applied == ["guarded"], 10)
        assert core.read_namespaced_config_map("guarded", NS).metadata.finalizers == [name]
        core.delete_namespaced_config_map("guarded", NS)
        eventually(lambda: cleaned == ["guarded"], 10)
        lister = factory.for_resource(CONFIGMAPS).lister()
        eventually(lambda: not lister.list(_everything()), 10, "the object was not deleted")
    finally:
        running.stop()


def test_config_validation(factory: SharedInformerFactory) -> None:
    # no client-side throttling unless asked for, as controller-runtime since v0.21
    assert (ControllerConfig().client_qps, ControllerConfig().client_burst) == (0.0, 30)
    with pytest.raises(ValueError, match="concurrency"):
        ControllerConfig(concurrency=0)
    with pytest.raises(ValueError, match="negative"):
        ControllerConfig(debounce=-1)
    with pytest.raises(TypeError, match="GroupVersionResource"):
        Controller(factory, "configmaps", kind="ConfigMap", namespaced=True)  # type: ignore[arg-type]
    # a resource not served yet is waited for by run() (see the conformance test)
    waiting: Controller[Any] = Controller(
        factory, GroupVersionResource("example.com", "v1", "nothings"))
    assert (waiting.kind, waiting.namespaced) == ("", True)
    given: Controller[Any] = Controller(
        factory, GroupVersionResource("example.com", "v1", "nothings"), kind="Nothing",
        namespaced=False)
    assert (given.kind, given.namespaced) == ("Nothing", False)


class CountingProvider:
    """A controller metrics provider that counts, by metric and result."""

    def __init__(self) -> None:
        self.counts: dict[str, float] = {}
        self.lock = threading.Lock()

    def metric(self, key: str) -> Any:
        provider = self

        class Metric:
            def inc(self) -> None:
                provider.add(key, 1)

            def dec(self) -> None:
                provider.add(key, -1)

            def set(self, value: float) -> None:
                with provider.lock:
                    provider.counts[key] = value

            def observe(self, value: float) -> None:
                provider.add(f"{key}_count", 1)

        return Metric()

    def add(self, key: str, n: float) -> None:
        with self.lock:
            self.counts[key] = self.counts.get(key, 0) + n

    def new_reconcile_total_metric(self, name: str, result: str) -> Any:
        return self.metric(f"{name}/total/{result}")

    def new_reconcile_errors_metric(self, name: str) -> Any:
        return self.metric(f"{name}/errors")

    def new_reconcile_time_metric(self, name: str) -> Any:
        return self.metric(f"{name}/time")

    def new_terminal_reconcile_errors_metric(self, name: str) -> Any:
        return self.metric(f"{name}/terminal")

    def new_reconcile_panics_metric(self, name: str) -> Any:
        return self.metric(f"{name}/panics")

    def new_queue_metrics_provider(self, name: str) -> Any:
        return None

    def new_active_workers_metric(self, name: str) -> Any:
        return self.metric(f"{name}/active")

    def new_max_concurrent_reconciles_metric(self, name: str) -> Any:
        return self.metric(f"{name}/max")


def test_metrics_through_the_provider(server: EmbeddedApiServer, core: CoreV1Api,
                                      factory: SharedInformerFactory) -> None:
    provider = CountingProvider()
    set_controller_metrics_provider(provider)
    try:
        for name in ("ok", "bad", "again", "terminal", "backoff"):
            cm(core, name)
        rec = Recorder()

        def reconcile(obj: Any, ctx: Context[Any]) -> Action:
            name = obj["metadata"]["name"]
            rec(obj, ctx)
            first = ctx.reason.kind is ReasonKind.OBJECT_UPDATED
            if name == "bad" and first:
                raise RuntimeError("once")  # not an expected failure: a panic
            if name == "again" and first:
                return Action.requeue(0.01)
            if name == "terminal":
                raise TerminalError("for good")
            if name == "backoff" and first:
                return Action.requeue_with_backoff()
            return Action.await_change()

        controller: Controller[Any] = Controller(factory, CONFIGMAPS,
                                                 config=no_throttle(concurrency=2))
        running = Running(controller, reconcile)
        try:
            rec.wait(lambda calls: len(calls) == 8)
        finally:
            running.stop()
    finally:
        reset_controller_metrics_provider_for_tests()
    counts = provider.counts
    # ok, bad's retry, again's requeue, backoff's requeue
    assert counts["configmaps/total/success"] == 4
    assert counts["configmaps/total/error"] == 2 and counts["configmaps/errors"] == 2
    assert counts["configmaps/terminal"] == 1 and counts["configmaps/panics"] == 1
    assert counts["configmaps/total/requeue_after"] == 1
    assert counts["configmaps/total/requeue"] == 1
    assert counts["configmaps/time_count"] == 8
    assert counts["configmaps/active"] == 0 and counts["configmaps/max"] == 2


def test_a_terminal_error_is_not_retried_until_the_object_changes(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory) -> None:
    """controller-runtime's TerminalError: no error policy, no backoff retry; the next
    change of the object reconciles it again. A requeue_with_backoff() runs again after
    the object's backoff delay without a failure."""
    cm(core, "broken")
    cm(core, "waiting")
    rec = Recorder()
    policy_calls: list[str] = []
    backoffs = 0

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        nonlocal backoffs
        rec(obj, ctx)
        if obj["metadata"]["name"] == "broken":
            raise TerminalError("bad spec")
        if backoffs < 3:
            backoffs += 1
            return Action.requeue_with_backoff()
        return Action.await_change()

    def error_policy(obj: Any, err: BaseException, ctx: Context[Any]) -> Action:
        policy_calls.append(obj["metadata"]["name"])
        return Action.requeue(0.01)

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    running = Running(controller, reconcile, error_policy=error_policy)
    try:
        rec.wait(lambda calls: [c for c in calls if c[0] == "waiting"] == [
            ("waiting", ReasonKind.OBJECT_UPDATED)]
            + [("waiting", ReasonKind.RECONCILER_REQUESTED_RETRY)] * 3)
        assert [c for c in rec.calls if c[0] == "broken"] == [
            ("broken", ReasonKind.OBJECT_UPDATED)]  # the waiting object's retries ran after
        core.patch_namespaced_config_map("broken", NS, {"data": {"k": "v"}})
        rec.wait(lambda calls: calls.count(("broken", ReasonKind.OBJECT_UPDATED)) == 2)
    finally:
        summary = running.stop()
    assert policy_calls == []
    assert summary.errors == 2 and summary.requeues == 3
    assert issubclass(TerminalError, ReconcileError)


def test_a_stopped_controller_is_collected(server: EmbeddedApiServer, core: CoreV1Api,
                                           factory: SharedInformerFactory) -> None:
    cm(core, "a")
    rec = Recorder()
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    running = Running(controller, rec)
    rec.wait(lambda calls: len(calls) == 1)
    running.stop()
    ref = weakref.ref(controller)
    del controller, running
    gc.collect()
    assert ref() is None


def reconcile_log(factory: SharedInformerFactory, reconcile: Any, done: threading.Event,
                  caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Run a controller with ``reconcile`` until ``done``; the log records about its
    reconciles' failures, DEBUG included."""
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    with caplog.at_level(logging.DEBUG, logger="client_cache.runtime"):
        running = Running(controller, reconcile)
        try:
            assert done.wait(10)
        finally:
            running.stop()
    return [r for r in caplog.records if "reconcile of" in r.getMessage()]


def test_a_failing_reconcile_is_logged_once_with_its_traceback_then_rate_limited(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 59: the first failure of an episode is an ERROR with the traceback and the
    object's kind and namespace/name (never its content); the repeats are DEBUG until
    FAILURE_REPEAT_SECONDS pass; a success ends the episode, so the next failure is an
    ERROR again."""
    cm(core, "x")
    attempts: list[int] = []
    done = threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        attempts.append(1)
        if len(attempts) == 4:  # a success ends the episode
            return Action.requeue(0.0)
        if len(attempts) == 6:
            done.set()
            return Action.await_change()
        raise ValueError("boom")

    failures = reconcile_log(factory, reconcile, done, caplog)
    errors = [r for r in failures if r.levelno == logging.ERROR]
    # attempts 1-3 fail (one ERROR, two DEBUG), 4 succeeds, 5 fails: an ERROR again
    assert [r.levelno for r in failures] == [logging.ERROR, logging.DEBUG, logging.DEBUG,
                                             logging.ERROR]
    assert all(r.exc_info is not None for r in errors) and len(errors) == 2
    assert "ConfigMap default/x" in errors[0].getMessage()
    assert "ValueError: boom" in errors[0].getMessage()


def test_a_failure_for_another_reason_is_logged_at_once(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    """A repeat of the same failure is DEBUG, but a failure for a new reason starts a new
    episode and is an ERROR at once (the sample-controller's first attempt failed with a
    create's AlreadyExists, the next with the real reason, which was left at DEBUG)."""
    cm(core, "x")
    attempts: list[int] = []
    done = threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        attempts.append(1)
        if len(attempts) <= 2:
            raise ValueError("first reason")
        if len(attempts) == 3:
            raise ValueError("second reason")
        done.set()
        return Action.await_change()

    failures = [(r.levelno, r.getMessage().rsplit(": ", 1)[-1])
                for r in reconcile_log(factory, reconcile, done, caplog)]
    assert failures == [(logging.ERROR, "first reason"), (logging.DEBUG, "first reason"),
                        (logging.ERROR, "second reason")]


def test_a_reconcile_returning_none_is_an_error_naming_the_function(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    cm(core, "x")
    called = threading.Event()

    def forgot_to_return(obj: Any, ctx: Context[Any]) -> Any:
        called.set()
        return None

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    with caplog.at_level(logging.ERROR, logger="client_cache.runtime"):
        running = Running(controller, forgot_to_return)
        try:
            assert called.wait(10)
            eventually(lambda: any("forgot_to_return" in r.getMessage()
                                   for r in caplog.records), 10)
        finally:
            running.stop()
    [record] = [r for r in caplog.records if "forgot_to_return" in r.getMessage()]
    assert "returned NoneType, not an Action" in record.getMessage()
    assert "Action.await_change()" in record.getMessage()


def test_a_failure_reaches_stderr_when_the_application_configured_no_logging(
        tmp_path: Any) -> None:
    """With no logging configured at all, the package's NullHandler kept even an ERROR
    from stderr; the first failure of a reconcile now reaches it, with its traceback."""
    script = tmp_path / "app.py"
    script.write_text(
        "import threading\n"
        "from kubernetes.client import CoreV1Api\n"
        "from client_cache.informers import new_shared_informer_factory\n"
        "from client_cache.runtime import Action, Controller, ControllerConfig\n"
        "from client_cache.api.schema import GroupVersionResource\n"
        "from client_cache.testing.apiserver import EmbeddedApiServer\n"
        "with EmbeddedApiServer() as server:\n"
        "    api = server.api_client()\n"
        "    CoreV1Api(api).create_namespaced_config_map('default', "
        "{'metadata': {'name': 'x'}, 'data': {'password': 'hunter2'}})\n"
        "    failed = threading.Event()\n"
        "    def reconcile(obj, ctx):\n"
        "        failed.set()\n"
        "        raise RuntimeError('it broke')\n"
        "    stop = threading.Event()\n"
        "    factory = new_shared_informer_factory(api, 0)\n"
        "    controller = Controller(factory, GroupVersionResource('', 'v1', 'configmaps'),"
        " config=ControllerConfig(client_qps=0))\n"
        "    runner = threading.Thread(target=controller.run, args=(reconcile,), "
        "kwargs={'stop': stop})\n"
        "    runner.start()\n"
        "    failed.wait(20)\n"
        "    stop.set()\n"
        "    runner.join(20)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "reconcile of ConfigMap default/x" in done.stderr
    assert "RuntimeError: it broke" in done.stderr and "Traceback" in done.stderr
    assert "hunter2" not in done.stderr


def test_an_api_error_is_summarised_without_its_response(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    """An ApiException's text and traceback print the response's headers and body; the
    failure line gives its status, reason and the server's message only."""
    cm(core, "x")
    failed = threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        err = ApiException(status=409, reason="Conflict")
        err.body = ('{"kind":"Status","status":"Failure","reason":"Conflict","code":409,'
                    '"message":"the object has been modified","details":{"x":"hunter2"}}')
        failed.set()
        raise err

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    with caplog.at_level(logging.ERROR, logger="client_cache.runtime"):
        running = Running(controller, reconcile)
        try:
            assert failed.wait(10)
            eventually(lambda: any("reconcile of" in r.getMessage()
                                   for r in caplog.records), 10)
        finally:
            running.stop()
    [record] = [r for r in caplog.records if "reconcile of" in r.getMessage()]
    assert "409 Conflict: the object has been modified" in record.getMessage()
    assert record.exc_info is None and "hunter2" not in record.getMessage()


def test_requests_carry_the_controllers_name_as_user_agent(
        server: EmbeddedApiServer, core: CoreV1Api) -> None:
    """Issue 59: client-go's user-agent shape with the controller's name (the server
    takes its first part as the field manager of the writes), unless the application set
    its own."""
    api = server.api_client()
    try:
        assert api.user_agent.startswith("OpenAPI-Generator/")
        factory = new_shared_informer_factory(api, 0)
        controller: Controller[Any] = Controller(
            factory, CONFIGMAPS, config=no_throttle(name="sample-controller"))
        running = Running(controller, lambda obj, ctx: Action.await_change())
        running.stop()
        assert re.fullmatch(r"sample-controller/v0\.0\.0 \([a-z]+/[a-z0-9_]+\) client_cache",
                            api.user_agent), api.user_agent
        api.user_agent = "my-operator/1.2"
        running = Running(Controller(new_shared_informer_factory(api, 0), CONFIGMAPS,
                                     config=no_throttle()),
                          lambda obj, ctx: Action.await_change())
        running.stop()
        assert api.user_agent == "my-operator/1.2"
    finally:
        api.close()


def test_queued_events_are_written_within_the_shutdown_timeout(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory) -> None:
    """Issue 59: the Events a reconcile recorded are all written at shutdown, in what is
    left of the controller's shutdown timeout (they were dropped after one second)."""
    cm(core, "x")
    recorded = threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        if not recorded.is_set():
            server.latency = 0.15  # each Event write now takes 0.15 s: 12 take 1.8 s
            for i in range(12):
                ctx.recorder.event(obj, "Normal", f"Step{i}", f"step {i} done")
            recorded.set()
        return Action.await_change()

    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=no_throttle())
    running = Running(controller, reconcile)
    try:
        assert recorded.wait(10)
    finally:
        running.stop(timeout=30)
        server.latency = 0.0
    events = EventsV1Api(core.api_client).list_namespaced_event("default").items
    reasons = {e.reason for e in events}  # events.k8s.io/v1, the default
    assert reasons >= {f"Step{i}" for i in range(12)}, sorted(reasons)


def test_a_misspelt_built_in_plural_fails_at_run_naming_what_is_served(
        factory: SharedInformerFactory) -> None:
    """Issue 67: GroupVersionResource("", "v1", "configmap") was taken for a CRD not yet
    installed and waited for forever; a served built-in group version has no room for a
    CRD, so run() raises at once with the plurals it does serve."""
    controller: Controller[Any] = Controller(
        factory, GroupVersionResource("", "v1", "configmap"), config=no_throttle(events=False))
    started = time.monotonic()
    with pytest.raises(UnknownResourceError, match=r"configmap.*it serves v1: .*configmaps"):
        controller.run(lambda obj, ctx: Action.await_change())
    assert time.monotonic() - started < 10


def test_a_controller_builds_and_stops_within_a_second_on_a_hung_server() -> None:
    """Issue 67: building a Controller of a custom resource asked the server for its kind
    (30 s against a server that accepts and never answers) before any stop could be
    asked; building asks nothing now and the discovery in run() is abandoned at once by
    a shutdown (its connection shut down from outside)."""
    with HungServer() as hung:
        api = hung.api_client()
        factory = new_shared_informer_factory(api, 0)
        started = time.monotonic()
        controller: Controller[Any] = Controller(
            factory, GroupVersionResource("example.com", "v1", "widgets"),
            config=no_throttle(events=False))
        assert time.monotonic() - started < 0.5
        done = threading.Event()
        runner = threading.Thread(target=lambda: (
            controller.run(lambda obj, ctx: Action.await_change()), done.set()),
            name="test-controller-run", daemon=True)
        runner.start()
        assert hung.connected.wait(5), "run() asked nothing"
        stopped = time.monotonic()
        controller.shutdown()
        assert done.wait(5)
        assert time.monotonic() - stopped < 1.0
        runner.join(1)
        api.close()
