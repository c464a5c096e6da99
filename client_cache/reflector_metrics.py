"""Reflector metrics (Go ``tools/cache/reflector_metrics.go``).

Upstream defines this provider API but its Reflector never calls it; this port's Reflector
does record, per reflector name: lists (a LIST or a watch-list stream that filled the
cache), list duration (seconds), items per list, watches,
short watches (closed within a second with no events), watch duration (seconds), items per
watch and the last resourceVersion seen (as a number when it is one).

:func:`set_reflector_metrics_provider` sets the provider for reflectors created afterwards;
the first call wins, as upstream. The default records nothing.
"""

from __future__ import annotations

import threading
from typing import Protocol, runtime_checkable

__all__ = [
    "CounterMetric",
    "GaugeMetric",
    "MetricsProvider",
    "ReflectorMetrics",
    "SummaryMetric",
    "reset_reflector_metrics_provider_for_tests",
    "set_reflector_metrics_provider",
]


@runtime_checkable
class GaugeMetric(Protocol):
    def set(self, value: float) -> None:
        """Set the gauge to ``value``."""
        ...


@runtime_checkable
class CounterMetric(Protocol):
    def inc(self) -> None:
        """Add one."""
        ...


@runtime_checkable
class SummaryMetric(Protocol):
    def observe(self, value: float) -> None:
        """Record ``value``."""
        ...


@runtime_checkable
class MetricsProvider(Protocol):
    def new_lists_metric(self, name: str) -> CounterMetric:
        """The counter of LISTs made by reflector ``name``."""
        ...

    def new_list_duration_metric(self, name: str) -> SummaryMetric:
        """The summary of seconds each LIST of reflector ``name`` took."""
        ...

    def new_items_in_list_metric(self, name: str) -> SummaryMetric:
        """The summary of how many items each LIST of reflector ``name`` returned."""
        ...

    def new_watches_metric(self, name: str) -> CounterMetric:
        """The counter of watches opened by reflector ``name``."""
        ...

    def new_short_watches_metric(self, name: str) -> CounterMetric:
        """The counter of watches of reflector ``name`` that ended within a second with no
        event."""
        ...

    def new_watch_duration_metric(self, name: str) -> SummaryMetric:
        """The summary of seconds each watch of reflector ``name`` lasted."""
        ...

    def new_items_in_watch_metric(self, name: str) -> SummaryMetric:
        """The summary of how many events each watch of reflector ``name`` delivered."""
        ...

    def new_last_resource_version_metric(self, name: str) -> GaugeMetric:
        """The gauge of the last resourceVersion reflector ``name`` saw (as a number)."""
        ...


class _Noop:
    def set(self, value: float) -> None:
        pass

    def inc(self) -> None:
        pass

    def observe(self, value: float) -> None:
        pass


class _NoopProvider:
    def new_lists_metric(self, name: str) -> CounterMetric:
        return _Noop()

    def new_list_duration_metric(self, name: str) -> SummaryMetric:
        return _Noop()

    def new_items_in_list_metric(self, name: str) -> SummaryMetric:
        return _Noop()

    def new_watches_metric(self, name: str) -> CounterMetric:
        return _Noop()

    def new_short_watches_metric(self, name: str) -> CounterMetric:
        return _Noop()

    def new_watch_duration_metric(self, name: str) -> SummaryMetric:
        return _Noop()

    def new_items_in_watch_metric(self, name: str) -> SummaryMetric:
        return _Noop()

    def new_last_resource_version_metric(self, name: str) -> GaugeMetric:
        return _Noop()


_lock = threading.Lock()
_provider: MetricsProvider = _NoopProvider()
_provider_set = False


def set_reflector_metrics_provider(provider: MetricsProvider) -> None:
    """Set the provider (first call wins)."""
    global _provider, _provider_set  # noqa: PLW0603 - the documented global, as upstream
    with _lock:
        if not _provider_set:
            _provider = provider
            _provider_set = True


def reset_reflector_metrics_provider_for_tests() -> None:
    """Forget the installed provider so that a test can install another (tests only)."""
    global _provider, _provider_set  # noqa: PLW0603
    with _lock:
        _provider = _NoopProvider()
        _provider_set = False


class ReflectorMetrics:
    """The metrics of one reflector."""

    def __init__(self, name: str) -> None:
        with _lock:
            provider = _provider
        self.lists = provider.new_lists_metric(name)
        self.list_duration = provider.new_list_duration_metric(name)
        self.items_in_list = provider.new_items_in_list_metric(name)
        self.watches = provider.new_watches_metric(name)
        self.short_watches = provider.new_short_watches_metric(name)
        self.watch_duration = provider.new_watch_duration_metric(name)
        self.items_in_watch = provider.new_items_in_watch_metric(name)
        self.last_resource_version = provider.new_last_resource_version_metric(name)

    def filled(self, seconds: float, items: int) -> None:
        """Record a cache fill (a LIST or a watch-list stream) of ``items`` objects that
        took ``seconds``."""
        self.lists.inc()
        self.list_duration.observe(seconds)
        self.items_in_list.observe(items)

    def resource_version(self, rv: str) -> None:
        """Record ``rv`` as the last resourceVersion seen (non-numeric ones are skipped)."""
        if rv.isdigit():
            self.last_resource_version.set(float(rv))
