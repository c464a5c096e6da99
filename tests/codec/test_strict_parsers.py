"""Malformed input the codec refuses (or reads) as Go and the JSON decoders do, the same
way on the native decoders and on their Python twins (issue 58's list): every test runs
both ways (the native_impl fixture)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from client_cache.api.watch import Event
from client_cache.client.stream_watcher import EVENT_TYPES
from client_cache.codec import _wire as wire
from client_cache.codec import protobuf
from client_cache.codec._list_body import ListBodyReader
from client_cache.codec._protobuf_schema import schema
from client_cache.codec._protobuf_shapes import VARINT, put_bytes, varint
from client_cache.codec._watch_decoders import ProtobufFrames
from client_cache.codec.errors import DecodeError, WatchDecodeError
from tests.codec.test_protobuf import Body, objects

pytestmark = [pytest.mark.usefixtures("native_impl"), pytest.mark.c_path]


def read_list(body: bytes, content_type: str = "application/json") -> Any:
    reader = ListBodyReader(wire.loads, wire.loads, None, None, 0, dicts=True)
    return reader.read(Body(body, content_type), None)


def test_a_repeated_items_member_keeps_the_last_array_as_json_decoders_do() -> None:
    body = (b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5"},'
            b'"items":[{"a":1},{"a":2}],"x":1,"items":[{"b":3}]}')
    assert read_list(body) == json.loads(body)
    assert read_list(body)["items"] == [{"b": 3}]
    emptied = body.replace(b'[{"b":3}]', b"[]")
    assert read_list(emptied)["items"] == [] == json.loads(emptied)["items"]
    nested = (b'{"kind":"PodList","items":[{"a":1}],"metadata":{"items":[9]}}')
    assert read_list(nested) == json.loads(nested)  # a nested "items" is no repeat


def key(number: int, wire_type: int) -> bytes:
    out = bytearray()
    out.append(number << 3 | wire_type)
    return bytes(out)


@pytest.mark.parametrize(("message", "field"), [
    ("k8s.io/api/core/v1.ConfigMapEnvSource", 1),  # an inline (embedded) struct
    ("k8s.io/api/core/v1.ConfigMap", 2),  # a map entry
    ("k8s.io/api/core/v1.ContainerPort", 3),  # an int32, read as fixed64
])
def test_a_field_of_the_wrong_wire_type_is_refused(message: str, field: int) -> None:
    """Go's generated decoders refuse a known field of another wire type (``wrong
    wireType``); the native decoder dropped an inline struct's and a map's such field,
    and read an int from a fixed64."""
    shape = schema()._types[message]
    data = key(field, VARINT) + b"\x05" if field != 3 else key(field, 1) + b"\x01" * 8
    with pytest.raises(DecodeError, match="wire type"):
        schema().decode(shape, data, 0, len(data))


def pod_list(items: list[dict[str, Any]]) -> bytes:
    return protobuf.encode({"kind": "PodList", "apiVersion": "v1",
                            "metadata": {"resourceVersion": "12"}, "items": items})


def test_an_empty_protobuf_list_has_an_empty_items_array_as_its_json_has() -> None:
    body = pod_list([])
    assert protobuf.decode(body)["items"] == []
    assert read_list(body, protobuf.CONTENT_TYPE)["items"] == []
    assert protobuf.decode(body)["metadata"] == {"resourceVersion": "12"}


def test_a_protobuf_list_body_cut_or_padded_anywhere_is_refused() -> None:
    """Every cut of the body but the two optional empty fields at its end (4 bytes), and
    any padding after it, is refused: never a list without its items or metadata."""
    body = pod_list([o for o in objects() if o["kind"] == "Pod"])
    for end in range(len(body) - 4):
        with pytest.raises(ValueError):
            read_list(body[:end], protobuf.CONTENT_TYPE)
    for pad in (b"\x00", b"\x00\x00", b"\x12\x00", b"\x0a\x00"):
        with pytest.raises(ValueError):
            read_list(body + pad, protobuf.CONTENT_TYPE)
    whole = read_list(body, protobuf.CONTENT_TYPE)
    assert whole["metadata"] == {"resourceVersion": "12"} and len(whole["items"]) == 1


def test_an_over_long_varint_in_a_list_is_refused_as_soon_as_it_is_read() -> None:
    """Ten bytes of a varint without its end are malformed, not a field still on its
    way: the reader refuses them at once instead of waiting for the body's end."""
    body = pod_list([o for o in objects() if o["kind"] == "Pod"])
    _, _, (start, end) = protobuf.unwrap(body)
    head = body[:start]
    reader = protobuf.ListReader()
    reader.feed(head)  # the envelope, up to the list's own bytes
    with pytest.raises(ValueError, match=r"longer than 10 bytes|too long"):
        reader.feed(b"\x92" + b"\xff" * 12 + body[start:end])


def test_a_varint_keeps_64_bits_as_go_does() -> None:
    ten = b"\xff" * 9 + b"\x7f"  # carries bits above 63, which Go's reading drops
    assert varint(ten, 0) == (2**64 - 1, 10)
    with pytest.raises(ValueError):
        varint(b"\xff" * 10 + b"\x01", 0)


def test_a_string_ending_in_a_backslash_at_the_end_of_the_data_is_refused() -> None:
    """The native string scan stops at the end of the data instead of stepping two bytes
    past a backslash there (a pointer past the end; the sanitizer leg runs this)."""
    for data in (b'{"a":"\\', b'["\\', b'"x\\', b'{"a":"' + b"y" * 13 + b"\\"):
        with pytest.raises(ValueError):
            wire.loads(data)
        with pytest.raises(ValueError):
            read_list(b'{"items":[' + data)


def test_every_malformed_frame_raises_a_decode_error() -> None:
    """The codec documents DecodeError (a ValueError) for malformed input; a watch frame
    that is not an event raises its subclass with the events before it."""
    frames = ProtobufFrames(protobuf.decode_watch_event, Event, EVENT_TYPES)
    good = protobuf.encode_watch_event("ADDED", objects()[0])
    bad = bytearray()
    put_bytes(bad, 1, b"ADDED")
    bad = len(bad).to_bytes(4, "big") + bytes(bad)  # no object
    with pytest.raises(WatchDecodeError) as caught:
        frames.decode(good + bad)
    assert isinstance(caught.value, DecodeError) and isinstance(caught.value, ValueError)
    assert [e.type.value for e in caught.value.events] == ["ADDED"]
    assert "without its type or object" in str(caught.value)
