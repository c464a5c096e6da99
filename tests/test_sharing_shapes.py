"""client_cache.sharing.compact (the C part is client_cache/_shapes.c): decoded dicts
replaced by equal dicts that share one key table with the dicts of the same keys, and the
list-watch that applies it."""

from __future__ import annotations

import gc
import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes.client import CoreV1Api, V1Pod

from client_cache import sharing, wire
from client_cache.apis import ListOptions
from client_cache.listwatch import ClientListerWatcher
from client_cache.schema import GroupVersionResource
from client_cache.structs import struct_type, to_struct
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import containers, missing

if not sharing.AVAILABLE:
    missing("client_cache._sharing was not built (no C compiler)")

PODS = GroupVersionResource("", "v1", "pods")


def pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{i}", "namespace": "ns",
                         "labels": {"app": "web", "tier": "front"}},
            "spec": {"containers": [{"name": "c", "image": "i", "env": [
                {"name": f"V{k}", "value": f"{i}-{k}"} for k in range(4)]}]},
            "status": {"phase": "Running", "conditions": [
                {"type": t, "status": "True"} for t in ("Ready", "Initialized")]}}


def decoded(i: int) -> Any:
    return wire.loads(json.dumps(pod(i)))


def dicts(obj: Any) -> list[dict[str, Any]]:
    return [c for c in containers(obj) if isinstance(c, dict)]


@pytest.fixture(autouse=True)
def empty_table() -> Iterator[None]:
    sharing.clear_table()
    yield
    sharing.clear_table()


def test_a_dict_whose_keys_come_again_is_replaced_by_an_equal_smaller_dict() -> None:
    first = {"name": "a", "value": "1"}
    assert sharing.compact(first) is first  # keys seen once: left as decoded
    second = wire.loads(b'{"name": "b", "value": "2"}')
    compacted = sharing.compact(second)
    assert compacted is not second and type(compacted) is dict
    assert compacted == second == {"name": "b", "value": "2"}
    assert list(compacted.items()) == [("name", "b"), ("value", "2")]
    assert sys.getsizeof(compacted) < sys.getsizeof(second)
    assert json.dumps(compacted) == json.dumps(second)
    assert orjson.dumps(compacted) == orjson.dumps(second)
    assert sharing.compact(compacted) is compacted  # compacted already
    assert sharing.table_stats()["compacted"] == 1 and sharing.table_stats()["shapes"] == 1


def test_every_dict_in_an_object_is_compacted_and_the_object_stays_equal() -> None:
    sharing.compact(decoded(0))
    obj = decoded(1)
    plain = decoded(1)
    compacted = sharing.compact(obj)
    assert compacted == plain == pod(1)
    assert json.dumps(compacted) == json.dumps(plain)
    ours, theirs = dicts(compacted), dicts(plain)
    assert len(ours) == len(theirs) == 12
    assert all(sys.getsizeof(a) < sys.getsizeof(b) for a, b in zip(ours, theirs, strict=True))
    # the dicts inside a list are replaced in the list
    assert sys.getsizeof(obj["spec"]["containers"][0]["env"][0]) < sys.getsizeof(
        plain["spec"]["containers"][0]["env"][0])


def test_the_same_keys_in_another_order_are_another_shape() -> None:
    for _ in range(2):
        sharing.compact({"a": 1, "b": 2})
    other = sharing.compact({"b": 2, "a": 1})
    assert list(other) == ["b", "a"]
    again = sharing.compact({"b": 3, "a": 4})
    assert list(again.items()) == [("b", 3), ("a", 4)]
    assert sharing.table_stats()["shapes"] == 2


@pytest.mark.parametrize("obj", [
    {"__class__": "x", "a": 1}, {"__dict__": {}, "a": 1}, {1: "x", "a": 1}, {},
    {f"k{i}": i for i in range(30)}])
def test_dicts_that_cannot_share_keys_are_left_as_they_are(obj: dict[Any, Any]) -> None:
    copies = [dict(obj) for _ in range(3)]
    for one in copies:
        assert sharing.compact(one) is one
    assert copies[2] == obj
    assert sharing.table_stats()["compacted"] == 0


def test_twenty_nine_keys_are_compacted() -> None:
    obj = {f"k{i}": i for i in range(29)}
    sharing.compact(dict(obj))
    compacted = sharing.compact(dict(obj))
    assert compacted == obj and sys.getsizeof(compacted) < sys.getsizeof(obj)


