"""Every metric of the library in Prometheus' format, in one call (needs the
``[prometheus]`` extra, ``prometheus_client``; nothing else in the library imports it).

::

    from client_cache.metrics.prometheus import register
    register(factories=[factory])        # before building queues, informers, controllers
    client_cache.health.serve(8080, ...) # /metrics; or prometheus_client.start_http_server

:func:`register` sets the library's metric providers (which apply to what is built
afterwards) and adds a collector that reads the informers' health at each scrape:

* every request to the API server, client-go's names and labels:
  ``rest_client_requests_total{code, method, host}``,
  ``rest_client_request_duration_seconds{verb, host}``,
  ``rest_client_rate_limiter_duration_seconds{verb, host}``,
  ``rest_client_request_size_bytes{verb, host}``,
  ``rest_client_response_size_bytes{verb, host}``,
  ``rest_client_request_retries_total{code, verb, host}`` (client-go's buckets; what is
  measured: :mod:`client_cache.util.rest_metrics`);
* work queues, client-go's names, labels ``name`` and ``controller`` (controller-runtime's;
  empty for a queue no runtime controller owns): ``workqueue_depth``,
  ``workqueue_adds_total``, ``workqueue_queue_duration_seconds``,
  ``workqueue_work_duration_seconds`` (histograms, client-go's buckets: 10 ns to 10 s
  by factors of 10), ``workqueue_unfinished_work_seconds``,
  ``workqueue_longest_running_processor_seconds``, ``workqueue_retries_total``;
  ``workqueue_depth`` also has controller-runtime's label ``priority``: the priority
  items wait at in a priority queue (:mod:`client_cache.workqueue.priority`, a runtime
  controller's by default), empty for a plain queue; past 25 distinct priorities in one
  queue the rest are counted as ``priority="other"`` (a bounded number of series);
* reflectors, label ``name``: ``reflector_lists_total``,
  ``reflector_list_duration_seconds``, ``reflector_items_per_list``,
  ``reflector_watches_total``, ``reflector_short_watches_total``,
  ``reflector_watch_duration_seconds``, ``reflector_items_per_watch`` (summaries),
  ``reflector_last_resource_version``;
* informers with a reserved identity (:mod:`client_cache.identity`; a factory's
  ``informer_name``), client-go v0.36's names, labels ``name``, ``group``, ``version``
  and ``resource``: ``informer_queued_items``, ``informer_processing_latency_seconds``
  (histogram, client-go's buckets: 1 ms to 10 s), ``informer_store_resource_version``
  (its last 15 digits);
* informers of the given factories (read at scrape time), label ``resource``:
  ``client_cache_informer_synced``, ``client_cache_informer_healthy``,
  ``client_cache_informer_lists_total``, ``client_cache_informer_relists_total``,
  ``client_cache_informer_watch_restarts_total``,
  ``client_cache_informer_watch_events_total``,
  ``client_cache_informer_consecutive_failures``,
  ``client_cache_informer_last_watch_activity_age_seconds``,
  ``client_cache_informer_queue_depth``, ``client_cache_informer_events_handled_total``,
  ``client_cache_informer_handler_errors_total``,
  ``client_cache_informer_decode_errors_total``,
  ``client_cache_informer_handler_buffer_depth{resource, handler}`` and
  ``client_cache_informer_index_errors_total{resource, index}``;
* the controller runtime, controller-runtime's names, buckets and label ``controller``:
  ``controller_runtime_reconcile_total{result}`` (``success``, ``error``, ``requeue``,
  ``requeue_after``), ``controller_runtime_reconcile_errors_total``,
  ``controller_runtime_terminal_reconcile_errors_total``,
  ``controller_runtime_reconcile_panics_total``,
  ``controller_runtime_reconcile_timeouts_total``,
  ``controller_runtime_reconcile_time_seconds``,
  ``controller_runtime_max_concurrent_reconciles``, ``controller_runtime_active_workers``,
  and the package's ``client_cache_controller_stale_cache_deferrals_total``
  (read-your-writes, :mod:`client_cache.runtime._read_your_writes`);
* leader election: ``leader_election_master_status{name}`` (1 while leading);
* sharding (:mod:`client_cache.sharding`), label ``ring``: ``shard_members``,
  ``shard_keys_owned``, ``shard_handovers_total`` and
  ``shard_drain_duration_seconds``;
* the runtime's daemons and timers, label ``controller``:
  ``client_cache_controller_daemons_running``, ``..._daemons_waiting``,
  ``..._daemon_failures_total``, ``..._timer_ticks_total{result}``;
* the webhook server (:mod:`client_cache.webhooks`), controller-runtime's names, label
  ``webhook`` (the path): ``controller_runtime_webhook_requests_total{code}``,
  ``controller_runtime_webhook_latency_seconds``,
  ``controller_runtime_webhook_requests_in_flight``.

The work-queue provider is set only by the first call in a process, as client-go's
``SetProvider``; so is the reflector's.
"""

