"""Bad input from the server: an informer must log an error that names the resource, recover
(by watching again or relisting), keep its cache equal to the server's objects and keep its
threads alive.

Each test runs a pods informer (wire dicts, through the factory) against the embedded API
server, syncs three pods, injects one kind of bad input, then makes real changes and checks
that they arrive and that the cache matches the server exactly.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import eventually
from tests.fixtures import pod as make_pod

NAMESPACE = "bad"


def pod(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod to create (with a container, as the API requires)."""
    return make_pod(name, NAMESPACE, annotations=annotations, rv="",
                    spec={"containers": [{"name": "c", "image": "busybox"}]})


class Harness:
    """A started pods informer with a recording handler, and the server it watches."""

    def __init__(self, server: EmbeddedApiServer) -> None:
        self.server = server
        self.core = CoreV1Api(server.api_client())
        self.stop = threading.Event()
        self.factory = new_shared_informer_factory_with_options(
            server.api_client(), 0, SharedInformerFactoryOptions(namespace=NAMESPACE))
        self.informer = self.factory.core().v1().pods().informer()
        self.events: list[tuple[str, str]] = []
        self.state_lists = 0
        self.changed = threading.Condition()
        self.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=lambda obj: self.record("add", obj),
            update_func=lambda old, new: self.record("update", new),
            delete_func=lambda obj: self.record("delete", obj)))

    def record(self, kind: str, obj: Any) -> None:
        name = obj["metadata"]["name"] if isinstance(obj, dict) else obj.key.split("/")[-1]
        with self.changed:
            self.events.append((kind, name))
            self.changed.notify_all()

    def start(self) -> None:
        for name in ("p1", "p2", "p3"):
            self.core.create_namespaced_pod(NAMESPACE, pod(name))
        self.factory.start(self.stop)
        assert all(self.factory.wait_for_cache_sync(self.stop).values())

    def close(self) -> None:
        self.stop.set()
        self.factory.shutdown()

    def wait_for_event(self, kind: str, name: str, timeout: float = 10) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: (kind, name) in self.events, timeout), \
                f"no {kind} of {name}; saw {self.events}"

    def server_state(self) -> dict[str, str]:
        self.state_lists += 1
        listed = self.core.list_namespaced_pod(NAMESPACE)
        return {f"{NAMESPACE}/{p.metadata.name}": p.metadata.resource_version
                for p in listed.items}

    def cache_state(self) -> dict[str, str]:
        return {f"{o['metadata']['namespace']}/{o['metadata']['name']}":
                o["metadata"]["resourceVersion"] for o in self.informer.get_store().list()}

    def assert_recovers(self) -> None:
        """Real changes after the bad input reach the handler; the cache equals the server;
        the informer's threads are alive."""
        self.core.create_namespaced_pod(NAMESPACE, pod("after"))
        self.core.delete_namespaced_pod("p1", NAMESPACE)
        self.wait_for_event("add", "after")
        self.wait_for_event("delete", "p1")
        deadline = time.monotonic() + 10
        while self.cache_state() != self.server_state() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.cache_state() == self.server_state()
        assert any(t.name.startswith("reflector-") and t.is_alive()
                   for t in threading.enumerate())


@pytest.fixture
def harness() -> Iterator[Harness]:
    server = EmbeddedApiServer(bookmark_interval=60).start()
    h = Harness(server)
    try:
        h.start()
        yield h
    finally:
        h.close()
        server.stop()


def errors_naming_pods(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and "pods" in r.getMessage()]


def watch_count(server: EmbeddedApiServer) -> int:
    return server.open_watch_count()


def wait_for(predicate: Callable[[], bool], timeout: float = 10) -> None:
    eventually(predicate, timeout)


INTRUDER = {"metadata": {"name": "intruder", "namespace": NAMESPACE,
                         "resourceVersion": "999999"}}


