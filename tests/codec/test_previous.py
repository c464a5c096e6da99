"""Watch events read beside the object they replace (client_cache.codec._sharing.decoder's
``previous``, previous.c), without a server: the result is always what the JSON says,
whatever the previous object; what is unchanged is the previous object's own; the key
asked for; what is refused."""

from __future__ import annotations

import copy
import json
import math
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _extension as extension
from client_cache.codec import _sharing as sharing
from client_cache.codec import _wire as wire
from client_cache.codec.skip_paths import skip_tree
from tests.codec.test_skip_paths import rich_pod

pytestmark = [pytest.mark.c_path,
              pytest.mark.skipif(not sharing.AVAILABLE,
                                 reason="the C part of client_cache is not built")]

FLAGS = [(False, False, False), (True, True, True), (True, False, True), (False, True, False)]


def event(obj: Any, kind: str = "MODIFIED") -> bytes:
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode()


def reader(previous: Callable[[str], Any] | None, flags: tuple[bool, bool, bool] = FLAGS[1],
           skip: Any = None, whole: bool = False) -> Callable[[bytes], Any]:
    decode = sharing.decoder(wire.loads, *flags, skip=skip, previous=previous, whole=whole)
    if decode is None:  # nothing asked: what loads gives
        assert previous is None and skip is None and not any(flags)
        return wire.loads
    return decode


def same(a: Any, b: Any) -> bool:
    """Equal, of the same types all the way down, keys in the same order, floats of the
    same bits (so -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return bool(a == b)


def places(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into obj's containers' members."""
    found = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) \
        if isinstance(obj, list) else ()
    for key, value in items:
        found.append((*path, key))
        found.extend(places(value, (*path, key)))
    return found


def twin(value: Any) -> Any:
    """A value equal to ``value`` in Python (or nearly) but not in JSON: another type,
    another float's bits, one more character."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return True if value == 1 else float(value)
    if isinstance(value, float):
        return -value if value == 0 else int(value) if value.is_integer() else value + 1e-7
    if isinstance(value, str):
        return value + "\u00e9"
    return [value]


def changed(obj: Any, rnd: random.Random) -> Any:
    """A deep copy of obj with one random change below its metadata's name: a value
    replaced by one equal in Python but not in JSON, of another type, or another value; a
    member dropped or added; a dict's keys reordered; a list grown or shrunk."""
    out = copy.deepcopy(obj)
    path = rnd.choice([p for p in places(out) if p[:2] != ("metadata", "name")
                       and p[:2] != ("metadata", "namespace")])
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    key, value = path[-1], parent[path[-1]]
    choice = rnd.randrange(6)
    if choice == 0 and not isinstance(value, (dict, list)):
        parent[key] = twin(value)
    elif choice == 1 and isinstance(parent, dict):
        del parent[key]
    elif choice == 2 and isinstance(parent, dict):
        parent["added"] = value
    elif choice == 3 and isinstance(value, dict) and len(value) > 1:
        parent[key] = dict(reversed(list(value.items())))
    elif choice == 4 and isinstance(value, list):
        parent[key] = value[1:] if value and rnd.random() < 0.5 else [*value, "more"]
    else:
        parent[key] = rnd.choice(["changed", 7, 2.5, None, False, {"x": [1]}, []])
    return out


def pods(rnd: random.Random) -> list[Any]:
    """The rich pod, with numbers and strings to change, and a chain of changed ones."""
    first = rich_pod()
    first["metadata"]["namespace"] = "ns"
    first["spec"]["weights"] = [1, 1.5, 0.0, True, "a", None, 12345678901]
    chain = [first]
    for _ in range(40):
        chain.append(changed(chain[-1] if rnd.random() < 0.7 else first, rnd))
    return chain


def item(obj: Any) -> bytes:
    """A LIST item's JSON: the object itself."""
    return json.dumps(obj, separators=(",", ":")).encode()


@pytest.mark.parametrize("flags", FLAGS)
@pytest.mark.parametrize("skipping", [False, True])
@pytest.mark.parametrize("whole", [False, True], ids=["events", "list-items"])
def test_the_result_is_what_the_json_says_whatever_the_previous_object(
        flags: tuple[bool, bool, bool], skipping: bool, whole: bool) -> None:
    rnd = random.Random(hash(flags) ^ skipping ^ (whole << 1))
    tree = skip_tree(["metadata.managedFields", "spec.containers.env"]) if skipping else None
    skip = tree if tree is None or whole else tree.under("object")
    document = item if whole else event
    chain = pods(rnd)
    plain = reader(None, flags, None if skip is None else skip.tree if whole else skip)
    decoded = [plain(document(pod)) for pod in chain]
    for _ in range(120):
        before, after = rnd.randrange(len(chain)), rnd.randrange(len(chain))
        previous = decoded[before] if whole else decoded[before]["object"]
        want = json.loads(document(chain[after]))
        if tree is not None:
            tree.drop(want if whole else want["object"])
        kept = copy.deepcopy(previous)
        got = reader(lambda key, p=previous: p, flags,
                     None if skip is None else skip.tree if whole else skip,
                     whole)(document(chain[after]))
        assert same(got, want), (before, after)
        assert same(previous, kept)  # the previous object is read, never changed