from __future__ import annotations

import copy
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from typing import Any

import prometheus_client
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, Summary
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from client_cache import reflector_metrics
from client_cache.identity import InformerNameAndResource
from client_cache.informer_metrics import set_informer_metrics_provider
from client_cache.leaderelection.metrics import set_leader_metrics_provider
from client_cache.runtime.metrics import set_controller_metrics_provider
from client_cache.sharding.metrics import set_sharding_metrics_provider
from client_cache.util.rest_metrics import set_rest_client_metrics
from client_cache.webhooks.metrics import set_webhook_metrics_provider
from client_cache.workqueue import metrics as workqueue_metrics

__all__ = [
    "WORKQUEUE_BUCKETS",
    "ControllerProvider",
    "INFORMER_LATENCY_BUCKETS",
    "InformerCollector",
    "InformerProvider",
    "LeaderProvider",
    "ShardingProvider",
    "RECONCILE_TIME_BUCKETS",
    "REST_DURATION_BUCKETS",
    "REST_SIZE_BUCKETS",
    "ReflectorProvider",
    "RestClientProvider",
    "WorkqueueProvider",
    "register",
]

WORKQUEUE_BUCKETS = tuple(1e-8 * 10 ** i for i in range(10))
"""client-go's ``ExponentialBuckets(10e-9, 10, 10)``: 10 ns to 10 s (ten buckets)."""


