"""String sharing, untracking and shared key tables (client_cache.codec._sharing) on what a
list-watch decodes from each server: LIST items and watch events, as dicts and as structs."""

from __future__ import annotations

import gc
import sys
from typing import Any

import pytest
from kubernetes.client import CoreV1Api, V1Pod

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _wire as wire
from client_cache.codec.structs import struct_type
from tests.conformance.util import collect, rv
from tests.fixtures import containers

pytestmark = pytest.mark.needs_native

PODS = GroupVersionResource("", "v1", "pods")



def create_pods(api: Any, ns: str, count: int) -> None:
    """Pods alike but for their names. The container's resource limits (a dict) keep it
    and the tuple holding it from being shared as immutable values between the pods
    (client_cache.codec._sharing): a shared part is the one first seen, tracked by the
    collector or not as that walk left it, so only a pod's own parts say what its own
    list-watch did."""
    core = CoreV1Api(api)
    for i in range(count):
        core.create_namespaced_pod(ns, {
            "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "c", "image": "registry.example.com/web:1.25.3",
                 "resources": {"limits": {"cpu": "1"}}}]}})


def strings(obj: Any) -> tuple[Any, ...]:
    """The node name, the label value and the image of a pod dict or struct."""
    if isinstance(obj, dict):
        return (obj["spec"]["nodeName"], obj["metadata"]["labels"]["app"],
                obj["spec"]["containers"][0]["image"])
    return (obj.spec.node_name, obj.metadata.labels["app"], obj.spec.containers[0].image)


def object_type_for(mode: str) -> Any:
    """None for dicts, the pod struct class for structs (skips without msgspec)."""
    if mode == "structs":
        pytest.importorskip("msgspec")
        return struct_type(V1Pod)
    return None


def listed_and_watched(lw: ClientListerWatcher) -> list[Any]:
    listed = lw.list(ListOptions())
    watch = lw.watch(ListOptions(resource_version=listed["metadata"]["resourceVersion"]))
    CoreV1Api(lw.api_client).patch_namespaced_pod(
        "web-0", lw.namespace, {"metadata": {"labels": {"seen": f"at-{rv(listed)}"}}})
    events, ended = collect(watch, lambda events: len(events) >= 1)
    assert events, f"no event (stream ended: {ended})"
    return [*listed["items"], events[0].object]


def on_and_off(api: Any, ns: str, mode: str, option: str) -> tuple[list[Any], list[Any]]:
    """Three pods listed and one watched, by a list-watch with its defaults and by one
    with ``option`` turned off."""
    create_pods(api, ns, 3)
    object_type = object_type_for(mode)
    on = listed_and_watched(ClientListerWatcher(api, PODS, ns, object_type=object_type))
    off = listed_and_watched(ClientListerWatcher(api, PODS, ns, object_type=object_type,
                                                 **{option: False}))
    assert len(on) == len(off) == 4
    return on, off


@pytest.mark.parametrize("mode", ["dicts", "structs"])
def test_list_items_and_watch_events_hold_one_copy_of_each_repeated_string(
        api: Any, ns: str, mode: str) -> None:
    shared, kept = on_and_off(api, ns, mode, "share_strings")
    first = strings(shared[0])
    for obj in shared[1:]:
        assert all(a is b for a, b in zip(first, strings(obj), strict=True))
    assert [strings(obj) for obj in kept] == [strings(obj) for obj in shared]
    assert all(a is not b for a, b in zip(strings(kept[0]), strings(kept[1]), strict=True))


@pytest.mark.parametrize("mode", ["dicts", "structs"])
def test_list_items_and_watch_events_are_out_of_the_collectors_sight(
        api: Any, ns: str, mode: str) -> None:
    # The collector itself untracks a tuple of untracked structs when a pass meets it:
    # none may run before the tracked ones are looked at.
    with wire.gc_paused():
        untracked, kept = on_and_off(api, ns, mode, "untrack")
        assert [c for obj in untracked for c in containers(obj) if gc.is_tracked(c)] == []
        assert all(any(gc.is_tracked(c) for c in containers(obj)) for obj in kept)


def dicts(obj: Any) -> list[dict[str, Any]]:
    return [c for c in containers(obj) if isinstance(c, dict)]


@pytest.mark.parametrize("mode", ["dicts", "structs"])
def test_list_items_and_watch_events_get_dicts_sharing_key_tables(
        api: Any, ns: str, mode: str) -> None:
    compacted, kept = on_and_off(api, ns, mode, "compact_dicts")
    assert compacted[1:3] == kept[1:3]  # web-0 was patched between the two
    # the first object's dicts are the first of their keys; the next ones are compacted
    for ours, theirs in zip(compacted[1:3], kept[1:3], strict=True):
        pairs = [(a, b) for a, b in zip(dicts(ours), dicts(theirs), strict=True) if b]
        assert pairs and all(type(a) is dict for a, _ in pairs)
        assert all(sys.getsizeof(a) < sys.getsizeof(b) for a, b in pairs)
    if mode == "dicts":  # the watch event's too (not its labels: they gained a key)
        event = list(zip(dicts(compacted[3]), dicts(kept[3]), strict=True))
        assert sum(sys.getsizeof(a) < sys.getsizeof(b) for a, b in event) >= 2
