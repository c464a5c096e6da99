"""The runtime's server-facing parts on both servers: the finalizer helper (a deletion held
until the cleanup ran), and the reflector Store guarantees (ready after the first list, a
relist after a lost watch history applied in one step, subscriptions)."""

from __future__ import annotations

import itertools
import threading
from typing import Any

from kubernetes.client import ApiException, ApiextensionsV1Api, CoreV1Api, CustomObjectsApi

from client_cache.api.labels import everything
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import EventType
from client_cache.health import serve
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from client_cache.runtime import Action, Context, Controller, ControllerConfig, finalizer
from tests.conformance.util import (
    CONFIGMAPS,
    Backend,
    configmap,
    create_configmaps,
    name_of,
    run_controller,
)
from tests.fixtures import eventually, http_get

FINALIZER = "example.com/cleanup"


def test_finalizer_holds_the_deletion_until_cleanup(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    core.create_namespaced_config_map(ns, configmap("guarded"))
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns))
    cleaned: list[str] = []
    release = threading.Event()

    def cleanup(obj: Any) -> Action:
        assert release.wait(10)  # the object must still exist while we clean up
        cleaned.append(name_of(obj))
        return Action.await_change()

    def reconcile(obj: Any, ctx: Context[None]) -> Action:
        return finalizer(api, CONFIGMAPS, FINALIZER, obj, apply=lambda o: Action.await_change(),
                         cleanup=cleanup)

    controller: Controller[None] = Controller(factory, CONFIGMAPS,
                                              config=ControllerConfig(client_qps=0))
    stop, runner = run_controller(controller, reconcile, "test-runtime")
    try:
        eventually(lambda: core.read_namespaced_config_map("guarded", ns).metadata.finalizers
                   == [FINALIZER], 20, "the finalizer was not added")
        core.delete_namespaced_config_map("guarded", ns)
        held = core.read_namespaced_config_map("guarded", ns)
        assert held.metadata.deletion_timestamp is not None  # held by our finalizer
        release.set()
        lister = factory.for_resource(CONFIGMAPS).lister()
        eventually(lambda: not lister.list(everything()), 20, "not deleted after cleanup")
        # once, or again from a reconcile queued meanwhile that read the cache before the
        # finalizer's removal reached it (cleanup must be idempotent, as in kube-rs); each
        # run found the object still there (the assert in cleanup)
        assert cleaned and set(cleaned) == {"guarded"}
    finally:
        release.set()
        stop.set()
        runner.join(10)
        factory.shutdown(5)
    assert not runner.is_alive()


def test_atomic_relist_readiness_and_subscriptions(api: Any, ns: str,
                                                   backend: Backend) -> None:
    """An informer with ``atomic_relist``: its lister is ready once the first list is in,
    a relist after the watch history is lost (compaction, and on the real server an API
    server restart) brings the cache to the server's state, and a subscription sees the
    changes."""
    create_configmaps(api, ns, [f"c{i}" for i in range(50)])
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns,
                                                               atomic_relist=True))
    generic = factory.for_resource(CONFIGMAPS)
    subscription = generic.informer().get_indexer().subscribe()
    stop = threading.Event()
    factory.start(stop)
    try:
        assert generic.lister().wait_until_ready(timeout=30)
        assert len(generic.lister().list(everything())) == 50
        core = CoreV1Api(api)
        backend.expire_watch_cache()
        for i in range(10):
            core.delete_namespaced_config_map(f"c{i}", ns)
        create_configmaps(api, ns, ["late"])
        eventually(lambda: sorted(name_of(o) for o in generic.lister().list(everything()))
                   == sorted([f"c{i}" for i in range(10, 50)] + ["late"]), 60,
                   "the cache did not converge")
        seen: dict[str, EventType] = {}
        while (event := subscription.get(timeout=0)) is not None:
            seen[name_of(event.object)] = event.type
        assert seen["late"] is EventType.ADDED
        assert all(seen[f"c{i}"] is EventType.DELETED for i in range(10))
    finally:
        stop.set()
        factory.shutdown(10)
    assert subscription.closed


def test_a_controller_started_before_its_crd_reconciles_once_it_is_served(
        api: Any, ns: str, backend: Backend, caplog: Any) -> None:
    """Issue 59, on both servers: a controller of a custom resource whose CRD is not
    installed yet starts (one WARNING), is not ready, and reconciles the resource's objects
    as soon as the CRD is installed, as kube-rs's controller does."""
    plural = f"latecomers{next(_late)}{abs(hash(ns)) % 10_000}"
    gvr = GroupVersionResource(LATE_GROUP, "v1", plural)
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns))
    seen: list[str] = []
    reconciled = threading.Event()

    def reconcile(obj: Any, ctx: Context[None]) -> Action:
        seen.append(name_of(obj))
        reconciled.set()
        return Action.await_change()

    controller: Controller[None] = Controller(factory, gvr,
                                              config=ControllerConfig(client_qps=0))
    stop, runner = run_controller(controller, reconcile, "test-late-crd")
    try:
        with serve(factory=factory) as health:
            eventually(lambda: any("waiting for the server to serve" in r.getMessage()
                                   for r in caplog.records), 10, "no warning")
            status, body = http_get(health.url + "/readyz")
            assert status == 500 and plural in body
            install_crd(api, plural)
            custom = CustomObjectsApi(api)
            eventually(lambda: _created(custom, ns, plural), 60, "the CRD was not served")
            assert reconciled.wait(30), "nothing reconciled after the CRD appeared"
            assert seen == ["first"] and controller.kind == "Latecomer"
            eventually(lambda: http_get(health.url + "/readyz")[0] == 200, 20)
        assert sum("waiting for the server to serve" in r.getMessage()
                   for r in caplog.records) == 1
    finally:
        stop.set()
        controller.shutdown()
        runner.join(10)
        factory.shutdown(5)
        ApiextensionsV1Api(api).delete_custom_resource_definition(f"{plural}.{LATE_GROUP}")
    assert not runner.is_alive()


LATE_GROUP = "late.example.com"
_late = itertools.count()


def install_crd(api: Any, plural: str) -> None:
    ApiextensionsV1Api(api).create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{LATE_GROUP}"},
        "spec": {"group": LATE_GROUP, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural[:-1], "kind": "Latecomer",
                           "listKind": "LatecomerList"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]}})


def _created(custom: Any, ns: str, plural: str) -> bool:
    """Create the object ``first`` once the new endpoint takes it (404, or 429 while the
    real server's watch cache initialises, until then)."""
    try:
        custom.create_namespaced_custom_object(LATE_GROUP, "v1", ns, plural, {
            "apiVersion": f"{LATE_GROUP}/v1", "kind": "Latecomer",
            "metadata": {"name": "first"}})
        return True
    except ApiException as err:
        if err.status in (404, 429, 503):
            return False
        raise