class WorkqueueProvider:
    """The work queues' metrics (client-go's ``workqueue`` Prometheus adapter), labelled
    ``name`` and ``controller`` as controller-runtime labels them: a runtime controller's
    queue carries the controller's name in both (:meth:`for_controller`), any other queue
    an empty ``controller`` (which Prometheus reads as no label)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["name", "controller"]

        def histogram(name: str, text: str) -> Histogram:
            return Histogram(name, text, labels, registry=registry,
                             buckets=WORKQUEUE_BUCKETS)
        self.depth = Gauge("workqueue_depth",
                           "Current depth of workqueue by workqueue and priority",
                           [*labels, "priority"], registry=registry)
        self.adds = Counter("workqueue_adds", "Total number of adds handled by workqueue",
                            labels, registry=registry)
        self.latency = histogram("workqueue_queue_duration_seconds",
                                 "How long in seconds an item stays in workqueue before "
                                 "being requested.")
        self.work_duration = histogram("workqueue_work_duration_seconds",
                                       "How long in seconds processing an item from "
                                       "workqueue takes.")
        self.unfinished = Gauge("workqueue_unfinished_work_seconds",
                                "How many seconds of work has done that is in progress and "
                                "hasn't been observed by work_duration.", labels,
                                registry=registry)
        self.longest = Gauge("workqueue_longest_running_processor_seconds",
                             "How many seconds has the longest running processor for "
                             "workqueue been running.", labels, registry=registry)
        self.retries = Counter("workqueue_retries", "Total number of retries handled by "
                               "workqueue", labels, registry=registry)
        self.controller = ""

    def for_controller(self, controller: str) -> WorkqueueProvider:
        """The same metrics, labelled with ``controller`` (a runtime controller's queue)."""
        view = copy.copy(self)
        view.controller = controller
        return view

    def new_depth_metric(self, name: str) -> Any:
        """The gauge of how many items wait in queue ``name`` (``workqueue_depth``, no
        priority)."""
        return self.depth.labels(name, self.controller, "")

    def new_depth_metric_with_priority(self, name: str) -> _DepthByPriority:
        """The gauges of how many items wait in priority queue ``name`` at each priority
        (``workqueue_depth{priority}``; controller-runtime
        ``NewDepthMetricWithPriority``)."""
        return _DepthByPriority(self.depth, name, self.controller)

    def new_adds_metric(self, name: str) -> Any:
        """The counter of items added to queue ``name`` (``workqueue_adds_total``)."""
        return self.adds.labels(name, self.controller)

    def new_latency_metric(self, name: str) -> Any:
        """The histogram of seconds items wait in queue ``name`` before a worker takes them
        (``workqueue_queue_duration_seconds``)."""
        return self.latency.labels(name, self.controller)

    def new_work_duration_metric(self, name: str) -> Any:
        """The histogram of seconds workers of queue ``name`` spend on an item
        (``workqueue_work_duration_seconds``)."""
        return self.work_duration.labels(name, self.controller)

    def new_unfinished_work_seconds_metric(self, name: str) -> Any:
        """The gauge of seconds of work in progress not yet done in queue ``name``
        (``workqueue_unfinished_work_seconds``)."""
        return self.unfinished.labels(name, self.controller)

    def new_longest_running_processor_seconds_metric(self, name: str) -> Any:
        """The gauge of the longest time an item of queue ``name`` has been in work
        (``workqueue_longest_running_processor_seconds``)."""
        return self.longest.labels(name, self.controller)

    def new_retries_metric(self, name: str) -> Any:
        """The counter of rate-limited re-adds to queue ``name``
        (``workqueue_retries_total``)."""
        return self.retries.labels(name, self.controller)


MAX_PRIORITY_LABELS = 25
"""How many distinct priorities one queue's depth gauge labels; the rest are ``other``."""


class _DepthByPriority:
    """One queue's ``workqueue_depth`` by priority: a priority's child is made on first
    use, up to :data:`MAX_PRIORITY_LABELS` of them; a priority seen after that is counted
    under ``other`` (always the same one for it, so its inc and dec meet)."""

    def __init__(self, gauge: Gauge, name: str, controller: str) -> None:
        self._gauge = gauge
        self._name = name
        self._controller = controller
        self._children: dict[int, Any] = {}
        self._lock = threading.Lock()

    def _child(self, priority: int) -> Any:
        child = self._children.get(priority)
        if child is None:
            with self._lock:
                child = self._children.get(priority)
                if child is None:
                    label = (str(priority) if len(self._children) < MAX_PRIORITY_LABELS
                             else "other")
                    child = self._gauge.labels(self._name, self._controller, label)
                    self._children[priority] = child
        return child

    def inc(self, priority: int) -> None:
        """One more item waits at ``priority``."""
        self._child(priority).inc()

    def dec(self, priority: int) -> None:
        """One fewer item waits at ``priority``."""
        self._child(priority).dec()


INFORMER_LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                            5.0, 10.0)
"""client-go's buckets for ``informer_processing_latency_seconds``."""


class _WhileReserved:
    """A gauge or histogram child that records only while its identity is reserved (an
    informer whose name was released stops publishing, as client-go's wrappers do)."""

    __slots__ = ("_child", "_identifier")

    def __init__(self, identifier: InformerNameAndResource, child: Any) -> None:
        self._identifier = identifier
        self._child = child

    def set(self, value: float) -> None:
        if self._identifier.reserved():
            self._child.set(value)

    def observe(self, value: float) -> None:
        if self._identifier.reserved():
            self._child.observe(value)


