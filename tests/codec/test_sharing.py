"""client_cache.codec._sharing: the C walker that gives decoded objects one copy of each
repeated short string, takes them out of the cyclic collector's sight and gives dicts of
the same keys one key table, and the list-watch that applies it."""

from __future__ import annotations

import copy
import gc
import json
import os
import subprocess
import sys
import weakref
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client import ApiClient, Configuration, CoreV1Api, V1Pod

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _sharing as sharing
from client_cache.codec import _wire as wire
from client_cache.codec.objects import to_struct
from client_cache.codec.structs import struct_type
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import containers, json_values, threads_amid_collections

PODS = GroupVersionResource("", "v1", "pods")
pytestmark = [pytest.mark.usefixtures("empty_sharing_tables"), pytest.mark.c_path,
              pytest.mark.needs_native]


def pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{i}", "namespace": "ns", "labels": {"app": "web"},
                         "finalizers": ["example.com/keep"]},
            "spec": {"nodeName": "node-1", "containers": [
                {"name": "c", "image": "registry.example.com/web:1.25.3",
                 "args": ["--port", "8080"], "ports": [{"containerPort": 8080}]}]},
            "status": {"phase": "Running", "ready": True, "score": 0.5,
                       "long": "x" * 65 + str(i), "nothing": None}}


def decoded(count: int) -> list[Any]:
    return [wire.loads(json.dumps(pod(i))) for i in range(count)]


def test_equal_short_values_become_one_object_and_nothing_else_changes() -> None:
    a, b = decoded(2)
    assert a["status"]["phase"] is not b["status"]["phase"]  # the decoder's own copies
    before = copy.deepcopy([a, b])
    assert sharing.share(a) is a and sharing.share(b) is b
    assert [a, b] == before
    for path in (("apiVersion",), ("kind",), ("status", "phase"),
                 ("metadata", "labels", "app"), ("spec", "nodeName")):
        x, y = a, b
        for step in path:
            x, y = x[step], y[step]
        assert x is y, path
    assert a["metadata"]["finalizers"][0] is b["metadata"]["finalizers"][0]  # list items
    first, second = a["spec"]["containers"][0], b["spec"]["containers"][0]
    assert first["image"] is second["image"] and first["args"][0] is second["args"][0]
    assert a["metadata"]["name"] != b["metadata"]["name"]
    stats = sharing.table_stats()
    assert (stats["hits"], stats["misses"]) == (10, 12)  # 11 strings of 2-64 chars a pod


def test_long_strings_str_subclasses_and_other_values_are_left_alone() -> None:
    class Tagged(str):
        pass

    limit = sharing.table_stats()["max_length"]
    objs = [{"long": "y" * (limit + 1), "limit": "z" * limit, "tagged": Tagged("tag"),
             "n": 5, "f": 1.5, "t": True, "none": None} for _ in range(2)]
    objs = [json.loads(json.dumps(o)) | {"tagged": Tagged("tag")} for o in objs]
    for obj in objs:
        sharing.share(obj)
    a, b = objs
    assert a["long"] == b["long"] and a["long"] is not b["long"]
    assert a["limit"] is b["limit"]
    assert type(a["tagged"]) is Tagged and a["tagged"] is not b["tagged"]
    assert (a["n"], a["f"], a["t"], a["none"]) == (5, 1.5, True, None)


def test_keys_stay_the_dicts_own() -> None:
    a, b = ({json.loads('"key-one"'): "value"} for _ in range(2))
    sharing.share(a)
    sharing.share(b)
    assert next(iter(a)) is not next(iter(b))


def test_the_table_is_bounded_and_a_recurring_string_stays_in_it() -> None:
    slots = sharing.table_stats()["slots"]
    common = [json.loads('"IfNotPresent"') for _ in range(2)]
    for i in range(3 * slots):
        obj = {"unique": f"unique-{i}", "common": json.loads('"IfNotPresent"')}
        sharing.share(obj)
        if i == 0:
            common[0] = obj["common"]
        if i == 3 * slots - 1:
            common[1] = obj["common"]
    stats = sharing.table_stats()
    assert stats["held"] <= slots
    assert stats["misses"] >= 3 * slots  # every unique string was a miss
    assert common[0] is common[1]  # seen every time, never pushed out


