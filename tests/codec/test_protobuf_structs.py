"""Struct objects decoded straight from protobuf (:mod:`client_cache.codec._protobuf_structs`)
without a server: each built-in kind of the conformance suite read from its protobuf
equals the struct its JSON gives, in watch frames and in list bodies cut anywhere,
with skipped paths, the walk's flags and a Status among them."""

from __future__ import annotations

import gc
import json
import logging
from typing import Any

import msgspec
import pytest
from kubernetes.client import (
    ApiClient,
    Configuration,
    CoreV1Event,
    V1ConfigMap,
    V1ControllerRevision,
    V1Deployment,
    V1Job,
    V1Lease,
    V1Pod,
    V1Secret,
    V1Service,
)

from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _protobuf_structs as protobuf_structs
from client_cache.codec import _sharing as sharing
from client_cache.codec import protobuf
from client_cache.codec._list_body import ListBodyReader
from client_cache.codec._wire import loads as wire_loads
from client_cache.codec.structs import StructCodec, struct_type
from tests.codec.test_protobuf import ALL_FLAGS, Body, objects

pytestmark = [pytest.mark.c_path,
              pytest.mark.skipif(not protobuf_structs.AVAILABLE,
                                 reason="the C part of client_cache is not built")]

MODELS = {"Pod": V1Pod, "ConfigMap": V1ConfigMap, "Secret": V1Secret, "Service": V1Service,
          "Deployment": V1Deployment, "ControllerRevision": V1ControllerRevision,
          "Lease": V1Lease, "Event": CoreV1Event, "Job": V1Job}


def from_json(obj: dict[str, Any], cls: type) -> Any:
    """What struct mode reads from the object's JSON."""
    return StructCodec(cls).decode_item(json.dumps(obj).encode())


def plans_of(cls: type, api_version: str) -> tuple[Any, int]:
    message = protobuf_structs.root_message(cls, api_version)
    assert message is not None
    found = protobuf_structs.plans(message, cls)
    return found.capsule, found.root


def test_each_kind_has_its_message() -> None:
    for obj in objects():
        message = protobuf_structs.root_message(struct_type(MODELS[obj["kind"]]),
                                                obj["apiVersion"])
        assert message is not None
        assert message.name.endswith(f"/{obj['apiVersion'].rsplit('/', 1)[-1]}.{obj['kind']}")
    assert protobuf_structs.root_message(struct_type(V1Pod), "apps/v1") is None
    assert protobuf_structs.root_message(msgspec.defstruct("V1Pod", []), "v1") is None


@pytest.mark.parametrize("flags", [0, ALL_FLAGS])
def test_watch_frames_read_as_the_structs_json_gives(flags: int) -> None:
    for obj in objects():
        cls = struct_type(MODELS[obj["kind"]])
        frame = protobuf.encode_watch_event("MODIFIED", obj)[4:]
        event_type, got = protobuf.decode_watch_event(frame, flags,
                                                      plans_of(cls, obj["apiVersion"]))
        assert event_type == "MODIFIED"
        assert type(got) is cls
        assert got == from_json(obj, cls)
        assert not gc.is_tracked(got)


def test_skipped_paths_and_managed_fields_are_left_out() -> None:
    pod = objects()[0]
    assert pod["metadata"]["managedFields"]  # in the bytes, never decoded
    cls = struct_type(V1Pod, skip=("metadata.managedFields", "status", "spec.containers"))
    frame = protobuf.encode_watch_event("ADDED", pod)[4:]
    _, got = protobuf.decode_watch_event(frame, ALL_FLAGS, plans_of(cls, "v1"))
    assert got == from_json(pod, cls)
    assert got.spec.termination_grace_period_seconds == \
        pod["spec"]["terminationGracePeriodSeconds"]
    assert not hasattr(got, "status") and not hasattr(got.spec, "containers")
    assert got.metadata.labels == pod["metadata"]["labels"]


def test_arrays_are_tuples_and_free_form_json_stays_json() -> None:
    pod, revision = objects()[0], next(o for o in objects()
                                       if o["kind"] == "ControllerRevision")
    _, got = protobuf.decode_watch_event(protobuf.encode_watch_event("ADDED", pod)[4:], 0,
                                         plans_of(struct_type(V1Pod), "v1"))
    assert type(got.spec.containers) is tuple and type(got.metadata.finalizers) is tuple
    assert type(got.metadata.labels) is dict
    cls = struct_type(V1ControllerRevision)
    _, rev = protobuf.decode_watch_event(protobuf.encode_watch_event("ADDED", revision)[4:],
                                         0, plans_of(cls, "apps/v1"))
    assert rev.data == {"spec": {"x": [1, 2.5, "s", None, True]}}  # a raw extension


def test_an_error_status_stays_a_dict() -> None:
    status = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 410,
              "reason": "Expired", "message": "too old", "metadata": {}}
    event_type, got = protobuf.decode_watch_event(
        protobuf.encode_watch_event("ERROR", status)[4:], ALL_FLAGS,
        plans_of(struct_type(V1Pod), "v1"))
    assert event_type == "ERROR" and type(got) is dict and got["code"] == 410


def test_a_list_of_structs_read_as_it_arrives() -> None:
    pods = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
            for o in objects() if o["kind"] == "Pod"] * 3
    body = protobuf.encode({"apiVersion": "v1", "kind": "PodList",
                            "metadata": {"resourceVersion": "9"}, "items": pods})
    cls = struct_type(V1Pod)
    expected = [from_json(p, cls) for p in pods]
    for size in (1, 7, 1000, len(body)):
        reader = protobuf.ListReader(ALL_FLAGS, struct_class=cls)
        for i in range(0, len(body), size):
            reader.feed(body[i:i + size])
        listed = reader.finish()
        assert listed["items"] == expected and listed["metadata"] == {"resourceVersion": "9"}
        assert all(type(item) is cls for item in listed["items"])
    codec = StructCodec(cls)
    flags = sharing.walk_flags(True, True, True)
    reader_of_bodies = ListBodyReader(wire_loads, wire_loads, codec, None, flags, dicts=False)
    assert reader_of_bodies.read(Body(body, protobuf.CONTENT_TYPE))["items"] == expected