class InformerProvider:
    """client-go v0.36's informer metrics (``InformerMetricsProvider``), labelled by the
    informer's identity: ``name``, ``group``, ``version``, ``resource``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["name", "group", "version", "resource"]
        self.queued = Gauge("informer_queued_items",
                            "Number of items currently queued in the FIFO.", labels,
                            registry=registry)
        self.latency = Histogram("informer_processing_latency_seconds",
                                 "Time taken to process events after popping from the "
                                 "queue.", labels, registry=registry,
                                 buckets=INFORMER_LATENCY_BUCKETS)
        self.store_rv = Gauge("informer_store_resource_version",
                              "The 15 least significant digits of the resource version of "
                              "the store.", labels, registry=registry)

    @staticmethod
    def _labels(identifier: InformerNameAndResource) -> tuple[str, str, str, str]:
        gvr = identifier.resource
        return identifier.name, gvr.group, gvr.version, gvr.resource

    def new_queued_item_metric(self, identifier: InformerNameAndResource) -> Any:
        """The gauge of items queued in the informer's FIFO."""
        return _WhileReserved(identifier, self.queued.labels(*self._labels(identifier)))

    def new_processing_latency_metric(self, identifier: InformerNameAndResource) -> Any:
        """The histogram of seconds each popped item took to process."""
        return _WhileReserved(identifier, self.latency.labels(*self._labels(identifier)))

    def new_store_resource_version_metric(self, identifier: InformerNameAndResource) -> Any:
        """The gauge of the store's resourceVersion."""
        return _WhileReserved(identifier, self.store_rv.labels(*self._labels(identifier)))


