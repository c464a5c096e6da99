"""record: the event broadcaster, recorder and correlator on the embedded server."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.record import (
    CoreV1EventSink,
    EventBroadcaster,
    EventSinkError,
    EventSource,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import TimedEventSink, eventually

FOO = {"apiVersion": "example.com/v1", "kind": "Foo",
       "metadata": {"name": "foo", "namespace": "default", "uid": "u-1"}}


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer() as srv:
        yield srv


def events(server: EmbeddedApiServer) -> list[Any]:
    api = server.api_client()
    try:
        return list(CoreV1Api(api).list_namespaced_event("default").items)
    finally:
        api.close()


def recorder(server: EmbeddedApiServer, **options: Any) -> tuple[EventBroadcaster, Any]:
    broadcaster = EventBroadcaster(**options)
    broadcaster.start_recording_to_sink(CoreV1EventSink(server.api_client(), timeout=2.0))
    return broadcaster, broadcaster.new_recorder(EventSource(component="test-controller"))


def test_repeats_become_one_event_and_the_spam_filter_keeps_25(
        server: EmbeddedApiServer) -> None:
    """1,000 identical events: the first creates the Event, the next 24 patch its count;
    the spam filter (burst 25, one token per 5 minutes) drops the other 975."""
    broadcaster, rec = recorder(server)
    for _ in range(1000):
        rec.event(FOO, "Normal", "Synced", "Foo synced successfully")
    assert broadcaster.shutdown(5) == []
    stored = events(server)
    assert len(stored) == 1
    assert stored[0].count == 25 and stored[0].reason == "Synced"
    assert stored[0].involved_object.kind == "Foo" and stored[0].source.component == \
        "test-controller"
    assert broadcaster.spam_filtered() == 975 and broadcaster.dropped() == 0


def test_thirty_reasons_in_a_burst_25_sent(server: EmbeddedApiServer) -> None:
    broadcaster, rec = recorder(server)
    for i in range(30):
        rec.eventf(FOO, "Warning", f"Reason{i}", "attempt %d failed", i)
    assert broadcaster.shutdown(5) == []
    assert len(events(server)) == 25 and broadcaster.spam_filtered() == 5


def test_similar_events_are_aggregated_after_ten(server: EmbeddedApiServer) -> None:
    """Same reason, 12 different messages: 9 Events of their own, then one combined Event
    for the 10th to 12th, counted."""
    broadcaster, rec = recorder(server)
    for i in range(12):
        rec.event(FOO, "Warning", "Failed", f"failure number {i}")
    assert broadcaster.shutdown(5) == []
    stored = events(server)
    combined = [e for e in stored if e.message.startswith("(combined from similar events)")]
    assert len(stored) == 10 and len(combined) == 1
    assert combined[0].count == 3 and combined[0].message.endswith("failure number 11")


def test_a_down_server_does_not_block_and_gets_the_event_later(
        server: EmbeddedApiServer) -> None:
    tries: list[float] = []

    class Counting(CoreV1EventSink):
        def create(self, event: dict[str, Any]) -> dict[str, Any]:
            tries.append(time.monotonic())
            return super().create(event)

    server.fail_next(3, 500)  # the next three requests: the event's first three tries
    broadcaster = EventBroadcaster(sleep_duration=0.05)
    broadcaster.start_recording_to_sink(Counting(server.api_client(), timeout=2.0))
    rec = broadcaster.new_recorder(EventSource(component="test-controller"))
    try:
        started = time.monotonic()
        rec.event(FOO, "Normal", "Started", "starting")
        assert time.monotonic() - started < 0.05  # the caller never waits for the server
        eventually(lambda: len(tries) == 4, 10, "not retried")
    finally:
        assert broadcaster.shutdown(5) == []
    assert len(events(server)) == 1 and broadcaster.failed() == 0


def test_shutdown_writes_everything_queued_and_returns_when_written(
        server: EmbeddedApiServer) -> None:
    """Shutdown with time enough writes all 100 queued events to the server and returns
    as soon as the last write has finished (no pause or poll after it). How fast the
    server takes 100 writes is the machine's business, not this test's (it is bench
    material); what the broadcaster adds after the last write is."""
    sink = TimedEventSink(server.api_client(), timeout=2.0)
    broadcaster = EventBroadcaster()
    broadcaster.start_recording_to_sink(sink)
    rec = broadcaster.new_recorder(EventSource(component="test-controller"))
    for i in range(100):
        rec.event({**FOO, "metadata": {**FOO["metadata"], "name": f"foo-{i}"}},
                  "Normal", "Synced", "ok")
    assert broadcaster.shutdown(60) == []
    returned = time.monotonic()
    assert len(sink.finished) == 100 and broadcaster.dropped() == 0
    assert returned - sink.finished[-1] < 0.5
    assert len(events(server)) == 100


def test_shutdown_keeps_its_bound_and_drops_what_is_left() -> None:
    """A sink stuck in a write: shutdown(0.2) gives up at its deadline (plus the half
    second it grants a thread in the middle of a request), names the stuck watcher, and
    once that write ends the events still queued are dropped and counted, not written."""
    entered, release = threading.Event(), threading.Event()
    written: list[str] = []

    class StuckSink:
        def create(self, event: dict[str, Any]) -> dict[str, Any]:
            entered.set()
            release.wait(30)
            written.append(event["involvedObject"]["name"])
            return event

        def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
            raise EventSinkError("no", 404, retry=False)

    broadcaster = EventBroadcaster()
    broadcaster.start_recording_to_sink(StuckSink())
    rec = broadcaster.new_recorder(EventSource(component="c"))
    for i in range(10):
        rec.event({**FOO, "metadata": {**FOO["metadata"], "name": f"f{i}"}}, "Normal",
                  "R", "m")
    assert entered.wait(5)
    started = time.monotonic()
    late = broadcaster.shutdown(0.2)
    took = time.monotonic() - started
    assert [name.startswith("record-watcher-") for name in late] == [True]
    assert 0.2 <= took < 5
    release.set()
    threads = [t for t in threading.enumerate() if t.name in late]
    for thread in threads:
        thread.join(5)
        assert not thread.is_alive()
    assert written == ["f0"] and broadcaster.dropped() == 9


def test_full_queue_drops_and_counts() -> None:
    release = threading.Event()
    written: list[str] = []

    class SlowSink:
        def create(self, event: dict[str, Any]) -> dict[str, Any]:
            release.wait(5)
            written.append(event["involvedObject"]["name"])
            return event

        def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
            raise EventSinkError("no", 404, retry=False)

    broadcaster = EventBroadcaster(max_queued=5)
    broadcaster.start_recording_to_sink(SlowSink())
    rec = broadcaster.new_recorder(EventSource(component="c"))
    for i in range(20):
        rec.event({**FOO, "metadata": {**FOO["metadata"], "name": f"f{i}"}}, "Normal",
                  "R", "m")
    eventually(lambda: broadcaster.dropped() >= 14, 5)
    release.set()
    assert broadcaster.shutdown(5) == []
    assert len(written) + broadcaster.dropped() == 20 and broadcaster.dropped() >= 14


def test_bad_input_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    broadcaster = EventBroadcaster()
    seen: list[dict[str, Any]] = []
    broadcaster.start_event_watcher(seen.append)
    broadcaster.start_logging(logging.getLogger("test.events"))
    rec = broadcaster.new_recorder(EventSource(component="c"))
    with caplog.at_level(logging.INFO):
        rec.event(FOO, "Fatal", "R", "m")  # not Normal or Warning
        rec.event({"metadata": {"name": "x", "namespace": "default"}}, "Normal", "R", "m")
        rec.event({"metadata": {"name": "x", "namespace": "default"}}, "Normal", "Made", "ok",
                  kind="ConfigMap", api_version="v1")
        assert broadcaster.shutdown(5) == []
    assert [e["reason"] for e in seen] == ["Made"]
    assert "Unsupported event type" in caplog.text and "kind is unknown" in caplog.text
    assert "object=ConfigMap default/x type=Normal reason=Made" in caplog.text


def test_an_event_names_its_reporter_in_the_reporting_fields(
        server: EmbeddedApiServer) -> None:
    """Issue 59: as client-go's makeEvent, reportingComponent and reportingInstance carry
    the source's component and host (they were empty)."""
    broadcaster = EventBroadcaster()
    broadcaster.start_recording_to_sink(CoreV1EventSink(server.api_client(), timeout=2.0))
    rec = broadcaster.new_recorder(EventSource(component="sample-controller",
                                               host="node-1"))
    rec.event(FOO, "Normal", "Synced", "Foo synced successfully")
    assert broadcaster.shutdown(5) == []
    [stored] = events(server)
    assert stored.reporting_component == "sample-controller"
    assert stored.reporting_instance == "node-1"