def test_deep_nesting_is_walked_to_a_limit_without_failing() -> None:
    deep: Any = "deep-value"
    for _ in range(sys.getrecursionlimit() * 3):
        deep = [deep]
    assert sharing.share(deep) is deep  # no RecursionError, no crash
    inner = deep
    while isinstance(inner, list):
        inner = inner[0]
    assert inner == "deep-value"


def test_clear_drops_the_table_but_shared_objects_stay_valid() -> None:
    a, b = decoded(2)
    sharing.share(a)
    sharing.share(b)
    phase = a["status"]["phase"]
    sharing.clear_table()
    assert sharing.table_stats() == {**sharing.table_stats(), "hits": 0, "misses": 0, "held": 0}
    del b
    assert phase == "Running" and a["status"]["phase"] == "Running"


def test_structs_fields_and_tuples_are_shared() -> None:
    pytest.importorskip("msgspec")
    pod_type = struct_type(V1Pod)
    a, b = (to_struct(json.dumps(pod(i)).encode(), pod_type) for i in range(2))
    before = (copy.deepcopy(a), copy.deepcopy(b))
    assert a.status.phase is not b.status.phase
    sharing.share(a)
    sharing.share(b)
    assert (a, b) == before
    assert a.status.phase is b.status.phase
    assert a.spec.node_name is b.spec.node_name
    assert a.metadata.labels["app"] is b.metadata.labels["app"]  # a dict in a struct
    assert isinstance(a.metadata.finalizers, tuple)
    assert a.metadata.finalizers[0] is b.metadata.finalizers[0]  # a tuple replaced
    first, second = a.spec.containers[0], b.spec.containers[0]  # structs in a tuple
    assert first.image is second.image and first.args == ("--port", "8080")
    assert first.args[1] is second.args[1]
    assert a.metadata.name == "web-0" and b.metadata.name == "web-1"


@pytest.mark.parametrize(("by_default", "option", "variable"), [
    (sharing.shared_by_default, "share_strings", sharing.SHARE_STRINGS_ENV),
    (sharing.untracked_by_default, "untrack", sharing.UNTRACK_ENV),
    (sharing.compacted_by_default, "compact_dicts", sharing.COMPACT_DICTS_ENV)])
def test_the_environment_turns_the_default_off(
        monkeypatch: pytest.MonkeyPatch, by_default: Any, option: str, variable: str) -> None:
    api = ApiClient(Configuration(host="http://127.0.0.1:1"))  # never contacted
    try:
        assert by_default()
        assert getattr(ClientListerWatcher(api, PODS, "ns"), option)
        assert not getattr(ClientListerWatcher(api, PODS, "ns", **{option: False}), option)
        monkeypatch.setenv(variable, "0")
        assert not by_default()
        assert not getattr(ClientListerWatcher(api, PODS, "ns"), option)
        assert getattr(ClientListerWatcher(api, PODS, "ns", **{option: True}), option)
    finally:
        api.close()


@settings(max_examples=300, deadline=None)
@given(items=st.lists(json_values, max_size=6),
       before=st.dictionaries(st.sampled_from(["kind", "metadata", 'x"items"']), json_values,
                              max_size=3),
       after=st.dictionaries(st.sampled_from(["apiVersion", "z"]), json_values, max_size=2),
       indent=st.sampled_from([None, 2]))
def test_a_split_list_decodes_to_what_the_whole_body_decodes_to(
        items: list[Any], before: dict[str, Any], after: dict[str, Any],
        indent: int | None) -> None:
    body = json.dumps({**before, "items": items, **after}, indent=indent,
                      ensure_ascii=indent is None).encode()
    split = sharing.split_list(body)
    assert split is not None
    envelope, raw_items = split
    rebuilt = wire.loads(envelope)
    assert rebuilt.pop("items") == []
    rebuilt["items"] = [wire.loads(bytes(raw)) for raw in raw_items]
    assert rebuilt == wire.loads(body)


@pytest.mark.parametrize("body", [
    b"[1, 2]", b'"items"', b"{}", b'{"items": null}', b'{"items": {"a": 1}}',
    b'{"items": [1], "items": [2]}', b'{"items": [1, 2', b'{"items": [1 2]}',
    b'{"a" 1, "items": []}', b"", b'{"items": ["unterminated]}'])
def test_a_body_without_one_whole_items_array_is_not_split(body: bytes) -> None:
    assert sharing.split_list(body) is None