class ReflectorProvider:
    """The reflectors' metrics (the provider client-go defines for ``tools/cache``)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, text: str) -> Counter:
            return Counter(name, text, ["name"], registry=registry)

        def summary(name: str, text: str) -> Summary:
            return Summary(name, text, ["name"], registry=registry)
        self.lists = counter("reflector_lists", "Total number of API lists done by the "
                             "reflectors")
        self.list_duration = summary("reflector_list_duration_seconds",
                                     "How long an API list takes to return and decode")
        self.items_per_list = summary("reflector_items_per_list",
                                      "How many objects an API list returns")
        self.watches = counter("reflector_watches", "Total number of API watches done by "
                               "the reflectors")
        self.short_watches = counter("reflector_short_watches",
                                     "Total number of short API watches done by the "
                                     "reflectors")
        self.watch_duration = summary("reflector_watch_duration_seconds",
                                      "How long an API watch takes to return and decode")
        self.items_per_watch = summary("reflector_items_per_watch",
                                       "How many objects an API watch returns")
        self.last_rv = Gauge("reflector_last_resource_version",
                             "Last resource version seen for the reflectors", ["name"],
                             registry=registry)

    def new_lists_metric(self, name: str) -> Any:
        """The counter of LISTs made by reflector ``name``."""
        return self.lists.labels(name)

    def new_list_duration_metric(self, name: str) -> Any:
        """The summary of seconds each LIST of reflector ``name`` took."""
        return self.list_duration.labels(name)

    def new_items_in_list_metric(self, name: str) -> Any:
        """The summary of how many items each LIST of reflector ``name`` returned."""
        return self.items_per_list.labels(name)

    def new_watches_metric(self, name: str) -> Any:
        """The counter of watches opened by reflector ``name``."""
        return self.watches.labels(name)

    def new_short_watches_metric(self, name: str) -> Any:
        """The counter of watches of reflector ``name`` that ended within a second with no
        event."""
        return self.short_watches.labels(name)

    def new_watch_duration_metric(self, name: str) -> Any:
        """The summary of seconds each watch of reflector ``name`` lasted."""
        return self.watch_duration.labels(name)

    def new_items_in_watch_metric(self, name: str) -> Any:
        """The summary of how many events each watch of reflector ``name`` delivered."""
        return self.items_per_watch.labels(name)

    def new_last_resource_version_metric(self, name: str) -> Any:
        """The gauge of the last resourceVersion reflector ``name`` saw (as a number)."""
        return self.last_rv.labels(name)


RECONCILE_TIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45,
                          0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5,
                          4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 25.0, 30.0,
                          40.0, 50.0, 60.0)
"""controller-runtime's buckets of ``controller_runtime_reconcile_time_seconds``: 5 ms to
60 s, finest around a second."""

REST_DURATION_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
"""client-go's buckets of ``rest_client_request_duration_seconds`` and
``rest_client_rate_limiter_duration_seconds``."""

REST_SIZE_BUCKETS = tuple(64.0 * 4 ** i for i in range(8))
"""client-go's buckets of the request and response sizes: 64 B to 1 MiB by factors of
4."""


class ControllerProvider:
    """The controller runtime's metrics (controller-runtime's names, labels and buckets);
    ``queues`` labels each controller's work-queue metrics with its name."""

    def __init__(self, registry: CollectorRegistry,
                 queues: WorkqueueProvider | None = None) -> None:
        self.queues = queues
        self.total = Counter("controller_runtime_reconcile",
                             "Total number of reconciliations per controller",
                             ["controller", "result"], registry=registry)
        self.errors = Counter("controller_runtime_reconcile_errors",
                              "Total number of reconciliation errors per controller",
                              ["controller"], registry=registry)
        self.terminal = Counter("controller_runtime_terminal_reconcile_errors",
                                "Total number of terminal reconciliation errors per "
                                "controller", ["controller"], registry=registry)
        self.panics = Counter("controller_runtime_reconcile_panics",
                              "Total number of reconciliation panics per controller",
                              ["controller"], registry=registry)
        self.time = Histogram("controller_runtime_reconcile_time_seconds",
                              "Length of time per reconciliation per controller",
                              ["controller"], registry=registry,
                              buckets=RECONCILE_TIME_BUCKETS)
        self.workers = Gauge("controller_runtime_active_workers",
                             "Number of currently used workers per controller",
                             ["controller"], registry=registry)
        self.max_concurrent = Gauge("controller_runtime_max_concurrent_reconciles",
                                    "Maximum number of concurrent reconciles per controller",
                                    ["controller"], registry=registry)
        self.timeouts = Counter("controller_runtime_reconcile_timeouts",
                                "Total number of reconciliation timeouts per controller",
                                ["controller"], registry=registry)
        self.daemons_running = Gauge("client_cache_controller_daemons_running",
                                     "Per-object daemons running now per controller",
                                     ["controller"], registry=registry)
        self.daemons_waiting = Gauge("client_cache_controller_daemons_waiting",
                                     "Per-object daemons waiting for a slot per controller",
                                     ["controller"], registry=registry)
        self.daemon_failures = Counter("client_cache_controller_daemon_failures",
                                       "Per-object daemons that raised per controller",
                                       ["controller"], registry=registry)
        self.timer_ticks = Counter("client_cache_controller_timer_ticks",
                                   "Per-object timer ticks per controller and result",
                                   ["controller", "result"], registry=registry)
        self.deferrals = Counter("client_cache_controller_stale_cache_deferrals",
                                 "Reconciles deferred until the cache held the object's "
                                 "last write (read-your-writes)", ["controller"],
                                 registry=registry)

    def new_reconcile_total_metric(self, name: str, result: str) -> Any:
        """The counter of reconciles of controller ``name`` that ended with ``result``
        (``controller_runtime_reconcile_total``)."""
        return self.total.labels(name, result)

    def new_reconcile_errors_metric(self, name: str) -> Any:
        """The counter of failed reconciles of controller ``name``
        (``controller_runtime_reconcile_errors_total``)."""
        return self.errors.labels(name)

    def new_terminal_reconcile_errors_metric(self, name: str) -> Any:
        """The counter of reconciles of controller ``name`` that failed for good
        (``controller_runtime_terminal_reconcile_errors_total``)."""
        return self.terminal.labels(name)

    def new_reconcile_panics_metric(self, name: str) -> Any:
        """The counter of reconciles of controller ``name`` that raised an unexpected
        exception (``controller_runtime_reconcile_panics_total``)."""
        return self.panics.labels(name)

    def new_reconcile_time_metric(self, name: str) -> Any:
        """The histogram of seconds each reconcile of controller ``name`` took
        (``controller_runtime_reconcile_time_seconds``)."""
        return self.time.labels(name)

    def new_reconcile_timeouts_metric(self, name: str) -> Any:
        """The counter of reconciles of controller ``name`` that ran past
        ``reconcile_timeout`` (``controller_runtime_reconcile_timeouts_total``)."""
        return self.timeouts.labels(name)

    def new_active_workers_metric(self, name: str) -> Any:
        """The gauge of reconciles of controller ``name`` running now
        (``controller_runtime_active_workers``)."""
        return self.workers.labels(name)

    def new_stale_cache_deferrals_metric(self, name: str) -> Any:
        """The counter of reconciles of controller ``name`` deferred until the cache held
        the object's last write (``client_cache_controller_stale_cache_deferrals_total``,
        a port addition: read-your-writes, KEP-5647)."""
        return self.deferrals.labels(name)

    def new_daemons_running_metric(self, name: str) -> Any:
        """The gauge of controller ``name``'s daemons running now
        (``client_cache_controller_daemons_running``, a port addition: kopf's daemons)."""
        return self.daemons_running.labels(name)

    def new_daemons_waiting_metric(self, name: str) -> Any:
        """The gauge of controller ``name``'s daemons waiting for a slot
        (``client_cache_controller_daemons_waiting``)."""
        return self.daemons_waiting.labels(name)

    def new_daemon_failures_metric(self, name: str) -> Any:
        """The counter of controller ``name``'s daemons that raised
        (``client_cache_controller_daemon_failures_total``)."""
        return self.daemon_failures.labels(name)

    def new_timer_ticks_metric(self, name: str, result: str) -> Any:
        """The counter of controller ``name``'s timer ticks by ``result``
        (``client_cache_controller_timer_ticks_total``: success, error, skipped)."""
        return self.timer_ticks.labels(name, result)

    def new_max_concurrent_reconciles_metric(self, name: str) -> Any:
        """The gauge of controller ``name``'s concurrency limit
        (``controller_runtime_max_concurrent_reconciles``)."""
        return self.max_concurrent.labels(name)

    def new_queue_metrics_provider(self, name: str) -> Any:
        """The work-queue metrics of controller ``name``'s queue, labelled
        ``controller=name``; None when no work-queue provider was registered here."""
        return None if self.queues is None else self.queues.for_controller(name)


