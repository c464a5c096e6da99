"""Members left out while decoding (:mod:`client_cache.codec.skip_paths`), without a server:
the paths as given, the drop every decoder must equal, the C JSON decoder passing over
members (and its fallback), the protobuf plans (exact or not), LIST bodies and watch
events of a lister-watcher, and what is refused."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration, V1Pod

from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _extension as extension
from client_cache.codec import _protobuf_structs as protobuf_structs
from client_cache.codec import _sharing as sharing
from client_cache.codec import protobuf
from client_cache.codec._list_body import ListBodyReader
from client_cache.codec._protobuf_schema import schema
from client_cache.codec._wire import loads as wire_loads
from client_cache.codec.skip_paths import SkipTree, drop_members, skip_tree
from client_cache.codec.structs import struct_type
from tests.codec.test_protobuf import ALL_FLAGS, Body, objects

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("native_impl"), pytest.mark.c_path]

needs_c = pytest.mark.native_only  # the native_impl fixture skips it without the C part

ANNOTATION = ("metadata", "annotations", "note.example.com/big")
PATHS = ("metadata.managedFields", "spec.containers.env", ANNOTATION, "status.conditions")
PODS = GroupVersionResource("", "v1", "pods")


def rich_pod() -> dict[str, Any]:
    """The suite's pod with every member PATHS names, and more beside them, as the
    server writes it (Go's zero values: its JSON and protobuf decode to equal dicts)."""
    pod = copy.deepcopy(objects()[0])
    md = pod["metadata"]
    md["annotations"] = {"note.example.com/big": "x" * 300, "keep.example.com/a": "1"}
    container = pod["spec"]["containers"][0]
    container["env"] = [{"name": "A", "value": 'a "quoted" ]} value\\'},
                        {"name": "B", "value": "b"}]
    pod["spec"]["containers"].append({"name": "side", "image": "side:1",
                                      "env": [{"name": "C", "value": "c"}]})
    return protobuf.decode(protobuf.encode(pod))


def dropped(obj: Any, paths: Any = PATHS) -> Any:
    tree = skip_tree(paths)
    assert tree is not None
    return tree.drop(copy.deepcopy(obj))


# -- the paths ---------------------------------------------------------------------------------
def test_paths_make_one_tree_and_a_shorter_path_covers_a_longer() -> None:
    tree = SkipTree(["a.b.c", ("a", "x.y"), "a.b.d"])
    assert tree.tree == {"a": {"b": {"c": None, "d": None}, "x.y": None}}
    assert SkipTree(["a.b", "a"]).tree == {"a": None}
    assert SkipTree(["a", "a.b"]).tree == {"a": None}
    assert skip_tree("metadata.managedFields") is not None
    assert skip_tree("metadata.managedFields").paths == (  # type: ignore[union-attr]
        ("metadata", "managedFields"),)
    assert skip_tree(()) is None and skip_tree(None) is None
    assert "metadata.managedFields" in repr(skip_tree(["metadata.managedFields"]))


@pytest.mark.parametrize("bad", ["", "a..b", ".a", ("a", ""), ()])
def test_an_empty_key_is_refused(bad: Any) -> None:
    with pytest.raises(ValueError, match="empty key"):
        SkipTree([bad])


@pytest.mark.parametrize("bad", [3, ("a", 3), None])
def test_a_path_of_no_keys_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError, match="skip path"):
        SkipTree([bad])


def test_the_drop_goes_through_objects_by_key_and_arrays_item_by_item() -> None:
    obj = {"a": [{"b": 1, "c": 2}, {"b": 3}, 4, [{"b": 5}]], "b": 6, "d": {"e": 7}}
    assert drop_members(obj, {"a": {"b": None}, "d": {"e": {"f": None}}}) == {
        "a": [{"c": 2}, {}, 4, [{}]], "b": 6, "d": {"e": 7}}


# -- the C JSON decoder -----------------------------------------------------------------------
@needs_c
@pytest.mark.parametrize("flags", [0, ALL_FLAGS])
def test_the_c_decoder_leaves_out_what_the_drop_leaves_out(flags: int) -> None:
    tree = skip_tree(PATHS)
    assert tree is not None
    decode = sharing.decoder(wire_loads, bool(flags), bool(flags), bool(flags),
                             skip=tree.tree)
    assert decode is not None
    for obj in [*objects(), rich_pod()]:
        data = json.dumps(obj, indent=1 if flags else None).encode()
        assert extension.codec.decode(flags, data, tree.tree) == dropped(obj)
        assert decode(data) == dropped(obj)


