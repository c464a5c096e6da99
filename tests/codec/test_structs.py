"""The struct object mode (client_cache.codec.structs): classes generated from the kubernetes
models, decoding straight from the server's JSON, informers that hold them, and the
conversions to wire dicts and models."""

from __future__ import annotations

import gc
import json
import threading
from typing import Any

import pytest
from kubernetes.client import CoreV1Api, V1ConfigMap, V1CustomResourceDefinition, V1Pod

from client_cache.codec.objects import to_model, to_struct, to_wire
from client_cache.codec.structs import StructCodec, is_struct_type, struct_type
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers import new_shared_informer_factory
from client_cache.testing.apiserver import EmbeddedApiServer

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("native_impl"), pytest.mark.c_path]

pytest.importorskip("msgspec")

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web", "namespace": "ns", "resourceVersion": "7",
                    "labels": {"app": "web"},
                    "creationTimestamp": "2026-11-22T04:00:00Z",
                    "managedFields": [{"manager": "kubectl", "operation": "Apply"}]},
       "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "img",
                                                  "ports": [{"containerPort": 80}]}]},
       "status": {"phase": "Running", "unknownField": 1}}


def test_a_struct_type_reads_like_the_model_and_skips_managed_fields() -> None:
    pod_type = struct_type(V1Pod)
    assert is_struct_type(pod_type) and not is_struct_type(V1Pod)
    assert struct_type(V1Pod) is pod_type  # built once
    pod = to_struct(json.dumps(POD).encode(), pod_type)
    assert (pod.metadata.name, pod.spec.node_name, pod.status.phase) == ("web", "n1", "Running")
    assert pod.spec.containers[0].ports[0].container_port == 80
    assert isinstance(pod.spec.containers, tuple)  # arrays are tuples
    assert pod.metadata.creation_timestamp == "2026-11-22T04:00:00Z"  # the wire string
    assert not hasattr(pod.metadata, "managed_fields")
    assert not gc.is_tracked(pod) and not gc.is_tracked(pod.metadata)
    wire = to_wire(pod)  # the server's names, unset fields left out, skipped ones gone
    assert wire["spec"] == {"nodeName": "n1", "containers": [
        {"name": "c", "image": "img", "ports": [{"containerPort": 80}]}]}
    assert "managedFields" not in wire["metadata"]
    assert to_struct(wire, pod_type) == pod
    model = to_model(pod, V1Pod)
    assert isinstance(model, V1Pod)
    assert model.metadata.creation_timestamp.year == 2026  # parsed, as the client does
    assert model.spec.containers[0].ports[0].container_port == 80
    assert to_struct(model, pod_type) == pod  # and back from the model
    with pytest.raises(ValueError, match="Expected"):
        to_struct({"spec": {"containers": 5}}, pod_type)