def test_the_parts_an_update_leaves_unchanged_are_the_previous_objects_own() -> None:
    pod = rich_pod()
    pod["metadata"]["namespace"] = "ns"
    old = reader(None)(event(pod))["object"]
    pod["status"]["message"] = "changed"
    pod["metadata"]["resourceVersion"] = "99"
    new = reader(lambda key: old)(event(pod))["object"]
    assert new == pod
    assert new["spec"] is old["spec"]
    assert new["metadata"]["labels"] is old["metadata"]["labels"]
    assert new["status"]["conditions"] is old["status"]["conditions"]
    assert new["metadata"] is not old["metadata"] and new["status"] is not old["status"]
    assert new["metadata"]["resourceVersion"] == "99"
    assert old["status"].get("message") != "changed"
    # the same bytes again: the whole object is the previous one
    assert reader(lambda key: new)(event(pod))["object"] is new


def test_a_list_item_is_read_beside_the_object_cached_under_its_own_key() -> None:
    pod = rich_pod()
    pod["metadata"]["namespace"] = "ns"
    old = reader(None)(item(pod))
    asked: list[str] = []

    def lookup(key: str) -> Any:
        asked.append(key)
        return old

    relist = reader(lookup, whole=True)
    assert relist(item(pod)) is old  # unchanged since: the cached object itself
    pod["status"]["message"] = "changed"
    new = relist(item(pod))
    assert same(new, json.loads(item(pod)))
    assert new["spec"] is old["spec"] and new["metadata"] is old["metadata"]
    assert new["status"] is not old["status"] and "message" not in old["status"]
    assert asked == ["ns/" + pod["metadata"]["name"]] * 2
    # the same document as a watch event's object is not looked up by its own key
    assert reader(lookup)(item(pod)) is not new and len(asked) == 2


@pytest.mark.parametrize("doc, asked", [
    ({"metadata": {"name": "web", "namespace": "ns"}}, ["ns/web"]),
    ({"kind": "Pod", "metadata": {"namespace": "ns", "name": "web"}}, ["ns/web"]),
    ({"metadata": {"name": "node-1"}}, ["node-1"]),
    ({"metadata": {"namespace": "ns"}}, []),
    ({"type": "MODIFIED", "object": {"metadata": {"name": "web"}}}, []),  # not an event
    ([{"metadata": {"name": "web"}}], []),
    ("web", []),
])
def test_a_list_item_is_looked_up_by_its_own_key(doc: Any, asked: list[str]) -> None:
    keys: list[str] = []

    def lookup(key: str) -> Any:
        keys.append(key)
        return None

    text = b"  " + json.dumps(doc).encode()
    assert reader(lookup, whole=True)(text) == json.loads(text)
    assert keys == asked


def test_what_the_lookup_raises_for_a_list_item_is_raised() -> None:
    def lookup(key: str) -> Any:
        raise LookupError(key)

    with pytest.raises(LookupError, match="ns/web"):
        reader(lookup, whole=True)(item({"metadata": {"name": "web", "namespace": "ns"}}))


def test_a_part_moved_elsewhere_or_of_another_type_is_not_taken() -> None:
    old = {"metadata": {"name": "a"}, "spec": {"n": 1, "m": True, "f": 0.0, "g": 1,
                                                "l": [1, 2], "d": {"k": 1}, "s": "x"}}
    text = event({"metadata": {"name": "a"},
                  "spec": {"n": True, "m": 1, "f": -0.0, "g": 1.0, "l": [2, 1],
                           "d": {"k": 1.0}, "s": ["x"]}})
    new = reader(lambda key: old)(text)["object"]
    assert same(new, json.loads(text)["object"])
    assert new["spec"]["n"] is True and type(new["spec"]["m"]) is int
    assert math.copysign(1, new["spec"]["f"]) == -1 and type(new["spec"]["g"]) is float


@pytest.mark.parametrize("obj, asked", [
    ({"metadata": {"name": "web", "namespace": "ns"}}, ["ns/web"]),
    ({"kind": "Pod", "metadata": {"uid": "1", "namespace": "ns", "name": "web"}}, ["ns/web"]),
    ({"metadata": {"name": "node-1"}}, ["node-1"]),
    ({"metadata": {"name": "node-1", "namespace": ""}}, ["node-1"]),
    ({"metadata": {"name": "w\u00e9b", "namespace": "ns"}}, ["ns/w\u00e9b"]),
    ({"metadata": {"name": "a\"b", "namespace": "ns"}}, []),  # escaped: not read
    ({"metadata": {"namespace": "ns"}}, []),
    ({"spec": {}}, []),
    ([], []),
])
def test_the_lookup_is_asked_for_the_cache_key(obj: Any, asked: list[str]) -> None:
    keys: list[str] = []

    def lookup(key: str) -> Any:
        keys.append(key)
        return None

    text = json.dumps({"type": "MODIFIED", "object": obj}, ensure_ascii=False).encode()
    assert reader(lookup)(text) == json.loads(text)
    assert keys == asked