@needs_c
def test_skipped_values_of_every_shape_are_passed_over() -> None:
    rnd = random.Random(7)
    values: list[Any] = [0, -1.5e3, True, False, None, "", '"}]{[\\', "\u00e9\u4e2d",
                         [], {}, [1, [2, {"x": "]"}]], {"a": {"b": [{}]}}]
    for _ in range(300):
        keys = [f"k{i}" for i in range(rnd.randint(1, 5))]
        doc = {k: rnd.choice(values) for k in keys}
        skipped = set(rnd.sample(keys, rnd.randint(0, len(keys))))
        tree = {k: None for k in skipped}
        text = json.dumps(doc, separators=(",", ":") if rnd.random() < 0.5 else (" , ", " : "),
                          ensure_ascii=rnd.random() < 0.5).encode()
        assert extension.codec.decode(0, text, tree) == {
            k: v for k, v in doc.items() if k not in skipped}, text


@needs_c
def test_a_cut_off_skipped_value_is_declined_and_the_json_decoder_says_why() -> None:
    declined = extension.codec.DECLINED
    tree = {"b": None}
    for text in (b'{"a":1,"b":[1,2', b'{"a":1,"b":"x', b'{"a":1,"b":}', b'{"a":1,"b":{]]}'):
        assert extension.codec.decode(0, text, tree) is declined
        decode = sharing.decoder(wire_loads, True, True, True, skip=tree)
        assert decode is not None
        with pytest.raises(ValueError):
            decode(text)
    # what the C decoder declines (a repeated key) still has its members left out
    decode = sharing.decoder(wire_loads, False, False, False, skip=tree)
    assert decode is not None
    assert decode(b'{"a":1,"a":2,"b":[1]}') == {"a": 2}
    with pytest.raises(TypeError):
        extension.codec.decode(0, b"{}", ["b"])


@needs_c
@pytest.mark.parametrize("text", [
    b'{"a":1,"b":[}', b'{"a":1,"b":[1,]}', b'{"a":1,"b":[1 2]}', b'{"a":1,"b":{"x" 1}}',
    b'{"a":1,"b":{1:2}}', b'{"a":1,"b":{"x":1,}}', b'{"a":1,"b":tru}', b'{"a":1,"b":nul}',
    b'{"a":1,"b":01}', b'{"a":1,"b":-}', b'{"a":1,"b":1.}', b'{"a":1,"b":1e}',
    b'{"a":1,"b":"\x01"}', b'{"a":1,"b":"\\q"}', b'{"a":1,"b":"\\u12"}',
    b'{"a":1,"b":"\xff"}', b'{"a":1,"b":{"x":[1]]}', b'{"a":1,"b":"x"]', b'{"a":1,"b":[{]}',
])
def test_a_malformed_skipped_value_is_declined_and_the_json_decoder_says_why(
        text: bytes) -> None:
    """A member left out is checked as if it were built: malformed JSON there is declined
    to the JSON decoder, which raises, as for the whole document."""
    tree = {"b": None}
    assert extension.codec.decode(0, text, tree) is extension.codec.DECLINED
    with pytest.raises(ValueError):
        wire_loads(text)
    decode = sharing.decoder(wire_loads, True, True, True, skip=tree)
    assert decode is not None
    with pytest.raises(ValueError):
        decode(text)


@needs_c
def test_skipped_strings_are_checked_as_built_ones_and_deep_nesting_declined() -> None:
    """A skipped string is checked as a built one is: a surrogate pair passes, half of
    one is declined, as the building decoder declines it. Nesting past the pass-over's
    depth is declined. What is declined goes to the JSON decoder, which gives the
    document without the member or raises as it would for the whole document."""
    tree = {"b": None}
    text = b'{"a":1,"b":"\\ud83d\\ude00 \xc3\xa9"}'
    assert extension.codec.decode(0, text, tree) == {"a": 1}
    for value in (b'"\\ud83d"', b'"x\\ude00"', b"[" * 300 + b"]" * 300):
        text = b'{"a":1,"b":' + value + b"}"
        assert extension.codec.decode(0, text, tree) is extension.codec.DECLINED
        built = extension.codec.decode(0, b'{"a":1,"b":' + value + b',"b2":1}', {})
        assert built is extension.codec.DECLINED  # the building decoder declines it too
        decode = sharing.decoder(wire_loads, False, False, False, skip=tree)
        assert decode is not None
        try:
            expected = drop_members(wire_loads(text), tree)
        except ValueError:
            with pytest.raises(ValueError):
                decode(text)
        else:
            assert decode(text) == expected == {"a": 1}


