"""Issue 70 on both servers: a generation predicate ignores a status write made through
the status subresource, and ``await_condition`` sees an object come and go (the real
server's field selector on ``metadata.name`` and its watch)."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from kubernetes.client import AppsV1Api, CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.informers.conditions import exists, has_condition, is_deleted
from client_cache.informers.factory import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.informers.wait import ConditionTimeoutError, await_condition
from client_cache.runtime import Action, Context, Controller, ControllerConfig, predicates

DEPLOYMENTS = GroupVersionResource("apps", "v1", "deployments")
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


def _deployment(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def test_a_status_write_does_not_pass_the_generation_predicate(api: Any, ns: str) -> None:
    """One worker takes requests in order: had ``a``'s status write triggered it, ``a``
    would run again before the marker ``b`` created after it."""
    apps = AppsV1Api(api)
    cond = threading.Condition()
    calls: Counter[str] = Counter()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        with cond:
            calls[obj["metadata"]["name"]] += 1
            cond.notify_all()
        return Action.await_change()

    factory = new_shared_informer_factory_with_options(
        api, 0, SharedInformerFactoryOptions(namespace=ns))
    controller: Controller[Any] = Controller(factory, DEPLOYMENTS, config=ControllerConfig(
        name="filtered", events=False, concurrency=1)).filter(predicates.generation)
    apps.create_namespaced_deployment(ns, _deployment("a"))
    with controller.running(reconcile):
        with cond:
            assert cond.wait_for(lambda: calls["a"] == 1, 30), calls
        apps.patch_namespaced_deployment_status("a", ns, {"status": {"replicas": 1}})
        apps.create_namespaced_deployment(ns, _deployment("b"))
        with cond:
            assert cond.wait_for(lambda: calls["b"] == 1, 30), calls
            assert calls["a"] == 1, calls
        apps.patch_namespaced_deployment("a", ns, {"spec": {"replicas": 2}})
        with cond:
            assert cond.wait_for(lambda: calls["a"] == 2, 30), calls


def test_await_condition_sees_an_object_come_and_go(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    looks: list[Any] = []

    def created_on_first_look(obj: Any) -> bool:
        looks.append(obj)
        if obj is None and len(looks) == 1:
            core.create_namespaced_config_map(ns, {"metadata": {"name": "w"}})
        return exists()(obj)

    got = await_condition(api, "w", created_on_first_look, namespace=ns,
                          resource=CONFIGMAPS, timeout=30)
    assert got["metadata"]["name"] == "w" and looks[0] is None
    uid = got["metadata"]["uid"]
    core.delete_namespaced_config_map("w", ns)
    assert await_condition(api, "w", is_deleted(uid), namespace=ns, resource=CONFIGMAPS,
                           timeout=30) is None
    try:
        await_condition(api, "w", has_condition("Ready"), namespace=ns,
                        resource=CONFIGMAPS, timeout=0.5)
    except ConditionTimeoutError as err:
        assert "not met within 0.5 s" in str(err)
    else:
        raise AssertionError("a condition that cannot hold was met")