def test_a_compacted_dict_changes_like_any_dict_and_its_siblings_do_not() -> None:
    sharing.compact({"name": "x", "value": "0"})
    a = sharing.compact({"name": "a", "value": "1"})
    b = sharing.compact({"name": "b", "value": "2"})
    a["extra"] = 3
    a["name"] = "A"
    del a["value"]
    assert a == {"name": "A", "extra": 3} and list(a) == ["name", "extra"]
    assert b == {"name": "b", "value": "2"} and "extra" not in b
    c = sharing.compact({"name": "c", "value": "3"})  # made after the change
    assert c == {"name": "c", "value": "3"} and list(c) == ["name", "value"]
    b.pop("name")
    b.update(z=1)
    assert b == {"value": "2", "z": 1} and c == {"name": "c", "value": "3"}


def test_compacted_values_are_freed_with_their_dict() -> None:
    value = "a value held by nothing else " + str(id(object()))
    before = sys.getrefcount(value)
    sharing.compact({"key": "x"})
    compacted = sharing.compact({"key": value})
    assert sys.getrefcount(value) == before + 1
    del compacted
    assert sys.getrefcount(value) == before


def test_untracked_unless_holding_a_tracked_object() -> None:
    walk = sharing.walker(False, True, True)
    assert walk is not None
    walk(decoded(0))
    obj = walk(decoded(1))
    assert not any(gc.is_tracked(c) for c in containers(obj))

    class Thing:
        pass

    sharing.compact({"held": 1})
    holder = walk({"held": Thing()})
    assert gc.is_tracked(holder)


def test_the_table_is_bounded_and_clearing_it_keeps_compacted_dicts() -> None:
    slots = sharing.table_stats()["shape_slots"]
    made = []
    for i in range(slots * 2):
        for _ in range(2):
            made.append(sharing.compact({f"key-{i}": i}))
    assert sharing.table_stats()["shapes"] <= slots
    assert sharing.table_stats()["compacted"] == slots * 2
    sharing.clear_table()
    assert sharing.table_stats()["shapes"] == 0 and sharing.table_stats()["compacted"] == 0
    assert all(d == {f"key-{i // 2}": i // 2} for i, d in enumerate(made))


def test_struct_maps_are_compacted() -> None:
    pytest.importorskip("msgspec")
    pod_type = struct_type(V1Pod)
    walk = sharing.walker(True, True, True)
    assert walk is not None
    structs = [walk(to_struct(json.dumps(pod(i)).encode(), pod_type)) for i in range(2)]
    plain = to_struct(json.dumps(pod(1)).encode(), pod_type)
    assert structs[1] == plain
    assert sys.getsizeof(structs[1].metadata.labels) < sys.getsizeof(plain.metadata.labels)


def test_threads_compacting_at_once_get_equal_dicts() -> None:
    """Making a shape's prototype runs Python code (the class), so the collector (and
    with it another thread) can run in the middle: every thread must still get equal
    dicts, and the table must stay whole."""
    thresholds = gc.get_threshold()
    interval = sys.getswitchinterval()
    gc.set_threshold(1, 1, 1)
    sys.setswitchinterval(1e-6)
    failures: list[BaseException] = []
    start = threading.Barrier(4)

    def work(n: int) -> None:
        try:
            start.wait()
            for i in range(300):
                obj = {f"k{(i + n) % 50}": i, "v": [{"x": n, f"y{i % 7}": i}]}
                expected = json.loads(json.dumps(obj))
                assert sharing.compact(obj) == expected
        except BaseException as error:  # handed to the main thread
            failures.append(error)

    threads = [threading.Thread(target=work, args=(n,), name=f"compact-{n}") for n in range(4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
    assert not failures
    assert sharing.table_stats()["compacted"] > 0


def test_a_list_watch_compacts_dicts_and_structs_but_not_models() -> None:
    with EmbeddedApiServer() as server:
        core = CoreV1Api(server.api_client())
        for i in range(3):
            core.create_namespaced_pod("ns", pod(i))
        api = server.api_client()
        compacted = ClientListerWatcher(api, PODS, "ns").list(ListOptions())["items"]
        plain = ClientListerWatcher(api, PODS, "ns", compact_dicts=False).list(
            ListOptions())["items"]
        assert compacted == plain and len(plain) == 3
        assert sys.getsizeof(compacted[2]["metadata"]["labels"]) < sys.getsizeof(
            plain[2]["metadata"]["labels"])
        models = ClientListerWatcher(api, PODS, "ns", object_type=V1Pod)
        assert models.compact_dicts is False
        before = sharing.table_stats()["compacted"]
        assert len(models.list(ListOptions())["items"]) == 3
        assert sharing.table_stats()["compacted"] == before
        api.close()