@pytest.mark.parametrize("line", [
    pytest.param(b"{this is not json", id="malformed-json"),
    pytest.param(b"[1, 2, 3]", id="array-not-object"),
    pytest.param(b'"just a string"', id="string-not-object"),
    pytest.param(b"42", id="number-not-object"),
    pytest.param(b"null", id="null"),
    pytest.param(json.dumps({"object": {"kind": "Pod", "apiVersion": "v1", **INTRUDER}}).encode(),
                 id="event-without-type"),
    pytest.param(b'{"type": "ADDED"}', id="event-without-object"),
    pytest.param(json.dumps({"type": "EXPLODED", "object": {"kind": "Pod", "apiVersion": "v1",
                                                            **INTRUDER}}).encode(),
                 id="unknown-event-type"),
])
def test_undecodable_watch_lines_end_the_watch_and_the_informer_recovers(
        harness: Harness, caplog: pytest.LogCaptureFixture, line: bytes) -> None:
    caplog.set_level(logging.INFO)
    wait_for(lambda: watch_count(harness.server) == 1)
    watches = harness.server.watch_requests
    harness.server.send_raw_line(line)
    harness.assert_recovers()
    # the broken stream is replaced (after a relist, which may bring the changes first)
    wait_for(lambda: harness.server.watch_requests > watches)
    assert "bad/intruder" not in harness.cache_state()
    messages = errors_naming_pods(caplog)
    assert any("unable to decode an event from the watch stream" in m for m in messages), \
        messages


@pytest.mark.parametrize("obj", [
    pytest.param({"kind": "Pod", "apiVersion": "v1"}, id="object-without-metadata"),
    pytest.param({"kind": "ConfigMap", "apiVersion": "v1", **INTRUDER}, id="wrong-kind"),
    pytest.param({"kind": "Pod", "apiVersion": "v2", **INTRUDER}, id="wrong-api-version"),
    pytest.param("a string", id="object-is-a-string"),
    pytest.param([INTRUDER], id="object-is-a-list"),
])
def test_bad_objects_are_skipped_and_the_watch_goes_on(
        harness: Harness, caplog: pytest.LogCaptureFixture, obj: Any) -> None:
    caplog.set_level(logging.INFO)
    wait_for(lambda: watch_count(harness.server) == 1)
    lists, watches = harness.server.list_requests, harness.server.watch_requests
    harness.state_lists = 0
    harness.server.send_raw_line(json.dumps({"type": "ADDED", "object": obj}))
    harness.assert_recovers()
    assert "bad/intruder" not in harness.cache_state()
    assert ("add", "intruder") not in harness.events
    messages = errors_naming_pods(caplog)
    assert messages, "no error naming the resource was logged"
    # skipped in place: the same watch carried the later changes, no new WATCH and no
    # LIST but the test's own (server_state, at least twice)
    assert harness.server.watch_requests == watches
    assert harness.server.list_requests - lists == harness.state_lists


def test_error_event_whose_object_is_not_a_status_relists(
        harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    wait_for(lambda: watch_count(harness.server) == 1)
    harness.server.send_raw_line(json.dumps({"type": "ERROR", "object": {
        "kind": "Pod", "apiVersion": "v1", "metadata": {"name": "confused"}}}))
    harness.assert_recovers()
    assert errors_naming_pods(caplog)


def test_error_event_with_a_non_mapping_object(
        harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    wait_for(lambda: watch_count(harness.server) == 1)
    harness.server.send_raw_line(json.dumps({"type": "ERROR", "object": ["not", "a", "status"]}))
    harness.assert_recovers()
    assert errors_naming_pods(caplog)


@pytest.mark.parametrize("mode", ["html", "truncated", "cut"])
def test_broken_list_bodies_are_retried(
        list_path: None, harness: Harness, caplog: pytest.LogCaptureFixture,
        mode: str) -> None:
    """Broken LIST bodies: this needs the LIST path (``WatchListClient=false``); the
    watch-list path's broken streams are the watch tests above."""
    caplog.set_level(logging.INFO)
    wait_for(lambda: watch_count(harness.server) == 1)
    harness.core.create_namespaced_pod(NAMESPACE, pod("during"))
    harness.wait_for_event("add", "during")
    # the next LIST is broken; a 410 on the watch forces that LIST
    harness.server.corrupt_next_lists(mode)
    harness.server.send_watch_error(410)
    wait_for(lambda: any("failed to list" in m for m in errors_naming_pods(caplog)))
    harness.assert_recovers()
    assert harness.cache_state()["bad/during"]


def test_a_10_mb_object_arrives_whole_by_watch_and_by_list(
        harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    big = "x" * (10 * 1024 * 1024)
    harness.core.create_namespaced_pod(NAMESPACE, pod("big", annotations={"blob": big}))
    harness.wait_for_event("add", "big")
    cached, exists = harness.informer.get_store().get_by_key("bad/big")
    assert exists and cached["metadata"]["annotations"]["blob"] == big
    harness.server.send_watch_error(410)  # relist: the object comes again in a LIST body
    harness.assert_recovers()
    cached, exists = harness.informer.get_store().get_by_key("bad/big")
    assert exists and len(cached["metadata"]["annotations"]["blob"]) == len(big)
