"""Issue 70: predicates on a controller's triggers (kube-rs ``predicate_filter`` and
``predicates::*``, controller-runtime ``WithPredicates`` / ``WithEventFilter``)."""

from __future__ import annotations

import copy
import logging
import threading
import tracemalloc
from collections import Counter
from typing import Any

import pytest
from kubernetes.client import AppsV1Api, CoreV1Api

from client_cache.api.labels import SelectorParseError
from client_cache.api.schema import GroupVersionResource
from client_cache.informers import SharedInformerFactory
from client_cache.runtime import (
    Action,
    Context,
    Controller,
    ControllerConfig,
    Predicate,
    controller_owner_ref,
    predicates,
)
from client_cache.runtime.predicates import changed, labelled, passes, when
from client_cache.testing.apiserver import EmbeddedApiServer

NS = "default"
DEPLOYMENTS = GroupVersionResource("apps", "v1", "deployments")
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
ONE_WORKER = ControllerConfig(client_qps=0, events=False, concurrency=1)
"""One worker takes the requests in order: what a test's marker object relies on."""


def obj(name: str = "a", uid: str = "u1", generation: int | None = 1, rv: str = "1",
        labels: dict[str, str] | None = None, finalizers: list[str] | None = None,
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": NS, "uid": uid, "resourceVersion": rv,
                          "labels": labels or {}, "annotations": annotations or {}}
    if generation is not None:
        md["generation"] = generation
    if finalizers is not None:
        md["finalizers"] = finalizers
    return {"metadata": md}


# -- the predicates themselves ----------------------------------------------------------------
def test_generation_passes_a_spec_change_and_drops_a_status_write() -> None:
    gen = predicates.generation
    assert not gen.passes_update(obj(rv="1"), obj(rv="2"))  # a status write: rv only
    assert gen.passes_update(obj(generation=1), obj(generation=2, rv="2"))
    assert gen.passes_update(obj(generation=None), obj(generation=None, rv="2"))  # none kept
    assert gen.passes_add(obj()) and gen.passes_delete(obj())


def test_each_kube_rs_predicate_compares_its_field() -> None:
    before = obj(labels={"a": "1"}, annotations={"n": "x"}, finalizers=["f"])
    cases = {
        predicates.resource_version: obj(rv="2", labels={"a": "1"}, annotations={"n": "x"},
                                         finalizers=["f"]),
        predicates.labels: obj(labels={"a": "2"}, annotations={"n": "x"}, finalizers=["f"]),
        predicates.annotations: obj(labels={"a": "1"}, annotations={"n": "y"},
                                    finalizers=["f"]),
        predicates.finalizers: obj(labels={"a": "1"}, annotations={"n": "x"},
                                   finalizers=["f", "g"]),
    }
    for predicate, after in cases.items():
        assert predicate.passes_update(before, after), predicate
        assert not predicate.passes_update(before, copy.deepcopy(before)), predicate
        others = [p for p in cases if p is not predicate and p is not
                  predicates.resource_version]
        assert all(not p.passes_update(before, after) for p in others), predicate


def test_an_update_across_a_new_uid_is_an_add() -> None:
    """A relist that finds a deleted and re-created object under one name."""
    only_adds = Predicate(lambda old, new: False, add=lambda o: True, name="adds")
    assert only_adds.passes_update(obj(uid="u1"), obj(uid="u2"))
    assert not only_adds.passes_update(obj(uid="u1"), obj(uid="u1", rv="2"))


def test_combinators_work_event_by_event() -> None:
    spec = obj(generation=2, rv="2")
    relabel = obj(labels={"x": "y"}, rv="2")
    either = predicates.generation | predicates.labels
    both = predicates.generation & predicates.labels
    assert either.passes_update(obj(), spec) and either.passes_update(obj(), relabel)
    assert not both.passes_update(obj(), spec) and not both.passes_update(obj(), relabel)
    assert both.passes_update(obj(), obj(generation=2, labels={"x": "y"}))
    negated = ~predicates.generation
    assert negated.passes_update(obj(), relabel) and not negated.passes_update(obj(), spec)
    assert not negated.passes_add(obj()) and not negated.passes_delete(obj())
    assert repr(either) == "<Predicate (generation | labels)>"


def test_when_and_labelled_test_the_state_of_the_object() -> None:
    web = labelled("app=web")
    assert web.passes_add(obj(labels={"app": "web"})) and not web.passes_add(obj())
    assert web.passes_update(obj(), obj(labels={"app": "web"}))  # the new state counts
    assert not web.passes_delete(obj(labels={"app": "db"}))
    named = when(lambda o: o["metadata"]["name"].startswith("keep-"))
    assert named.passes_add(obj("keep-1")) and not named.passes_add(obj("drop-1"))
    with pytest.raises(SelectorParseError):
        labelled("app in (")


