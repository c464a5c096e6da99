"""A bounded differential fuzz corpus: every native decoder against its Python twin (or the
JSON decoder it stands in for) on real bodies, their truncations and their mutations. For
each input both give equal objects, or both refuse it with a ValueError (never another
exception class, never a crash). CI runs this module under ASan and UBSan too
(``make test-sanitize``), where any memory error or undefined behaviour fails the run.

``CLIENT_CACHE_FUZZ_CASES`` sets the mutations per corpus (default 400; the sanitizer leg
runs more). The seeds are fixed: a failure names its corpus and case, and reruns."""

from __future__ import annotations

import copy
import json
import os
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from client_cache.api.watch import Event
from client_cache.client.stream_watcher import EVENT_TYPES
from client_cache.codec import _extension as extension
from client_cache.codec import _protobuf_structs as protobuf_structs
from client_cache.codec import _sharing as sharing
from client_cache.codec import _wire as wire
from client_cache.codec import protobuf
from client_cache.codec._list_body import ListBodyReader
from client_cache.codec._watch_decoders import JsonLines, NativeJsonLines, object_lines
from tests.codec.test_protobuf import Body, objects, python_decode
from tests.codec.test_skip_paths import rich_pod

pytestmark = [pytest.mark.native_only, pytest.mark.usefixtures("native_impl"), pytest.mark.c_path]

CASES = int(os.environ.get("CLIENT_CACHE_FUZZ_CASES", "400"))
SPECIAL = [b'"', b"\\", b"\\u", b"\\ud800", b"{", b"}", b"[", b"]", b",", b":", b"-", b"0",
           b"1e999", b"\xff", b"\xc3", b"\x00", b"\n", b"nul", b"tru", b' "items": [] ',
           b'"items":', b"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"]


def outcome(fn: Callable[[], Any]) -> tuple[str, Any]:
    """What ``fn`` gave: ("ok", result) or ("error", the exception class's ValueError-ness).
    An exception that is no ValueError fails the test at once: the codec refuses
    malformed input with ValueError only."""
    try:
        return "ok", fn()
    except ValueError:
        return "error", None
    except Exception as err:  # pragma: no cover - what the test exists to catch
        pytest.fail(f"{type(err).__name__} instead of ValueError: {err}")


def mutations(data: bytes, seed: int) -> Iterator[bytes]:
    """Truncations at every 1/64th, then CASES random mutations (flips, inserts of
    characters that structure the format, deletions, duplicated spans)."""
    step = max(1, len(data) // 64)
    for end in range(0, len(data), step):
        yield data[:end]
    rnd = random.Random(seed)
    for _ in range(CASES):
        out = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            at = rnd.randrange(len(out) + 1)
            kind = rnd.randrange(4)
            if kind == 0 and out:
                out[min(at, len(out) - 1)] = rnd.randrange(256)
            elif kind == 1:
                out[at:at] = rnd.choice(SPECIAL)
            elif kind == 2:
                del out[at:at + rnd.randint(1, 8)]
            else:
                span = out[at:at + rnd.randint(1, 16)]
                out[at:at] = span
        yield bytes(out)


def json_documents() -> list[bytes]:
    pod = rich_pod()
    listed = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
              "items": [pod, copy.deepcopy(pod)]}
    return [json.dumps(pod).encode(), json.dumps(listed, separators=(",", ":")).encode(),
            b'{"a":"\\u00e9\\ud83d\\ude00 \\n","b":[1,-0.5,1e3,true,false,null],"c":{}}']


def test_the_native_json_decoder_gives_what_the_json_decoder_gives() -> None:
    """``_codec.decode`` returns the JSON decoder's object or declines (the caller then
    decodes with the JSON decoder); it never returns an object for a document the JSON
    decoder refuses, nor a different one."""
    flags = sharing.walk_flags(True, True, True)
    declined = extension.codec.DECLINED
    for doc_index, doc in enumerate(json_documents()):
        for case, data in enumerate(mutations(doc, doc_index)):
            kind, expected = outcome(lambda data=data: wire.loads(data))
            got = extension.codec.decode(flags, data)
            if got is declined:
                continue
            assert kind == "ok", f"document {doc_index} case {case}: decoded {data!r}"
            assert typed(got) == typed(expected), f"document {doc_index} case {case}"