@needs_c
@pytest.mark.parametrize("inner", [b"", b"1", b'"s"', b"{}", b'{"k":1}'])
@pytest.mark.parametrize("where", ["top", "nested"])
def test_a_skipped_member_is_declined_at_the_depth_a_built_one_is(
        inner: bytes, where: str) -> None:
    """Nesting is counted from the document's top whether a member is built or passed
    over: around the building decoder's limit, a member left out is declined exactly when
    the same member built is, innermost value a scalar or a container, the member at the
    top or one level down."""
    declined = []
    for n in range(196, 204):
        value = b"[" * n + inner + b"]" * n
        member = b'{"a":1,"b":' + value + b"}"
        text, tree = ((member, {"b": None}) if where == "top" else
                      (b'{"o":' + member + b"}", {"o": {"b": None}}))
        built = text.replace(b'"b"', b'"c"')  # the same member, not left out
        passed_over = extension.codec.decode(0, text, tree)
        built_whole = extension.codec.decode(0, built, tree)
        assert (passed_over is extension.codec.DECLINED) == (
            built_whole is extension.codec.DECLINED), (n, inner)
        if passed_over is not extension.codec.DECLINED:
            assert passed_over == ({"a": 1} if where == "top" else {"o": {"a": 1}})
        declined.append(passed_over is extension.codec.DECLINED)
    # the limit falls inside the range tried: some depths decode, the deeper decline
    assert declined[0] is False and declined[-1] is True
    assert declined == sorted(declined)


@needs_c
@pytest.mark.parametrize("flags", [0, ALL_FLAGS])
def test_a_corrupted_document_decodes_or_fails_as_the_json_decoder_and_the_drop(
        flags: int) -> None:
    """Any one byte of a pod's JSON changed, left out or doubled: the skipping decoder
    gives what the JSON decoder and the drop give, or raises where the JSON decoder does,
    wherever the byte falls (in a member left out or not)."""
    rnd = random.Random(11)
    tree = skip_tree(PATHS)
    assert tree is not None
    decode = sharing.decoder(wire_loads, bool(flags), bool(flags), bool(flags),
                             skip=tree.tree)
    assert decode is not None
    base = json.dumps(rich_pod(), ensure_ascii=False).encode()
    alphabet = b'{}[]:,"\\ 0123456789-.eEtrufalsn\x00\x1f\xc3\xa9\xff'
    for _ in range(1500):
        at = rnd.randrange(len(base))
        kind = rnd.randrange(3)
        byte = bytes([rnd.choice(alphabet)])
        text = (base[:at] + byte + base[at + 1:] if kind == 0 else
                base[:at] + base[at + 1:] if kind == 1 else base[:at] + byte + base[at:])
        try:
            expected = drop_members(wire_loads(text), tree.tree)
        except ValueError:
            with pytest.raises(ValueError):
                decode(text)
            continue
        assert decode(text) == expected, text


# -- protobuf ----------------------------------------------------------------------------------
@needs_c
@pytest.mark.parametrize("flags", [0, ALL_FLAGS])
def test_protobuf_plans_leave_out_what_the_drop_leaves_out(flags: int) -> None:
    for paths, exact in ((("metadata.managedFields", "spec.containers.env"), True),
                         (PATHS, False)):  # an annotation: a map's key, dropped after
        tree = skip_tree(paths)
        assert tree is not None
        for obj in [*objects(), rich_pod()]:
            message = schema().message(obj["apiVersion"], obj["kind"])
            found = protobuf_structs.dict_plans(message, tree)
            assert found.exact is exact, obj["kind"]
            frame = protobuf.FrameReader().feed(protobuf.encode_watch_event("ADDED", obj))[0]
            _, got = protobuf.decode_watch_event(frame, flags, (found.capsule, found.root))
            full = protobuf.decode_watch_event(frame)[1]
            if found.exact:
                assert got == dropped(full, paths)
            else:
                assert tree.drop(got) == dropped(full, paths)
            if obj["kind"] == "Pod":
                assert "managedFields" in full["metadata"]
                assert "managedFields" not in got["metadata"]
                assert all("env" not in c for c in got["spec"]["containers"])


@needs_c
def test_a_status_is_read_whole_whatever_the_plans() -> None:
    found = protobuf_structs.dict_plans(schema().message("v1", "Pod"), skip_tree(PATHS))
    status = {"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": 410,
              "reason": "Expired", "message": "too old", "metadata": {}}
    frame = protobuf.FrameReader().feed(protobuf.encode_watch_event("ERROR", status))[0]
    assert protobuf.decode_watch_event(frame, 0, (found.capsule, found.root)) == \
        protobuf.decode_watch_event(frame)


