"""Controller metrics through a provider protocol (controller-runtime's
``controller_runtime_reconcile_*`` family), no-op by default as the work queue's.

A provider builds, per controller name: a counter per reconcile result (``success``,
``error``, ``requeue``, ``requeue_after``, controller-runtime's labels), an error counter,
a histogram of reconcile seconds, the gauge of active workers and the gauge of the
concurrency bound. Queue depth, waits and retries come from the work-queue metrics of the
scheduler's queue (named after the controller). The operability work exports both through
``prometheus_client``.
"""

from __future__ import annotations

import time
from typing import Protocol

from client_cache.util.provider import ProviderSlot
from client_cache.workqueue.metrics import (
    NOOP_METRIC,
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    SettableGaugeMetric,
)

__all__ = [
    "RECONCILE_RESULTS",
    "ControllerMetrics",
    "ControllerMetricsProvider",
    "NoopControllerMetricsProvider",
    "get_controller_metrics_provider",
    "reset_controller_metrics_provider_for_tests",
    "set_controller_metrics_provider",
]

RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")


class ControllerMetricsProvider(Protocol):
    """Makes one controller's metrics."""

    def new_reconcile_total_metric(self, name: str, result: str) -> CounterMetric:
        """The counter of reconciles of controller ``name`` that ended with ``result``
        (``controller_runtime_reconcile_total``)."""
        ...

    def new_reconcile_errors_metric(self, name: str) -> CounterMetric:
        """The counter of failed reconciles of controller ``name``
        (``controller_runtime_reconcile_errors_total``)."""
        ...

    def new_reconcile_time_metric(self, name: str) -> HistogramMetric:
        """The histogram of seconds each reconcile of controller ``name`` took
        (``controller_runtime_reconcile_time_seconds``)."""
        ...

    def new_active_workers_metric(self, name: str) -> GaugeMetric:
        """The gauge of reconciles of controller ``name`` running now
        (``controller_runtime_active_workers``)."""
        ...

    def new_max_concurrent_reconciles_metric(self, name: str) -> SettableGaugeMetric:
        """The gauge of controller ``name``'s concurrency limit
        (``controller_runtime_max_concurrent_reconciles``)."""
        ...


_NOOP = NOOP_METRIC


class NoopControllerMetricsProvider:
    """The default provider: every metric does nothing."""

    def new_reconcile_total_metric(self, name: str, result: str) -> CounterMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_reconcile_errors_metric(self, name: str) -> CounterMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_reconcile_time_metric(self, name: str) -> HistogramMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_active_workers_metric(self, name: str) -> GaugeMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_max_concurrent_reconciles_metric(self, name: str) -> SettableGaugeMetric:
        """A metric that records nothing."""
        return _NOOP


_slot: ProviderSlot[ControllerMetricsProvider] = ProviderSlot(NoopControllerMetricsProvider())


def set_controller_metrics_provider(provider: ControllerMetricsProvider) -> None:
    """Set the global provider (controllers built afterwards use it)."""
    _slot.set(provider)


def get_controller_metrics_provider() -> ControllerMetricsProvider:
    """The provider controllers built now use."""
    return _slot.get()


def reset_controller_metrics_provider_for_tests() -> None:
    """Restore the no-op provider."""
    _slot.reset()


class ControllerMetrics:
    """One controller's metrics, made by the current provider when its run starts: the
    counters by result, the error counter, the reconcile-time histogram and the gauge of
    active workers (the concurrency gauge is set here, once)."""

    def __init__(self, name: str, concurrency: int) -> None:
        provider = get_controller_metrics_provider()
        self.total = {result: provider.new_reconcile_total_metric(name, result)
                      for result in ("success", "error", "requeue_after")}
        self.errors = provider.new_reconcile_errors_metric(name)
        self.time = provider.new_reconcile_time_metric(name)
        self.active = provider.new_active_workers_metric(name)
        provider.new_max_concurrent_reconciles_metric(name).set(concurrency)

    def observe(self, started: float, result: str) -> None:
        """Record one reconcile begun at ``started`` (monotonic) that ended with
        ``result``."""
        self.time.observe(time.monotonic() - started)
        self.total[result].inc()
        if result == "error":
            self.errors.inc()
