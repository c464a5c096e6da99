"""A LIST body decoded as it arrives: sharing.ListSplitter cuts the body into its items
piece by piece, and the list-watch decodes each item before the rest of the body is read
(issue 20: the decode overlaps the server's sending)."""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.client import ApiClient, Configuration, V1Pod

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _list_body as list_body_module
from client_cache.codec import _wire as wire
from client_cache.codec._sharing import ListSplitter
from client_cache.codec.structs import struct_type
from tests.fixtures import json_values

pytestmark = [pytest.mark.c_path, pytest.mark.needs_native]


PODS = GroupVersionResource("", "v1", "pods")


def pieces(body: bytes, cuts: list[int]) -> list[bytes]:
    """``body`` cut at the given offsets (any order, repeats allowed)."""
    bounds = [0, *sorted({c % (len(body) + 1) for c in cuts}), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def split(body: bytes, cuts: list[int]) -> tuple[list[bytes], bytes, bool]:
    splitter = ListSplitter()
    items = [item for piece in pieces(body, cuts) for item in splitter.feed(piece)]
    envelope, was_split = splitter.finish()
    return items, envelope, was_split


@settings(max_examples=300, deadline=None)
@given(items=st.lists(json_values, max_size=6),
       before=st.dictionaries(st.sampled_from(["kind", "metadata", 'x"items"']), json_values,
                              max_size=3),
       after=st.dictionaries(st.sampled_from(["apiVersion", "z"]), json_values, max_size=2),
       indent=st.sampled_from([None, 2]),
       cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_items_found_piece_by_piece_decode_to_what_the_whole_body_decodes_to(
        items: list[Any], before: dict[str, Any], after: dict[str, Any],
        indent: int | None, cuts: list[int]) -> None:
    body = json.dumps({**before, "items": items, **after}, indent=indent,
                      ensure_ascii=indent is None).encode()
    raw_items, envelope, was_split = split(body, cuts)
    assert was_split
    rebuilt = wire.loads(envelope)
    assert rebuilt.pop("items") == []
    rebuilt["items"] = [wire.loads(raw) for raw in raw_items]
    assert rebuilt == wire.loads(body)


def test_every_cut_of_a_body_gives_the_same_items() -> None:
    body = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9"},
                       "items": [{"a": "x,]}\\\"y"}, 12, "s", [1, [2]], None, -3.5e2],
                       "after": True}).encode()
    expected = split(body, [])
    assert len(expected[0]) == 6
    for cut in range(len(body) + 1):  # one cut anywhere: inside a key, a string, a number
        assert split(body, [cut]) == expected
    assert split(body, list(range(len(body)))) == expected  # a byte at a time


@pytest.mark.parametrize("body", [
    b"[1, 2]", b'"items"', b"{}", b'{"items": null}', b'{"items": {"a": 1}}',
    b'{"kind": "Status", "code": 500}', b"", b'{"a" 1, "items": []}', b"not json"])
def test_a_body_that_is_not_a_list_is_given_back_whole(body: bytes) -> None:
    for cuts in ([], [1], list(range(len(body)))):
        assert split(body, cuts) == ([], body, False)


def test_a_body_whose_items_come_late_is_given_back_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ListSplitter, "HEAD_LIMIT", 100)
    late = json.dumps({"metadata": {"x": "y" * 200}, "items": [1, 2]}).encode()
    assert split(late, list(range(0, len(late), 10))) == ([], late, False)
    early = json.dumps({"metadata": {"x": "y" * 20}, "items": [1, 2]}).encode()
    assert split(early, list(range(0, len(early), 10)))[0] == [b"1", b"2"]


@pytest.mark.parametrize("body", [
    b'{"items": [1 2]}', b'{"items": [1,]}', b'{"items": [,1]}', b'{"items": [1,,2]}',
    b'{"items": [1}', b'{"items": [{"a": 1}}'])
def test_a_malformed_items_array_raises(body: bytes) -> None:
    with pytest.raises(ValueError, match="not well formed"):
        split(body, [])


@pytest.mark.parametrize("body", [b'{"items": [1, 2', b'{"items": [{"a": "b', b'{"items": ['])
def test_a_body_that_ends_inside_its_items_raises(body: bytes) -> None:
    splitter = ListSplitter()
    splitter.feed(body)
    with pytest.raises(ValueError, match="ended inside its items"):
        splitter.finish()


# -- the list-watch ---------------------------------------------------------------------------
def pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"web-{i}", "namespace": "ns", "resourceVersion": str(i + 1),
                         "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running"}}


def list_body(count: int) -> bytes:
    return json.dumps({"kind": "PodList", "apiVersion": "v1",
                       "metadata": {"resourceVersion": str(count)},
                       "items": [pod(i) for i in range(count)]}).encode()