class RestClientProvider:
    """client-go's REST client metrics (component-base's ``restclient`` adapter): every
    request the library sends, and the application's calls on an instrumented client
    (:mod:`client_cache.util.rest_metrics`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def histogram(name: str, text: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, text, ["verb", "host"], registry=registry,
                             buckets=buckets)
        self.latency = histogram("rest_client_request_duration_seconds",
                                 "Request latency in seconds. Broken down by verb, and host.",
                                 REST_DURATION_BUCKETS)
        self.limiter = histogram("rest_client_rate_limiter_duration_seconds",
                                 "Client side rate limiter latency in seconds. Broken down "
                                 "by verb, and host.", REST_DURATION_BUCKETS)
        self.request_sizes = histogram("rest_client_request_size_bytes",
                                       "Request size in bytes. Broken down by verb and host.",
                                       REST_SIZE_BUCKETS)
        self.response_sizes = histogram("rest_client_response_size_bytes",
                                        "Response size in bytes. Broken down by verb and "
                                        "host.", REST_SIZE_BUCKETS)
        self.results = Counter("rest_client_requests",
                               "Number of HTTP requests, partitioned by status code, method, "
                               "and host.", ["code", "method", "host"], registry=registry)
        self.retries = Counter("rest_client_request_retries",
                               "Number of request retries, partitioned by status code, verb, "
                               "and host.", ["code", "verb", "host"], registry=registry)

    def request_latency(self, verb: str, host: str, seconds: float) -> None:
        """Observe one request's duration."""
        self.latency.labels(verb, host).observe(seconds)

    def rate_limiter_latency(self, verb: str, host: str, seconds: float) -> None:
        """Observe one request's wait for the client-side rate limiter."""
        self.limiter.labels(verb, host).observe(seconds)

    def request_size(self, verb: str, host: str, size: int) -> None:
        """Observe one request body's size."""
        self.request_sizes.labels(verb, host).observe(size)

    def response_size(self, verb: str, host: str, size: int) -> None:
        """Observe one response body's size."""
        self.response_sizes.labels(verb, host).observe(size)

    def request_result(self, code: str, method: str, host: str) -> None:
        """Count one request's outcome."""
        self.results.labels(code, method, host).inc()

    def request_retry(self, code: str, method: str, host: str) -> None:
        """Count one retried request."""
        self.retries.labels(code, method, host).inc()


