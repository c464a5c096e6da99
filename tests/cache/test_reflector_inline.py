"""A reflector reading its StreamWatcher's stream in its own thread
(``StreamWatcher.take_bursts``, ``reflector_watch._apply_bursts``): the events, stop, a
resync failure, the idle timer and a decode error, each as the channel loop handles them,
with no reader thread."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from client_cache.api.watch import EventType
from client_cache.client.stream_watcher import StreamWatcher
from client_cache.errors import ApiStatusError, StopRequestedError
from client_cache.listwatch import ListWatch
from client_cache.reflector import (
    Reflector,
    ReflectorOptions,
    WatchStalledError,
    new_reflector_with_options,
)
from client_cache.util.chan import Chan
from client_cache.util.clock import FakeClock
from tests.fixtures import RecordingStore


def line(kind: str, name: str, rv: str) -> bytes:
    obj = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


class OpenResponse:
    """A watch response that yields the chunks put on :attr:`chunks` and otherwise
    blocks, as an open stream does; None ends the stream, an exception is raised.
    ``shutdown`` (what ``StreamWatcher.stop`` calls) fails the read in progress."""

    def __init__(self) -> None:
        self.chunks: queue.Queue[bytes | BaseException | None] = queue.Queue()
        self.readers: list[str] = []
        self.closed = threading.Event()

    def stream(self, amt: int, decode_content: bool = True) -> Iterator[bytes]:
        self.readers.append(threading.current_thread().name)
        while True:
            chunk = self.chunks.get()
            if chunk is None:
                return
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk

    def shutdown(self) -> None:
        self.chunks.put(OSError("connection shut down"))

    def close(self) -> None:
        self.closed.set()


def unreachable(options: Any) -> Any:
    raise AssertionError("not called")


def reflector(store: RecordingStore, clock: Any = None) -> Reflector:
    options = ReflectorOptions(name="inline") if clock is None else ReflectorOptions(
        name="inline", clock=clock)
    return new_reflector_with_options(ListWatch(list_func=unreachable, watch_func=unreachable),
                                      None, store, options)


class Loop:
    """``handle_watch`` on a StreamWatcher over an :class:`OpenResponse`, in a thread of
    the test's own; :meth:`outcome` is what it returned or raised."""

    def __init__(self, clock: Any = None, idle: float = 60.0) -> None:
        self.response = OpenResponse()
        self.store = RecordingStore()
        self.reflector = reflector(self.store, clock)
        self.watch = StreamWatcher(self.response, name="inline-test")
        self.stop = threading.Event()
        self.errors: Chan[BaseException] = Chan(1)
        self.result: list[Any] = []
        start = self.reflector.clock.monotonic() - 5.0  # not a very short watch

        def body() -> None:
            try:
                self.result.append(self.reflector._handle_watch(
                    start, self.watch, self.stop, self.errors, idle=idle))
            except BaseException as err:
                self.result.append(err)

        self.thread = threading.Thread(target=body, name="test-watch-loop", daemon=True)
        self.thread.start()

    def outcome(self) -> Any:
        self.thread.join(5)
        assert not self.thread.is_alive(), "the watch loop did not end"
        self.watch.stop()
        return self.result[0]


def test_events_are_applied_in_the_loops_thread_in_order() -> None:
    loop = Loop()
    loop.response.chunks.put(line("ADDED", "a", "1") + line("ADDED", "b", "2")[:10])
    loop.response.chunks.put(line("ADDED", "b", "2")[10:] + line("MODIFIED", "a", "3"))
    loop.response.chunks.put(line("DELETED", "b", "4"))
    loop.response.chunks.put(None)  # the server ends the watch
    assert loop.outcome() is False
    assert loop.response.readers == ["test-watch-loop"]  # no reader thread
    assert len(loop.store.writes) == 4
    assert sorted(loop.store.store.list_keys()) == ["ns/a"]
    assert loop.store.store.get_by_key("ns/a")[0]["metadata"]["resourceVersion"] == "3"
    assert loop.reflector.last_sync_resource_version() == "4"
    assert loop.response.closed.is_set()
    assert loop.watch.result_chan().closed()


def test_stop_interrupts_a_read_in_progress() -> None:
    loop = Loop()
    loop.response.chunks.put(line("ADDED", "a", "1"))
    loop.store.wait_for(1)  # the loop is now blocked in its next read
    loop.stop.set()
    assert isinstance(loop.outcome(), StopRequestedError)
    assert loop.watch.is_stopped() and loop.response.closed.is_set()
    assert loop.reflector.last_sync_resource_version() == "1"


def test_a_resync_failure_interrupts_a_read_in_progress() -> None:
    loop = Loop()
    loop.response.chunks.put(line("ADDED", "a", "1"))
    loop.store.wait_for(1)
    failure = RuntimeError("resync failed")
    loop.errors.try_send(failure)
    assert loop.outcome() is failure
    assert loop.watch.is_stopped()


