"""Watch events share with the objects they replace the parts an update left unchanged
(client_cache.codec._sharing.decoder's ``previous``), in a shared informer on each server: not
with a transform set, nor with ``CLIENT_CACHE_REUSE_UNCHANGED=0``; so do the items of a
LIST read beside the cached objects (a relist's: ``whole``)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import EventType
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _sharing as sharing
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from tests.conformance.util import collect, initial_events_ended, synced
from tests.fixtures import UpdateQueue

pytestmark = pytest.mark.needs_native

PODS = GroupVersionResource("", "v1", "pods")



def relabelled(api: Any, ns: str, **options: Any) -> tuple[Any, Any, dict[str, Any]]:
    """A pod created, a pods informer (a factory with ``options``) synced on it, the pod's
    labels changed: the update's old and new object, and the pod as a fresh LIST gives
    it."""
    core = CoreV1Api(api)
    core.create_namespaced_pod(ns, {
        "metadata": {"name": "web-0", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "registry.example.com/web:1",
                                 "ports": [{"containerPort": 8080}],
                                 "resources": {"limits": {"cpu": "1"}}}]}})
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns, **options))
    informer = factory.core().v1().pods().informer()
    handler = UpdateQueue()
    informer.add_event_handler(handler)
    with synced([factory]):
        core.patch_namespaced_pod("web-0", ns, {"metadata": {"labels": {"seen": "yes"}}})
        old, new = handler.updates.get(timeout=30)
    listed = ClientListerWatcher(api, PODS, ns).list(ListOptions())["items"]
    return old, new, next(pod for pod in listed if pod["metadata"]["name"] == "web-0")


def without_type(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without kind and apiVersion (a LIST's items may have none)."""
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


def test_an_update_shares_what_it_left_unchanged(api: Any, ns: str) -> None:
    old, new, fresh = relabelled(api, ns)
    assert without_type(new) == without_type(fresh)  # what the JSON says
    assert list(without_type(new)) == list(without_type(fresh))  # in its order
    assert list(new["spec"]) == list(fresh["spec"])
    assert old["metadata"]["labels"] == {"app": "web"}
    assert new["metadata"]["labels"] == {"app": "web", "seen": "yes"}
    assert new["spec"] is old["spec"]
    assert new["metadata"] is not old["metadata"]
    assert new["metadata"]["uid"] is old["metadata"]["uid"]
    assert new["metadata"]["labels"] is not old["metadata"]["labels"]


def test_a_transform_gets_objects_of_their_own(api: Any, ns: str) -> None:
    def transform(obj: Any) -> Any:
        obj["metadata"].pop("managedFields", None)
        return obj

    old, new, fresh = relabelled(api, ns, transform=transform)
    assert new["spec"] == old["spec"] == fresh["spec"]
    assert new["spec"] is not old["spec"]


def test_the_environment_turns_it_off(api: Any, ns: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sharing.REUSE_UNCHANGED_ENV, "0")
    old, new, fresh = relabelled(api, ns)
    assert without_type(new) == without_type(fresh)
    assert new["spec"] == old["spec"]
    assert new["spec"] is not old["spec"]


def test_a_list_reads_its_items_beside_the_cached_objects(api: Any, ns: str) -> None:
    """What a relist does (ClientListerWatcher.set_previous_objects): each LIST item is
    read beside the object cached under its key; one that did not change is that object,
    a changed one shares what it left unchanged, and each is what the JSON says."""
    core = CoreV1Api(api)
    for i in range(3):
        core.create_namespaced_pod(ns, {
            "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "registry.example.com/web:1",
                                     "resources": {"limits": {"cpu": "1"}}}]}})
    lw = ClientListerWatcher(api, PODS, ns)
    cached = {f"{ns}/{pod['metadata']['name']}": pod
              for pod in lw.list(ListOptions())["items"]}
    asked: list[str] = []

    def lookup(key: str) -> Any:
        asked.append(key)
        return cached.get(key)

    lw.set_previous_objects(lookup)
    core.patch_namespaced_pod("web-1", ns, {"metadata": {"labels": {"seen": "yes"}}})
    relisted = lw.list(ListOptions())["items"]
    fresh = ClientListerWatcher(api, PODS, ns).list(ListOptions())["items"]
    assert relisted == fresh
    assert [list(pod) for pod in relisted] == [list(pod) for pod in fresh]
    assert sorted(asked) == sorted(cached)
    new = {pod["metadata"]["name"]: pod for pod in relisted}
    assert new["web-0"] is cached[f"{ns}/web-0"] and new["web-2"] is cached[f"{ns}/web-2"]
    old = cached[f"{ns}/web-1"]
    assert new["web-1"] is not old and new["web-1"]["metadata"]["labels"]["seen"] == "yes"
    assert new["web-1"]["spec"] is old["spec"]
    assert new["web-1"]["metadata"]["uid"] is old["metadata"]["uid"]
    assert "seen" not in old["metadata"]["labels"]


def initial_events(lw: ClientListerWatcher) -> dict[str, Any]:
    """The objects of a watch-list's initial events, by name (the watch stopped after)."""
    watch = lw.watch(ListOptions(send_initial_events=True, allow_watch_bookmarks=True,
                                 resource_version_match="NotOlderThan"))
    events, _ = collect(watch, initial_events_ended)
    assert initial_events_ended(events), "the initial events did not end"
    return {e.object["metadata"]["name"]: e.object for e in events if e.type == EventType.ADDED}


def test_a_watch_list_reads_its_added_events_beside_the_cached_objects(
        api: Any, ns: str) -> None:
    """A watch-list's relist: once the cache holds objects, its ADDED events are read
    beside them as well."""
    core = CoreV1Api(api)
    for i in range(3):
        core.create_namespaced_pod(ns, {
            "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "registry.example.com/web:1"}]}})
    lw = ClientListerWatcher(api, PODS, ns)
    cached = {f"{ns}/{name}": pod for name, pod in initial_events(lw).items()}
    assert len(cached) == 3
    lw.set_previous_objects(cached.get)
    core.patch_namespaced_pod("web-1", ns, {"metadata": {"labels": {"seen": "yes"}}})
    again = initial_events(lw)
    assert again["web-0"] is cached[f"{ns}/web-0"] and again["web-2"] is cached[f"{ns}/web-2"]
    old = cached[f"{ns}/web-1"]
    assert again["web-1"] is not old and again["web-1"]["metadata"]["labels"]["seen"] == "yes"
    assert again["web-1"]["spec"] is old["spec"] and "seen" not in old["metadata"]["labels"]
