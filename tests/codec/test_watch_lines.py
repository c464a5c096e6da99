"""A JSON watch's lines decoded a buffer at a time (client_cache.codec._sharing.line_decoder,
codec/csrc/lines.c, and the NativeJsonLines watch decoder): the same events and the same
errors as the lines decoded one by one (JsonLines), the lines it cannot take left to the
caller at the right place, the previous object's parts reused as the line decoder reuses them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration, V1Pod

from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import Event, EventType
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.client.stream_watcher import EVENT_TYPES, StreamWatcher, json_lines
from client_cache.codec import _extension as extension
from client_cache.codec import _sharing as sharing
from client_cache.codec import _wire as wire
from client_cache.codec._watch_decoders import JsonLines, NativeJsonLines, ProtobufFrames
from client_cache.codec.skip_paths import skip_tree
from client_cache.util.chan import CLOSED
from tests.codec.test_previous import same
from tests.codec.test_skip_paths import rich_pod

pytestmark = [pytest.mark.c_path,
              pytest.mark.skipif(not sharing.AVAILABLE,
                                 reason="the C part of client_cache is not built")]


def line(kind: str, obj: Any) -> bytes:
    return json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode()


def pod(name: str, rv: str, message: str = "") -> dict[str, Any]:
    """The suite's rich pod (managedFields among its members) named ``ns/name``."""
    obj = rich_pod()
    obj["metadata"].update(name=name, namespace="ns", resourceVersion=rv)
    obj.setdefault("status", {})["message"] = message
    return obj


def lines_of(**kwargs: Any) -> Any:
    decode = sharing.line_decoder(True, True, True, event_class=Event, types=EVENT_TYPES,
                                  **kwargs)
    assert decode is not None
    return decode


def test_every_whole_line_is_its_event_and_the_rest_is_left() -> None:
    first, second = pod("a", "1"), pod("b", "2", "ready")
    data = (line("ADDED", first) + b"\n\n \t\r\n" + line("MODIFIED", second) + b"\r\n"
            + line("DELETED", first) + b"\n" + line("ADDED", second)[:40])
    events, pos, stuck = lines_of()(data, 0)
    assert [e.type for e in events] == [EventType.ADDED, EventType.MODIFIED,
                                        EventType.DELETED]
    assert all(type(e) is Event for e in events)
    assert same(events[0].object, first) and same(events[1].object, second)
    assert same(events[2].object, first)
    assert stuck == -1 and data[pos:] == line("ADDED", second)[:40]
    assert lines_of()(data, pos) == ([], pos, -1)  # no whole line after pos
    held = bytearray(data)
    again, _, _ = lines_of()(held, 0)  # any bytes-like data, let go of after the call
    held += b"\n"  # BufferError while the call still held it
    assert [e.type for e in again] == [e.type for e in events]
    assert all(same(a.object, b.object) for a, b in zip(again, events, strict=True))


def test_a_line_it_cannot_take_is_left_at_its_place() -> None:
    """Stops at the first line that is declined, garbled, not an event, of an unknown
    type or not an object: every event before it made, pos at the line, stuck at its
    newline; called again after it, it goes on."""
    good = line("ADDED", pod("a", "1"))
    for odd in (b'{"type":"ADDED","object":{"n":1234567890123456789012}}',  # declined
                b"{garbled", b"[1,2]", b'{"type":"ADDED"}', b'{"object":{}}',
                b'{"type":"GONE","object":{}}', b'{"type":7,"object":{}}', b'"text"'):
        data = good + b"\n" + odd + b"\n" + good + b"\n"
        events, pos, stuck = lines_of()(data, 0)
        assert len(events) == 1, odd
        assert (pos, stuck) == (len(good) + 1, len(good) + 1 + len(odd)), odd
        after, end, again = lines_of()(data, stuck + 1)
        assert len(after) == 1 and end == len(data) and again == -1


def test_error_and_bookmark_events_are_made_as_the_line_by_line_path_makes_them() -> None:
    status = {"kind": "Status", "code": 410, "reason": "Expired"}
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
                "spec": {"containers": None}}
    data = line("ERROR", status) + b"\n" + line("BOOKMARK", bookmark) + b"\n"
    events, _, stuck = lines_of()(data, 0)
    assert stuck == -1
    assert events == [Event(EventType.ERROR, status), Event(EventType.BOOKMARK, bookmark)]


def test_long_lines_are_left_to_the_caller() -> None:
    """A line of the GC pause threshold or more goes to the caller's decoder (the C
    entry's limit, set small here)."""
    decode_lines = extension.codec.decode_lines  # the C entry, with a limit of its own
    short, long = line("ADDED", {"a": 1}), line("ADDED", {"a": "x" * 100})
    data = short + b"\n" + long + b"\n"
    events, pos, stuck = decode_lines(0, data, 0, None, None, 0, 50, Event, EVENT_TYPES)
    assert events == [Event(EventType.ADDED, {"a": 1})]
    assert (pos, stuck) == (len(short) + 1, len(data) - 1)


def test_the_previous_object_and_skipped_members_are_as_the_line_decoder_has_them() -> None:
    cached = pod("a", "1")
    skip = skip_tree(["metadata.managedFields"])
    assert skip is not None
    tree = skip.under("object")
    changed = pod("a", "2", "changed")
    decode = lines_of(previous={"ns/a": cached}.get, skip=tree)
    [event], _, _ = decode(line("MODIFIED", changed) + b"\n", 0)
    one = sharing.decoder(wire.loads, True, True, True, skip=tree,
                          previous={"ns/a": cached}.get)
    assert one is not None
    expected = one(line("MODIFIED", changed))["object"]
    assert same(event.object, expected)
    assert "managedFields" not in event.object["metadata"]
    assert event.object["spec"] is cached["spec"]  # unchanged: the cached part itself