class LeaderProvider:
    """``leader_election_master_status{name}``: 1 while this process leads ``name``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.status = Gauge("leader_election_master_status",
                            "Gauge of if the reporting system is master of the relevant "
                            "lease, 0 indicates backup, 1 indicates master. 'name' is the "
                            "string used to identify the lease.", ["name"], registry=registry)

    def on(self, name: str) -> None:
        """Report that this process now leads ``name``."""
        self.status.labels(name).set(1)

    def off(self, name: str) -> None:
        """Report that this process no longer leads ``name``."""
        self.status.labels(name).set(0)


class ShardingProvider:
    """The sharding metrics (:mod:`client_cache.sharding.metrics`), labelled by ring."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.members = Gauge("shard_members", "Members of the ring this replica counts "
                             "live, itself included.", ["ring"], registry=registry)
        self.owned = Gauge("shard_keys_owned", "Cached keys this replica may reconcile "
                           "now.", ["ring"], registry=registry)
        self.handovers = Counter("shard_handovers_total", "Keys that came to this replica "
                                 "from another member.", ["ring"], registry=registry)
        self.drain = Histogram("shard_drain_duration_seconds", "Time from seeing a change "
                               "of members to acting on it: the keys given away finished "
                               "their running reconciles and the new view was written.",
                               ["ring"], registry=registry,
                               buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                                        10, 30, 60))

    def set_members(self, ring: str, count: int) -> None:
        """The members counted live."""
        self.members.labels(ring).set(count)

    def set_keys_owned(self, ring: str, count: int) -> None:
        """The keys this replica may reconcile now."""
        self.owned.labels(ring).set(count)

    def add_handovers(self, ring: str, count: int) -> None:
        """Keys handed over to this replica."""
        self.handovers.labels(ring).inc(count)

    def observe_drain(self, ring: str, seconds: float) -> None:
        """One change of members acted on after ``seconds``."""
        self.drain.labels(ring).observe(seconds)