class ChunkedServer:
    """A loopback HTTP server answering each request with ``status`` and the body parts
    given, as chunks; before each part after the first it waits for the matching event
    in :attr:`gates` (set by the test), at most 10 s, and records in :attr:`waited`
    whether it came."""

    def __init__(self, parts: list[bytes], status: int = 200) -> None:
        self.parts, self.status = parts, status
        self.gates = [threading.Event() for _ in parts[1:]]
        self.waited: list[bool] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.thread = threading.Thread(target=self._serve, name="test-chunked-server",
                                       daemon=True)
        self.thread.start()

    def client(self) -> ApiClient:
        config = Configuration()
        config.host = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        return ApiClient(config)

    def _serve(self) -> None:
        with contextlib.suppress(OSError):  # close() ends a server still waiting
            conn, _ = self.sock.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
                conn.sendall(f"HTTP/1.1 {self.status} X\r\nContent-Type: application/json\r\n"
                             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n".encode())
                for i, part in enumerate(self.parts):
                    if i:
                        self.waited.append(self.gates[i - 1].wait(10))
                    conn.sendall(b"%x\r\n%s\r\n" % (len(part), part))
                conn.sendall(b"0\r\n\r\n")

    def close(self) -> None:
        for gate in self.gates:
            gate.set()
        self.sock.close()
        self.thread.join(5)
        assert not self.thread.is_alive()


@pytest.fixture
def small_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(list_body_module, "LIST_READ_SIZE", 512)
    yield


def test_items_are_decoded_while_the_rest_of_the_body_is_still_on_its_way(
        small_reads: None) -> None:
    body = list_body(20)
    half = body.index(b'{"apiVersion"', len(body) // 2)  # items 0..9 whole, and more
    server = ChunkedServer([body[:half], body[half:]])
    decoded: list[Any] = []

    def loads(data: bytes) -> Any:  # the list-watch's decoder: counts items as decoded
        value = wire.loads(data)
        if isinstance(value, dict) and value.get("kind") == "Pod":
            decoded.append(value)
            if len(decoded) == 9:  # the first part's items, with the second not yet sent
                server.gates[0].set()
        return value

    try:
        listed = ClientListerWatcher(server.client(), PODS, "ns", loads=loads).list(ListOptions())
    finally:
        server.close()
    assert server.waited == [True]  # the second part was sent only after 9 items were decoded
    assert listed == {**wire.loads(body), "items": [pod(i) for i in range(20)]}
    assert [p["metadata"]["name"] for p in decoded] == [f"web-{i}" for i in range(20)]
    assert listed["items"][0]["spec"]["nodeName"] is listed["items"][19]["spec"]["nodeName"]


@pytest.mark.parametrize("read_size", [1, 7, 512, 1 << 20])
@pytest.mark.parametrize("kind", ["dicts", "structs", "models", "plain"])
def test_a_list_read_in_pieces_is_what_its_body_decodes_to(
        monkeypatch: pytest.MonkeyPatch, read_size: int, kind: str) -> None:
    monkeypatch.setattr(list_body_module, "LIST_READ_SIZE", read_size)
    body = list_body(12)
    rng = random.Random(read_size)
    cuts = sorted(rng.sample(range(1, len(body)), 8))
    server = ChunkedServer(pieces(body, cuts))
    for gate in server.gates:
        gate.set()
    options: dict[str, Any] = {
        "dicts": {}, "plain": {"share_strings": False, "untrack": False, "compact_dicts": False},
        "structs": {"object_type": struct_type(V1Pod)}, "models": {"object_type": V1Pod}}[kind]
    try:
        listed = ClientListerWatcher(server.client(), PODS, "ns", **options).list(ListOptions())
    finally:
        server.close()
    assert listed["metadata"] == {"resourceVersion": "12"}
    names = [item["metadata"]["name"] if isinstance(item, dict) else item.metadata.name
             for item in listed["items"]]
    assert names == [f"web-{i}" for i in range(12)]
    if kind in ("dicts", "plain"):
        assert listed["items"] == [pod(i) for i in range(12)]


def test_a_status_body_is_decoded_whole_and_raised() -> None:
    status = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "reason": "Expired", "code": 410, "message": "too old"}).encode()
    server = ChunkedServer([status[:10], status[10:]], status=410)
    for gate in server.gates:
        gate.set()
    try:
        with pytest.raises(Exception, match="too old") as raised:
            ClientListerWatcher(server.client(), PODS, "ns").list(ListOptions())
    finally:
        server.close()
    assert getattr(raised.value, "code", None) == 410


def test_a_body_cut_short_is_an_error_and_two_item_arrays_read_as_json_reads_them(
        small_reads: None) -> None:
    """A cut body is refused; a body with a second ``items`` member keeps the last array,
    as every JSON decoder (and Go's) does (it used to be refused)."""
    body = list_body(3)
    server = ChunkedServer([body[:-30]])
    try:
        with pytest.raises(ValueError, match="ended inside"):
            ClientListerWatcher(server.client(), PODS, "ns").list(ListOptions())
    finally:
        server.close()
    twice = body[:-1] + b',"items":[{"metadata":{"name":"last"}}]}'
    server = ChunkedServer([twice])
    try:
        listed = ClientListerWatcher(server.client(), PODS, "ns").list(ListOptions())
        assert listed == json.loads(twice)
        assert [i["metadata"]["name"] for i in listed["items"]] == ["last"]
    finally:
        server.close()
