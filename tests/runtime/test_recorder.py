"""runtime/recorder.py: ctx.recorder's one call shape over events.k8s.io/v1 and core/v1."""

from __future__ import annotations

import re

import pytest
from kubernetes.client import CoreV1Api, EventsV1Api

from client_cache.events import EventBroadcaster as EventsV1Broadcaster
from client_cache.events import EventsV1Sink
from client_cache.record import CoreV1EventSink, EventBroadcaster, EventSource
from client_cache.runtime import ControllerConfig
from client_cache.runtime.recorder import ControllerRecorder
from client_cache.testing.apiserver import EmbeddedApiServer

FOO = {"apiVersion": "v1", "kind": "ConfigMap",
       "metadata": {"name": "foo", "namespace": "default", "uid": "u-1"}}
BAR = {"apiVersion": "v1", "kind": "ConfigMap",
       "metadata": {"name": "bar", "namespace": "default", "uid": "u-2"}}


def record_all(recorder: ControllerRecorder) -> None:
    recorder.eventf(FOO, "Normal", "Scaled", "%s to %d", "web", 3)
    recorder.annotated_eventf(FOO, {"example.com/step": "2"}, "Warning", "Conflict",
                              "100% taken", action="Adopt", related=BAR)


def test_events_k8s_io_gets_the_action_related_and_annotations(
        server: EmbeddedApiServer) -> None:
    api = server.api_client()
    broadcaster = EventsV1Broadcaster(EventsV1Sink(api))
    broadcaster.start_recording_to_sink()
    recorder = ControllerRecorder(broadcaster.new_recorder("ctl"))
    assert recorder.api == "events.k8s.io/v1"
    record_all(recorder)
    assert broadcaster.shutdown(5) == []
    events = sorted(EventsV1Api(api).list_namespaced_event("default").items,
                    key=lambda e: e.reason)
    got = [(e.reason, e.action, e.note, e.related and e.related.name, e.metadata.annotations,
            e.regarding.name, e.reporting_controller) for e in events]
    assert got == [("Conflict", "Adopt", "100% taken", "bar", {"example.com/step": "2"},
                    "foo", "ctl"),
                   ("Scaled", "Reconcile", "web to 3", None, None, "foo", "ctl")]
    api.close()


def test_core_v1_drops_the_action_and_related(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    broadcaster = EventBroadcaster()
    broadcaster.start_recording_to_sink(CoreV1EventSink(api))
    recorder = ControllerRecorder(broadcaster.new_recorder(EventSource(component="ctl")))
    assert recorder.api == "v1"
    record_all(recorder)
    assert broadcaster.shutdown(5) == []
    events = sorted(CoreV1Api(api).list_namespaced_event("default").items,
                    key=lambda e: e.reason)
    got = [(e.reason, e.message, e.metadata.annotations, e.involved_object.name,
            e.source.component, e.related) for e in events]
    assert got == [("Conflict", "100% taken", {"example.com/step": "2"}, "foo", "ctl", None),
                   ("Scaled", "web to 3", None, "foo", "ctl", None)]
    api.close()


def test_an_unknown_events_api_is_refused() -> None:
    refused = re.escape("events_api is one of 'events.k8s.io/v1', 'v1'")
    with pytest.raises(ValueError, match=refused):
        ControllerConfig(events_api="events/v1beta1")

