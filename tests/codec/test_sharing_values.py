"""Equal immutable values, one object (client_cache.codec._sharing, values.c): a SHARE walk puts
in place of each frozen struct and tuple of immutable values below the top an equal one
seen before."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client import CoreV1Api, V1Pod, V1Toleration

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _sharing as sharing
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import threads_amid_collections

msgspec = pytest.importorskip("msgspec")

from client_cache.codec.objects import to_struct  # noqa: E402 - needs msgspec
from client_cache.codec.structs import struct_type  # noqa: E402 - needs msgspec

PODS = GroupVersionResource("", "v1", "pods")
pytestmark = [pytest.mark.usefixtures("empty_sharing_tables"), pytest.mark.c_path,
              pytest.mark.needs_native]


def pod(i: int, port: int = 8080) -> dict[str, Any]:
    """Pods alike but for their names, an env value and (when given) a port."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{i}", "namespace": "ns",
                         "labels": {"app": "web"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "web-7d9f", "uid": "u-1",
                                              "controller": True}]},
            "spec": {"containers": [{"name": "web", "image": "registry.example.com/web:1",
                                     "ports": [{"containerPort": port, "protocol": "TCP"}],
                                     "env": [{"name": "INDEX", "value": f"index-{i}"}],
                                     "resources": {"limits": {"cpu": "1"}}}],
                     "securityContext": {},
                     "tolerations": [{"key": "node.kubernetes.io/not-ready",
                                      "operator": "Exists", "effect": "NoExecute",
                                      "tolerationSeconds": 300}]},
            "status": {"phase": "Pending", "qosClass": "Burstable"}}


def structs(count: int, frozen: bool = True, port: int = 8080) -> list[Any]:
    pod_type = struct_type(V1Pod, frozen=frozen)
    return [to_struct(json.dumps(pod(i, port)).encode(), pod_type) for i in range(count)]


def test_the_parts_pods_have_alike_become_one_object_and_the_pods_stay_equal() -> None:
    pods = structs(3)
    before = copy.deepcopy(pods)
    for p in pods:
        assert sharing.share(p) is p
    assert pods == before
    # The first pod's strings are new to the table, so its parts are not looked up
    # (nothing held could equal them); from the second pod on they are, and shared.
    first, second, third = pods
    assert second.spec.tolerations is third.spec.tolerations
    assert second.spec.tolerations is not first.spec.tolerations
    assert second.metadata.owner_references is third.metadata.owner_references
    assert second.spec.security_context is third.spec.security_context
    assert second.status is third.status
    ports = [p.spec.containers[0].ports for p in pods]
    assert ports[1] is ports[2] and ports[1][0] is ports[2][0]
    assert sharing.table_stats()["value_hits"] > 0


def test_parts_holding_dicts_or_what_differs_and_the_top_stay_their_own() -> None:
    a, b, c = structs(3)
    d, = structs(1, port=9090)
    for p in (a, b, c, d):
        sharing.share(p)
    assert c.spec.containers[0].resources is not b.spec.containers[0].resources  # a dict
    assert c.metadata is not b.metadata  # labels, and the names differ
    assert c.spec.containers[0] is not b.spec.containers[0]  # its env value differs
    assert d.spec.containers[0].ports != c.spec.containers[0].ports
    assert d.spec.tolerations is c.spec.tolerations  # what is alike still is shared
    # The top of a walk is never replaced, even when all of it is immutable and equal.
    toleration_type = struct_type(V1Toleration)
    seen = [to_struct({"key": "k", "operator": "Exists"}, toleration_type) for _ in range(3)]
    for t in seen:
        assert sharing.share(t) is t
    assert seen[1] is not seen[2]


def test_mutable_structs_are_walked_but_never_shared() -> None:
    pods = structs(3, frozen=False)
    before = copy.deepcopy(pods)
    for p in pods:
        sharing.share(p)
    assert pods == before
    assert pods[1].spec.tolerations is not pods[2].spec.tolerations
    assert pods[1].spec.node_name is None
    assert pods[1].spec.containers[0].image is pods[2].spec.containers[0].image  # strs are
    assert sharing.table_stats()["value_hits"] == 0


def test_a_frozen_struct_refuses_changes_and_replace_makes_a_changed_copy() -> None:
    frozen, = structs(1)
    with pytest.raises(AttributeError):
        frozen.metadata.name = "other"
    renamed = msgspec.structs.replace(frozen.metadata, name="other")
    assert (renamed.name, frozen.metadata.name) == ("other", "web-0")
    mutable, = structs(1, frozen=False)
    mutable.metadata.name = "other"
    assert struct_type(V1Pod) is not struct_type(V1Pod, frozen=False)


