"""A watch-list read in the reflector's own thread, initial events and all
(``StreamWatcher.take_bursts`` and ``hold``, ``reflector_watch._apply_bursts`` with a
ticker): the initial events reach the store in one replace, the events after the
bookmark in its chunk are applied next, the same stream is read on with no reader
thread, and the overdue-bookmark warning ticks from a timer."""

from __future__ import annotations

import gc
import json
import logging
import threading
import weakref
from typing import Any

import pytest

from client_cache.api.lists import INITIAL_EVENTS_ANNOTATION_KEY
from client_cache.api.watch import EventType
from client_cache.client.stream_watcher import StreamWatcher
from client_cache.errors import ClientCacheError
from client_cache.listwatch import ListWatch
from client_cache.reflector import ReflectorOptions, new_reflector_with_options
from client_cache.reflector_status import ReflectorStatus
from client_cache.util.clock import FakeClock
from tests.cache.test_reflector_inline import Loop, OpenResponse, line
from tests.fixtures import RecordingStore


def initial_events_end(rv: str) -> bytes:
    obj = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"resourceVersion": rv,
                        "annotations": {INITIAL_EVENTS_ANNOTATION_KEY: "true"}}}
    return json.dumps({"type": "BOOKMARK", "object": obj}).encode() + b"\n"


class WatchListRun:
    """A reflector with ``use_watch_list`` whose one watch is a StreamWatcher over an
    :class:`OpenResponse`, run in a thread of the test's own."""

    def __init__(self, clock: Any = None, status: ReflectorStatus | None = None) -> None:
        self.response = OpenResponse()
        self.store = RecordingStore()
        self.watches: list[StreamWatcher] = []
        self.options: list[Any] = []

        def watch(options: Any) -> StreamWatcher:
            self.options.append(options)
            if self.watches:  # only the first watch has a stream to read
                raise AssertionError("watched again")
            self.watches.append(StreamWatcher(self.response, name="inline-watch-list"))
            return self.watches[0]

        def unreachable(options: Any) -> Any:
            raise AssertionError("listed")

        options = ReflectorOptions(name="inline-watch-list", clock=clock, status=status)
        self.reflector = new_reflector_with_options(
            ListWatch(list_func=unreachable, watch_func=watch), None, self.store, options)
        self.reflector.use_watch_list = True
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.reflector.run, args=(self.stop,),
                                       name="test-reflector", daemon=True)
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(2)
        assert not self.thread.is_alive(), "the reflector outlived its stop"


def described(writes: list[tuple[str, Any]]) -> list[Any]:
    return [(op, sorted(o["metadata"]["name"] for o in obj)) if op == "replace" else
            (op, obj["metadata"]["name"], obj["metadata"]["resourceVersion"])
            for op, obj in writes]


def test_the_events_after_the_bookmark_in_its_chunk_come_next_from_the_same_stream() -> None:
    before = {t.name for t in threading.enumerate()}
    run = WatchListRun()
    try:
        run.response.chunks.put(line("ADDED", "a", "1") + line("ADDED", "b", "2")
                                + initial_events_end("3") + line("MODIFIED", "a", "4")
                                + line("DELETED", "b", "5"))
        writes = run.store.wait_for(3)
        assert described(writes) == [("replace", ["a", "b"]), ("update", "a", "4"),
                                     ("delete", "b", "5")]
        run.response.chunks.put(line("ADDED", "c", "6"))  # the stream is read on
        assert described(run.store.wait_for(4))[3] == ("add", "c", "6")
        assert run.reflector.last_sync_resource_version() == "6"
        assert run.options[0].send_initial_events is True and len(run.watches) == 1
        assert run.response.readers == ["test-reflector"]  # one read, in the loop's thread
        started = {t.name for t in threading.enumerate()} - before
        assert not [name for name in started if name.startswith("watch-")], started
    finally:
        run.finish()
    for thread in set(threading.enumerate()) - {t for t in threading.enumerate()
                                                 if t.name in before}:
        thread.join(1)  # the loop's timers end at its stop
        assert not thread.is_alive(), thread.name
    assert run.response.closed.is_set() and run.watches[0].result_chan().closed()
    watcher = weakref.ref(run.watches[0])
    run.watches.clear()
    gc.collect()
    assert watcher() is None, "the watch outlived the reflector's stop"


def test_a_bookmark_at_the_end_of_its_chunk_holds_nothing_back() -> None:
    run = WatchListRun()
    try:
        run.response.chunks.put(line("ADDED", "a", "1") + initial_events_end("2"))
        assert described(run.store.wait_for(1)) == [("replace", ["a"])]
        run.response.chunks.put(line("MODIFIED", "a", "3"))
        assert described(run.store.wait_for(2))[1] == ("update", "a", "3")
        assert run.response.readers == ["test-reflector"]
    finally:
        run.finish()


