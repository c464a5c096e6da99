"""The webhook server's metrics through a provider protocol, no-op by default
(controller-runtime's ``pkg/webhook/internal/metrics``): per webhook path, the requests
by HTTP code (``controller_runtime_webhook_requests_total{webhook,code}``), their
latency (``controller_runtime_webhook_latency_seconds``) and those in flight
(``controller_runtime_webhook_requests_in_flight``).
:mod:`client_cache.metrics.prometheus` exports them through ``prometheus_client``."""

from __future__ import annotations

from typing import Protocol

from client_cache.util.provider import ProviderSlot
from client_cache.workqueue.metrics import (
    NOOP_METRIC,
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
)

__all__ = [
    "NoopWebhookMetricsProvider",
    "WebhookMetricsProvider",
    "get_webhook_metrics_provider",
    "reset_webhook_metrics_provider_for_tests",
    "set_webhook_metrics_provider",
]


class WebhookMetricsProvider(Protocol):
    """Makes the metrics of the webhook served at a path."""

    def new_requests_metric(self, webhook: str, code: str) -> CounterMetric:
        """The counter of requests to ``webhook`` answered with HTTP ``code``."""
        ...

    def new_latency_metric(self, webhook: str) -> HistogramMetric:
        """The histogram of seconds ``webhook``'s requests took."""
        ...

    def new_in_flight_metric(self, webhook: str) -> GaugeMetric:
        """The gauge of ``webhook``'s requests being answered now."""
        ...


class NoopWebhookMetricsProvider:
    """The default provider: every metric does nothing."""

    def new_requests_metric(self, webhook: str, code: str) -> CounterMetric:
        """A metric that records nothing."""
        return NOOP_METRIC

    def new_latency_metric(self, webhook: str) -> HistogramMetric:
        """A metric that records nothing."""
        return NOOP_METRIC

    def new_in_flight_metric(self, webhook: str) -> GaugeMetric:
        """A metric that records nothing."""
        return NOOP_METRIC


_slot: ProviderSlot[WebhookMetricsProvider] = ProviderSlot(NoopWebhookMetricsProvider())


def set_webhook_metrics_provider(provider: WebhookMetricsProvider) -> None:
    """Set the global provider (servers started afterwards use it)."""
    _slot.set(provider)


def get_webhook_metrics_provider() -> WebhookMetricsProvider:
    """The provider servers started now use."""
    return _slot.get()


def reset_webhook_metrics_provider_for_tests() -> None:
    """Restore the no-op provider."""
    _slot.reset()
