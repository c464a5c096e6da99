"""String sharing (client_cache.sharing) on what a list-watch decodes from each server:
LIST items and watch events, as dicts and as structs."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import CoreV1Api, V1Pod

from client_cache import sharing
from client_cache.apis import ListOptions
from client_cache.listwatch import ClientListerWatcher
from client_cache.schema import GroupVersionResource
from client_cache.structs import struct_type
from tests.conformance.util import collect, rv

PODS = GroupVersionResource("", "v1", "pods")

if not sharing.AVAILABLE:
    pytest.skip("client_cache._sharing was not built (no C compiler)", allow_module_level=True)


def create_pods(api: Any, ns: str, count: int) -> None:
    core = CoreV1Api(api)
    for i in range(count):
        core.create_namespaced_pod(ns, {
            "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "c", "image": "registry.example.com/web:1.25.3"}]}})


def strings(obj: Any) -> tuple[Any, ...]:
    """The node name, the label value and the image of a pod dict or struct."""
    if isinstance(obj, dict):
        return (obj["spec"]["nodeName"], obj["metadata"]["labels"]["app"],
                obj["spec"]["containers"][0]["image"])
    return (obj.spec.node_name, obj.metadata.labels["app"], obj.spec.containers[0].image)


def listed_and_watched(lw: ClientListerWatcher) -> list[Any]:
    listed = lw.list(ListOptions())
    watch = lw.watch(ListOptions(resource_version=listed["metadata"]["resourceVersion"]))
    CoreV1Api(lw.api_client).patch_namespaced_pod(
        "web-0", lw.namespace, {"metadata": {"labels": {"seen": f"at-{rv(listed)}"}}})
    events, ended = collect(watch, lambda events: len(events) >= 1)
    assert events, f"no event (stream ended: {ended})"
    return [*listed["items"], events[0].object]


@pytest.mark.parametrize("mode", ["dicts", "structs"])
def test_list_items_and_watch_events_hold_one_copy_of_each_repeated_string(
        api: Any, ns: str, mode: str) -> None:
    create_pods(api, ns, 3)
    object_type = None
    if mode == "structs":
        pytest.importorskip("msgspec")
        object_type = struct_type(V1Pod)
    shared = listed_and_watched(ClientListerWatcher(api, PODS, ns, object_type=object_type))
    assert len(shared) == 4
    first = strings(shared[0])
    for obj in shared[1:]:
        assert all(a is b for a, b in zip(first, strings(obj), strict=True))
    kept = listed_and_watched(ClientListerWatcher(api, PODS, ns, object_type=object_type,
                                                  share_strings=False))
    assert [strings(obj) for obj in kept] == [strings(obj) for obj in shared]
    assert all(a is not b for a, b in zip(strings(kept[0]), strings(kept[1]), strict=True))