def test_a_list_is_the_same_shared_or_not_and_decoded_item_by_item(
        monkeypatch: pytest.MonkeyPatch) -> None:
    found: list[bytes] = []
    feed = sharing.ListSplitter.feed

    def spy(self: sharing.ListSplitter, piece: bytes) -> list[bytes]:
        items = feed(self, piece)
        found.extend(items)
        return items

    monkeypatch.setattr(sharing.ListSplitter, "feed", spy)
    with EmbeddedApiServer() as server:
        core = CoreV1Api(server.api_client())
        for i in range(5):
            core.create_namespaced_pod("ns", {
                "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
                "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "i"}]}})
        api = server.api_client()
        shared = ClientListerWatcher(api, PODS, "ns").list(ListOptions())
        whole = ClientListerWatcher(api, PODS, "ns", share_strings=False, untrack=False,
                                    compact_dicts=False).list(ListOptions())
        assert shared == whole and len(shared["items"]) == 5
        assert len(found) == 10  # both decoded item by item
        first, last = shared["items"][0], shared["items"][4]
        assert first["spec"]["nodeName"] is last["spec"]["nodeName"]
        assert whole["items"][0]["spec"]["nodeName"] is not whole["items"][4]["spec"]["nodeName"]
        api.close()


# -- out of the collector's sight --------------------------------------------------------
class Thing:
    """Anything the collector tracks that the walk does not enter."""


def test_every_container_of_a_decoded_object_leaves_the_collectors_sight() -> None:
    obj = wire.loads(json.dumps(pod(0)))
    before = json.loads(json.dumps(obj))
    found = list(containers(obj))
    assert len(found) == 11
    assert gc.is_tracked(obj) and gc.is_tracked(obj["spec"]["containers"])  # as decoded
    assert sharing.untrack(obj) is obj
    assert [c for c in found if gc.is_tracked(c)] == []
    assert obj == before
    other = sharing.untrack(wire.loads(json.dumps(pod(1))))
    assert obj["spec"]["nodeName"] is not other["spec"]["nodeName"]  # nothing shared


def test_a_container_holding_a_tracked_object_stays_tracked_and_so_do_those_above() -> None:
    thing = Thing()
    obj = {"a": {"b": [1, thing]}, "c": {"d": [1, {"e": "x"}]}, "t": ({"f": []}, thing)}
    sharing.untrack(obj)
    assert gc.is_tracked(obj) and gc.is_tracked(obj["a"]) and gc.is_tracked(obj["a"]["b"])
    assert gc.is_tracked(obj["t"])  # a tuple holding the thing
    assert not gc.is_tracked(obj["t"][0])  # ...but not what holds nothing tracked
    assert not gc.is_tracked(obj["t"][0]["f"])
    assert not any(gc.is_tracked(c) for c in containers(obj["c"]))


def test_below_the_depth_limit_nothing_is_walked_so_everything_above_stays_tracked() -> None:
    deep: list[Any] = [[]]
    for _ in range(300):
        deep = [deep]
    shallow: list[Any] = [[[{"a": []}]]]
    sharing.untrack(deep)
    sharing.untrack(shallow)
    assert gc.is_tracked(deep) and gc.is_tracked(deep[0])
    assert not any(gc.is_tracked(c) for c in containers(shallow))


def test_a_cycle_made_through_an_untracked_object_lives_until_it_is_broken() -> None:
    """The documented price: the collector cannot see a cycle through cached objects."""
    obj = sharing.untrack(wire.loads(json.dumps(pod(0))))
    thing = Thing()
    watcher = weakref.ref(thing)
    thing.back = obj  # type: ignore[attr-defined]
    obj["spec"]["containers"].append(thing)
    lst = obj["spec"]["containers"]
    del thing, obj
    gc.collect()
    assert watcher() is not None  # never collected while the cycle stands
    lst.pop()  # the reference removed again: reference counting frees it at once
    assert watcher() is None


def test_a_dict_is_tracked_again_when_a_container_is_put_in_it() -> None:
    obj = sharing.untrack(wire.loads(json.dumps(pod(0))))
    labels = obj["metadata"]["labels"]
    labels["more"] = "strings keep it untracked"
    assert not gc.is_tracked(labels)
    labels["owner"] = Thing()
    assert gc.is_tracked(labels)  # CPython's own rule for dicts


def test_struct_tuples_and_dicts_leave_the_collectors_sight_with_counts_unchanged() -> None:
    pytest.importorskip("msgspec")
    with wire.gc_paused():  # a pass of the collector would untrack the tuple itself
        a = to_struct(json.dumps(pod(0)).encode(), struct_type(V1Pod))
        held = a.spec.containers
        references = sys.getrefcount(held)
        assert gc.is_tracked(held)
        sharing.untrack(a)
        after = sys.getrefcount(held)  # before pytest's assertion rewriting holds more
    assert after == references
    assert a.spec.containers is held
    assert not any(gc.is_tracked(c) for c in containers(a))
    assert a.metadata.labels == {"app": "web"} and a.spec.containers[0].args == ("--port", "8080")


@pytest.mark.parametrize("strings", [True, False])
def test_one_walk_shares_and_untracks_as_asked(strings: bool) -> None:
    walk = sharing.walker(strings, True)
    assert walk is not None and sharing.walker(False, False) is None
    a, b = (walk(wire.loads(json.dumps(pod(i)))) for i in range(2))
    assert not any(gc.is_tracked(c) for c in [*containers(a), *containers(b)])
    assert (a["spec"]["nodeName"] is b["spec"]["nodeName"]) is strings
    only_shared = sharing.walker(True, False)
    assert only_shared is not None
    c = only_shared(wire.loads(json.dumps(pod(2))))
    assert gc.is_tracked(c)
    assert (c["spec"]["nodeName"] is a["spec"]["nodeName"]) is strings


@pytest.mark.parametrize("share_strings", [True, False])
def test_a_listed_object_is_untracked_unless_asked_not_to(share_strings: bool) -> None:
    with EmbeddedApiServer() as server:
        core = CoreV1Api(server.api_client())
        for i in range(3):
            core.create_namespaced_pod("ns", {
                "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "i"}]}})
        api = server.api_client()
        untracked = ClientListerWatcher(api, PODS, "ns", share_strings=share_strings)
        tracked = ClientListerWatcher(api, PODS, "ns", share_strings=share_strings,
                                      untrack=False)
        items = untracked.list(ListOptions())["items"]
        assert len(items) == 3
        assert not any(gc.is_tracked(c) for item in items for c in containers(item))
        kept = tracked.list(ListOptions())["items"]
        assert kept == items and all(gc.is_tracked(item) for item in kept)
        api.close()


# -- dicts of the same keys sharing one key table (compact; C: shapes.c) ---------------


def env_pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{i}", "namespace": "ns",
                         "labels": {"app": "web", "tier": "front"}},
            "spec": {"containers": [{"name": "c", "image": "i", "env": [
                {"name": f"V{k}", "value": f"{i}-{k}"} for k in range(4)]}]},
            "status": {"phase": "Running", "conditions": [
                {"type": t, "status": "True"} for t in ("Ready", "Initialized")]}}


def env_decoded(i: int) -> Any:
    return wire.loads(json.dumps(env_pod(i)))


def dicts(obj: Any) -> list[dict[str, Any]]:
    return [c for c in containers(obj) if isinstance(c, dict)]


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
    sharing.compact(env_decoded(0))
    obj = env_decoded(1)
    plain = env_decoded(1)
    compacted = sharing.compact(obj)
    assert compacted == plain == env_pod(1)
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


def one_bucket_of_keys(count: int) -> list[str]:
    """``count`` keys whose one-key shapes fall into one bucket of the shape table, in a
    table of two entries per bucket as in one of four. The shape's hash is shapes.c's
    keys_hash, written again here: were it changed there, these keys would not collide,
    and the five-shape half of the test below would fail."""
    slots = sharing.table_stats()["shape_slots"]
    mask = 2 ** 64 - 1
    groups: dict[int, list[str]] = {}
    for i in range(1_000_000):
        key = f"way-{i}"
        shape = (((0x345678 ^ (hash(key) & mask)) * 1000003) & mask) ^ 1
        group = groups.setdefault((shape & (slots - 1)) >> 1, [])
        group.append(key)
        if len(group) == count:
            return group
    raise AssertionError("no bucket got the keys")  # pragma: no cover


def test_shapes_seen_in_turn_keep_their_prototypes_when_four_share_a_bucket() -> None:
    # the dicts of an object, seen again for each object of its kind: with two entries
    # per bucket, three shapes there would push each other out and never be compacted
    keys = one_bucket_of_keys(5)
    for _ in range(2):
        first = [sharing.compact({key: 1}) for key in keys[:4]]
    assert all(sys.getsizeof(a) < sys.getsizeof({key: 1})
               for a, key in zip(first, keys, strict=False))
    assert sharing.table_stats()["compacted"] == 4
    # a fifth shape in that bucket: five taking turns push each other out
    sharing.clear_table()
    for _ in range(2):
        fifth = [sharing.compact({key: 1}) for key in keys]
    assert sharing.table_stats()["compacted"] == 0
    assert all(sys.getsizeof(a) == sys.getsizeof({key: 1})
               for a, key in zip(fifth, keys, strict=True))


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
    walk(env_decoded(0))
    obj = walk(env_decoded(1))
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
    structs = [walk(to_struct(json.dumps(env_pod(i)).encode(), pod_type)) for i in range(2)]
    plain = to_struct(json.dumps(env_pod(1)).encode(), pod_type)
    assert structs[1] == plain
    assert sys.getsizeof(structs[1].metadata.labels) < sys.getsizeof(plain.metadata.labels)


def test_threads_compacting_at_once_get_equal_dicts() -> None:
    """Making a shape's prototype runs Python code (the class), so the collector (and
    with it another thread) can run in the middle: every thread must still get equal
    dicts, and the table must stay whole."""
    def work(n: int) -> None:
        for i in range(300):
            obj = {f"k{(i + n) % 50}": i, "v": [{"x": n, f"y{i % 7}": i}]}
            expected = json.loads(json.dumps(obj))
            assert sharing.compact(obj) == expected

    threads_amid_collections(work, name="compact")
    assert sharing.table_stats()["compacted"] > 0


def test_a_list_watch_compacts_dicts_and_structs_but_not_models() -> None:
    with EmbeddedApiServer() as server:
        core = CoreV1Api(server.api_client())
        for i in range(3):
            core.create_namespaced_pod("ns", env_pod(i))
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


def fresh(text: str) -> str:
    """An equal str that is not interned (built at run time)."""
    return "".join([text[:1], text[1:]])


def test_keys_are_interned_only_when_their_shape_gets_a_prototype() -> None:
    once, twice = fresh("seen-once-key"), fresh("seen-twice-key")
    before = sharing.table_stats()["interned_keys"]
    sharing.compact({once: 1})
    assert sys.intern(fresh("seen-once-key")) is not once
    sharing.compact({twice: 1})
    sharing.compact({fresh("seen-twice-key"): 2})
    assert sys.intern(fresh("seen-twice-key")) is twice
    assert sharing.table_stats()["interned_keys"] == before + 1


def test_the_interning_budget_stops_new_prototypes(tmp_path: Any) -> None:
    """Python 3.12 never frees an interned string, so there the walk interns a bounded
    number of keys (8,192); CLIENT_CACHE_SHAPE_KEYS_BUDGET sets it on any version."""
    script = tmp_path / "budget.py"
    script.write_text(
        "import sys\n"
        "from client_cache.codec import sharing\n"
        "def fresh(t):\n"
        "    return ''.join([t[:1], t[1:]])\n"
        "def twice(keys):\n"
        "    sharing.compact({fresh(k): 1 for k in keys})\n"
        "    d = {fresh(k): 2 for k in keys}\n"
        "    return sys.getsizeof(sharing.compact(d)) < sys.getsizeof(d)\n"
        "stats = sharing.table_stats\n"
        "assert stats()['intern_budget'] == 3, stats()\n"
        "assert twice(['budget-a', 'budget-b'])\n"
        "assert not twice(['budget-c', 'budget-d'])  # 4 > 3\n"
        "assert twice(['budget-e'])\n"
        "assert not twice(['budget-f'])\n"
        "sharing.compact({'name': 1, 'value': 1})  # literals: interned already, free\n"
        "d = {'name': 2, 'value': 2}\n"
        "assert sys.getsizeof(sharing.compact(d)) < sys.getsizeof(d)\n"
        "assert stats()['interned_keys'] == 3, stats()\n"
        "print('ok')\n", encoding="utf-8")
    env = {**os.environ, "CLIENT_CACHE_SHAPE_KEYS_BUDGET": "3"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.stdout.strip() == "ok", done.stderr
    assert sharing.table_stats()["intern_budget"] == (
        8192 if sys.version_info[:2] == (3, 12) else -1)
