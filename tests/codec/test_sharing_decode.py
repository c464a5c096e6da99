"""client_cache.codec._sharing.decoder: the C decoder that does the walk while it parses, checked
against the JSON decoder followed by the walk (what it stands in for)."""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client import CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _codec as _sharing  # type: ignore[attr-defined]
from client_cache.codec import _sharing as sharing
from client_cache.codec import _wire as wire
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import threads_amid_collections

pytestmark = [pytest.mark.c_path, pytest.mark.needs_native]

ALL_FLAGS = range(8)  # every combination of SHARE, UNTRACK and COMPACT


def flags_of(flags: int) -> tuple[bool, bool, bool]:
    return (bool(flags & _sharing.SHARE), bool(flags & _sharing.UNTRACK),
            bool(flags & _sharing.COMPACT))


def typed(obj: Any) -> Any:
    """obj with every scalar paired with its exact type (so 1, 1.0 and True differ)."""
    if isinstance(obj, dict):
        return ("dict", [(key, typed(value)) for key, value in obj.items()])
    if isinstance(obj, list):
        return ("list", [typed(item) for item in obj])
    return (type(obj).__name__, obj)


def shape(obj: Any) -> Any:
    """What the walk decides beyond the values: each container's tracking and size
    (a compacted dict is smaller than one with its own key table)."""
    if isinstance(obj, dict):
        return (gc.is_tracked(obj), sys.getsizeof(obj), [shape(v) for v in obj.values()])
    if isinstance(obj, list):
        return (gc.is_tracked(obj), [shape(item) for item in obj])
    return None


def outcome(decode: Callable[[bytes], Any], data: Any) -> Any:
    try:
        return typed(decode(data))
    except ValueError as err:
        return ("error", type(err))


json_documents = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
    | st.sampled_from(["v1", "Running", "web", "a\"b", "tab\there", "é中😀"]),
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.text(max_size=6) | st.sampled_from(["name", "value", "a", "é"]),
                      inner, max_size=5),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(json_documents, st.sampled_from(ALL_FLAGS), st.booleans())
def test_any_document_decodes_as_the_json_decoder_and_the_walk_do(
        doc: Any, flags: int, ascii_only: bool) -> None:
    data = json.dumps(doc, ensure_ascii=ascii_only).encode()
    walk = sharing.walker(*flags_of(flags)) or (lambda obj: obj)
    expected = outcome(lambda d: walk(orjson.loads(d)), data)
    one_pass = sharing.decoder(orjson.loads, *flags_of(flags)) or orjson.loads
    assert outcome(one_pass, data) == expected
    if expected[0] != "error":
        # decoded twice: the second time every shape has its prototype
        first = walk(orjson.loads(data))
        assert shape(one_pass(data)) == shape(first)


ACCEPTED = [
    b'"\\ud83d\\ude00 \\u00e9\\u4e2d"', b'"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"é中😀"'.encode(),
    b'-0', b'0', b'-0.0', b'0.5e-3', b'1E+2', b'123456789012345678', b'-123456789012345678',
    b'1e-400', b'[]', b'{}', b' {"a" : [ true , false , null , "x" ] }\n', b'"\\u0000"',
    b'{"k\\"ey": 1, "\\u00e9": 2, "": 3}', b'[[[[]]]]', b'3.141592653589793',
]


@pytest.mark.parametrize("data", ACCEPTED)
@pytest.mark.parametrize("flags", ALL_FLAGS)
def test_json_kubernetes_could_send_is_decoded_in_one_pass(data: bytes, flags: int) -> None:
    walk = sharing.walker(*flags_of(flags)) or (lambda obj: obj)
    decoded = _sharing.decode(flags, data)
    assert decoded is not _sharing.DECLINED
    assert typed(decoded) == typed(walk(orjson.loads(data)))


DECLINED = [
    b'{"a": 1, "a": 2}', b'1234567890123456789', b'-1234567890123456789', b'1e400', b'-1e400',
    b'"\\ud800"', b'"\\udc00"', b'"\\ud800\\u0041"', b'"\\x"', b'"\\u12"', b'[1,]', b'{"a":1,}',
    b'01', b'-', b'1.', b'.5', b'1e', b'\xff', b'"\xff"', b'"\xed\xa0\x80"', b'{"a":1} x',
    b'NaN', b'Infinity', b'"a\x01"', b'', b'  ', b'tru', b'{"a"}', b'{1: 2}', b'["a"',
    b'"abc', b'"abc\\', b'[' * 202 + b']' * 202, b'1' + b'0' * 80 + b'.5',
]


