"""A candidate for coordinated leader election (Go ``tools/leaderelection``'s
``LeaseCandidate``, KEP-4355: beta in Kubernetes v1.33, behind kube-apiserver's
``CoordinatedLeaderElection`` gate and the ``coordination.k8s.io/v1beta1`` API).

A :class:`LeaseCandidate` keeps a ``LeaseCandidate`` object in its namespace telling the
API server that it stands for Lease ``lease_name``, with its binary and emulation
versions and its strategy (``OldestEmulationVersion``: the server elects the candidate
with the oldest emulation version, then binary version, then the oldest candidate). It
renews the object every 5 minutes, and at once when the server pings it (a
``pingTime`` newer than its ``renewTime``: the server asks who is still there before an
election). Pair it with a :class:`~client_cache.leaderelection.LeaderElector` whose
configuration says ``coordinated=True``: the elector then only renews the Lease while
the server names it holder.

The object is read through an informer of the candidate's own object (a field selector
on its name), so a ping wakes the candidate without polling; failures are retried with
client-go's controller backoff (5 ms doubling to 1,000 s), each reported.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone
from typing import Any
from urllib.parse import quote

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import request_json, resource_path
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.errors import ClientCacheError, from_status
from client_cache.informers.factory import (
    SharedInformerFactory,
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.util._logs import log_visibly
from client_cache.util.stop import on_stop
from client_cache.util.timestamps import format_micro_time, parse_micro_time
from client_cache.workqueue.default_rate_limiters import (
    ItemExponentialFailureRateLimiter,
    new_item_exponential_failure_rate_limiter,
)

__all__ = [
    "LEASE_CANDIDATES",
    "OLDEST_EMULATION_VERSION",
    "REQUEUE_INTERVAL",
    "LeaseCandidate",
]

_log = logging.getLogger(__name__)

LEASE_CANDIDATES = GroupVersionResource("coordination.k8s.io", "v1beta1", "leasecandidates")
OLDEST_EMULATION_VERSION = "OldestEmulationVersion"
"""The strategy the API server's coordinator applies (Go ``v1.OldestEmulationVersion``)."""
REQUEUE_INTERVAL = 300.0
"""Seconds between two renewals of the candidate object (Go ``requeueInterval``)."""


