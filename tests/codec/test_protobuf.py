"""The protobuf wire format without a server (:mod:`client_cache.codec.protobuf`): what Go's
JSON writes for each shape, the C decoder and the Python one agreeing, bodies and frames
cut anywhere, and bad input refused with ValueError, never a crash."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from client_cache.codec import _sharing as sharing
from client_cache.codec import protobuf
from client_cache.codec._list_body import ListBodyReader
from client_cache.codec._protobuf_schema import schema
from client_cache.codec._protobuf_shapes import go_duration, put_bytes
from client_cache.codec._wire import loads as wire_loads
from client_cache.errors import ApiStatusError
from client_cache.testing.apiserver.encoding import answers_protobuf
from tests.conformance.test_protobuf import OTHERS, POD

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("native_impl"), pytest.mark.c_path]

ALL_FLAGS = sharing.walk_flags(True, True, True)


def objects() -> list[dict[str, Any]]:
    """The conformance suite's objects, with what a server adds to them."""
    pod = copy.deepcopy(POD)
    pod["metadata"].update(namespace="ns", uid="u-1", resourceVersion="7",
                           creationTimestamp="2026-11-26T10:00:00Z", generation=3,
                           managedFields=[{"manager": "m", "operation": "Update",
                                           "apiVersion": "v1", "time": "2026-11-26T10:00:00Z",
                                           "fieldsType": "FieldsV1",
                                           "fieldsV1": {"f:metadata": {"f:labels": {}}}}])
    pod["status"] = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": "1969-07-20T20:17:40Z"}],
        "startTime": "9999-12-31T23:59:59Z"}
    return [canonical(pod), *(canonical(body) for _, body in OTHERS)]