def test_a_custom_value_and_bad_arguments() -> None:
    replicas = changed(lambda o: o.get("spec", {}).get("replicas"), "replicas")
    assert replicas.passes_update({**obj(), "spec": {"replicas": 1}},
                                  {**obj(rv="2"), "spec": {"replicas": 2}})
    assert not replicas.passes_update({**obj(), "spec": {"replicas": 1}},
                                      {**obj(rv="2"), "spec": {"replicas": 1}})
    with pytest.raises(TypeError, match="update must be callable"):
        Predicate("generation")  # type: ignore[arg-type]


def test_a_raising_predicate_blocks_the_event_and_is_logged(
        caplog: pytest.LogCaptureFixture) -> None:
    def boom(o: Any) -> bool:
        raise RuntimeError("no")
    with caplog.at_level(logging.ERROR):
        assert not passes((when(boom, "boom"),), "add", obj("x"))
    assert "predicate boom failed on" in caplog.text and "default/x" in caplog.text


def test_predicates_keep_nothing_per_object() -> None:
    """100,000 generated names through every ready-made predicate: the memory still
    allocated afterwards does not grow with them (kube-rs needs a TTL cache for this)."""
    chosen = (predicates.generation, predicates.labels, predicates.finalizers,
              predicates.annotations, predicates.resource_version)
    objs = [(obj(f"gen-{i:06d}", f"u{i}"), obj(f"gen-{i:06d}", f"u{i}", 2, "2"))
            for i in range(100_000)]
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for old, new in objs:
            passes(chosen, "add", new)
            passes(chosen, "update", old, new)
            passes(chosen, "delete", new)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 64 * 1024, after - before


# -- on a controller ---------------------------------------------------------------------------
class Counted:
    """A reconcile counting its calls by name; :meth:`wait` for a count."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.calls: Counter[str] = Counter()

    def __call__(self, o: Any, ctx: Context[Any]) -> Action:
        with self.cond:
            self.calls[o["metadata"]["name"]] += 1
            self.cond.notify_all()
        return Action.await_change()

    def wait(self, name: str, count: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.calls[name] >= count, 10), self.calls


def deployment(name: str, owner: Any = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if owner is not None:
        md["ownerReferences"] = [controller_owner_ref(owner, "ConfigMap", "v1")]
    return {"metadata": md, "spec": {"replicas": 1, "selector": {"matchLabels": {"a": name}},
                                     "template": {"metadata": {"labels": {"a": name}}}}}


def test_a_status_write_does_not_trigger_a_generation_filtered_controller(
        server: EmbeddedApiServer, factory: SharedInformerFactory) -> None:
    """One worker, requests in order: had the status write of ``a`` triggered it, ``a``
    would be reconciled again before the later-created marker ``b``."""
    apps = AppsV1Api(server.api_client())
    counted = Counted()
    controller: Controller[Any] = Controller(factory, DEPLOYMENTS, config=ONE_WORKER) \
        .filter(predicates.generation)
    apps.create_namespaced_deployment(NS, deployment("a"))
    with controller.running(counted):
        counted.wait("a", 1)
        apps.patch_namespaced_deployment_status("a", NS, {"status": {"replicas": 1}})
        apps.create_namespaced_deployment(NS, deployment("b"))
        counted.wait("b", 1)
        assert counted.calls["a"] == 1, counted.calls
        apps.patch_namespaced_deployment("a", NS, {"spec": {"replicas": 2}})  # generation 2
        counted.wait("a", 2)


def test_owns_and_event_filters_filter_their_informers(
        server: EmbeddedApiServer, factory: SharedInformerFactory) -> None:
    core, apps = CoreV1Api(server.api_client()), AppsV1Api(server.api_client())
    counted = Counted()
    controller: Controller[Any] = Controller(factory, CONFIGMAPS, config=ONE_WORKER) \
        .owns(DEPLOYMENTS, predicates=[predicates.generation]) \
        .event_filter(labelled("team=ours") | when(lambda o: "ownerReferences" in
                                                   o["metadata"], "owned"))
    owner = core.create_namespaced_config_map(NS, {"metadata": {
        "name": "owner", "labels": {"team": "ours"}}})
    core.create_namespaced_config_map(NS, {"metadata": {"name": "theirs"}})
    with controller.running(counted):
        counted.wait("owner", 1)
        owner_dict = server.api_client().sanitize_for_serialization(owner)
        apps.create_namespaced_deployment(NS, deployment("child", owner_dict))
        counted.wait("owner", 2)  # the child's add
        apps.patch_namespaced_deployment_status("child", NS, {"status": {"replicas": 1}})
        core.create_namespaced_config_map(NS, {"metadata": {
            "name": "marker", "labels": {"team": "ours"}}})
        counted.wait("marker", 1)
        assert counted.calls["owner"] == 2 and counted.calls["theirs"] == 0, counted.calls


def test_filter_refuses_what_is_not_a_predicate(factory: SharedInformerFactory) -> None:
    controller: Controller[Any] = Controller(factory, CONFIGMAPS)
    with pytest.raises(TypeError, match=r"expected client_cache\.runtime\.predicates\.Predicate"):
        controller.filter(lambda old, new: True)  # type: ignore[arg-type]