@pytest.mark.parametrize("data", DECLINED)
@pytest.mark.parametrize("flags", [0, 7])
def test_what_it_is_unsure_of_goes_to_the_json_decoder(data: bytes, flags: int) -> None:
    assert _sharing.decode(flags, data) is _sharing.DECLINED
    walk = sharing.walker(*flags_of(flags)) or (lambda obj: obj)
    one_pass = sharing.decoder(orjson.loads, *flags_of(flags)) or orjson.loads
    assert outcome(one_pass, data) == outcome(lambda d: walk(orjson.loads(d)), data)


def test_text_and_other_types_are_declined() -> None:
    assert _sharing.decode(7, '{"a": 1}') is _sharing.DECLINED
    assert _sharing.decode(7, 12) is _sharing.DECLINED
    assert _sharing.decode(7, memoryview(b'{"a": 1}')) == {"a": 1}
    assert _sharing.decode(7, bytearray(b'[1]')) == [1]
    with pytest.raises(TypeError):
        _sharing.decode(7)


def test_strings_are_the_tables_whichever_way_they_were_decoded() -> None:
    sharing.clear_table()
    walked = sharing.share(orjson.loads(b'{"phase": "Running", "node": "node-17"}'))
    decoded = _sharing.decode(_sharing.SHARE, b'{"node": "node-17", "phase": "Running"}')
    assert decoded["phase"] is walked["phase"] and decoded["node"] is walked["node"]
    again = _sharing.decode(_sharing.SHARE, b'["Running", "n\\u006fde-17"]')
    assert again[0] is walked["phase"] and again[1] is walked["node"]  # escaped or not
    unshared = _sharing.decode(0, b'["Running"]')
    assert unshared[0] == "Running" and unshared[0] is not walked["phase"]
    long_one = "x" * 65
    assert _sharing.decode(_sharing.SHARE, json.dumps([long_one] * 2).encode())[0] \
        is not sharing.share([long_one])[0]  # longer than the table takes: not shared
    assert sharing.table_stats()["hits"] >= 4


# What may stop a string's scan, as JSON text: the quote ends it; the others it must see
# wherever they are in an eight-byte word (an escape, a raw control byte, non-ASCII, bytes
# that are not UTF-8, a byte just above and below the ranges the word test flags).
STOPS = [b'\\"', b"\\\\", b"\\n", b"\\u00e9", b"\x01", b"\x1f", b" ", b"\x7f",
         "é".encode(), "😀".encode(), b"\xff", b"\xc3", b"!", b"#", b"[", b"]"]


@pytest.mark.parametrize("stop", STOPS)
def test_a_string_is_read_alike_wherever_in_it_a_special_byte_is(stop: bytes) -> None:
    """Every length to 40 and every place in it, as a value, a key and a member passed
    over, and cut off before its closing quote: the one-pass decoder gives what the JSON
    decoder gives, or declines where that raises."""
    walk = sharing.walker(True, True, True)
    assert walk is not None
    skip = sharing.decoder(orjson.loads, True, True, True, skip={"s": None})
    assert skip is not None
    for length in range(41):
        for at in range(length + 1):
            text = b"a" * at + stop + b"b" * (length - at)
            for data in (b'{"s":"' + text + b'"}', b'["' + text + b'",1]',
                         b'{"' + text + b'":"' + text + b'"}', b'["' + text, b'"' + text):
                decoded = _sharing.decode(7, data)
                expected = outcome(lambda d: walk(orjson.loads(d)), data)
                if decoded is _sharing.DECLINED:
                    assert expected[0] == "error", data
                else:
                    assert typed(decoded) == expected, data
                if data.startswith(b'{"s"'):
                    assert outcome(skip, data) == outcome(
                        lambda d: {k: v for k, v in orjson.loads(d).items() if k != "s"},
                        data), data


def test_a_string_of_any_length_is_found_by_its_bytes_alone() -> None:
    """The tables' hash and compare read a string's last, partial word without the bytes
    after it and with each of its own: equal strings followed by other bytes are one str,
    and strings a byte apart are told apart and held side by side (none is dropped)."""
    sharing.clear_table()
    for length in range(2, 65):
        base = "".join(chr(ord("a") + i % 26) for i in range(length))
        for at in range(length):
            near = [base[:at] + c + base[at + 1:] for c in "0123"]
            first = _sharing.decode(_sharing.SHARE, json.dumps(near).encode())
            again = _sharing.decode(_sharing.SHARE, json.dumps({"v": near, "w": 1}).encode())
            assert first == near and again["v"] == near, (length, at)
            assert all(a is b for a, b in zip(first, again["v"], strict=True)), (length, at)
        keys = [_sharing.decode(0, b'{"' + base.encode() + tail)
                for tail in (b'":1}', b'":[2,3],"z":0}')]
        assert next(iter(keys[0])) is next(iter(keys[1])), length
        for at in range(length):  # a key a byte apart is another key
            other = base[:at] + "_" + base[at + 1:]
            assert list(_sharing.decode(0, json.dumps({other: 1}).encode())) == [other]