def test_skip_paths_and_recursive_schemas() -> None:
    lean = struct_type(V1Pod, skip=("metadata.managedFields", "status"))
    assert "status" not in lean.__struct_fields__
    assert to_struct(POD, lean).spec.node_name == "n1"  # the status is passed over
    keeping = struct_type(V1Pod, skip=())
    assert to_struct(POD, keeping).metadata.managed_fields[0].manager == "kubectl"
    crd = struct_type(V1CustomResourceDefinition)  # JSONSchemaProps refers to itself
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"}}}}}
    obj = to_struct({"spec": {"group": "g", "names": {"kind": "K", "plural": "ks"},
                              "scope": "Namespaced", "versions": [
                                  {"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}, crd)
    props = obj.spec.versions[0].schema.open_apiv3_schema.properties
    assert props["spec"]["properties"]["size"] == {"type": "integer"}  # plain JSON there
    with pytest.raises(TypeError, match="not a kubernetes model"):
        struct_type(dict)


def test_skip_paths_are_read_as_the_decoders_read_them() -> None:
    """``skip`` takes what skip_paths takes: a dotted string alone is one path (it was
    taken as its characters, leaving nothing out), a sequence of keys is the same path
    dotted, a path goes on through arrays into each item, and a path that is not one
    raises instead of leaving nothing out without a word."""
    alone = struct_type(V1Pod, skip="status")
    assert "status" not in alone.__struct_fields__
    assert alone is struct_type(V1Pod, skip=("status",))
    keys = struct_type(V1Pod, skip=[("metadata", "managedFields"), "spec.containers.env"])
    assert keys is struct_type(V1Pod, skip=["spec.containers.env", "metadata.managedFields"])
    pod = to_struct(POD, keys)
    container_type = type(pod.spec.containers[0])
    assert "env" not in container_type.__struct_fields__
    assert "ports" in container_type.__struct_fields__
    assert "managed_fields" not in type(pod.metadata).__struct_fields__
    # the init containers are V1Containers too, at another path: they keep env
    init = to_struct({"spec": {"initContainers": [{"name": "i", "env": [
        {"name": "A", "value": "1"}]}]}}, keys)
    assert init.spec.init_containers[0].env[0].value == "1"
    # a key of a map is not a field: the labels stay whole
    labelled = struct_type(V1Pod, skip=["metadata.labels.app"])
    assert to_struct(POD, labelled).metadata.labels == {"app": "web"}
    for bad, error in (("metadata..name", ValueError), ([("metadata", "")], ValueError),
                       ([3], TypeError)):
        with pytest.raises(error, match="skip path"):
            struct_type(V1Pod, skip=bad)  # type: ignore[arg-type]


def test_the_codec_decodes_lists_and_events() -> None:
    codec = StructCodec(struct_type(V1ConfigMap))
    body = json.dumps({"kind": "ConfigMapList", "apiVersion": "v1",
                       "metadata": {"resourceVersion": "12"},
                       "items": [{"metadata": {"name": "a"}, "data": {"k": "v"}}]}).encode()
    listed = codec.decode_list(body)
    assert listed["metadata"] == {"resourceVersion": "12"}
    assert [(i.metadata.name, i.data) for i in listed["items"]] == [("a", {"k": "v"})]
    assert codec.decode_list(b'{"metadata": {}, "items": null}')["items"] == []
    kind, obj = codec.decode_event(b'{"type": "ADDED", "object": {"metadata": {"name": "b"}}}')
    assert (kind, obj.metadata.name) == ("ADDED", "b")
    kind, status = codec.decode_event(json.dumps({"type": "ERROR", "object": {
        "kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}).encode())
    assert (kind, status["code"], status["reason"]) == ("ERROR", 410, "Expired")
    for bad in (b"not json", b'{"type": "ADDED"}', b'{"type": "ADDED", "object": 5}'):
        with pytest.raises(ValueError):
            codec.decode_event(bad)
    with pytest.raises(ValueError):
        codec.decode_list(b'{"items": 3}')


def test_an_informer_of_structs_syncs_follows_changes_and_relists() -> None:
    pod_type = struct_type(V1Pod)
    with EmbeddedApiServer() as server:
        core = CoreV1Api(server.api_client())
        core.create_namespaced_pod("ns", {"metadata": {"name": "a"},
                                          "spec": {"nodeName": "n1", "containers": [
                                              {"name": "c", "image": "i"}]}})
        factory = new_shared_informer_factory(server.api_client(), 0)
        pods = factory.core().v1().pods(pod_type)
        updates: list[Any] = []
        updated = threading.Event()
        second = threading.Event()

        def on_update(old: Any, new: Any) -> None:
            updates.append(new)
            updated.set()

        def on_add(obj: Any) -> None:
            if obj.metadata.name == "b":
                second.set()

        pods.informer().add_event_handler(ResourceEventHandlerFuncs(
            add_func=on_add, update_func=on_update))
        with factory.running(timeout=10):
            cached = pods.lister().by_namespace("ns").get("a")
            assert isinstance(cached, pod_type)
            assert cached.spec.node_name == "n1"
            core.patch_namespaced_pod("a", "ns", {"metadata": {"labels": {"x": "2"}}})
            assert updated.wait(10)
            assert updates[-1].metadata.labels == {"x": "2"}
            relists = server.list_requests + server.watch_list_requests
            server.send_watch_error(410)  # an ERROR event in the stream: relist
            core.create_namespaced_pod("ns", {"metadata": {"name": "b"}, "spec": {
                "containers": [{"name": "c", "image": "i"}]}})
            assert second.wait(10)
            assert sorted(p.metadata.name for p in pods.lister().list()) == ["a", "b"]
            assert server.list_requests + server.watch_list_requests > relists
        assert factory.shutdown(5) == []
