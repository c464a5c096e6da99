"""Custom resources: a CustomResourceDefinition registered through the API, then its
instances listed, watched and informed through the dynamic (GroupVersionResource) path."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes.client import ApiException, ApiextensionsV1Api, CustomObjectsApi

from client_cache.api.labels import parse
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.errors import ApiStatusError
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from tests.conformance.util import Recorder, changes, collect, lister_watcher, name_of, rv

GROUP, VERSION, PLURAL, KIND = "conformance.example.com", "v1", "gadgets", "Gadget"
GADGETS = GroupVersionResource(GROUP, VERSION, PLURAL)


def crd_body() -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "gadget", "kind": KIND,
                      "listKind": f"{KIND}List", "shortNames": ["gd"]},
            "versions": [{"name": VERSION, "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": schema}}],
        },
    }


def gadget(name: str, size: int, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
            "metadata": {"name": name, "labels": labels or {}}, "spec": {"size": size}}


@pytest.fixture
def crd(api: Any, ns: str) -> None:
    """The Gadget CRD, established and served (created once per server)."""
    extensions = ApiextensionsV1Api(api)
    try:
        extensions.create_custom_resource_definition(crd_body())
    except ApiException as err:
        assert err.status == 409  # an earlier test on this server made it
    deadline = time.monotonic() + 30
    while True:
        got = extensions.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        conditions = {c.type: c.status for c in (got.status.conditions or [])}
        if conditions.get("Established") == "True":
            break
        assert time.monotonic() < deadline, conditions
        time.sleep(0.1)
    while True:  # the new endpoint is served shortly after the CRD is established
        try:
            lister_watcher(api, ns, GADGETS).list(ListOptions())
            return
        except ApiStatusError as err:
            # 404 until the endpoint is served; on the real server then 429 "storage is
            # (re)initializing" until its watch cache has synced
            assert err.code in (404, 429) and time.monotonic() < deadline
            time.sleep(0.1)


def test_crd_with_a_bad_name_is_invalid(api: Any) -> None:
    body = crd_body()
    body["metadata"]["name"] = "wrong.example.com"
    with pytest.raises(ApiException) as info:
        ApiextensionsV1Api(api).create_custom_resource_definition(body)
    assert info.value.status == 422


@pytest.mark.usefixtures("crd")
def test_custom_resources_list_watch_and_inform(api: Any, ns: str) -> None:
    objects = CustomObjectsApi(api)
    for i in range(5):
        objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL,
                                                gadget(f"g-{i}", i, {"even": str(i % 2 == 0)}))
    lw = lister_watcher(api, ns, GADGETS)
    listed = lw.list(ListOptions(limit=2))
    assert listed["kind"] == f"{KIND}List" and listed["apiVersion"] == f"{GROUP}/{VERSION}"
    assert [name_of(o) for o in listed["items"]] == ["g-0", "g-1"]
    assert listed["items"][0]["spec"] == {"size": 0} and listed["metadata"]["continue"]
    full = lw.list(ListOptions(label_selector="even=True"))
    assert [name_of(o) for o in full["items"]] == ["g-0", "g-2", "g-4"]
    start = lw.list(ListOptions())["metadata"]["resourceVersion"]
    watch = lw.watch(ListOptions(resource_version=start))
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns))
    informer = factory.for_resource(GADGETS)
    recorder = Recorder()
    informer.informer().add_event_handler(recorder)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop) == {GADGETS: True}
        objects.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g-1",
                                               {"spec": {"size": 10}})
        objects.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g-2")
        objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, gadget("g-9", 9))
        events, _ = collect(watch, lambda evs: len(evs) >= 3)
        assert changes(events) == [("MODIFIED", "g-1"), ("DELETED", "g-2"), ("ADDED", "g-9")]
        assert events[0].object["spec"] == {"size": 10} and events[0].object["kind"] == KIND
        assert recorder.wait(lambda evs: ("add", "g-9") in evs and ("delete", "g-2") in evs)
        assert recorder.final_state() == {"g-0", "g-1", "g-3", "g-4", "g-9"}
        lister = informer.lister()
        assert lister.by_namespace(ns).get("g-1")["spec"] == {"size": 10}
        assert sorted(name_of(o) for o in lister.list(parse("even=True"))) == ["g-0", "g-4"]
        assert rv(lister.by_namespace(ns).get("g-9")) > int(start)
    finally:
        stop.set()
        factory.shutdown(5)


def test_a_protobuf_lister_watcher_reads_a_custom_resource_in_json(
        api: Any, ns: str, crd: None) -> None:
    """Asked for protobuf (which custom resources do not have), the server answers JSON
    and the lister-watcher reads it: the list, then the watch's events."""
    objects = CustomObjectsApi(api)
    objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, gadget("g-1", 1))
    lw = lister_watcher(api, ns, GADGETS, protobuf=True)
    listed = lw.list(ListOptions())
    assert [name_of(o) for o in listed["items"]] == ["g-1"]
    assert listed["items"][0]["spec"] == {"size": 1}
    watch = lw.watch(ListOptions(resource_version=listed["metadata"]["resourceVersion"]))
    objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, gadget("g-2", 2))
    events, _ = collect(watch, lambda got: bool(changes(got)))
    assert changes(events) == [("ADDED", "g-2")]