def test_dicts_of_a_known_shape_share_its_key_table_from_the_start() -> None:
    sharing.clear_table()
    data = b'[{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]'
    decoded = _sharing.decode(_sharing.COMPACT, data)
    own_table = orjson.loads(data)[0]
    assert sys.getsizeof(decoded[1]) < sys.getsizeof(own_table)  # the second one: shaped
    assert type(decoded[1]) is dict and decoded == orjson.loads(data)
    decoded[1]["name"] = "c"  # a change to one leaves the others alone
    assert decoded[0]["name"] == "a"
    later = _sharing.decode(_sharing.COMPACT, b'{"name": "d", "value": "4"}')
    assert sys.getsizeof(later) == sys.getsizeof(decoded[1])


def test_containers_leave_the_collectors_sight_only_when_asked() -> None:
    data = b'{"spec": {"containers": [{"name": "web", "ports": [{"port": 80}]}]}}'
    untracked = _sharing.decode(_sharing.UNTRACK | _sharing.COMPACT, data)
    tracked = _sharing.decode(0, data)
    assert not gc.is_tracked(untracked) and not gc.is_tracked(untracked["spec"]["containers"])
    assert gc.is_tracked(tracked) and gc.is_tracked(tracked["spec"]["containers"])


class CountingLoads:
    """The default JSON decoder, counting the documents it is given."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        decode = wire._decode  # what wire.loads calls, looked up at call time

        def counted(data: Any) -> Any:
            self.calls += 1
            return decode(data)
        monkeypatch.setattr(wire, "_decode", counted)


def test_the_decoder_uses_loads_only_for_what_it_declines_and_large_documents(
        monkeypatch: pytest.MonkeyPatch) -> None:
    counting = CountingLoads(monkeypatch)
    decode = sharing.decoder(wire.loads, True, True, True)
    assert decode is not None
    assert decode(b'{"a": "b"}') == {"a": "b"} and counting.calls == 0
    assert decode(b'{"a": 1, "a": 2}') == {"a": 2} and counting.calls == 1
    with pytest.raises(ValueError):
        decode(b'{"a": ')
    large = json.dumps({"items": ["x" * 100] * (wire.GC_PAUSE_THRESHOLD // 100)}).encode()
    assert len(decode(large)["items"]) == wire.GC_PAUSE_THRESHOLD // 100
    assert counting.calls == 3  # the large one went to wire.loads, which pauses the GC
    assert sharing.decoder(wire.loads, False, False, False) is None


def test_a_list_watch_decodes_in_one_pass_unless_given_its_own_loads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    counting = CountingLoads(monkeypatch)
    own: list[bytes] = []

    def own_loads(data: bytes) -> Any:
        own.append(bytes(data))
        return orjson.loads(data)
    with EmbeddedApiServer() as server:
        api = server.api_client()
        for i in range(3):
            CoreV1Api(api).create_namespaced_pod("ns", {
                "metadata": {"name": f"p{i}"}, "spec": {"containers": [{"name": "c"}]}})
        counting.calls = 0
        default = ClientListerWatcher(api, GroupVersionResource("", "v1", "pods"), "ns")
        listed = default.list(ListOptions(resource_version="0"))
        assert sorted(p["metadata"]["name"] for p in listed["items"]) == ["p0", "p1", "p2"]
        items_decoded_by_loads = counting.calls
        assert items_decoded_by_loads <= 1  # at most the envelope, never an item
        custom = ClientListerWatcher(api, GroupVersionResource("", "v1", "pods"), "ns",
                                     loads=own_loads)
        assert len(custom.list(ListOptions(resource_version="0"))["items"]) == 3
        assert len(own) >= 3  # each item went through the loads it was given
        api.close()


def test_threads_decoding_at_once_get_what_the_json_decoder_gives() -> None:
    """A collection can start inside the decoder (each new dict or list may trigger
    one) and run Python callbacks, letting another thread decode meanwhile: every thread
    must still get the right objects, and the tables must stay whole."""
    def work(n: int) -> None:
        for i in range(300):
            doc = {f"k{(i + n) % 50}": f"v{i % 9}", "v": [{"x": n, f"y{i % 7}": "web"}]}
            assert typed(_sharing.decode(7, json.dumps(doc).encode())) == typed(doc)

    assert threads_amid_collections(work, name="decode") > 0
    assert sharing.table_stats()["compacted"] > 0