class LeaseCandidate:
    """See the module documentation (Go ``NewCandidate``; ``run`` is Go's ``Run``).
    ``api_client`` is a ``kubernetes.client.ApiClient``; the candidate object is
    ``namespace/name``; :meth:`wait_for_cache_sync` is Go's ``CacheSyncWaiter``."""

    def __init__(self, api_client: Any, namespace: str, name: str, lease_name: str,
                 binary_version: str, emulation_version: str,
                 strategy: str = OLDEST_EMULATION_VERSION) -> None:
        if not (namespace and name and lease_name):
            raise ValueError("a lease candidate needs a namespace, a name and a lease name")
        self.api_client = api_client
        self.namespace = namespace
        self.name = name
        self.lease_name = lease_name
        self.binary_version = binary_version
        self.emulation_version = emulation_version
        self.strategy = strategy
        self._wake = threading.Event()
        self._limiter: ItemExponentialFailureRateLimiter[int] = \
            new_item_exponential_failure_rate_limiter(0.005, 1000.0)
        self._factory: SharedInformerFactory = new_shared_informer_factory_with_options(
            api_client, REQUEUE_INTERVAL, SharedInformerFactoryOptions(
                namespace=namespace, tweak_list_options=self._only_mine))
        self._informer = self._factory.for_resource(LEASE_CANDIDATES).informer()
        self._registration = self._informer.add_event_handler(ResourceEventHandlerFuncs(
            update_func=self._updated))

    def __repr__(self) -> str:
        return f"<LeaseCandidate {self.namespace}/{self.name} for Lease {self.lease_name}>"

    def _only_mine(self, options: ListOptions) -> None:
        options.field_selector = f"metadata.name={self.name}"

    def _updated(self, old: Any, new: Any) -> None:
        spec = (new.get("spec") or {}) if isinstance(new, dict) else {}
        ping, renew = parse_micro_time(spec.get("pingTime")), parse_micro_time(
            spec.get("renewTime"))
        if ping is not None and (renew is None or ping > renew):
            self._wake.set()  # the server asks whether this candidate is still there

    def wait_for_cache_sync(self, stop: threading.Event,
                            timeout: float | None = None) -> bool:
        """Wait for the candidate's informer (Go's ``CacheSyncWaiter``)."""
        return all(self._factory.wait_for_cache_sync(stop, timeout).values())

    def run(self, stop: threading.Event) -> None:
        """Keep the candidate object until ``stop`` is set: create it, renew it every
        :data:`REQUEUE_INTERVAL` and whenever the server pings it."""
        self._factory.start(stop)
        try:
            if not self._factory.wait_for_cache_sync(stop).get(LEASE_CANDIDATES, False):
                return  # stopped first
            while not stop.is_set():
                # cleared before the renewal, not after: a ping that comes during it
                # wakes the next round at once instead of being lost for 5 minutes
                self._wake.clear()
                try:
                    self.ensure()
                except (ClientCacheError, OSError) as err:
                    delay = self._limiter.when(0)
                    log_visibly(_log, logging.WARNING, "%r: ensuring the candidate failed "
                                "(retrying in %.1f s): %s", self, delay, err)
                else:
                    self._limiter.forget(0)
                    delay = REQUEUE_INTERVAL
                if self._wait(stop, delay):
                    return
        finally:
            self._factory.shutdown(1.0)

    def _wait(self, stop: threading.Event, seconds: float) -> bool:
        """Sleep ``seconds`` or until pinged; True when stopped."""
        with on_stop(stop, self._wake.set):
            self._wake.wait(seconds)
        return stop.is_set()

    def ensure(self) -> dict[str, Any]:
        """Create the candidate object if it is missing, else renew it (Go
        ``ensureLease``); returns what the server stored.
        :class:`~client_cache.errors.ApiStatusError` when the server refuses."""
        cached, exists = self._informer.get_indexer().get_by_key(
            f"{self.namespace}/{self.name}")
        now = format_micro_time(datetime.now(timezone.utc))
        path = resource_path(LEASE_CANDIDATES, self.namespace)
        if not exists:
            body = {"apiVersion": LEASE_CANDIDATES.group_version(), "kind": "LeaseCandidate",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {"leaseName": self.lease_name,
                             "binaryVersion": self.binary_version,
                             "emulationVersion": self.emulation_version,
                             "strategy": self.strategy, "renewTime": now}}
            status, stored = request_json(self.api_client, "POST", path, body)
            if status == 409:  # created meanwhile (the cache had not seen it): renew
                status, stored = request_json(self.api_client, "GET",
                                              f"{path}/{quote(self.name, safe='')}")
                if 200 <= status < 300 and isinstance(stored, dict):
                    return self._renew(path, stored, now)
            _checked(status, stored, "create")
            _log.debug("%r: created", self)
            return stored  # type: ignore[no-any-return]
        return self._renew(path, cached, now)

    def _renew(self, path: str, current: dict[str, Any], now: str) -> dict[str, Any]:
        """PUT ``current`` with ``renewTime`` set; on a conflict (the coordinator's ping
        raced the cache) read the object again and renew that, once."""
        url = f"{path}/{quote(self.name, safe='')}"
        for attempt in range(2):
            body = {**current, "spec": {**(current.get("spec") or {}), "renewTime": now}}
            status, stored = request_json(self.api_client, "PUT", url, body)
            if status != 409 or attempt:
                break
            status, fresh = request_json(self.api_client, "GET", url)
            _checked(status, fresh, "read")
            current = fresh
        _checked(status, stored, "renew")
        return stored  # type: ignore[no-any-return]


def _checked(status: int, body: Any, what: str) -> None:
    if not (200 <= status < 300 and isinstance(body, dict)):
        raise from_status(body if isinstance(body, dict) and body.get("kind") == "Status"
                          else {"code": status, "message": f"{what} of the lease candidate "
                                                           "failed"})
