"""watch.py: event types, fakes, broadcaster, and StreamWatcher over real loopback HTTP."""

from __future__ import annotations

import dataclasses
import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3

from client_cache.api.watch import (
    Broadcaster,
    Event,
    EventType,
    FullChannelBehavior,
    ProxyWatcher,
    new_empty_watch,
    new_fake,
    new_fake_with_chan_size,
    new_race_free_fake,
)
from client_cache.client.stream_watcher import StreamWatcher, json_lines
from client_cache.codec import _wire as wire
from client_cache.delta_fifo import Delta, DeltaType
from client_cache.util.chan import CLOSED, Chan, ChanClosedError, select
from tests.fixtures import pod as make_pod

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("native_impl")


def test_event_type_values() -> None:
    assert [t.value for t in EventType] == ["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]


def test_empty_watch_is_closed() -> None:
    w = new_empty_watch()
    assert w.result_chan().recv(1) == (CLOSED, False)
    w.stop()


def test_fake_watcher_is_unbuffered() -> None:
    w = new_fake()
    received: list[Event] = []
    sent = threading.Event()

    def producer() -> None:
        w.add("a")
        sent.set()

    t = threading.Thread(target=producer, name="test-fake-producer", daemon=True)
    t.start()
    assert not sent.wait(0.05)  # blocked until somebody receives
    value, _ = w.result_chan().recv(5)
    received.append(value)
    assert sent.wait(5)
    t.join(1)
    assert received == [Event(EventType.ADDED, "a")]
    w.stop()
    w.stop()  # idempotent
    assert w.is_stopped()
    assert w.result_chan().recv(1) == (CLOSED, False)
    with pytest.raises(ChanClosedError):
        w.modify("b")  # Go panics: send on closed channel
    w.reset()
    assert not w.is_stopped()


def test_buffered_fake_and_actions() -> None:
    w = new_fake_with_chan_size(4)
    w.add(1)
    w.modify(2)
    w.delete(3)
    w.error({"kind": "Status"})
    got = [w.result_chan().recv(1)[0] for _ in range(4)]
    assert [e.type for e in got] == [EventType.ADDED, EventType.MODIFIED, EventType.DELETED,
                                     EventType.ERROR]


def test_race_free_fake() -> None:
    w = new_race_free_fake()
    w.add(1)
    w.stop()
    w.add(2)  # ignored after stop
    assert w.result_chan().recv(1) == (Event(EventType.ADDED, 1), True)
    assert w.result_chan().recv(1) == (CLOSED, False)
    full = new_race_free_fake()
    for i in range(100):
        full.add(i)
    with pytest.raises(RuntimeError, match="channel full"):
        full.add(100)


def test_proxy_watcher() -> None:
    chan: Chan[Event] = Chan(2)
    w = ProxyWatcher(chan)
    assert w.result_chan() is chan and not w.stopping()
    w.stop()
    assert w.stopping() and w.stop_chan().is_closed()


def test_broadcaster_prefix_order_and_shutdown() -> None:
    b = Broadcaster(10, FullChannelBehavior.WAIT_IF_CHANNEL_FULL)
    w1 = b.watch_with_prefix([Event(EventType.ADDED, "old")])
    w2 = b.watch()
    b.action(EventType.MODIFIED, "x")
    w2.stop()
    b.action(EventType.DELETED, "y")  # the stopped watcher is skipped
    b.shutdown()
    events = []
    while True:
        ev, ok = w1.result_chan().recv(1)
        if not ok:
            break
        events.append(ev)
    assert [e.object for e in events] == ["old", "x", "y"]
    assert w2.result_chan().recv(1) == (Event(EventType.MODIFIED, "x"), True)
    assert w2.result_chan().recv(1) == (CLOSED, False)
    with pytest.raises(RuntimeError):
        b.action(EventType.ADDED, "late")


def test_broadcaster_drop_if_full() -> None:
    b = Broadcaster(1, FullChannelBehavior.DROP_IF_CHANNEL_FULL)
    w = b.watch()
    b.action(EventType.ADDED, 1)
    b.action(EventType.ADDED, 2)  # dropped: the watcher's buffer is full
    assert w.result_chan().recv(1) == (Event(EventType.ADDED, 1), True)
    assert w.result_chan().recv(0.05) == (None, False)
    b.shutdown()


# --- StreamWatcher over a real socket -----------------------------------------------------


class ScriptedServer:
    """Serves one chunked HTTP response per connection, fed from a queue of actions:
    bytes to send as a chunk, "end" (clean end of stream), "cut" (drop the connection
    mid-stream)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.port = self.sock.getsockname()[1]
        self.actions: queue.Queue[Any] = queue.Queue()
        self.connected = threading.Event()
        self.conn: socket.socket | None = None
        self.thread = threading.Thread(target=self._serve, name="test-scripted-server",
                                       daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        self.conn = conn
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Transfer-Encoding: chunked\r\n\r\n")
            self.connected.set()
            while True:
                action = self.actions.get()
                try:
                    if action == "end":
                        conn.sendall(b"0\r\n\r\n")
                        return
                    if action == "cut":
                        conn.sendall(b"20\r\n{\"type\":\"ADDED\"")  # a chunk cut short
                        return
                    if action == "quit":
                        return
                    conn.sendall(b"%x\r\n%s\r\n" % (len(action), action))
                except OSError:
                    return

    def send_event(self, event_type: str, obj: Any) -> None:
        self.actions.put(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")

    def close(self) -> None:
        self.actions.put("quit")
        self.sock.close()
        self.thread.join(2)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer()
    yield srv
    srv.close()


def open_watch(server: ScriptedServer, read_timeout: float | None = None) -> StreamWatcher:
    http = urllib3.PoolManager(retries=False)
    resp = http.request(
        "GET",
        f"http://127.0.0.1:{server.port}/api/v1/pods?watch=true",
        preload_content=False,
        timeout=urllib3.Timeout(connect=5, read=read_timeout),
    )
    return StreamWatcher(resp, name="test-pods")


def pod(name: str, rv: str) -> dict[str, Any]:
    return make_pod(name, rv=rv)


def drain(w: StreamWatcher, timeout: float = 5) -> list[Event]:
    out = []
    while True:
        ev, ok = w.result_chan().recv(timeout)
        if not ok:
            assert ev is CLOSED, "the watch neither delivered nor closed in time"
            return out
        out.append(ev)


def test_stream_watcher_delivers_in_order_then_closes(server: ScriptedServer) -> None:
    w = open_watch(server)
    server.send_event("ADDED", pod("a", "1"))
    server.send_event("MODIFIED", pod("a", "2"))
    server.send_event("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "3"}})
    server.send_event("DELETED", pod("a", "4"))
    server.actions.put("end")
    events = drain(w)
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "BOOKMARK", "DELETED"]
    assert [e.object["metadata"]["resourceVersion"] for e in events] == ["1", "2", "3", "4"]
    assert w.join(1)


def test_stream_watcher_server_error_event(server: ScriptedServer) -> None:
    w = open_watch(server)
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    server.send_event("ERROR", status)
    server.actions.put("end")
    events = drain(w)
    assert events == [Event(EventType.ERROR, status)]


def test_stream_watcher_garbled_line(server: ScriptedServer) -> None:
    w = open_watch(server)
    server.send_event("ADDED", pod("a", "1"))
    server.actions.put(b"{this is not json\n")
    events = drain(w)
    assert events[0].type is EventType.ADDED
    assert events[1].type is EventType.ERROR
    status = events[1].object
    assert status["code"] == 500
    assert status["details"]["causes"][0]["reason"] == "ClientWatchDecoding"
    assert "unable to decode an event from the watch stream" in status["message"]
    assert len(events) == 2 and w.join(1)


def test_stream_watcher_truncated_stream(server: ScriptedServer) -> None:
    w = open_watch(server)
    server.send_event("ADDED", pod("a", "1"))
    server.actions.put("cut")
    events = drain(w)
    assert [e.type for e in events] == ["ADDED"]  # then a clean close, no hang, no error
    assert w.join(1)


def test_stream_watcher_stop_on_stalled_watch(server: ScriptedServer) -> None:
    w = open_watch(server)
    assert server.connected.wait(5)
    server.send_event("ADDED", pod("a", "1"))
    assert w.result_chan().recv(5)[0].type is EventType.ADDED
    # nothing more arrives: the reader is blocked in a socket read
    start = time.monotonic()
    w.stop()
    assert w.join(1.0), "reader thread still alive 1 s after stop()"
    assert time.monotonic() - start < 1.0
    assert w.result_chan().recv(1) == (CLOSED, False)
    w.stop()


class SlowClosingResponse:
    """A response whose reader, once its socket is shut down, takes 0.3 s to wind down
    (as a reader does that is decoding a large event when stop comes)."""

    def __init__(self) -> None:
        self.shut = threading.Event()

    def stream(self, amt: int, decode_content: bool = True) -> Iterator[bytes]:
        self.shut.wait(10)
        time.sleep(0.3)  # the simulated wind-down, not a synchronisation
        raise OSError("connection shut down")
        yield b""  # pragma: no cover - makes this a generator

    def shutdown(self) -> None:
        self.shut.set()

    def close(self) -> None:
        pass


def test_stream_watcher_stop_waits_for_its_reader_thread() -> None:
    w = StreamWatcher(SlowClosingResponse(), name="slow-close")
    assert not [t for t in threading.enumerate() if t.name == "watch-slow-close"]
    w.result_chan()  # the first call starts the reader thread
    reader = [t for t in threading.enumerate() if t.name == "watch-slow-close"]
    assert len(reader) == 1
    w.stop()
    assert not reader[0].is_alive(), "the reader thread outlived stop()"


def test_stream_watcher_idle_timeout(server: ScriptedServer) -> None:
    w = open_watch(server, read_timeout=0.2)
    server.send_event("ADDED", pod("a", "1"))
    start = time.monotonic()
    events = drain(w)
    assert [e.type for e in events] == ["ADDED"]
    assert 0.15 < time.monotonic() - start < 5
    assert w.join(1)


def test_stream_watcher_stop_while_consumer_is_slow(server: ScriptedServer) -> None:
    http = urllib3.PoolManager(retries=False)
    resp = http.request("GET", f"http://127.0.0.1:{server.port}/", preload_content=False)
    w = StreamWatcher(resp, name="test-slow", chan_size=1)
    for i in range(5):
        server.send_event("ADDED", pod(f"p{i}", str(i)))
    first, _ = w.result_chan().recv(5)
    assert first.object["metadata"]["name"] == "p0"
    w.stop()  # the reader is blocked handing over an event, not reading
    assert w.join(1.0)
    assert select([w.result_chan()], timeout=1)[0] == 0


def test_stream_watcher_more_events_than_its_buffer(server: ScriptedServer) -> None:
    """A reader blocked on a full result channel resumes when the consumer makes room."""
    http = urllib3.PoolManager(retries=False)
    resp = http.request("GET", f"http://127.0.0.1:{server.port}/", preload_content=False)
    w = StreamWatcher(resp, name="test-buffer", chan_size=3)
    for i in range(50):
        server.send_event("ADDED", pod(f"p{i}", str(i)))
    server.actions.put("end")
    events = drain(w)
    assert [e.object["metadata"]["resourceVersion"] for e in events] == [str(i) for i in range(50)]


def test_stream_watcher_with_stdlib_json(server: ScriptedServer) -> None:
    """The stdlib decoder works the same as the default (orjson when installed)."""
    http = urllib3.PoolManager(retries=False)
    resp = http.request("GET", f"http://127.0.0.1:{server.port}/", preload_content=False)
    w = StreamWatcher(resp, json_lines(json.loads), name="test-stdlib")
    server.send_event("ADDED", pod("a", "1"))
    server.actions.put(b"{garbled\n")
    events = drain(w)
    assert [e.type for e in events] == ["ADDED", "ERROR"]
    assert wire.BACKEND in ("orjson", "json")


def test_stream_watcher_lines_across_and_within_chunks(server: ScriptedServer) -> None:
    """Several events in one chunk, blank lines, and one event split over two chunks."""
    w = open_watch(server)
    lines = [json.dumps({"type": "ADDED", "object": pod(f"p{i}", str(i))}).encode()
             for i in range(4)]
    server.actions.put(lines[0] + b"\n\n" + lines[1] + b"\n" + lines[2][:10])
    server.actions.put(lines[2][10:] + b"\n" + lines[3] + b"\n")
    server.actions.put("end")
    events = drain(w)
    assert [e.object["metadata"]["name"] for e in events] == ["p0", "p1", "p2", "p3"]


def test_stream_watcher_events_before_a_garbled_line_in_their_chunk(
        server: ScriptedServer) -> None:
    """Events decoded ahead of a garbled line in the same chunk are delivered, in order,
    before the decoding error; the watch then ends."""
    w = open_watch(server)
    lines = [json.dumps({"type": "ADDED", "object": pod(f"p{i}", str(i))}).encode()
             for i in range(3)]
    server.actions.put(b"\n".join(lines) + b"\n{garbled\n" + lines[0] + b"\n")
    events = drain(w)
    assert [e.type for e in events] == ["ADDED", "ADDED", "ADDED", "ERROR"]
    assert [e.object["metadata"]["name"] for e in events[:3]] == ["p0", "p1", "p2"]
    assert events[3].object["details"]["causes"][0]["reason"] == "ClientWatchDecoding"
    assert w.join(1)


def test_stream_watcher_chunk_of_more_events_than_its_buffer(server: ScriptedServer) -> None:
    """One chunk holding more events than the channel has room for: what fits goes at
    once, the rest as the consumer makes room, nothing lost or reordered."""
    http = urllib3.PoolManager(retries=False)
    resp = http.request("GET", f"http://127.0.0.1:{server.port}/", preload_content=False)
    w = StreamWatcher(resp, name="test-burst", chan_size=4)
    server.actions.put(b"".join(
        json.dumps({"type": "ADDED", "object": pod(f"p{i}", str(i))}).encode() + b"\n"
        for i in range(25)))
    server.actions.put("end")
    events = drain(w)
    assert [e.object["metadata"]["resourceVersion"] for e in events] == [str(i) for i in range(25)]
    assert w.join(1)


def test_stream_watcher_garbled_line_after_more_events_than_its_buffer(
        server: ScriptedServer) -> None:
    """A chunk whose events overflow the channel, then a garbled line: every event before
    it reaches the consumer in order as room is made, then the decoding error."""
    http = urllib3.PoolManager(retries=False)
    resp = http.request("GET", f"http://127.0.0.1:{server.port}/", preload_content=False)
    w = StreamWatcher(resp, name="test-burst-error", chan_size=2)
    server.actions.put(b"".join(
        json.dumps({"type": "ADDED", "object": pod(f"p{i}", str(i))}).encode() + b"\n"
        for i in range(7)) + b"{garbled\n")
    events = drain(w)
    assert [e.type for e in events] == ["ADDED"] * 7 + ["ERROR"]
    assert [e.object["metadata"]["name"] for e in events[:7]] == [f"p{i}" for i in range(7)]
    assert w.join(1)


@pytest.mark.parametrize("cls, kind", [
    (Event, EventType.MODIFIED), (Delta, DeltaType.UPDATED)], ids=["Event", "Delta"])
def test_events_and_deltas_are_frozen_values(cls: Any, kind: Any) -> None:
    """Event and Delta set their fields through their own __init__ and stay frozen
    dataclasses: built by position or keyword, equal and hashable by value, refusing
    assignment and missing fields, copied by dataclasses.replace."""
    obj = {"metadata": {"name": "a"}}
    one = cls(kind, obj)
    assert one == cls(type=kind, object={"metadata": {"name": "a"}})
    assert (one.type, one.object) == (kind, obj)
    assert hash(cls(kind, "x")) == hash(cls(kind, "x"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.object = {}
    with pytest.raises(TypeError):
        cls(kind)
    assert dataclasses.replace(one, object="b") == cls(kind, "b")
    assert not hasattr(one, "__dict__")