def test_bad_arguments_are_refused() -> None:
    decode_lines = extension.codec.decode_lines
    args = [0, b"", 0, None, None, 0, 100, Event, EVENT_TYPES]
    for index, bad, error in ((1, "text", TypeError), (1, 5, TypeError), (2, 5, ValueError),
                              (2, -1, ValueError), (3, [], TypeError), (4, 3, TypeError),
                              (5, extension.codec.LOOK_UP_WHOLE, ValueError),
                              (7, 3, TypeError), (8, [], TypeError)):
        with pytest.raises(error):
            decode_lines(*args[:index], bad, *args[index + 1:])
    with pytest.raises(TypeError):
        decode_lines(*args[:8])
    assert sharing.line_decoder(False, False, False, event_class=Event,
                                types=EVENT_TYPES) is None  # nothing asked: loads as is


class ChunkedResponse:
    """A response whose body comes in the given chunks."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, amt: int, decode_content: bool = True) -> Iterator[bytes]:
        yield from self.chunks

    def close(self) -> None:
        pass


def watched(chunks: list[bytes], batch: bool) -> tuple[list[Event], int]:
    """The events a StreamWatcher delivers from ``chunks``, its lines decoded in batches
    (with how many events the batches made, so the test knows the batch path made
    them) or one by one."""
    loads = sharing.decoder(wire.loads, True, True, True)
    assert loads is not None
    decode = lines_of()
    made = 0

    def counted(data: bytes, pos: int) -> Any:
        nonlocal made
        found = decode(data, pos)
        made += len(found[0])
        return found
    python = json_lines(loads)
    decoder = NativeJsonLines(counted, python) if batch else python
    w = StreamWatcher(ChunkedResponse(chunks), decoder, name="lines", chan_size=1000)
    out = []
    while True:
        event, ok = w.result_chan().recv(5)
        if not ok:
            assert event is CLOSED
            assert w.join(1)
            return out, made
        out.append(event)


@pytest.mark.parametrize("cut", [1, 7, 100, 4096])
def test_a_watch_reading_lines_in_batches_delivers_what_it_delivered_line_by_line(
        cut: int) -> None:
    """Over a stream cut anywhere, with blank lines, a declined line, a last line
    without its newline: the same events; with a garbled line, the same events before
    the same error."""
    body = b"".join(line(kind, pod(f"p{i}", str(i))) + b"\n" + b"\n" * (i % 2)
                    for i, kind in enumerate(["ADDED", "MODIFIED", "DELETED"] * 4))
    body += b'{"type":"ADDED","object":{"n":1234567890123456789012}}\n'  # declined in C
    body += line("MODIFIED", pod("last", "99"))  # no newline: still an event
    chunks = [body[i:i + cut] for i in range(0, len(body), cut)]
    (one_by_one, none), (batched, made) = watched(chunks, False), watched(chunks, True)
    assert len(batched) == 14
    assert (none, made) == (0, 12)  # all but the declined line and the unfinished last
    assert [e.type for e in batched] == [e.type for e in one_by_one]
    assert all(same(a.object, b.object) for a, b in zip(batched, one_by_one, strict=True))
    assert same(batched[12].object, wire.loads(b'{"n":1234567890123456789012}'))

    garbled = body[:len(body) // 2].rsplit(b"\n", 1)[0] + b"\n{garbled\n" + body
    chunks = [garbled[i:i + cut] for i in range(0, len(garbled), cut)]
    (one_by_one, _), (batched, made) = watched(chunks, False), watched(chunks, True)
    assert batched[-1].type is EventType.ERROR and made == len(batched) - 1
    assert [e.type for e in batched] == [e.type for e in one_by_one]
    assert batched[-1].object == one_by_one[-1].object
    assert all(same(a.object, b.object) for a, b in zip(batched[:-1], one_by_one[:-1], strict=True))


def test_a_lister_watcher_reads_dict_lines_in_batches_and_others_line_by_line() -> None:
    """Dicts decoded by the C decoder get the native watch decoder, which reuses the
    cached object (it is asked for the event's key); models, and a JSON decoder of the
    caller's own, the Python one; a protobuf stream, frames."""
    config = Configuration()
    config.host = "http://127.0.0.1:1"
    gvr = GroupVersionResource("", "v1", "pods")
    asked: list[str] = []

    def cached(key: str) -> Any:
        asked.append(key)
        return None
    def chosen(lw: ClientListerWatcher, protobuf: bool = False) -> Any:
        return lw.decoding.watch_decoder(cached, protobuf=protobuf, event_class=Event,
                                         types=EVENT_TYPES)
    dicts = chosen(ClientListerWatcher(ApiClient(config), gvr))
    assert isinstance(dicts, NativeJsonLines)
    [event] = dicts.decode(line("MODIFIED", pod("a", "2")) + b"\n")
    assert event.type is EventType.MODIFIED and asked == ["ns/a"]
    models = chosen(ClientListerWatcher(ApiClient(config), gvr, object_type=V1Pod))
    own = chosen(ClientListerWatcher(ApiClient(config), gvr, loads=json.loads))
    assert type(models) is JsonLines and type(own) is JsonLines
    [event] = models.decode(line("ADDED", pod("b", "3")) + b"\n")
    assert isinstance(event.object, V1Pod) and event.object.metadata.name == "b"
    assert isinstance(chosen(ClientListerWatcher(ApiClient(config), gvr), True),
                      ProtobufFrames)