def typed(obj: Any) -> Any:
    """``obj`` with each scalar beside its type (1, 1.0 and True differ)."""
    if isinstance(obj, dict):
        return {k: typed(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [typed(v) for v in obj]
    return type(obj).__name__, obj


def events_of(decoder: Any, chunks: list[bytes]) -> tuple[str, Any]:
    def run() -> Any:
        out = []
        for chunk in chunks:
            out += decoder.decode(chunk)
        out += decoder.end()
        return [(e.type, typed(e.object)) for e in out]
    return outcome(run)


def test_native_watch_lines_give_the_python_decoders_events() -> None:
    pod = rich_pod()
    stream = b"".join(
        json.dumps({"type": t, "object": dict(pod, n=i)}).encode() + b"\n"
        for i, t in enumerate(["ADDED", "MODIFIED", "BOOKMARK", "DELETED"]))
    rnd = random.Random(7)
    for case, data in enumerate(mutations(stream, 3)):
        cut = rnd.randint(1, 200)
        chunks = [data[i:i + cut] for i in range(0, len(data), cut)] or [b""]
        lines = sharing.line_decoder(True, True, True, event_class=Event, types=EVENT_TYPES)
        assert lines is not None
        python = JsonLines(object_lines(wire.loads), Event, EVENT_TYPES)
        native = NativeJsonLines(lines, JsonLines(object_lines(wire.loads), Event,
                                                  EVENT_TYPES))
        assert events_of(native, chunks) == events_of(python, chunks), f"case {case}"


def read_list(data: bytes, content_type: str, native: bool,
              monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    with monkeypatch.context() as patch:
        if not native:
            patch.setattr(extension, "AVAILABLE", False)
            patch.setattr(sharing, "AVAILABLE", False)
            patch.setattr(protobuf_structs, "AVAILABLE", False)
        reader = ListBodyReader(wire.loads, wire.loads, None, None, 0, dicts=True)
        return outcome(lambda: typed(reader.read(Body(data, content_type), None)))


def test_a_json_list_body_reads_alike_natively_and_in_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    body = json_documents()[1]
    for case, data in enumerate(mutations(body, 11)):
        native = read_list(data, "application/json", True, monkeypatch)
        python = read_list(data, "application/json", False, monkeypatch)
        assert native == python, f"case {case}: {data[:200]!r}"


def protobuf_bodies() -> list[bytes]:
    pods = [o for o in objects() if o["kind"] == "Pod"]
    listed = {"kind": "PodList", "apiVersion": "v1",
              "metadata": {"resourceVersion": "12", "continue": "c"}, "items": pods * 2}
    return [protobuf.encode(o) for o in objects()] + [protobuf.encode(listed)]


def test_the_native_protobuf_decoder_gives_what_the_python_one_gives() -> None:
    for body_index, body in enumerate(protobuf_bodies()):
        for case, data in enumerate(mutations(body, 100 + body_index)):
            native = outcome(lambda data=data: typed(protobuf.decode(data)))
            python = outcome(lambda data=data: typed(python_decode(data)))
            assert native == python, f"body {body_index} case {case}"


def test_a_protobuf_list_body_reads_alike_natively_and_in_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    body = protobuf_bodies()[-1]
    for case, data in enumerate(mutations(body, 21)):
        native = read_list(data, protobuf.CONTENT_TYPE, True, monkeypatch)
        python = read_list(data, protobuf.CONTENT_TYPE, False, monkeypatch)
        assert native == python, f"case {case}"


def test_protobuf_watch_frames_decode_alike_natively_and_in_python(
        monkeypatch: pytest.MonkeyPatch) -> None:
    frame = protobuf.encode_watch_event("MODIFIED", objects()[0])[4:]
    for case, data in enumerate(mutations(frame, 31)):
        native = outcome(lambda data=data: typed(protobuf.decode_watch_event(data)))
        with monkeypatch.context() as patch:
            patch.setattr(extension, "AVAILABLE", False)
            python = outcome(lambda data=data: typed(protobuf.decode_watch_event(data)))
        assert native == python, f"case {case}"
