"""client-go v0.36's informer metrics (Go ``tools/cache/fifo_metrics.go``): per informer
identity (:mod:`client_cache.identity`), the number of items queued in its FIFO, how long
processing a popped item took, and the resourceVersion its store holds.

A provider (:class:`InformerMetricsProvider`) makes them;
:func:`set_informer_metrics_provider` sets the process's provider for queues and stores
built afterwards, the first call winning, as Go. An informer's options may carry a
provider of their own. Only a *reserved* identity gets metrics: an informer without one,
or the second informer of one resource under one name, records nothing (and costs
nothing on its hot paths). The metrics the provider returns should still check
``identifier.reserved()`` before they record, as Go's do, for an informer whose name was
released while it ran.

:mod:`client_cache.metrics.prometheus` provides client-go's series:
``informer_queued_items``, ``informer_processing_latency_seconds`` and
``informer_store_resource_version``, labelled ``name``, ``group``, ``version`` and
``resource``.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

from client_cache.identity import InformerNameAndResource
from client_cache.reflector_metrics import GaugeMetric

__all__ = [
    "HistogramMetric",
    "InformerMetricsProvider",
    "QueueMetrics",
    "StoreMetrics",
    "reset_informer_metrics_provider_for_tests",
    "set_informer_metrics_provider",
]


@runtime_checkable
class HistogramMetric(Protocol):
    def observe(self, value: float) -> None:
        """Record one observation."""
        ...


@runtime_checkable
class InformerMetricsProvider(Protocol):
    """Makes an informer's metrics (Go ``InformerMetricsProvider``)."""

    def new_queued_item_metric(self, identifier: InformerNameAndResource) -> GaugeMetric:
        """Items waiting in the FIFO: keys with deltas in a DeltaFIFO, events in a
        RealFIFO."""
        ...

    def new_processing_latency_metric(
            self, identifier: InformerNameAndResource) -> HistogramMetric:
        """Seconds spent processing each popped item (the store write and the handlers'
        notifications)."""
        ...

    def new_store_resource_version_metric(
            self, identifier: InformerNameAndResource) -> GaugeMetric:
        """The resourceVersion the store holds (its last 15 digits, as Go)."""
        ...


_lock = threading.Lock()
_provider: InformerMetricsProvider | None = None


def set_informer_metrics_provider(provider: InformerMetricsProvider) -> None:
    """Set the process's provider for queues and stores built afterwards (Go
    ``SetInformerMetricsProvider``); only the first call has an effect."""
    global _provider  # noqa: PLW0603 - the documented global, as upstream
    with _lock:
        if _provider is None:
            _provider = provider


def reset_informer_metrics_provider_for_tests() -> None:
    """Forget the provider set by :func:`set_informer_metrics_provider` (tests only)."""
    global _provider  # noqa: PLW0603
    with _lock:
        _provider = None


def _chosen(provider: InformerMetricsProvider | None) -> InformerMetricsProvider | None:
    if provider is not None:
        return provider
    with _lock:
        return _provider


class QueueMetrics:
    """A FIFO's metrics (Go ``fifoMetrics``): ``queued`` and ``latency`` are None when
    the identity is not reserved or no provider is set, and the queue then skips them."""

    __slots__ = ("latency", "queued")

    def __init__(self, identifier: InformerNameAndResource | None,
                 provider: InformerMetricsProvider | None = None) -> None:
        self.queued: GaugeMetric | None = None
        self.latency: HistogramMetric | None = None
        chosen = _chosen(provider)
        if identifier is not None and identifier.reserved() and chosen is not None:
            self.queued = chosen.new_queued_item_metric(identifier)
            self.latency = chosen.new_processing_latency_metric(identifier)


class StoreMetrics:
    """A store's metrics (Go ``storeMetrics``): ``resource_version`` is None when the
    identity is not reserved or no provider is set."""

    __slots__ = ("resource_version",)

    def __init__(self, identifier: InformerNameAndResource | None,
                 provider: InformerMetricsProvider | None = None) -> None:
        self.resource_version: GaugeMetric | None = None
        chosen = _chosen(provider)
        if identifier is not None and identifier.reserved() and chosen is not None:
            self.resource_version = chosen.new_store_resource_version_metric(identifier)

    def record(self, resource_version: str) -> None:
        """Set the gauge to the last 15 digits of ``resource_version`` (a number; others
        are skipped), as Go's store does."""
        gauge = self.resource_version
        if gauge is not None and resource_version.isdigit():
            gauge.set(float(resource_version[-15:]))
