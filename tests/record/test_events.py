"""events.k8s.io/v1 recording (client_cache.events): series folding and its periodic
writes on a fake clock, retries and refusals with a scripted sink, and the embedded
server's view of the result."""

from __future__ import annotations

import gc
import logging
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import EventsV1Api

from client_cache.events import (
    FINISH_TIME,
    EventBroadcaster,
    EventBroadcasterAdapter,
    EventRecorderAdapter,
    EventsV1Sink,
)
from client_cache.record import EventSinkError
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.util.clock import FakePassiveClock
from tests.fixtures import eventually

FOO = {"apiVersion": "example.com/v1", "kind": "Foo",
       "metadata": {"name": "foo", "namespace": "default", "uid": "u-1"}}
BAR = {"apiVersion": "v1", "kind": "ConfigMap",
       "metadata": {"name": "bar", "namespace": "default", "uid": "u-2"}}


class ScriptedSink:
    """Records every call; ``failures`` are raised (in order) before answering."""

    def __init__(self, failures: list[EventSinkError] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.failures = list(failures or [])
        self.lock = threading.Lock()

    def _answer(self, verb: str, body: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self.calls.append((verb, body))
            if self.failures:
                raise self.failures.pop(0)
        return body

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._answer("create", event)

    def update(self, event: dict[str, Any]) -> dict[str, Any]:
        return self._answer("update", event)

    def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        return self._answer("patch", patch)

    def verbs(self) -> list[str]:
        with self.lock:
            return [verb for verb, _ in self.calls]


@pytest.fixture
def clock() -> FakePassiveClock:
    return FakePassiveClock(1_800_000_000.0)


def synchronous(sink: Any, clock: FakePassiveClock, **options: Any,
                ) -> tuple[EventBroadcaster, Any, list[dict[str, Any]]]:
    """A broadcaster whose recorder's events are collected, to be fed to
    ``record_to_sink`` on the test's thread (no watcher threads)."""
    broadcaster = EventBroadcaster(sink, clock=clock, **options)
    seen: list[dict[str, Any]] = []
    broadcaster.action_or_drop = seen.append  # type: ignore[method-assign]
    return broadcaster, broadcaster.new_recorder("test-controller", "test-1"), seen


def test_the_event_as_client_go_writes_it(clock: FakePassiveClock) -> None:
    sink = ScriptedSink()
    broadcaster, rec, seen = synchronous(sink, clock)
    rec.eventf(FOO, BAR, "Warning", "Failed", "Reconcile", "attempt %d of %s", 3, "foo")
    assert len(seen) == 1
    event = seen[0]
    assert event["apiVersion"] == "events.k8s.io/v1" and event["kind"] == "Event"
    assert event["metadata"]["namespace"] == "default"
    assert event["metadata"]["name"].startswith("foo.")
    assert event["eventTime"] == "2027-01-15T08:00:00.000000Z"
    assert (event["reportingController"], event["reportingInstance"]) == (
        "test-controller", "test-1")
    assert (event["action"], event["reason"], event["type"], event["note"]) == (
        "Reconcile", "Failed", "Warning", "attempt 3 of foo")
    assert event["regarding"] == {"kind": "Foo", "namespace": "default", "name": "foo",
                                  "uid": "u-1", "apiVersion": "example.com/v1"}
    assert event["related"]["name"] == "bar" and "series" not in event
    default = broadcaster.new_recorder("ctl")
    assert default.reporting_instance.startswith("ctl-") and len(default.reporting_instance) > 4


def test_repeats_fold_into_one_series(clock: FakePassiveClock) -> None:
    """The first occurrence is created, the second patches a series of 2 onto it, the
    rest only count; the note is not part of what makes events the same."""
    sink = ScriptedSink()
    broadcaster, rec, seen = synchronous(sink, clock)
    for i in range(1000):
        clock.set_time(1_800_000_000.0 + i)
        rec.eventf(FOO, None, "Normal", "Synced", "Reconcile", "pass %d", i)
        broadcaster.record_to_sink(seen[-1])  # as the sink watcher does, in turn
    assert sink.verbs() == ["create", "patch"]
    assert sink.calls[1][1] == {"series": {"count": 2,
                                           "lastObservedTime": "2027-01-15T08:00:01.000000Z"}}
    assert broadcaster.series_count(seen[0]) == 1000
    # another reason, action or related object is another series
    rec.eventf(FOO, None, "Normal", "Synced", "Delete", "x")
    rec.eventf(FOO, BAR, "Normal", "Synced", "Reconcile", "x")
    for event in seen[1000:]:
        broadcaster.record_to_sink(event)
    assert sink.verbs() == ["create", "patch", "create", "create"]


def test_series_are_refreshed_finished_and_forgotten(clock: FakePassiveClock) -> None:
    sink = ScriptedSink()
    broadcaster, rec, seen = synchronous(sink, clock)
    for _ in range(5):
        rec.eventf(FOO, None, "Normal", "Synced", "Reconcile", "ok")
    rec.eventf(BAR, None, "Normal", "Once", "Reconcile", "ok")
    for event in seen:
        broadcaster.record_to_sink(event)
    assert sink.verbs() == ["create", "patch", "create"]
    broadcaster.refresh_existing_series()  # every 30 minutes: running series written again
    assert sink.calls[-1] == ("patch", {"series": {
        "count": 5, "lastObservedTime": "2027-01-15T08:00:00.000000Z"}})
    clock.set_time(1_800_000_000.0 + FINISH_TIME - 1)
    broadcaster.finish_series()  # not idle long enough yet: nothing written or forgotten
    assert len(sink.calls) == 4 and broadcaster.series_count(seen[0]) == 5
    clock.set_time(1_800_000_000.0 + FINISH_TIME + 1)
    rec.eventf(FOO, None, "Normal", "Synced", "Reconcile", "ok")
    broadcaster.record_to_sink(seen[-1])  # a sixth occurrence, 6 minutes later
    broadcaster.finish_series()
    # the series is still running (just observed); the singleton is old and forgotten
    assert len(sink.calls) == 4
    assert broadcaster.series_count(seen[0]) == 6 and broadcaster.series_count(seen[5]) == 0
    clock.set_time(1_800_000_000.0 + 2 * FINISH_TIME + 2)
    broadcaster.finish_series()  # idle for 6 minutes: last count written, then forgotten
    assert sink.calls[-1][0] == "patch" and sink.calls[-1][1]["series"]["count"] == 6
    assert broadcaster.series_count(seen[0]) == 0


def test_a_gone_event_is_created_again_and_a_lost_create_race_retried(
        clock: FakePassiveClock) -> None:
    sink = ScriptedSink([EventSinkError("gone", 404, retry=False),
                         EventSinkError("exists", 409, retry=False)])
    broadcaster = EventBroadcaster(sink, clock=clock, sleep_duration=0.0)
    rec = broadcaster.new_recorder("c", "i")
    event: list[dict[str, Any]] = []
    broadcaster.action_or_drop = event.append  # type: ignore[method-assign]
    rec.eventf(FOO, None, "Normal", "Synced", "Reconcile", "ok")
    rec.eventf(FOO, None, "Normal", "Synced", "Reconcile", "ok")
    sink.failures.clear()
    broadcaster.record_to_sink(event[0])
    sink.failures[:] = [EventSinkError("gone", 404, retry=False),
                        EventSinkError("exists", 409, retry=False)]
    broadcaster.record_to_sink(event[1])
    # patch 404 -> create (the series' Event is gone) -> 409 (made elsewhere meanwhile):
    # retried, and the next patch lands
    assert sink.verbs() == ["create", "patch", "create", "patch"]
    assert sink.calls[2][1]["series"]["count"] == 2 and "resourceVersion" not in \
        sink.calls[2][1]["metadata"]
    assert broadcaster.failed() == 0


def test_a_refusal_is_not_retried_and_a_server_error_is(clock: FakePassiveClock) -> None:
    sink = ScriptedSink([EventSinkError("invalid", 422, retry=False)])
    broadcaster, rec, seen = synchronous(sink, clock, sleep_duration=0.0)
    rec.eventf(FOO, None, "Normal", "A", "Reconcile", "ok")
    broadcaster.record_to_sink(seen[0])
    assert sink.verbs() == ["create"] and broadcaster.failed() == 1
    sink.failures[:] = [EventSinkError("down", 503)] * 11
    rec.eventf(FOO, None, "Normal", "B", "Reconcile", "ok")
    broadcaster.record_to_sink(seen[1])
    assert sink.verbs().count("create") == 13 and broadcaster.failed() == 1
    sink.failures[:] = [EventSinkError("down", 503)] * 12
    rec.eventf(FOO, None, "Normal", "C", "Reconcile", "ok")
    broadcaster.record_to_sink(seen[2])  # twelve tries, then given up
    assert sink.verbs().count("create") == 25 and broadcaster.failed() == 2


def test_shutdown_writes_the_counts_not_yet_written() -> None:
    """Unlike client-go, shutdown writes each series' last count (here 300), so a short
    process does not lose them; threads end."""
    sink = ScriptedSink()
    broadcaster = EventBroadcaster(sink)
    broadcaster.start_recording_to_sink()
    rec = broadcaster.new_recorder("c", "i")
    for _ in range(300):
        rec.eventf(FOO, None, "Normal", "Synced", "Reconcile", "ok")
    assert broadcaster.shutdown(5) == []
    assert sink.verbs() == ["create", "patch", "patch"]
    assert sink.calls[-1][1]["series"]["count"] == 300
    assert not [t for t in threading.enumerate() if t.name.startswith("events-")]


def test_the_caller_never_waits_and_a_full_queue_drops() -> None:
    release = threading.Event()

    class Stuck(ScriptedSink):
        def create(self, event: dict[str, Any]) -> dict[str, Any]:
            release.wait(10)
            return super().create(event)

    sink = Stuck()
    broadcaster = EventBroadcaster(sink, max_queued=5)
    broadcaster.start_recording_to_sink()
    rec = broadcaster.new_recorder("c", "i")
    started = time.monotonic()
    for i in range(20):
        rec.eventf({**FOO, "metadata": {**FOO["metadata"], "name": f"f{i}"}}, None,
                   "Normal", "R", "A", "m")
    assert time.monotonic() - started < 0.5
    eventually(lambda: broadcaster.dropped() >= 14, 5)
    release.set()
    assert broadcaster.shutdown(5) == []
    assert len(sink.calls) + broadcaster.dropped() == 20


def test_stop_ends_recording_and_its_threads() -> None:
    sink = ScriptedSink()
    broadcaster = EventBroadcaster(sink)
    stop = threading.Event()
    broadcaster.start_recording_to_sink(stop)
    rec = broadcaster.new_recorder("c", "i")
    rec.eventf(FOO, None, "Normal", "Before", "A", "m")
    eventually(lambda: sink.verbs() == ["create"], 5)
    stop.set()
    eventually(lambda: not [t for t in threading.enumerate()
                            if t.name in ("events-series", "events-watcher-0")], 1.0,
               "recording threads outlived stop")
    rec.eventf(FOO, None, "Normal", "After", "A", "m")
    assert broadcaster.shutdown(1) == [] and sink.verbs() == ["create"]


def test_bad_input_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    broadcaster = EventBroadcaster(ScriptedSink())
    seen: list[dict[str, Any]] = []
    broadcaster.start_event_watcher(seen.append)
    broadcaster.start_logging(logging.getLogger("test.events"))
    rec = broadcaster.new_recorder("c", "i")
    with caplog.at_level(logging.INFO):
        rec.eventf(FOO, None, "Fatal", "R", "A", "m")
        rec.eventf({"metadata": {"name": "x", "namespace": "default"}}, None, "Normal",
                   "R", "A", "m")
        rec.eventf({"metadata": {"name": "x", "namespace": "default"}}, object(), "Normal",
                   "Made", "Create", "ok", kind="ConfigMap", api_version="v1")
        assert broadcaster.shutdown(5) == []
    assert [e["reason"] for e in seen] == ["Made"] and "related" not in seen[0]
    assert "Unsupported event type" in caplog.text and "kind is unknown" in caplog.text
    assert ("object=ConfigMap default/x type=Normal reason=Made action=Create note='ok'"
            in caplog.text)


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer() as srv:
        yield srv


def stored(server: EmbeddedApiServer) -> list[Any]:
    api = server.api_client()
    try:
        return list(EventsV1Api(api).list_namespaced_event("default").items)
    finally:
        api.close()


def test_on_the_embedded_server(server: EmbeddedApiServer) -> None:
    """1,000 identical events: one Event, series count 1,000 once shut down; 30 reasons:
    30 Events (events.k8s.io/v1 has no spam filter); an invalid one is refused (422), not
    retried. The queue holds the whole burst (1,031 events; 1,000 by default)."""
    api = server.api_client()
    broadcaster = EventBroadcaster(EventsV1Sink(api, timeout=2.0), max_queued=2000)
    broadcaster.start_recording_to_sink()
    rec = broadcaster.new_recorder("test-controller", "test-1")
    for _ in range(1000):
        rec.eventf(FOO, None, "Normal", "Synced", "Reconcile", "synced")
    for i in range(30):
        rec.eventf(BAR, None, "Warning", f"Reason{i}", "Reconcile", "failed")
    rec.eventf(BAR, None, "Warning", "TooLong", "Reconcile", "x" * 2000)
    assert broadcaster.shutdown(5) == []
    api.close()
    events = stored(server)
    same = [e for e in events if e.regarding.name == "foo"]
    assert len(same) == 1 and same[0].series.count == 1000
    assert same[0].reporting_controller == "test-controller" and same[0].action == "Reconcile"
    assert len([e for e in events if e.regarding.name == "bar"]) == 30
    assert broadcaster.failed() == 1 and broadcaster.dropped() == 0


def test_the_adapter_picks_the_api_the_server_serves(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    adapter = EventBroadcasterAdapter(api)
    assert adapter.events_v1
    adapter.start_recording_to_sink()
    adapter.new_recorder("adapted").eventf(FOO, BAR, "Normal", "Synced", "Reconcile", "ok")
    adapter.deprecated_new_legacy_recorder("legacy").event(FOO, "Normal", "Old", "core")
    assert adapter.shutdown(5) == []
    api.close()
    assert [e.regarding.name for e in stored(server)] == ["foo"]
    # a server whose discovery fails: core/v1 Events through the adapter's signature
    unreachable = server.api_client()
    unreachable.configuration.host = "http://127.0.0.1:9"
    fallback = EventBroadcasterAdapter(unreachable)
    assert not fallback.events_v1
    assert isinstance(fallback.new_recorder("x"), EventRecorderAdapter)
    assert fallback.shutdown(1) == []
    unreachable.close()


def test_a_long_lived_stop_event_does_not_keep_a_shut_down_broadcaster() -> None:
    stop = threading.Event()  # e.g. the process's stop event, alive after the broadcaster
    broadcaster = EventBroadcaster(ScriptedSink())
    broadcaster.start_recording_to_sink(stop)
    assert broadcaster.shutdown(1) == []
    gone = weakref.ref(broadcaster)
    del broadcaster
    gc.collect()
    assert gone() is None