def canonical(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as Go would write it back: its zero values filled in."""
    return python_decode(protobuf.encode(obj))


def python_decode(body: bytes) -> dict[str, Any]:
    """The Python decoder's reading of a body (the fallback where C is not built)."""
    api_version, kind, raw = protobuf.unwrap(body)
    return {"kind": kind, "apiVersion": api_version,
            **schema().message(api_version, kind).decode(body, *raw)}


@pytest.mark.parametrize(("nanoseconds", "text"), [
    (0, "0s"), (1, "1ns"), (1_500, "1.5µs"), (1_500_000, "1.5ms"), (999_999_999, "999.999999ms"),
    (1_000_000_000, "1s"), (1_500_000_000, "1.5s"), (90 * 10**9, "1m30s"),
    (3600 * 10**9, "1h0m0s"), (3723 * 10**9 + 5, "1h2m3.000000005s"), (-2 * 10**9, "-2s")])
def test_durations_read_as_go_prints_them(nanoseconds: int, text: str) -> None:
    assert go_duration(nanoseconds) == text


def test_objects_round_trip_and_both_decoders_agree() -> None:
    for obj in objects():
        body = protobuf.encode(obj)
        assert protobuf.decode(body) == obj == python_decode(body)
        assert list(protobuf.decode(body)) == list(obj)  # JSON's order of keys
        assert protobuf.decode(body, ALL_FLAGS) == obj  # shared, untracked, compacted


def test_go_zero_values_and_times() -> None:
    pod = objects()[0]
    assert pod["metadata"]["creationTimestamp"] == "2026-11-26T10:00:00Z"
    assert pod["status"]["conditions"][0]["lastTransitionTime"] == "1969-07-20T20:17:40Z"
    assert pod["status"]["conditions"][0]["lastProbeTime"] is None  # Go's zero time
    assert pod["status"]["startTime"] == "9999-12-31T23:59:59Z"
    lease = next(o for o in objects() if o["kind"] == "Lease")
    assert lease["spec"]["acquireTime"] == "2026-11-26T10:00:00.123456Z"  # micro-time
    # a pointer to zero is kept; a non-pointer zero under omitempty is left out
    assert lease["spec"]["leaseTransitions"] == 0
    event = next(o for o in objects() if o["kind"] == "Event")
    assert event["eventTime"] is None and event["reportingComponent"] == ""
    secret = next(o for o in objects() if o["kind"] == "Secret")
    assert secret["data"] == {"empty": "", "k": "c2VjcmV0"}  # bytes as base64
    service = next(o for o in objects() if o["kind"] == "Service")
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http", 8081]
    assert protobuf.decode(protobuf.encode({"apiVersion": "v1", "kind": "Pod"}))[
        "metadata"] == {}  # the struct is written, its empty fields left out


def test_an_unknown_kind_and_a_custom_resource_are_refused() -> None:
    with pytest.raises(ValueError, match="not a built-in kind"):
        protobuf.encode({"apiVersion": "example.com/v1", "kind": "Gadget"})
    body = bytearray(protobuf.MAGIC)
    meta = bytearray()
    put_bytes(meta, 1, b"example.com/v1")
    put_bytes(meta, 2, b"Gadget")
    put_bytes(body, 1, bytes(meta))
    put_bytes(body, 2, b"")
    with pytest.raises(ValueError, match="not a built-in kind"):
        protobuf.decode(bytes(body))


def test_every_truncation_and_corruption_is_a_value_error() -> None:
    body = protobuf.encode(objects()[0])
    for end in range(len(body) - 4):  # the envelope's last 4 bytes: two optional fields
        with pytest.raises(ValueError):
            protobuf.decode(body[:end])
        with pytest.raises(ValueError):
            python_decode(body[:end])
    rnd = random.Random(20)
    results = {"decoded": 0, "refused": 0}
    for _ in range(3000):
        broken = bytearray(body)
        for _ in range(rnd.randint(1, 4)):
            broken[rnd.randrange(len(broken))] = rnd.randrange(256)
        try:
            got = protobuf.decode(bytes(broken), ALL_FLAGS)
        except ValueError:
            results["refused"] += 1
        else:
            assert isinstance(got, dict)
            results["decoded"] += 1
    assert results["decoded"] and results["refused"]  # both outcomes were exercised


def test_watch_frames_cut_anywhere() -> None:
    events = [("ADDED", o) for o in objects()] + [("DELETED", objects()[0])]
    stream = b"".join(protobuf.encode_watch_event(t, o) for t, o in events)
    for size in (1, 2, 3, 7, 64, len(stream)):
        reader = protobuf.FrameReader()
        frames = [f for i in range(0, len(stream), size)
                  for f in reader.feed(stream[i:i + size])]
        assert reader.pending() == 0
        assert [protobuf.decode_watch_event(f, ALL_FLAGS) for f in frames] == events
    reader = protobuf.FrameReader()
    assert reader.feed(stream[:-1])[-1:] != [stream[-1:]] and reader.pending() > 0
    with pytest.raises(ValueError, match="too long"):
        protobuf.FrameReader().feed((protobuf.MAX_FRAME + 1).to_bytes(4, "big"))
    with pytest.raises(ValueError, match="without its type"):
        protobuf.decode_watch_event(b"")


def test_a_list_read_as_it_arrives() -> None:
    items = [o for o in objects() if o["kind"] == "Pod"] * 3
    plain = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
    body = protobuf.encode({"apiVersion": "v1", "kind": "PodList",
                            "metadata": {"resourceVersion": "9", "continue": "c"},
                            "items": plain})
    whole = protobuf.decode(body)
    assert whole["items"] == plain and whole["metadata"] == {"resourceVersion": "9",
                                                             "continue": "c"}
    for size in (1, 5, 300, len(body)):
        reader = protobuf.ListReader(ALL_FLAGS)
        for i in range(0, len(body), size):
            reader.feed(body[i:i + size])
        assert reader.finish() == whole
    reader = protobuf.ListReader()
    reader.feed(body[:-3])
    with pytest.raises(ValueError, match="ended early"):
        reader.finish()
    with pytest.raises(ValueError, match="is not a list"):
        protobuf.ListReader().feed(protobuf.encode(objects()[0]))
    with pytest.raises(ValueError, match="magic"):
        protobuf.ListReader().feed(b"{\"kind\": \"PodList\"}")


class Body:
    """A LIST response's body, read in pieces, with its Content-Type."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.headers = {"Content-Type": content_type}
        self._left = body

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            size = len(self._left)
        piece, self._left = self._left[:size], self._left[size:]
        return piece


def test_a_protobuf_list_body_reads_as_dicts() -> None:
    """(Struct objects: tests/codec/test_protobuf_structs.py.)"""
    plain = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
             for o in objects() if o["kind"] == "Pod"]
    body = protobuf.encode({"apiVersion": "v1", "kind": "PodList",
                            "metadata": {"resourceVersion": "9"}, "items": plain})
    dicts = ListBodyReader(wire_loads, wire_loads, None, None, 0, dicts=True)
    assert dicts.read(Body(body, protobuf.CONTENT_TYPE))["items"] == plain


@pytest.mark.parametrize(("accept", "answer"), [
    (None, False), ("", False), ("application/json", False), ("*/*", False),
    ("application/vnd.kubernetes.protobuf", True),
    ("application/vnd.kubernetes.protobuf,application/json", True),
    ("application/json,application/vnd.kubernetes.protobuf", False)])
def test_the_embedded_server_answers_in_the_first_type_it_can(accept: str | None,
                                                               answer: bool) -> None:
    assert answers_protobuf(accept, "v1", "Pod") is answer
    if (accept and "json" in accept) or accept in (None, "", "*/*"):
        assert answers_protobuf(accept, "example.com/v1", "Gadget") is False


def test_the_embedded_server_refuses_protobuf_only_for_a_custom_resource() -> None:
    with pytest.raises(ApiStatusError) as refused:
        answers_protobuf("application/vnd.kubernetes.protobuf", "example.com/v1", "Gadget")
    assert refused.value.code == 406


def test_without_the_c_part_the_python_decoders_give_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``client_cache.codec._codec`` is not built every entry falls back to Python."""
    events = [("ADDED", o) for o in objects()]
    frames = [protobuf.encode_watch_event(t, o)[4:] for t, o in events]
    pods = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
            for o in objects() if o["kind"] == "Pod"]
    listed = protobuf.encode({"apiVersion": "v1", "kind": "PodList",
                              "metadata": {"resourceVersion": "9"}, "items": pods * 2})
    with_c = ([protobuf.decode(protobuf.encode(o)) for o in objects()],
              [protobuf.decode_watch_event(f) for f in frames], protobuf.decode(listed))
    for entry in ("c_object", "c_event", "c_list_scan"):
        monkeypatch.setattr(type(schema()), entry, lambda *args, **kwargs: None)
    reader = protobuf.ListReader()
    for i in range(0, len(listed), 100):
        reader.feed(listed[i:i + 100])
    without_c = ([protobuf.decode(protobuf.encode(o)) for o in objects()],
                 [protobuf.decode_watch_event(f) for f in frames], reader.finish())
    assert without_c == with_c
