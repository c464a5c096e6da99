"""Issue 70 on both servers: a per-object daemon lives from its object's creation until
the server marks it for deletion (a finalizer holds it) or deletes it, and a timer ticks
for each object until it is deleted."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from kubernetes.client import CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.informers.factory import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.runtime import Action, Context, Controller, ControllerConfig, DaemonContext

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


def _reconcile(obj: Any, ctx: Context[Any]) -> Action:
    return Action.await_change()


def test_a_daemon_follows_its_object_from_creation_to_deletion(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    cond = threading.Condition()
    running: set[str] = set()
    reasons: dict[str, str | None] = {}
    marked: dict[str, bool] = {}

    def daemon(obj: Any, ctx: DaemonContext[Any]) -> None:
        name = ctx.ref.name
        with cond:
            running.add(name)
            cond.notify_all()
        ctx.stopping.wait()
        latest = ctx.latest()
        with cond:
            running.discard(name)
            reasons[name] = ctx.stop_reason
            marked[name] = latest is not None and bool(
                latest["metadata"].get("deletionTimestamp"))
            cond.notify_all()

    def wait(predicate: Any, what: str) -> None:
        with cond:
            assert cond.wait_for(predicate, 30), f"{what}: {running} {reasons}"

    core.create_namespaced_config_map(ns, {"metadata": {"name": "early"}})
    factory = new_shared_informer_factory_with_options(
        api, 0, SharedInformerFactoryOptions(namespace=ns))
    controller = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="daemons", events=False)).daemon(daemon)
    with controller.running(_reconcile):
        wait(lambda: running == {"early"}, "the listed object's daemon")
        core.create_namespaced_config_map(ns, {"metadata": {
            "name": "kept", "finalizers": ["example.com/keep"]}})
        wait(lambda: running == {"early", "kept"}, "the added object's daemon")
        core.delete_namespaced_config_map("early", ns)
        wait(lambda: "early" in reasons, "the deleted object's daemon")
        core.delete_namespaced_config_map("kept", ns)  # marked, held by its finalizer
        wait(lambda: "kept" in reasons, "the marked object's daemon")
        assert reasons == {"early": "deleted", "kept": "deleted"}
        assert marked == {"early": False, "kept": True}
        core.patch_namespaced_config_map("kept", ns, {"metadata": {"finalizers": None}})


def test_a_timer_ticks_for_each_object_until_it_is_deleted(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    cond = threading.Condition()
    ticks: Counter[str] = Counter()

    def tick(obj: Any, ctx: DaemonContext[Any]) -> None:
        with cond:
            ticks[ctx.ref.name] += 1
            cond.notify_all()

    for name in ("a", "b"):
        core.create_namespaced_config_map(ns, {"metadata": {"name": name}})
    factory = new_shared_informer_factory_with_options(
        api, 0, SharedInformerFactoryOptions(namespace=ns))
    controller = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="timers", events=False)).timer(tick, interval=0.1)
    with controller.running(_reconcile):
        with cond:
            assert cond.wait_for(lambda: ticks["a"] >= 3 and ticks["b"] >= 3, 30), ticks
        core.delete_namespaced_config_map("a", ns)
        core.create_namespaced_config_map(ns, {"metadata": {"name": "marker"}})
        # one timer thread (concurrency 1): once the marker ticked, no tick of a was
        # under way, and a's deletion had reached the cache (events come in order)
        with cond:
            assert cond.wait_for(lambda: ticks["marker"] >= 1, 30), ticks
            after = ticks["a"]
            assert cond.wait_for(lambda: ticks["marker"] >= 4, 30), ticks
            assert ticks["a"] == after, ticks