def test_numbers_are_equal_only_as_the_same_type_and_bits() -> None:
    nan = float("nan")
    walked = sharing.share([(1,), (1,), (1.0,), (True,), (0.0,), (-0.0,), (-0.0,),
                            (nan,), (float("nan"),), (2**70,), (2**70 + 0,)])
    assert walked[0] is walked[1]
    distinct = [walked[i] for i in (0, 2, 3, 4, 5)]
    assert len({id(t) for t in distinct}) == 5
    assert [repr(t) for t in distinct] == ["(1,)", "(1.0,)", "(True,)", "(0.0,)", "(-0.0,)"]
    assert walked[5] is walked[6]
    assert math.isnan(walked[7][0]) and math.isnan(walked[8][0])  # hashed by identity
    assert walked[9] is walked[10]


def test_long_strings_are_compared_by_value_and_lists_are_never_shared() -> None:
    long = "x" * 70
    walked = sharing.share([(long,), ("".join(["x" * 35, "x" * 35]),), (1, [2]), (1, [2])])
    assert walked[0] is walked[1]
    assert walked[2] is not walked[3] and walked[2] == walked[3]


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=80),
    lambda inner: st.builds(tuple, st.lists(inner, max_size=3)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(values, max_size=6))
def test_sharing_values_never_changes_what_they_are(items: list[Any]) -> None:
    expected = repr(items)  # repr tells 1 from 1.0 from True and 0.0 from -0.0
    twice = items + copy.deepcopy(items)
    assert repr(sharing.share(twice)) == repr(items + items)
    assert repr(items) == expected


def test_the_value_table_is_bounded_and_clearing_it_keeps_shared_parts() -> None:
    slots = sharing.table_stats()["value_slots"]
    sharing.share(["same"])  # a str seen once: tuples holding it are looked up from now on
    kept = sharing.share([(i, "same") for i in range(slots * 2)])
    stats = sharing.table_stats()
    assert 0 < stats["values"] <= slots and stats["value_misses"] == slots * 2
    again = sharing.share([(slots * 2 - 1, "same")])
    assert again[0] is kept[-1]  # a recent one is still held
    sharing.clear_table()
    assert sharing.table_stats()["values"] == 0
    assert kept[-1] == (slots * 2 - 1, "same")


def test_threads_sharing_at_once_get_equal_objects_and_one_copy_of_each_part() -> None:
    expected = structs(40)
    tolerations: list[Any] = []

    def work(n: int) -> None:
        pods = structs(40)
        for p, want in zip(pods, expected, strict=True):
            assert sharing.share(p) == want
        # a lookup and the holding of what it missed happen together under the GIL, so
        # every thread's pods (but a first one, whose strings were new) get one copy
        tolerations.extend(p.spec.tolerations for p in pods[1:])

    assert threads_amid_collections(work, name="share-values") > 0
    assert len(tolerations) == 4 * 39 and all(t is tolerations[0] for t in tolerations)


def test_a_list_watch_shares_the_parts_of_listed_and_watched_structs(
        embedded_server: EmbeddedApiServer) -> None:
    api = embedded_server.api_client()
    core = CoreV1Api(api)
    for p in map(pod, range(3)):
        core.create_namespaced_pod("ns", p)
    lw = ClientListerWatcher(api, PODS, "ns", object_type=struct_type(V1Pod))
    listed = lw.list(ListOptions())
    items = listed["items"]
    assert [p.metadata.name for p in items] == ["web-0", "web-1", "web-2"]
    assert items[1].spec.tolerations is items[2].spec.tolerations
    watch = lw.watch(ListOptions(resource_version=listed["metadata"]["resourceVersion"]))
    try:
        core.create_namespaced_pod("ns", pod(3))
        event, ok = watch.result_chan().recv(timeout=30)
        assert ok and event is not None and event.object.metadata.name == "web-3"
        assert event.object.spec.tolerations is items[2].spec.tolerations
        assert event.object.status is items[2].status
    finally:
        watch.stop()
        api.close()


def test_a_listed_object_is_never_replaced_by_an_equal_one_held_before(
        embedded_server: EmbeddedApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    api = embedded_server.api_client()
    for name in ("a", "b"):  # nothing in these pods is a dict: all of each is immutable
        CoreV1Api(api).create_namespaced_pod("ns", {
            "metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    lw = ClientListerWatcher(api, PODS, "ns", object_type=struct_type(V1Pod))
    try:
        for split in (True, False):  # item by item as the body comes, then whole
            monkeypatch.setattr(sharing, "AVAILABLE", split)  # read when a LIST is read
            listings = [lw.list(ListOptions())["items"] for _ in range(3)]
            assert listings[1] == listings[2] and len(listings[2]) == 2
            assert all(a is not b for a, b in zip(listings[1], listings[2], strict=True))
            assert listings[1][0].spec is listings[2][0].spec  # below the top: shared
    finally:
        api.close()
