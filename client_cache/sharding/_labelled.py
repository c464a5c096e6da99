"""Label-mode sharding, one member's side (``ShardingConfig(mode="labels")``): which
objects are labelled for it, which it is asked to drain, the reconciles running on each,
the PATCH that lets a drained object go, and the election of the one member that runs
the :class:`~client_cache.sharding._sharder.Sharder` (Lease ``<ring>-sharder``).

:class:`LabelShare` is what the controller runtime's gate
(:class:`~client_cache.runtime.sharded.ShardGate`) asks in label mode. Keys are
``namespace/name`` (:func:`~client_cache.store.meta_namespace_key_func`), the key of the
primary object a reconcile is for. An object arriving with the drain label is started no
more; once its running reconcile ends, both labels are removed (guarded by its
resourceVersion) and the sharder gives it to its new member. A member whose Lease lapsed
is lost for good (:attr:`LabelShare.lost`): its cache may hold objects given away
meanwhile, so its run ends and a new process lists afresh, as a controller-runtime
manager exits when it loses its lease. (timebertt/kubernetes-controller-sharding's
shard side: the ``drain`` label and the release of an object.)
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from client_cache.api import meta
from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import request_json, resource_path
from client_cache.client.transport import Transport
from client_cache.errors import ClientCacheError, StopRequestedError
from client_cache.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaseLock,
    ResourceLockConfig,
    new_leader_elector,
)
from client_cache.sharding._membership import ShardMember
from client_cache.sharding._sharder import MERGE_PATCH, Sharder, release_patch
from client_cache.sharding.config import ShardingConfig
from client_cache.sharding.metrics import get_sharding_metrics_provider
from client_cache.store import DeletedFinalStateUnknown, meta_namespace_key_func

__all__ = ["LabelShare"]

_log = logging.getLogger(__name__)


class LabelShare:
    """One label-mode member's objects (see the module documentation). ``config`` is
    resolved; ``member`` is this replica's running :class:`ShardMember`; ``gvr`` and
    ``namespace`` are the primary resource's; ``on_lost`` runs once when the member
    lapsed; ``name`` names the controller in logs and threads."""

    def __init__(self, config: ShardingConfig, member: ShardMember, api_client: Any,
                 gvr: GroupVersionResource, namespace: str, name: str,
                 on_lost: Callable[[], None]) -> None:
        self.config = config
        self.member = member
        self._api = api_client
        self._gvr = gvr
        self._namespace = namespace
        self._name = name
        self._on_lost = on_lost
        self._stop = threading.Event()
        self._transport = Transport(api_client)  # releases a stop can abandon
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._draining: dict[str, tuple[Any, float]] = {}  # the object as last seen, since
        self._inflight: Counter[str] = Counter()
        self._held = False
        self._first = True
        self.lost = False
        self._metrics = get_sharding_metrics_provider()
        self.thread = threading.Thread(target=self._elect, daemon=True,
                                       name=f"controller-{name}-sharder")

    def tweak(self, options: Any) -> None:
        """Add this member's label selector to a list or watch request's options."""
        options.label_selector = ",".join(
            part for part in (options.label_selector, self.config.selector()) if part)

    def member_changed(self) -> None:
        """The member's state changed: a nonzero epoch means it lapsed."""
        if self.member.epoch() != 0:
            self._lose()

    def begin(self, key: str) -> bool:
        """Whether ``key`` may be reconciled now (labelled here, not draining, the
        member's Lease held); True registers it in flight until :meth:`end`."""
        member = self.member
        if not member.holds_lease() or member.epoch() != 0:
            if self._held or member.epoch() != 0:
                self._lose()
            return False
        with self._lock:
            self._held = True
            if key not in self._keys or key in self._draining:
                return False
            self._inflight[key] += 1
            return True

    def keeps(self, key: str) -> bool:
        """Whether something :meth:`begin` allowed for ``key`` (a daemon) may go on: the
        key is still labelled here and not asked to drain, and the member holds its
        Lease and has not lapsed."""
        member = self.member
        if not member.holds_lease() or member.epoch() != 0:
            return False
        with self._lock:
            return not self.lost and key in self._keys and key not in self._draining

    def end(self, key: str) -> None:
        """The reconcile :meth:`begin` allowed has finished; a key asked to drain meanwhile
        is let go now."""
        with self._lock:
            self._inflight[key] -= 1
            if self._inflight[key] > 0:
                return
            del self._inflight[key]
            draining = self._draining.get(key)
        if draining is not None:
            self._release(key, *draining)

    def _lose(self) -> None:
        with self._lock:
            if self.lost:
                return
            self.lost = True
        _log.error("controller %s: shard %s lost its membership Lease; its objects may have "
                   "been given to others meanwhile: ending the run", self._name,
                   self.member.identity)
        self._on_lost()

    def observe(self, obj: Any) -> bool:
        """An object of this member was added or updated. True when it is to drain (do not
        trigger it: it is let go once its running reconcile ends)."""
        key = meta_namespace_key_func(obj)
        drain = bool(meta.accessor(obj).labels.get(self.config.drain_label()))
        with self._lock:
            if not drain:
                new = key not in self._keys
                self._keys.add(key)
                self._draining.pop(key, None)
                owned = len(self._keys)
            else:
                since = self._draining.get(key, (None, time.monotonic()))[1]
                self._draining[key] = (obj, since)
                if self._inflight[key] != 0:
                    return True
        if drain:
            self._release(key, obj, since)
            return True
        self._metrics.set_keys_owned(self.config.ring, owned)
        if new and not self._first:
            self._metrics.add_handovers(self.config.ring, 1)
        return False

    def forget(self, obj: Any) -> None:
        """An object left this member's informer (deleted, or relabelled)."""
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        key = meta_namespace_key_func(obj)
        with self._lock:
            self._keys.discard(key)
            self._draining.pop(key, None)
            owned = len(self._keys)
        self._metrics.set_keys_owned(self.config.ring, owned)

    def synced(self) -> None:
        """The primary informer holds its first list; objects arriving later were handed
        over."""
        self._first = False

    def _release(self, key: str, obj: Any, since: float) -> None:
        """Remove both labels of a drained object (guarded by its resourceVersion)."""
        md = meta.accessor(obj)
        path = f"{resource_path(self._gvr, md.namespace)}/{md.name}"
        body = release_patch({"resourceVersion": md.resource_version},
                             self.config.shard_label(), self.config.drain_label())
        try:
            status, _ = request_json(self._api, "PATCH", path, body, MERGE_PATCH,
                                     timeout=10.0, transport=self._transport,
                                     stop=self._stop)
        except StopRequestedError:
            return  # stopping: the label stays, the sharder moves the object on
        except ClientCacheError as err:
            _log.warning("controller %s: letting %s go failed (%s); retried at its next "
                         "event", self._name, key, err)
            return
        if 200 <= status < 300:
            with self._lock:
                self._keys.discard(key)
                self._draining.pop(key, None)
            self._metrics.observe_drain(self.config.ring, time.monotonic() - since)
        elif status not in (404, 409):  # gone, or changed: its next event comes
            _log.warning("controller %s: letting %s go: HTTP %d", self._name, key, status)

    def _elect(self) -> None:
        """Run for the sharder's Lease; lead by running the sharder."""
        identity = self.member.identity
        lock = LeaseLock(self.config.namespace, f"{self.config.ring}-sharder", self._api,
                         ResourceLockConfig(identity),
                         timeout=min(5.0, self.config.renew_deadline))
        holder: list[Any] = []

        def lead(stop: threading.Event) -> None:
            _log.info("controller %s: shard %s runs the sharder", self._name, identity)
            Sharder(self.member, self._api, self._gvr, self._namespace).run(
                stop, holder[0].holds_lease)

        elector = new_leader_elector(LeaderElectionConfig(
            lock=lock, callbacks=LeaderCallbacks(lead, lambda: None),
            lease_duration=self.config.lease_duration,
            renew_deadline=self.config.renew_deadline,
            retry_period=self.config.retry_period, release_on_cancel=True,
            name=f"{self.config.ring}-sharder"))
        holder.append(elector)
        try:
            while not self._stop.is_set():
                elector.run(self._stop)
        finally:
            lock.close()

    def stop(self) -> None:
        """Tell the election (the sharder with it) and a release in flight to stop;
        :meth:`join` waits for them."""
        self._stop.set()

    def join(self) -> None:
        """Wait up to 1 s for the election's thread, then close the connections."""
        if self.thread.ident is not None:
            self.thread.join(1.0)
        self._transport.close()
