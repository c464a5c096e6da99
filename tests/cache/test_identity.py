"""Informer identity and client-go v0.36's informer metrics (identity.go, fifo_metrics.go)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from client_cache.api.schema import GroupVersionResource
from client_cache.delta_fifo import DeltaType
from client_cache.identity import (
    InformerNameAndResource,
    new_informer_name,
    reset_informer_names_for_testing,
)
from client_cache.informer_metrics import (
    reset_informer_metrics_provider_for_tests,
    set_informer_metrics_provider,
)
from client_cache.informers.factory import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.the_real_fifo import RealFIFOOptions, new_real_fifo_with_options
from tests.fixtures import pod

PODS = GroupVersionResource("", "v1", "pods")
SECRETS = GroupVersionResource("", "v1", "secrets")


@pytest.fixture(autouse=True)
def fresh_names() -> Iterator[None]:
    reset_informer_names_for_testing()
    reset_informer_metrics_provider_for_tests()
    yield
    reset_informer_names_for_testing()
    reset_informer_metrics_provider_for_tests()


class Recorded:
    """One metric child: what was set and observed."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def set(self, value: float) -> None:
        self.values.append(value)

    def observe(self, value: float) -> None:
        self.values.append(value)


class RecordingProvider:
    def __init__(self) -> None:
        self.made: dict[tuple[str, str, str], Recorded] = {}
        self.lock = threading.Lock()

    def _child(self, kind: str, identifier: InformerNameAndResource) -> Recorded:
        with self.lock:
            return self.made.setdefault(
                (kind, identifier.name, identifier.resource.resource), Recorded())

    def new_queued_item_metric(self, identifier: InformerNameAndResource) -> Recorded:
        return self._child("queued", identifier)

    def new_processing_latency_metric(self, identifier: InformerNameAndResource) -> Recorded:
        return self._child("latency", identifier)

    def new_store_resource_version_metric(
            self, identifier: InformerNameAndResource) -> Recorded:
        return self._child("store_rv", identifier)


def test_a_name_is_unique_in_the_process_until_released() -> None:
    first = new_informer_name("kcm")
    with pytest.raises(ValueError, match="'kcm' is already registered"):
        new_informer_name("kcm")
    with pytest.raises(ValueError, match="cannot be empty"):
        new_informer_name("")
    first.release()
    first.release()  # again: nothing
    second = new_informer_name("kcm")
    assert second.name == "kcm" and second.reserved() and not first.reserved()


def test_the_first_pairing_of_a_resource_is_reserved_a_repeat_is_not(
        caplog: pytest.LogCaptureFixture) -> None:
    name = new_informer_name("ctrl")
    pods = name.with_resource(PODS)
    secrets = name.with_resource(SECRETS)
    again = name.with_resource(PODS)
    assert pods.reserved() and secrets.reserved() and not again.reserved()
    (line,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert "duplicate informer registration of pods under informer name 'ctrl'" in \
        line.getMessage()
    assert not InformerNameAndResource().reserved()  # the zero value: no identity
    name.release()
    assert not pods.reserved() and not secrets.reserved()
    assert not name.with_resource(GroupVersionResource("", "v1", "nodes")).reserved()


def test_a_real_fifo_publishes_its_depth_and_latency_only_when_reserved() -> None:
    provider = RecordingProvider()
    name = new_informer_name("fifo-test")
    fifo = new_real_fifo_with_options(RealFIFOOptions(
        atomic_events=True, identifier=name.with_resource(PODS), metrics_provider=provider))
    unnamed = new_real_fifo_with_options(RealFIFOOptions(
        atomic_events=True, identifier=name.with_resource(PODS), metrics_provider=provider))
    for i in range(3):
        fifo.add(pod(f"p{i}", "ns", {}))
        unnamed.add(pod(f"p{i}", "ns", {}))
    seen: list[Any] = []
    fifo.pop(lambda deltas, initial: seen.append(deltas[0].type))
    assert seen == [DeltaType.ADDED]
    assert provider.made[("queued", "fifo-test", "pods")].values == [1, 2, 3, 2]
    (latency,) = provider.made[("latency", "fifo-test", "pods")].values
    assert 0 <= latency < 5
    assert len(provider.made) == 2  # the duplicate made no metrics of its own


def test_a_factory_names_its_informers_and_releases_the_name(
        server: EmbeddedApiServer) -> None:
    provider = RecordingProvider()
    set_informer_metrics_provider(provider)
    api = server.api_client()
    server.store.create(server.store.lookup("", "v1", "pods"), "ns",
                        {"metadata": {"name": "a"}})
    factory = new_shared_informer_factory_with_options(api, 0, SharedInformerFactoryOptions(
        informer_name=new_informer_name("operator")))
    informer = factory.core().v1().pods().informer()
    assert informer.identifier is not None and informer.identifier.name == "operator"
    try:
        with factory.running(timeout=10):
            rv = informer.get_indexer().last_store_sync_resource_version()
            assert rv.isdigit()
            assert provider.made[("store_rv", "operator", "pods")].values[-1] == float(rv)
            assert ("queued", "operator", "pods") in provider.made
        assert factory.shutdown(5) == []
        assert not informer.identifier.reserved()
        new_informer_name("operator")  # free again
    finally:
        api.close()