def pod_list(pods: list[dict[str, Any]]) -> bytes:
    return protobuf.encode({"apiVersion": "v1", "kind": "PodList",
                            "metadata": {"resourceVersion": "9"},
                            "items": [{k: v for k, v in p.items()
                                       if k not in ("kind", "apiVersion")} for p in pods]})


@pytest.mark.parametrize("paths", [PATHS, ("metadata.managedFields",)])
def test_a_protobuf_list_body_leaves_out_its_items_members(paths: Any) -> None:
    body = pod_list([rich_pod() for _ in range(3)])
    whole = protobuf.ListReader(ALL_FLAGS)
    whole.feed(body)
    expected = [dropped(item, paths) for item in whole.finish()["items"]]
    assert all("managedFields" in item["metadata"] for item in whole.finish()["items"])
    for size in (7, 100, len(body)):  # cut anywhere, items decoded as they are whole
        reader = protobuf.ListReader(ALL_FLAGS, skip=skip_tree(paths))
        for at in range(0, len(body), size):
            reader.feed(body[at:at + size])
        assert reader.finish()["items"] == expected


# -- a lister-watcher --------------------------------------------------------------------------
def lister_watcher(**options: Any) -> ClientListerWatcher:
    config = Configuration()
    config.host = "http://127.0.0.1:1"  # never dialled: the decoders only
    return ClientListerWatcher(ApiClient(config), PODS, "ns", **options)


@pytest.mark.parametrize("share", [False, True])
def test_a_lister_watcher_leaves_the_members_out_of_lists_and_events(share: bool) -> None:
    pods = [rich_pod() for _ in range(3)]
    decoding = lister_watcher(skip_paths=PATHS, share_strings=share, untrack=share,
                              compact_dicts=share).decoding
    json_body = json.dumps({"kind": "PodList", "apiVersion": "v1",
                            "metadata": {"resourceVersion": "9"}, "items": pods}).encode()
    for body, content_type in ((json_body, "application/json"),
                               (pod_list(pods), protobuf.CONTENT_TYPE)):
        got = decoding.list_body.read(Body(body, content_type))
        assert [drop_members(i, {"kind": None, "apiVersion": None}) for i in got["items"]] \
            == [drop_members(dropped(p), {"kind": None, "apiVersion": None}) for p in pods]
    line = json.dumps({"type": "MODIFIED", "object": pods[0]}).encode()
    assert decoding.event_loads(line) == {"type": "MODIFIED", "object": dropped(pods[0])}
    stream = b"".join(protobuf.encode_watch_event("MODIFIED", p) for p in pods)
    for frame in protobuf.FrameReader().feed(stream):  # the first teaches the plans
        assert decoding.protobuf_event(frame) == ("MODIFIED", dropped(pods[0]))
    # the whole-body fallback (a body the splitter does not cut) leaves them out too
    assert decoding.list_body._decode_whole(json_body)["items"] == [dropped(p) for p in pods]


def test_a_lister_watcher_without_paths_keeps_every_member() -> None:
    decoding = lister_watcher().decoding
    line = json.dumps({"type": "MODIFIED", "object": rich_pod()}).encode()
    assert decoding.event_loads(line)["object"] == rich_pod()


def test_models_are_made_from_the_objects_left_without_the_members() -> None:
    lw = lister_watcher(skip_paths=["metadata.managedFields"], object_type=V1Pod)
    line = json.dumps({"type": "MODIFIED", "object": rich_pod()}).encode()
    event = lw.decoding.event_loads(line)
    assert "managedFields" not in event["object"]["metadata"]
    assert lw.decoding.decode is not None
    assert lw.decoding.decode(event["object"]).metadata.managed_fields is None


def test_struct_objects_refuse_paths() -> None:
    with pytest.raises(ValueError, match="struct_type"):
        lister_watcher(skip_paths=PATHS, object_type=struct_type(V1Pod))
    assert lister_watcher(skip_paths=(), object_type=struct_type(V1Pod))


def test_a_list_body_reader_keeps_its_positional_arguments() -> None:
    reader = ListBodyReader(wire_loads, wire_loads, None, None, 0, dicts=True)
    body = json.dumps({"kind": "PodList", "metadata": {}, "items": [rich_pod()]}).encode()
    assert reader.read(Body(body, "application/json"))["items"] == [rich_pod()]


def test_the_paths_a_lister_watcher_was_given_stay_readable() -> None:
    lw = lister_watcher(skip_paths=(p for p in ["metadata.managedFields", ANNOTATION]))
    assert lw.skip_paths == (("metadata", "managedFields"), ANNOTATION)
    assert lister_watcher().skip_paths == ()
