"""events.k8s.io/v1 Events on both servers: repeats folded into one Event whose series
count the server stores, the server's validation refusing what it must, and the adapter
choosing events.k8s.io/v1 where it is served; the runtime's recorder writing them by
default."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.client import CoreV1Api, EventsV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.events import EventBroadcaster, EventBroadcasterAdapter, EventsV1Sink
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.runtime import Action, Context, Controller, ControllerConfig


def foo(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Foo",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}"}}


def stored(api: Any, ns: str) -> list[Any]:
    return list(EventsV1Api(api).list_namespaced_event(ns).items)


def test_series_as_the_server_stores_them(api: Any, ns: str) -> None:
    """1,000 identical events: one Event with series count 1,000 once shut down; 30
    reasons on one object: 30 Events (no spam filter in this API); a note over 1 kB is
    refused (422) and not retried. The queue holds the whole burst (1,031 events)."""
    broadcaster = EventBroadcaster(EventsV1Sink(api), max_queued=2000)
    broadcaster.start_recording_to_sink()
    recorder = broadcaster.new_recorder("conformance", "conformance-1")
    for _ in range(1000):
        recorder.eventf(foo(ns, "same"), None, "Normal", "Synced", "Reconcile", "synced")
    for i in range(30):
        recorder.eventf(foo(ns, "many"), None, "Warning", f"Reason{i}", "Reconcile",
                        "failed %d", i)
    recorder.eventf(foo(ns, "long"), None, "Warning", "TooLong", "Reconcile", "x" * 2000)
    assert broadcaster.shutdown(10) == []
    assert broadcaster.dropped() == 0 and broadcaster.failed() == 1
    events = stored(api, ns)
    same = [e for e in events if e.regarding.name == "same"]
    assert len(same) == 1 and same[0].series.count == 1000
    assert same[0].reporting_controller == "conformance"
    assert same[0].reporting_instance == "conformance-1"
    assert len([e for e in events if e.regarding.name == "many"]) == 30
    assert not [e for e in events if e.regarding.name == "long"]


def test_the_adapter_records_events_v1(api: Any, ns: str) -> None:
    adapter = EventBroadcasterAdapter(api)
    assert adapter.events_v1
    adapter.start_recording_to_sink()
    related = {"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cm", "namespace": ns}}
    adapter.new_recorder("adapted").eventf(foo(ns, "adapted"), related, "Normal", "Synced",
                                           "Reconcile", "ok")
    assert adapter.shutdown(5) == []
    (event,) = stored(api, ns)
    assert event.related.name == "cm" and event.action == "Reconcile"
    assert event.reporting_instance.startswith("adapted-")


def test_a_controller_records_events_v1_by_default(api: Any, ns: str) -> None:
    """The runtime's ``ctx.recorder`` writes events.k8s.io/v1 Events by default: the
    default action, the controller as reporter, and a reconcile's repeats as one series."""
    CoreV1Api(api).create_namespaced_config_map(ns, {"metadata": {"name": "seen"}})
    recorded = threading.Event()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        for _ in range(3):
            ctx.recorder.event(obj, "Normal", "Seen", "seen", kind="ConfigMap",
                               api_version="v1")
        recorded.set()
        return Action.await_change()

    factory = new_shared_informer_factory_with_options(
        api, 0, SharedInformerFactoryOptions(namespace=ns))
    controller: Controller[Any] = Controller(
        factory, GroupVersionResource("", "v1", "configmaps"),
        config=ControllerConfig(name="conformance-events"))
    with controller.running(reconcile):
        assert recorded.wait(30)
    (event,) = stored(api, ns)  # the run's end flushed the series count
    assert (event.reason, event.action, event.regarding.name, event.reporting_controller,
            event.series.count) == ("Seen", "Reconcile", "seen", "conformance-events", 3)