class WebhookProvider:
    """The webhook server's metrics (:mod:`client_cache.webhooks.metrics`),
    controller-runtime's names and label ``webhook`` (the path)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("controller_runtime_webhook_requests",
                                "Total number of admission requests by HTTP status code.",
                                ["webhook", "code"], registry=registry)
        self.latency = Histogram("controller_runtime_webhook_latency_seconds",
                                 "Histogram of the latency of processing admission "
                                 "requests", ["webhook"], registry=registry)
        self.in_flight = Gauge("controller_runtime_webhook_requests_in_flight",
                               "Current number of admission requests being served.",
                               ["webhook"], registry=registry)

    def new_requests_metric(self, webhook: str, code: str) -> Any:
        """``controller_runtime_webhook_requests_total{webhook, code}``."""
        return self.requests.labels(webhook, code)

    def new_latency_metric(self, webhook: str) -> Any:
        """``controller_runtime_webhook_latency_seconds{webhook}``."""
        return self.latency.labels(webhook)

    def new_in_flight_metric(self, webhook: str) -> Any:
        """``controller_runtime_webhook_requests_in_flight{webhook}``."""
        return self.in_flight.labels(webhook)


class InformerCollector(Collector):
    """The informers of some factories (anything with ``health()``: a factory, a runtime
    Controller), read from their health at each scrape; held weakly."""

    def __init__(self, factories: Iterable[Any] = ()) -> None:
        self._lock = threading.Lock()
        # weak: a registry lives as long as the process; a factory only as long as its user
        self._factories: list[weakref.ref[Any]] = [weakref.ref(f) for f in factories]

    def add_factory(self, factory: Any) -> None:
        """Also report ``factory``'s informers (for as long as it exists: the collector
        holds it weakly)."""
        with self._lock:
            self._factories.append(weakref.ref(factory))

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            self._factories = [ref for ref in self._factories if ref() is not None]
            factories = [f for f in (ref() for ref in self._factories) if f is not None]
        prefix = "client_cache_informer_"

        def gauge(name: str, text: str) -> GaugeMetricFamily:
            return GaugeMetricFamily(prefix + name, text, labels=["resource"])

        def counter(name: str, text: str) -> CounterMetricFamily:
            return CounterMetricFamily(prefix + name, text, labels=["resource"])
        synced = gauge("synced", "1 when the informer has synced")
        healthy = gauge("healthy", "1 when the informer is healthy")
        lists = counter("lists", "LISTs (and watch-lists) that filled the cache")
        relists = counter("relists", "LISTs after the first")
        restarts = counter("watch_restarts", "Watches opened again without a LIST")
        events = counter("watch_events", "Watch events and bookmarks received")
        failures = gauge("consecutive_failures", "Failed list/watch attempts in a row")
        age = gauge("last_watch_activity_age_seconds",
                    "Seconds since the last watch event, bookmark or watch start")
        depth = gauge("queue_depth", "Items waiting in the informer's queue")
        handled = counter("events_handled", "Notifications delivered to handlers")
        errors = counter("handler_errors", "Notifications whose handler raised")
        buffers = GaugeMetricFamily(prefix + "handler_buffer_depth",
                                    "Notifications waiting in a handler's buffer",
                                    labels=["resource", "handler"])
        decode_errors = counter("decode_errors", "Objects that did not fit the informer's "
                                "class, each left out of the cache")
        index_errors = CounterMetricFamily(
            prefix + "index_errors", "Objects an index function failed on (cached and "
            "delivered, left out of that index)", labels=["resource", "index"])
        now = time.time()
        for factory in factories:
            for health in factory.health().values():
                label = [health.resource]
                synced.add_metric(label, float(health.synced))
                healthy.add_metric(label, float(health.healthy))
                lists.add_metric(label, health.lists)
                relists.add_metric(label, health.relists)
                restarts.add_metric(label, health.watch_restarts)
                events.add_metric(label, health.watch_events)
                failures.add_metric(label, health.consecutive_failures)
                if health.last_watch_activity is not None:
                    age.add_metric(label, max(0.0, now - health.last_watch_activity))
                depth.add_metric(label, health.queue_depth)
                handled.add_metric(label, health.handled)
                errors.add_metric(label, health.handler_errors)
                decode_errors.add_metric(label, health.decode_errors)
                for handler, pending in health.handler_buffers.items():
                    buffers.add_metric([health.resource, handler], pending)
                for index, count in health.index_errors.items():
                    index_errors.add_metric([health.resource, index], count)
        yield from (synced, healthy, lists, relists, restarts, events, failures, age, depth,
                    handled, errors, buffers, decode_errors, index_errors)


def register(registry: CollectorRegistry | None = None, *,
             factories: Iterable[Any] = ()) -> InformerCollector:
    """Set the library's providers to Prometheus metrics in ``registry`` (the default
    registry when None) and register an :class:`InformerCollector` for ``factories``
    (more can be added to it later). Call it before building what it should measure.
    Idempotent: a second call with the same registry adds ``factories`` to the collector
    the first made and returns it (Prometheus refuses the same names twice). Counters
    come without their ``*_created`` twins (``prometheus_client.disable_created_metrics``,
    process-wide), as Go's client exports none."""
    registry = registry if registry is not None else REGISTRY
    with _registered_lock:
        collector = _registered.get(registry)
        if collector is not None:
            for factory in factories:
                collector.add_factory(factory)
            return collector
        prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
        queues = WorkqueueProvider(registry)
        workqueue_metrics.set_provider(queues)
        reflector_metrics.set_reflector_metrics_provider(ReflectorProvider(registry))
        set_informer_metrics_provider(InformerProvider(registry))
        set_controller_metrics_provider(ControllerProvider(registry, queues))
        set_rest_client_metrics(RestClientProvider(registry))
        set_leader_metrics_provider(LeaderProvider(registry))
        set_sharding_metrics_provider(ShardingProvider(registry))
        set_webhook_metrics_provider(WebhookProvider(registry))
        collector = InformerCollector(factories)
        registry.register(collector)
        _registered[registry] = collector
        return collector


_registered: weakref.WeakKeyDictionary[CollectorRegistry, InformerCollector] = \
    weakref.WeakKeyDictionary()
"""The collector :func:`register` made for each registry."""
_registered_lock = threading.Lock()
