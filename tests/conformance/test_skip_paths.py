"""Informers given ``skip_paths`` (``SharedInformerFactoryOptions(skip_paths=...)``) on both
servers: on each initial-sync path, in JSON and protobuf, for dicts and models, the cache
holds what an informer without them holds less the members named, through the sync and
the watch events after it; a struct informer of the same options is not given them; a
metadata-only informer leaves them out of its ``PartialObjectMetadata`` objects."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from bench.bench_compare import real_pod
from client_cache.codec.objects import to_wire
from client_cache.codec.skip_paths import skip_tree
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_metadata_shared_informer_factory,
)
from tests.conformance.util import CONFIGMAPS, Recorder, parallel, recorded_pods, synced
from tests.fixtures import eventually

PODS = 12
ANNOTATION = ("metadata", "annotations", "prometheus.io/scrape")  # a key with dots
PATHS = ("metadata.managedFields", "spec.containers.env", ANNOTATION)
MANAGED = [{"manager": "tests", "operation": "Update", "apiVersion": "v1",
            "time": "2026-11-27T02:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}}]


def pod(i: int) -> dict[str, Any]:
    """A pod with every member PATHS names (the real server adds its own managedFields
    entry to ours)."""
    obj = real_pod(i)
    obj["metadata"]["managedFields"] = copy.deepcopy(MANAGED)
    return obj


@pytest.mark.parametrize("form", ["dicts", "models"])
@pytest.mark.parametrize("protobuf", [False, True])
@pytest.mark.parametrize("sync", ["list", "watch-list"])
def test_an_informer_leaves_out_the_members_it_is_told_to(
        api: Any, ns: str, sync: str, protobuf: bool, form: str) -> None:
    core = CoreV1Api(api)
    parallel(lambda i=i: core.create_namespaced_pod(ns, pod(i), _preload_content=False)
             for i in range(PODS))
    # Each informer's first LIST (resourceVersion 0) is read from the real server's watch
    # cache, which may not hold every new pod yet: such a pod reaches that informer as a
    # watch event, which carries kind and apiVersion where a LIST item has none, and the
    # two caches would differ in more than the paths. Wait until the cache holds them all.
    eventually(lambda: len(core.list_namespaced_pod(ns, resource_version="0").items) == PODS,
               30, "the server's LIST at resourceVersion 0 never held every pod")
    # without the paths, with them, and structs with them (which are not given them)
    factories, stores, recorders = zip(*(
        recorded_pods(api, kind, namespace=ns, use_watch_list=sync == "watch-list",
                      protobuf=protobuf, skip_paths=paths)
        for paths, kind in (((), form), (PATHS, form), (PATHS, "structs"))), strict=True)
    with synced(factories):
        core.patch_namespaced_pod("web-000001", ns, {"metadata": {"labels": {"x": "1"}}})
        core.create_namespaced_pod(ns, pod(PODS + 1))
        for recorder in recorders:
            assert recorder.wait(lambda got: ("update", "web-000001") in got
                                 and ("add", f"web-{PODS + 1:06d}") in got)
        full, skipped = ({key: to_wire(store.get_by_key(key)[0]) for key in store.list_keys()}
                         for store in stores[:2])
        assert len(full) == PODS + 1
        tree = skip_tree(PATHS)
        assert tree is not None
        for obj in full.values():  # each member was there to be left out
            assert obj["metadata"]["managedFields"]
            assert obj["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
            assert obj["spec"]["containers"][0]["env"]
        assert skipped == {key: tree.drop(copy.deepcopy(obj)) for key, obj in full.items()}
        assert skipped[f"{ns}/web-000001"]["metadata"]["labels"]["x"] == "1"
        assert all(obj["metadata"]["annotations"] for obj in skipped.values())
        struct_pods = stores[2].list()
        assert len(struct_pods) == PODS + 1
        assert all(p.spec.containers[0].env for p in struct_pods)


def test_a_metadata_informer_leaves_out_the_members_too(api: Any, ns: str) -> None:
    """Metadata-only objects carry managedFields as well: the metadata factory gives its
    informers the paths (JSON, as Go's metadata client)."""
    core = CoreV1Api(api)
    for i in range(3):
        core.create_namespaced_config_map(ns, {"metadata": {
            "name": f"m-{i}", "labels": {"app": "x"}, "managedFields": copy.deepcopy(MANAGED)},
            "data": {"k": "v"}})
    factories, informers = [], []
    for paths in ((), ("metadata.managedFields",)):
        factory = new_metadata_shared_informer_factory(
            api, 0, SharedInformerFactoryOptions(namespace=ns, skip_paths=paths))
        informers.append(factory.for_resource(CONFIGMAPS).informer())
        factories.append(factory)
    recorders = [Recorder(), Recorder()]
    for informer, recorder in zip(informers, recorders, strict=True):
        informer.add_event_handler(recorder)
    with synced(factories):
        core.patch_namespaced_config_map("m-1", ns, {"metadata": {"labels": {"app": "y"}}})
        for recorder in recorders:
            assert recorder.wait(lambda got: ("update", "m-1") in got)
        full, skipped = ({o["metadata"]["name"]: o for o in informer.get_store().list()}
                         for informer in informers)
        assert sorted(full) == sorted(skipped) == ["m-0", "m-1", "m-2"]
        for name, obj in full.items():
            assert obj["metadata"]["managedFields"]
            without = copy.deepcopy(obj)
            del without["metadata"]["managedFields"]
            assert skipped[name] == without
        assert skipped["m-1"]["metadata"]["labels"] == {"app": "y"}