def test_a_quiet_watch_stalls_after_idle_seconds_since_its_last_events() -> None:
    clock = FakeClock(1000.0)
    loop = Loop(clock=clock, idle=30.0)
    loop.response.chunks.put(line("ADDED", "a", "1"))
    loop.store.wait_for(1)
    clock.step(20)  # the timer, set at the start, fires early: 20 s quiet, re-armed for 10
    loop.response.chunks.put(line("MODIFIED", "a", "2"))
    loop.store.wait_for(2)  # an event at 1020: the re-armed timer finds 10 s of quiet
    clock.step(10)
    assert loop.thread.is_alive() and not loop.watch.is_stopped()
    clock.step(20)  # 30 s since the event at 1020
    err = loop.outcome()
    assert isinstance(err, WatchStalledError), err
    assert str(err) == "inline: no watch event or bookmark for 30s"
    assert loop.reflector.last_sync_resource_version() == "2"
    assert not clock.has_waiters()  # the idle timer ended with the loop


def test_an_idle_check_racing_the_end_of_the_loop_leaves_no_timer() -> None:
    """The idle timer fires while the loop ends: the check either re-arms the timer
    before the end stops it, or finds the loop ended and does nothing."""
    clock = FakeClock(1000.0)
    loop = Loop(clock=clock, idle=30.0)
    loop.response.chunks.put(line("ADDED", "a", "1"))
    loop.store.wait_for(1)
    loop.response.chunks.put(None)  # the server ends the watch ...
    clock.step(20)  # ... while the idle check runs (re-arming, the watch not quiet long)
    assert loop.outcome() is False
    assert not clock.has_waiters()
    clock.step(60)  # nothing left to fire


def test_a_decode_error_applies_the_events_before_it_then_raises() -> None:
    loop = Loop()
    loop.response.chunks.put(line("ADDED", "a", "1") + b'{"type": "ADDED", "object": \n')
    err = loop.outcome()
    assert isinstance(err, ApiStatusError) and err.code == 500, err
    assert err.reason == "InternalError" and "ClientWatchDecoding" in json.dumps(err.status())
    assert len(loop.store.writes) == 1 and loop.reflector.last_sync_resource_version() == "1"


def test_an_error_event_raises_its_status_after_the_events_before_it() -> None:
    loop = Loop()
    gone = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
            "reason": "Expired", "message": "too old resource version"}
    loop.response.chunks.put(line("ADDED", "a", "1") + json.dumps(
        {"type": "ERROR", "object": gone}).encode() + b"\n" + line("ADDED", "b", "2"))
    err = loop.outcome()
    assert isinstance(err, ApiStatusError) and err.code == 410
    assert len(loop.store.writes) == 1  # nothing after the error is applied


def test_no_thread_outlives_the_loop() -> None:
    before = set(threading.enumerate())
    loop = Loop()
    loop.response.chunks.put(line("ADDED", "a", "1"))
    loop.store.wait_for(1)
    loop.stop.set()
    loop.outcome()
    for thread in set(threading.enumerate()) - before:
        thread.join(1)  # the idle timer's thread ends at its stop
        assert not thread.is_alive(), thread.name


def test_take_bursts_and_the_result_channel_exclude_each_other() -> None:
    taken = StreamWatcher(OpenResponse(), name="taken")
    bursts = taken.take_bursts()
    assert bursts is not None and taken.take_bursts() is None
    taken.stop()
    assert list(bursts) == [] and taken.result_chan().closed()
    threaded = StreamWatcher(OpenResponse(), name="threaded")
    threaded.result_chan()
    assert threaded.take_bursts() is None
    threaded.stop()
    assert threaded.join(1)


def test_a_watcher_stopped_before_anyone_reads_has_a_closed_channel_and_no_thread() -> None:
    w = StreamWatcher(OpenResponse(), name="never-read")
    w.stop()
    assert w.result_chan().closed() and w.join(0)
    assert not [t for t in threading.enumerate() if t.name == "watch-never-read"]


@pytest.mark.parametrize("kind", ["ADDED", "BOOKMARK"])
def test_take_bursts_lists_a_chunks_events_together(kind: str) -> None:
    response = OpenResponse()
    w = StreamWatcher(response, name="lists")
    bursts = w.take_bursts()
    assert bursts is not None
    response.chunks.put(line(kind, "a", "1") + line(kind, "b", "2"))
    response.chunks.put(None)
    got = [[(e.type, e.object["metadata"]["name"]) for e in burst] for burst in bursts]
    assert got == [[(EventType(kind), "a"), (EventType(kind), "b")]]
