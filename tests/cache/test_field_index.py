"""Field indexes (controller-runtime's IndexField / MatchingFields): pods by node, in one
namespace or all, on wire dicts and on models, through the lister."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import CoreV1Api, V1Container, V1ObjectMeta, V1Pod, V1PodSpec

from client_cache.errors import IndexNotFoundError
from client_cache.field_index import field_values, index_field, list_by_field
from client_cache.informers.factory import new_shared_informer_factory
from client_cache.store import meta_namespace_key_func, new_indexer
from client_cache.testing.apiserver import EmbeddedApiServer


def pod(ns: str, name: str, node: str = "", images: tuple[str, ...] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": image}
                                           for i, image in enumerate(images)]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_values_at_a_path() -> None:
    obj = pod("a", "p", "node-1", ("nginx", "envoy"))
    assert field_values(obj, "spec.nodeName") == ["node-1"]
    assert field_values(obj, "spec.containers.image") == ["nginx", "envoy"]
    assert field_values(obj, "spec.missing") == []
    model = V1Pod(metadata=V1ObjectMeta(name="m", namespace="a"),
                  spec=V1PodSpec(node_name="node-2", containers=[V1Container(name="c")]))
    assert field_values(model, "spec.nodeName") == ["node-2"]
    assert field_values({"spec": {"ok": True}}, "spec.ok") == ["true"]


def test_lookup_in_a_namespace_and_in_all() -> None:
    indexer = new_indexer(meta_namespace_key_func, {})
    index_field(indexer, "spec.nodeName")
    for obj in (pod("a", "p1", "node-1"), pod("b", "p2", "node-1"), pod("a", "p3", "node-2"),
                pod("a", "p4")):
        indexer.add(obj)
    names = lambda objs: sorted(o["metadata"]["name"] for o in objs)  # noqa: E731
    assert names(list_by_field(indexer, "spec.nodeName", "node-1")) == ["p1", "p2"]
    assert names(list_by_field(indexer, "spec.nodeName", "node-1", "a")) == ["p1"]
    assert names(list_by_field(indexer, "spec.nodeName", "node-2", "b")) == []
    indexer.update(pod("a", "p1", "node-2"))  # moved: the index follows
    assert names(list_by_field(indexer, "spec.nodeName", "node-2")) == ["p1", "p3"]
    with pytest.raises(IndexNotFoundError):
        list_by_field(indexer, "spec.schedulerName", "x")


def test_through_the_lister(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    core = CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "web"}})
    for ns, name, node in (("default", "a", "n1"), ("web", "b", "n1"), ("web", "c", "n2")):
        core.create_namespaced_pod(ns, {"metadata": {"name": name}, "spec": {
            "nodeName": node, "containers": [{"name": "c", "image": "pause"}]}})
    factory = new_shared_informer_factory(api, 0)
    pods = factory.core().v1().pods()
    index_field(pods.informer(), "spec.nodeName")
    with factory.running(timeout=10):
        lister = pods.lister()
        assert sorted(p["metadata"]["name"] for p in lister.by_field("spec.nodeName", "n1")) \
            == ["a", "b"]
        assert [p["metadata"]["name"]
                for p in lister.by_namespace("web").by_field("spec.nodeName", "n2")] == ["c"]
    api.close()