def test_a_list_read_without_the_c_part_is_refused_for_structs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the C part is not built struct objects ask for JSON; a protobuf body for
    them is then an error, never dicts handed on as structs."""
    body = protobuf.encode({"apiVersion": "v1", "kind": "PodList", "metadata": {},
                            "items": []})
    monkeypatch.setattr(protobuf_structs, "AVAILABLE", False)
    reader = ListBodyReader(wire_loads, wire_loads, StructCodec(struct_type(V1Pod)), None, 0,
                            dicts=False)
    with pytest.raises(ValueError, match="struct objects, which ask for JSON only"):
        reader.read(Body(body, protobuf.CONTENT_TYPE))
    with pytest.raises(RuntimeError, match="C part"):
        protobuf_structs.plans(protobuf_structs.root_message(struct_type(V1Pod), "v1"),
                               struct_type(V1Pod))


def test_bad_plans_are_refused() -> None:
    capsule, root = plans_of(struct_type(V1Pod), "v1")
    frame = protobuf.encode_watch_event("ADDED", objects()[0])[4:]
    with pytest.raises(ValueError, match="out of range"):
        protobuf.decode_watch_event(frame, 0, (capsule, 10**6))
    with pytest.raises(ValueError):
        protobuf.decode_watch_event(frame, 0, (object(), root))


def test_equal_parts_are_shared_between_objects_as_from_json() -> None:
    """With the walk's flags, a part of immutable values that recurs (ports, a
    toleration) is one object in every struct holding it, exactly where the JSON path's
    walk makes it one; parts holding maps (a container's resources) and the objects
    themselves stay distinct, and without the flags nothing is shared."""
    pods = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
            for o in objects() if o["kind"] == "Pod"] * 3
    body = protobuf.encode({"apiVersion": "v1", "kind": "PodList", "metadata": {},
                            "items": pods})
    cls = struct_type(V1Pod)
    parts = {
        "ports": lambda p: p.spec.containers[0].ports,
        "command": lambda p: p.spec.containers[0].command,
        "security context": lambda p: p.spec.containers[0].security_context,
        "tolerations": lambda p: p.spec.tolerations,
        "affinity": lambda p: p.spec.affinity,
        "container": lambda p: p.spec.containers[0],
        "metadata": lambda p: p.metadata,
        "object": lambda p: p,
    }

    def shared(items: list[Any]) -> dict[str, bool]:
        assert items[1] == items[2]
        return {name: part(items[1]) is part(items[2]) for name, part in parts.items()}

    walk = sharing.walker(True, True, True)
    assert walk is not None
    walked = shared([walk(from_json(p, cls)) for p in pods])
    assert walked["ports"] and walked["tolerations"] and not walked["container"]
    assert not walked["object"]
    for flags in (ALL_FLAGS, 0):
        reader = protobuf.ListReader(flags, struct_class=cls)
        reader.feed(body)
        got = shared(reader.finish()["items"])
        assert got == (walked if flags else dict.fromkeys(parts, False))


def test_plain_json_inside_a_struct_keeps_its_lists() -> None:
    """A field a class declares as plain JSON (``Any``, as struct_type makes a recursive
    model's inner part) holds what msgspec gives for it from JSON: dicts and lists, also
    inside an array the class has as a tuple."""
    spec = msgspec.defstruct("Spec", [("containers", tuple[Any, ...] | None, None),
                                      ("affinity", Any, None)], kw_only=True, frozen=True,
                             gc=False)
    pod = msgspec.defstruct("Pod", [("spec", spec | None, None)], kw_only=True,
                            frozen=True, gc=False)
    obj = objects()[0]
    message = protobuf_structs.root_message(struct_type(V1Pod), "v1")
    assert message is not None
    found = protobuf_structs.plans(message, pod)
    for flags in (0, ALL_FLAGS):
        _, got = protobuf.decode_watch_event(protobuf.encode_watch_event("ADDED", obj)[4:],
                                             flags, (found.capsule, found.root))
        assert got == msgspec.json.decode(json.dumps(obj).encode(), type=pod)
        assert type(got.spec.containers) is tuple
        assert type(got.spec.containers[0]["command"]) is list
        terms = got.spec.affinity["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert type(terms) is list and type(terms[0]["matchExpressions"][0]["values"]) is list


def test_a_struct_list_watch_asks_for_protobuf_only_where_its_kind_has_a_message(
        caplog: pytest.LogCaptureFixture) -> None:
    api = ApiClient(Configuration(host="http://127.0.0.1:9"))  # never dialled here
    pods = GroupVersionResource("", "v1", "pods")
    assert ClientListerWatcher(api, pods, object_type=struct_type(V1Pod),
                               protobuf=True).protobuf
    assert not ClientListerWatcher(api, pods, object_type=struct_type(V1Pod)).protobuf
    caplog.set_level(logging.INFO, logger="client_cache.codec._decoding")
    elsewhere = GroupVersionResource("example.com", "v1", "pods")
    assert not ClientListerWatcher(api, elsewhere, object_type=struct_type(V1Pod),
                                   protobuf=True).protobuf
    assert [r.getMessage() for r in caplog.records] == [
        "example.com/v1/pods: struct objects of V1Pod read JSON: no protobuf message of "
        "their kind in example.com/v1"]
