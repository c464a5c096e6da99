"""Read-your-writes (KEP-5647): a reconcile triggered again after writing its object does
not see the state it replaced; a cache that never catches up delays it only up to the
timeout. The watch stream is stalled on the embedded server, so the cache is held behind
the write for as long as the test needs, and the next trigger comes from a source."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api import meta
from client_cache.api.schema import GroupVersionResource
from client_cache.informers import new_shared_informer_factory
from client_cache.runtime import (
    Action,
    Context,
    Controller,
    ControllerConfig,
    ObjectRef,
    reset_controller_metrics_provider_for_tests,
    set_controller_metrics_provider,
)
from client_cache.runtime._read_your_writes import WrittenVersions
from client_cache.runtime.metrics import NoopControllerMetricsProvider
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.util.clock import FakeClock

PODS = GroupVersionResource("", "v1", "pods")
REF = ObjectRef("p").within("default")


class Deferrals:
    """A counter that wakes the test at each deferral."""

    def __init__(self) -> None:
        self.count = 0
        self.deferred = threading.Event()

    def inc(self) -> None:
        self.count += 1
        self.deferred.set()


class Provider(NoopControllerMetricsProvider):
    def __init__(self) -> None:
        self.deferrals = Deferrals()

    def new_stale_cache_deferrals_metric(self, name: str) -> Deferrals:  # type: ignore[override]
        return self.deferrals


@pytest.fixture
def provider() -> Iterator[Provider]:
    made = Provider()
    set_controller_metrics_provider(made)
    yield made
    reset_controller_metrics_provider_for_tests()


class Writer:
    """The reconcile: the first call stalls the watch, writes status.message and triggers
    the object again through a source; every call records the message it saw."""

    def __init__(self, server: EmbeddedApiServer, triggers: queue.Queue[Any]) -> None:
        self.server = server
        self.triggers = triggers
        self.seen: list[str | None] = []
        self.second = threading.Event()

    def __call__(self, obj: Any, ctx: Context[Any]) -> Action:
        self.seen.append((obj.get("status") or {}).get("message"))
        if len(self.seen) == 1:
            self.server.stall_watches()  # the write's event is held back
            stored = ctx.patch_status({"message": "written"})
            assert stored["status"]["message"] == "written"
            self.triggers.put(REF)  # triggered again before the cache holds the write
        else:
            self.second.set()
        return Action.await_change()


def run_writer(server: EmbeddedApiServer, timeout: float,
               ) -> tuple[Controller[Any], Writer, queue.Queue[Any]]:
    api = server.api_client()
    CoreV1Api(api).create_namespaced_pod("default", {"metadata": {"name": "p"}})
    factory = new_shared_informer_factory(api, 0)
    triggers: queue.Queue[Any] = queue.Queue()
    controller: Controller[Any] = Controller(factory, PODS, config=ControllerConfig(
        events=False, read_your_writes_timeout=timeout)).reconcile_on(triggers)
    return controller, Writer(server, triggers), triggers


def test_the_next_reconcile_waits_for_the_cache_to_hold_the_write(
        server: EmbeddedApiServer, provider: Provider) -> None:
    controller, writer, _ = run_writer(server, timeout=30.0)
    try:
        with controller.running(writer):
            assert provider.deferrals.deferred.wait(10)  # the source's trigger waits
            assert writer.seen == [None] and not writer.second.is_set()
            server.stall_watches(False)  # the write reaches the cache, and triggers
            assert writer.second.wait(10)
    finally:
        server.stall_watches(False)
    assert writer.seen[:2] == [None, "written"]  # never its own previous state
    assert provider.deferrals.count >= 1


def test_a_cache_that_does_not_catch_up_delays_the_reconcile_only_to_the_timeout(
        server: EmbeddedApiServer, provider: Provider,
        caplog: pytest.LogCaptureFixture) -> None:
    controller, writer, _ = run_writer(server, timeout=0.3)
    try:
        with controller.running(writer):
            assert provider.deferrals.deferred.wait(10)
            assert writer.second.wait(10)  # at the deadline, on the old state
            assert writer.seen == [None, None]
    finally:
        server.stall_watches(False)
    (line,) = [r for r in caplog.records if "did not reach resourceVersion" in
               r.getMessage()]
    assert line.levelno == logging.WARNING and "default/p" in line.getMessage()


def test_without_read_your_writes_the_reconcile_sees_its_previous_state(
        server: EmbeddedApiServer, provider: Provider) -> None:
    """The contrast: ``read_your_writes_timeout=0`` runs the second reconcile at once, on
    the cache the write has not reached (what the guarantee prevents)."""
    controller, writer, _ = run_writer(server, timeout=0.0)
    try:
        with controller.running(writer):
            assert writer.second.wait(10)
            assert writer.seen == [None, None]
    finally:
        server.stall_watches(False)
    assert provider.deferrals.count == 0


def test_record_write_keeps_the_newest_version_and_compares_as_numbers() -> None:
    clock = FakeClock(0.0)
    versions = WrittenVersions("c", 5.0, clock)
    versions.record(REF, "99")
    versions.record(REF, "100")  # newer by value, though smaller as a string
    versions.record(REF, "98")  # older: ignored
    assert versions.wait_for(REF, "99") == 5.0
    assert versions.wait_for(REF, "100") is None and len(versions) == 0
    versions.record(REF, {"metadata": {"resourceVersion": "7"}})
    clock.step(6.0)
    assert versions.wait_for(REF, "3") is None  # past the deadline: runs
    assert meta.compare_resource_versions("10", "9") > 0
    with pytest.raises(ValueError, match="not comparable"):
        meta.compare_resource_versions("010", "9")