class Warnings(logging.Handler):
    """The reflector's warnings about the bookmark, waited for as they are logged."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.cond = threading.Condition()
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "bookmark" in record.getMessage():
            with self.cond:
                self.texts.append(record.getMessage())
                self.cond.notify_all()

    def wait_for(self, count: int) -> list[str]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.texts) >= count, 10), self.texts
            return list(self.texts)


class EventsSeen(ReflectorStatus):
    """A reflector status that wakes the test at each burst of watch events."""

    def __init__(self, clock: Any) -> None:
        super().__init__("pods", clock)
        self.cond = threading.Condition()

    def watch_event(self, when: float, count: int = 1) -> None:
        super().watch_event(when, count)
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, count: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.watch_events >= count, 10)


def test_the_overdue_bookmark_is_warned_of_every_ten_seconds_until_it_comes() -> None:
    clock = FakeClock(1000.0)
    status = EventsSeen(clock)
    warnings = Warnings()
    logger = logging.getLogger("client_cache.reflector")
    logger.addHandler(warnings)
    run = WatchListRun(clock, status)
    try:
        run.response.chunks.put(line("ADDED", "a", "1"))
        status.wait_for(1)  # the loop's timers are set: it is reading the stream
        clock.step(10)
        first = warnings.wait_for(1)[0]
        assert "bookmark event" in first and "initial events stream" in first, first
        clock.step(9)
        clock.step(1)  # ten seconds after the first warning: the timer was re-armed
        assert len(warnings.wait_for(2)) == 2
        run.response.chunks.put(initial_events_end("2"))
        assert described(run.store.wait_for(1)) == [("replace", ["a"])]
        clock.step(10)  # the loop that ended at the bookmark left no bookmark timer
        run.response.chunks.put(line("MODIFIED", "a", "3"))
        run.store.wait_for(2)
        assert len(warnings.texts) == 2, warnings.texts
    finally:
        logger.removeHandler(warnings)
        run.finish()


def test_hold_is_only_for_an_open_take() -> None:
    w = StreamWatcher(OpenResponse(), name="hold")
    with pytest.raises(ClientCacheError, match="take_bursts"):
        w.hold([])
    w.stop()


def held_after_a(name: str, read: int = 1) -> tuple[OpenResponse, StreamWatcher]:
    """A watcher whose first take read a chunk of "a" and "b", held what came after its
    first ``read`` events, and closed."""
    response = OpenResponse()
    w = StreamWatcher(response, name=name)
    take = w.take_bursts()
    assert take is not None
    response.chunks.put(line("ADDED", "a", "1") + line("ADDED", "b", "2"))
    w.hold(next(take)[read:])
    take.close()
    return response, w


def names_read_on(response: OpenResponse, w: StreamWatcher) -> list[list[str]]:
    """The next take's lists, as names, with a chunk of "c" and the stream's end behind."""
    assert not response.closed.is_set()  # held: the stream stays open
    take = w.take_bursts()
    assert take is not None and w.take_bursts() is None  # one take at a time
    response.chunks.put(line("ADDED", "c", "3"))
    response.chunks.put(None)
    names = [[e.object["metadata"]["name"] for e in b] for b in take]
    take.close()
    assert response.closed.is_set() and w.result_chan().closed()
    w.stop()
    return names


def test_a_held_stream_gives_the_rest_back_first_then_reads_on() -> None:
    assert names_read_on(*held_after_a("held")) == [["b"], ["c"]]


def test_an_empty_rest_held_keeps_the_stream_and_adds_no_list() -> None:
    """The bookmark was its chunk's last event: nothing comes before the stream's next."""
    assert names_read_on(*held_after_a("empty-rest", read=2)) == [["c"]]


def test_a_take_closed_without_hold_closes_the_stream() -> None:
    response = OpenResponse()
    w = StreamWatcher(response, name="closed")
    take = w.take_bursts()
    assert take is not None
    response.chunks.put(line("ADDED", "a", "1"))
    assert [e.type for e in next(take)] == [EventType.ADDED]
    take.close()
    assert response.closed.is_set() and w.result_chan().closed()
    again = w.take_bursts()
    assert again is not None and list(again) == []  # the stream has ended
    w.stop()


def test_stop_closes_a_stream_held_between_two_takes() -> None:
    response, w = held_after_a("stopped")
    w.stop()
    assert response.closed.is_set() and w.result_chan().closed()
    after = w.take_bursts()
    assert after is not None and list(after) == []  # the held events went with the stop


def test_the_watch_loop_still_reads_a_plain_watch_whole() -> None:
    """The reflector's own watch (no watch-list) ends with its stream, as before."""
    loop = Loop()
    loop.response.chunks.put(line("ADDED", "a", "1") + initial_events_end("2"))
    loop.response.chunks.put(None)
    assert loop.outcome() is False
    assert [op for op, _ in loop.store.writes] == ["add"]
    assert loop.reflector.last_sync_resource_version() == "2"
    assert loop.response.closed.is_set()