def test_events_of_objects_new_to_the_cache_are_not_looked_up() -> None:
    """ADDED and BOOKMARK: an initial sync's events do not pay for a lookup."""
    keys: list[str] = []
    lookup = keys.append
    obj = {"metadata": {"name": "web", "namespace": "ns"}}
    for kind in ("ADDED", "BOOKMARK", "MODIFIED", "DELETED"):
        assert reader(lookup)(event(obj, kind)) == {"type": kind, "object": obj}
    # the object before the type: looked up, as the type is not known yet
    text = json.dumps({"object": obj, "type": "ADDED"}).encode()
    assert reader(lookup)(text) == json.loads(text)
    assert keys == ["ns/web", "ns/web", "ns/web"]


def test_added_events_are_looked_up_when_asked() -> None:
    """A watch-list's relist: its initial events are ADDED, of objects the cache holds."""
    keys: list[str] = []
    obj = {"metadata": {"name": "web", "namespace": "ns"}, "spec": {"x": [1]}}
    old = reader(None)(event(obj))["object"]

    def lookup(key: str) -> Any:
        keys.append(key)
        return old

    relist = sharing.decoder(wire.loads, True, True, True, previous=lookup, added=True)
    assert relist is not None
    assert relist(event(obj, "ADDED"))["object"] is old
    assert relist(event(obj, "MODIFIED"))["object"] is old
    assert relist(event(obj, "BOOKMARK")) == {"type": "BOOKMARK", "object": obj}
    assert keys == ["ns/web", "ns/web"]


def test_only_an_events_object_is_looked_up() -> None:
    keys: list[str] = []
    lookup = keys.append
    status = {"kind": "Status", "metadata": {}, "details": {"name": "web"}}
    inner = {"type": "MODIFIED", "items": {"object": {"metadata": {"name": "web"}}}}
    for doc in (status, inner, [{"object": {"metadata": {"name": "web"}}}]):
        text = json.dumps(doc).encode()
        assert reader(lookup)(text) == doc
    assert keys == []


def test_what_the_lookup_raises_is_raised() -> None:
    def lookup(key: str) -> Any:
        raise LookupError(key)

    with pytest.raises(LookupError, match="ns/web"):
        reader(lookup)(event({"metadata": {"name": "web", "namespace": "ns"}}))


def test_a_document_the_c_decoder_declines_shares_nothing() -> None:
    old = {"metadata": {"name": "web"}, "spec": {"big": 1, "x": {"y": 1}}}
    text = event({"metadata": {"name": "web"}, "spec": {"big": 10 ** 20, "x": {"y": 1}}})
    new = reader(lambda key: old)(text)["object"]
    assert new == json.loads(text)["object"] and new["spec"]["x"] is not old["spec"]["x"]


class Raising:
    """A dict key that collides with "spec" and raises when compared."""

    def __hash__(self) -> int:
        return hash("spec")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("compared")


def test_objects_other_than_dicts_are_no_previous_objects() -> None:
    pod = {"metadata": {"name": "web"}, "spec": {"x": [1, "a"]}}
    for previous in ([1, "a"], "web", 5, object(), {"metadata": 1, "spec": [1, "a"]},
                     {1: "web", "metadata": {"name": "web"}, "spec": {"x": [1, "a"]}},
                     {Raising(): 1, "metadata": {"name": "web"}}):
        got = reader(lambda key, p=previous: p)(event(pod))
        assert same(got, json.loads(event(pod)))


def test_bad_arguments_are_refused() -> None:
    decode = extension.codec.decode  # the C entry's own checks
    with pytest.raises(TypeError, match="previous"):
        decode(0, b"{}", None, 5)
    with pytest.raises(TypeError, match="at most 5"):
        decode(0, b"{}", None, None, extension.codec.LOOK_UP_WHOLE, None)
    modes = {extension.codec.LOOK_UP_EVENTS, extension.codec.LOOK_UP_WHOLE,
             extension.codec.LOOK_UP_ADDED}
    assert len(modes) == 3
    with pytest.raises(ValueError, match="mode"):
        decode(0, b"{}", None, None, max(modes) + 1)
    with pytest.raises(TypeError):
        decode(0, b"{}", None, None, "whole")
    with pytest.raises(ValueError, match="whole and added"):
        sharing.decoder(wire.loads, True, True, True, previous=print, whole=True, added=True)
    config = Configuration()
    config.host = "http://127.0.0.1:1"
    lw = ClientListerWatcher(ApiClient(config), GroupVersionResource("", "v1", "pods"))
    with pytest.raises(TypeError, match="callable"):
        lw.set_previous_objects(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="held"):
        lw.set_previous_objects(print, held=5)  # type: ignore[arg-type]
