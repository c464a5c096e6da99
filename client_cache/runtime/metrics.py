"""Controller metrics through a provider protocol (controller-runtime's
``controller_runtime_reconcile_*`` family), no-op by default as the work queue's.

A provider builds, per controller name: a counter per reconcile result (``success``,
``error``, ``requeue``, ``requeue_after``, controller-runtime's labels), an error counter,
the terminal-error and panic counters, a histogram of reconcile seconds, the gauge of
active workers and the gauge of the concurrency bound. Queue depth, waits and retries come
from the work-queue metrics of the scheduler's queue (named after the controller, and
labelled with it by :meth:`ControllerMetricsProvider.new_queue_metrics_provider`).
:mod:`client_cache.metrics.prometheus` exports them through ``prometheus_client``.

How results map (controller-runtime's rules on this runtime's kube-rs shapes): a
reconcile that returns ``Action.await_change()`` is a ``success``;
``Action.requeue(seconds)`` is ``requeue_after``; ``Action.requeue_with_backoff()`` is
``requeue``; one that raises is an ``error`` (and counts in the error counter), a
:class:`~client_cache.runtime.reconcile.TerminalError` also in the terminal counter, and
an exception that is not an expected failure (see
:func:`~client_cache.runtime.reconcile.is_panic`) also in the panic counter.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from client_cache.util.provider import ProviderSlot
from client_cache.workqueue.metrics import (
    NOOP_METRIC,
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    MetricsProvider,
    SettableGaugeMetric,
)

__all__ = [
    "RECONCILE_RESULTS",
    "TIMER_RESULTS",
    "ControllerMetrics",
    "ControllerMetricsProvider",
    "NoopControllerMetricsProvider",
    "get_controller_metrics_provider",
    "reset_controller_metrics_provider_for_tests",
    "set_controller_metrics_provider",
]

RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")
TIMER_RESULTS = ("success", "error", "skipped")
"""What a timer tick did: ran and returned, raised, or was skipped (a reconcile of its
object ran, a tick of it still ran, the replica did not lead or hold the key)."""


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

    def new_terminal_reconcile_errors_metric(self, name: str) -> CounterMetric:
        """The counter of reconciles of controller ``name`` that failed for good
        (``controller_runtime_terminal_reconcile_errors_total``)."""
        ...

    def new_reconcile_panics_metric(self, name: str) -> CounterMetric:
        """The counter of reconciles of controller ``name`` that raised an unexpected
        exception (``controller_runtime_reconcile_panics_total``)."""
        ...

    def new_reconcile_time_metric(self, name: str) -> HistogramMetric:
        """The histogram of seconds each reconcile of controller ``name`` took
        (``controller_runtime_reconcile_time_seconds``)."""
        ...

    def new_queue_metrics_provider(self, name: str) -> MetricsProvider | None:
        """The work-queue metrics provider of controller ``name``'s queue (None: the
        work queue's global provider)."""
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

    def new_terminal_reconcile_errors_metric(self, name: str) -> CounterMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_reconcile_panics_metric(self, name: str) -> CounterMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_reconcile_time_metric(self, name: str) -> HistogramMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_queue_metrics_provider(self, name: str) -> MetricsProvider | None:
        """None: the queue uses the work queue's global provider."""
        return None

    def new_stale_cache_deferrals_metric(self, name: str) -> CounterMetric:
        """A metric that records nothing. (Optional in a provider: the counter of
        reconciles of controller ``name`` deferred until the cache held the object's
        last write, ``client_cache_controller_stale_cache_deferrals_total``.)"""
        return _NOOP

    def new_reconcile_timeouts_metric(self, name: str) -> CounterMetric:
        """A metric that records nothing. (Optional in a provider: the counter of
        reconciles of controller ``name`` that ran past ``reconcile_timeout``,
        ``controller_runtime_reconcile_timeouts_total``.)"""
        return _NOOP

    def new_active_workers_metric(self, name: str) -> GaugeMetric:
        """A metric that records nothing."""
        return _NOOP

    def new_daemons_running_metric(self, name: str) -> SettableGaugeMetric:
        """A metric that records nothing. (Optional in a provider: the gauge of
        controller ``name``'s daemons running now,
        ``client_cache_controller_daemons_running``.)"""
        return _NOOP

    def new_daemons_waiting_metric(self, name: str) -> SettableGaugeMetric:
        """A metric that records nothing. (Optional in a provider: the gauge of
        controller ``name``'s daemons waiting for a slot,
        ``client_cache_controller_daemons_waiting``.)"""
        return _NOOP

    def new_daemon_failures_metric(self, name: str) -> CounterMetric:
        """A metric that records nothing. (Optional in a provider: the counter of
        controller ``name``'s daemons that raised,
        ``client_cache_controller_daemon_failures_total``.)"""
        return _NOOP

    def new_timer_ticks_metric(self, name: str, result: str) -> CounterMetric:
        """A metric that records nothing. (Optional in a provider: the counter of
        controller ``name``'s timer ticks by ``result``, one of :data:`TIMER_RESULTS`,
        ``client_cache_controller_timer_ticks_total``.)"""
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
    counters by result, the error, terminal-error and panic counters, the reconcile-time
    histogram and the gauge of active workers (the concurrency gauge is set here, once);
    ``queue_provider`` is what the controller's queue reports to."""

    def __init__(self, name: str, concurrency: int) -> None:
        provider = get_controller_metrics_provider()
        self.total = {result: provider.new_reconcile_total_metric(name, result)
                      for result in RECONCILE_RESULTS}
        self.errors = provider.new_reconcile_errors_metric(name)
        self.terminal = provider.new_terminal_reconcile_errors_metric(name)
        self.panics = provider.new_reconcile_panics_metric(name)
        self.time = provider.new_reconcile_time_metric(name)
        self.active = provider.new_active_workers_metric(name)
        # optional in a provider (added with read-your-writes): a provider without it
        # records no deferrals
        self.deferrals: CounterMetric = _optional(
            provider, "new_stale_cache_deferrals_metric", name)
        # optional too: the timeouts, daemons and timers metrics
        self.timeouts: CounterMetric = _optional(provider, "new_reconcile_timeouts_metric",
                                                 name)
        self.daemons_running: SettableGaugeMetric = _optional(
            provider, "new_daemons_running_metric", name)
        self.daemons_waiting: SettableGaugeMetric = _optional(
            provider, "new_daemons_waiting_metric", name)
        self.daemon_failures: CounterMetric = _optional(
            provider, "new_daemon_failures_metric", name)
        self.timer_ticks: dict[str, CounterMetric] = {
            result: _optional(provider, "new_timer_ticks_metric", name, result)
            for result in TIMER_RESULTS}
        self.queue_provider = provider.new_queue_metrics_provider(name)
        provider.new_max_concurrent_reconciles_metric(name).set(concurrency)

    def observe(self, started: float, result: str, *, terminal: bool = False,
                panic: bool = False) -> None:
        """Record one reconcile begun at ``started`` (monotonic) that ended with
        ``result``; an ``error`` may also be ``terminal`` or a ``panic``."""
        self.time.observe(time.monotonic() - started)
        self.total[result].inc()
        if result == "error":
            self.errors.inc()
            if terminal:
                self.terminal.inc()
            if panic:
                self.panics.inc()


def _optional(provider: ControllerMetricsProvider, method: str, *args: str) -> Any:
    """The metric ``provider.method(*args)`` makes, or one that records nothing when the
    provider predates it."""
    make = getattr(provider, method, None)
    return make(*args) if callable(make) else _NOOP
