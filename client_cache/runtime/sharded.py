"""Reconcile only this replica's share: the controller runtime's use of sharding.

A :class:`ShardGate` runs a :class:`~client_cache.sharding.ShardMember` beside a
controller; a worker asks :meth:`ShardGate.begin` before each reconcile and skips the
request when the key is not this replica's to start now. The key is the primary object's
``namespace/name``: its children trigger that same key, so they stay with it.

* **Hash mode** (``ShardingConfig(mode="hash")``, the default). Every replica caches
  every object. When what the member allows changes (a member joined or left, a
  handover finished), a thread of the gate's own (``controller-<name>-shard``) triggers
  the cached keys that became startable, and those whose requests were skipped while the
  key was on its way here; after a lapse of the member's Lease (a pause, a partition, an
  API server restart; or a Lease watch that went blind) every key it holds is reconciled
  again, since others may have held it meanwhile, but only once the controller's caches
  are fresh: the gate first has every informer of the controller re-establish its watch
  (``refresh``, :meth:`client_cache.reflector.Reflector.reconnect`) and waits until each
  has a new watch or LIST, so no key is reconciled again from a cache whose watch did not
  come back after an outage or sits on a half-dead connection. (controller-runtime has
  no sharding; its manager exits when it loses its lease and starts with new caches.)
* **Label mode** (``mode="labels"``). The controller's primary informer lists only the
  objects labelled for this member (:meth:`ShardGate.tweak`); the member elected among
  the ring (Lease ``<ring>-sharder``) runs the
  :class:`~client_cache.sharding._sharder.Sharder`. An object arriving with the drain
  label is started no more; once its running reconcile ends, the gate removes its labels
  (:func:`~client_cache.sharding._sharder.release_patch`) and the sharder gives it to its
  new member. A member whose Lease lapsed ends its run (``RunSummary.lost_shard``), as a
  controller-runtime manager exits when it loses its lease: its cache may still hold
  objects the sharder gave away meanwhile, and a new process lists afresh
  (:class:`~client_cache.sharding.WorkerGroup` starts it again). The lapse is counted
  at the renew deadline even while the server is away (an outage), so the run ends
  then, and the new process is already waiting when the server returns.

The gate reports ``shard_keys_owned`` and ``shard_handovers_total``; ``ctx.shard`` is
:attr:`ShardGate.identity`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
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
from client_cache.runtime.objectref import ObjectRef
from client_cache.sharding import ShardingConfig, ShardMember, get_sharding_metrics_provider
from client_cache.sharding._sharder import MERGE_PATCH, Sharder, release_patch
from client_cache.store import DeletedFinalStateUnknown
from client_cache.util.stop import on_stop

__all__ = ["ShardGate"]

_log = logging.getLogger(__name__)


class ShardGate:
    """See the module documentation. ``refs`` lists the cached primary objects' refs;
    ``trigger`` requests a reconcile of one; ``gvr`` and ``namespace`` are the primary
    resource's (the sharder's, in label mode); ``on_lost`` runs once when a label-mode
    member lapsed; ``refresh(stop)`` re-establishes the caches' watches and returns True
    once they are back (False: stopped first), called after a lapse before every key is
    reconciled again."""

    def __init__(self, config: ShardingConfig, name: str, api_client: Any,
                 refs: Callable[[], Iterable[ObjectRef]],
                 trigger: Callable[[ObjectRef], None], *,
                 gvr: GroupVersionResource | None = None, namespace: str = "",
                 on_lost: Callable[[], None] = lambda: None,
                 refresh: Callable[[threading.Event], bool] | None = None) -> None:
        self.config = config.resolved(name)
        self.by_labels = self.config.by_labels
        if self.by_labels and gvr is None:
            raise ValueError("label-assigned sharding needs the primary resource (gvr)")
        self._name = name
        self._api = api_client
        self._refs = refs
        self._trigger = trigger
        self._gvr = gvr
        self._namespace = namespace
        self._on_lost = on_lost
        self._refresh = refresh
        self._changed = threading.Event()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._transport = Transport(api_client)  # label releases a stop can abandon
        self._lock = threading.Lock()
        self._owned: set[ObjectRef] = set()
        self._skipped: set[ObjectRef] = set()  # wanted here, skipped while not yet clear
        self._first = True
        self._epoch = 0
        # label mode: the keys labelled for this member, those asked to drain (with the
        # object as last seen and since when), the reconciles running per key
        self._keys: set[str] = set()
        self._draining: dict[str, tuple[Any, float]] = {}
        self._inflight: Counter[str] = Counter()
        self._held = False
        self.lost = False
        self._metrics = get_sharding_metrics_provider()
        self.member = ShardMember(self.config, api_client, on_change=self._member_changed)
        self._threads = [threading.Thread(target=self._react, daemon=True,
                                          name=f"controller-{name}-shard")]
        if self.by_labels:
            self._threads.append(threading.Thread(target=self._elect, daemon=True,
                                                  name=f"controller-{name}-sharder"))

    @property
    def identity(self) -> str:
        """This replica's identity in the ring (``ctx.shard``)."""
        return self.member.identity

    def tweak(self, options: Any) -> None:
        """Label mode: add this member's selector to a list or watch request's options."""
        options.label_selector = ",".join(
            part for part in (options.label_selector, self.config.selector()) if part)

    def start(self) -> None:
        """Join the ring and start the gate's threads."""
        self.member.start()
        for thread in self._threads:
            thread.start()

    def wait_ready(self, stopping: threading.Event) -> bool:
        """Block until the member holds its Lease and has read the others (True), or
        ``stopping`` is set (False)."""
        wake = on_stop(stopping, self._ready.set)
        try:
            self._ready.wait()
        finally:
            wake.cancel()
        return not stopping.is_set()

    def _member_changed(self) -> None:
        if self.by_labels and self.member.epoch() != 0:
            self._lose()  # lapsed, and knows it now that it wrote again
        if self.member.ready():
            self._ready.set()
        self._changed.set()

    # -- the workers' questions -------------------------------------------------------------
    def begin(self, ref: ObjectRef) -> bool:
        """Whether this replica may reconcile ``ref`` now; True registers it in flight
        until :meth:`end`. In hash mode, a request refused only because the key is still
        on its way here is remembered and triggered again when it arrives."""
        key = ref.key()
        if self.by_labels:
            return self._begin_labelled(key)
        if self.member.begin(key):
            return True
        if self.member.wants(key):
            with self._lock:
                self._skipped.add(ref)
            self._changed.set()  # the state may have changed under us (a lapse)
        return False

    def _begin_labelled(self, key: str) -> bool:
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

    def end(self, ref: ObjectRef) -> None:
        """The reconcile :meth:`begin` allowed has finished."""
        key = ref.key()
        if not self.by_labels:
            self.member.end(key)
            return
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
                   self.identity)
        self._on_lost()

    # -- label mode: what the primary informer says -------------------------------------------
    def observe(self, obj: Any) -> bool:
        """Label mode: an object of this member was added or updated. True when it is to
        drain (do not trigger it: the gate lets it go once its running reconcile ends)."""
        md = meta.accessor(obj)
        key = f"{md.namespace}/{md.name}" if md.namespace else md.name
        drain = bool(md.labels.get(self.config.drain_label()))
        with self._lock:
            if not drain:
                new = key not in self._keys
                self._keys.add(key)
                self._draining.pop(key, None)
                owned = len(self._keys)
            else:
                since = self._draining.get(key, (None, time.monotonic()))[1]
                self._draining[key] = (obj, since)
                idle = self._inflight[key] == 0
                if not idle:
                    return True
        if drain:
            self._release(key, obj, since)
            return True
        self._metrics.set_keys_owned(self.config.ring, owned)
        if new and not self._first:
            self._metrics.add_handovers(self.config.ring, 1)
        return False

    def forget(self, obj: Any) -> None:
        """Label mode: an object left this member's informer (deleted, or relabelled)."""
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        md = meta.accessor(obj)
        key = f"{md.namespace}/{md.name}" if md.namespace else md.name
        with self._lock:
            self._keys.discard(key)
            self._draining.pop(key, None)
            owned = len(self._keys)
        self._metrics.set_keys_owned(self.config.ring, owned)

    def synced(self) -> None:
        """Label mode: the primary informer holds its first list; objects arriving later
        were handed over."""
        self._first = False

    def _release(self, key: str, obj: Any, since: float) -> None:
        """Remove both labels of a drained object (guarded by its resourceVersion)."""
        assert self._gvr is not None
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
        """Label mode: run for the sharder's Lease; lead by running the sharder."""
        assert self._gvr is not None
        gvr = self._gvr
        lock = LeaseLock(self.config.namespace, f"{self.config.ring}-sharder", self._api,
                         ResourceLockConfig(self.identity),
                         timeout=min(5.0, self.config.renew_deadline))
        holder: list[Any] = []

        def lead(stop: threading.Event) -> None:
            _log.info("controller %s: shard %s runs the sharder", self._name, self.identity)
            Sharder(self.member, self._api, gvr, self._namespace).run(
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

    # -- hash mode: triggering gained keys ---------------------------------------------------
    def _react(self) -> None:
        while True:
            self._changed.wait()
            if self._stop.is_set():
                return
            self._changed.clear()
            if self.by_labels:
                continue
            try:
                self._retrigger()
            except Exception:
                _log.exception("controller %s: shard %s: triggering gained keys failed",
                               self._name, self.identity)

    def _retrigger(self) -> None:
        member = self.member
        if not member.ready():  # it will be, and tell: the keys are counted then
            return
        epoch = member.epoch()
        with self._lock:
            lapsed = epoch != self._epoch
        if lapsed and self._refresh is not None and not self._refresh(self._stop):
            return  # stopped
        assigned = member.assigned
        owned = {ref for ref in self._refs() if assigned(ref.key())}
        with self._lock:
            if epoch != self._epoch:  # after a lapse every key is reconciled again
                self._epoch, self._owned = epoch, set()
            gained = owned - self._owned
            skipped = {ref for ref in self._skipped if ref in owned}
            self._skipped -= skipped
            self._owned = owned
            first, self._first = self._first, self._first and not owned
        for ref in gained | skipped:
            self._trigger(ref)
        ring = self.config.ring
        self._metrics.set_keys_owned(ring, len(owned))
        # a member's first keys are handed over too when it joined a ring with others in
        # it (they held them); only the first keys of a ring of one came from no one
        if gained and (not first or len(member.members()) > 1):
            self._metrics.add_handovers(ring, len(gained))
        if gained:
            _log.info("controller %s: shard %s reconciles %d keys (%d new)", self._name,
                      self.identity, len(owned), len(gained))

    def stop(self, timeout: float = 5.0) -> None:
        """Leave the ring (running reconciles have ended: the controller's workers were
        joined) and stop the threads."""
        self._stop.set()
        self._changed.set()
        self.member.stop(timeout)
        for thread in self._threads:
            if thread.is_alive() or thread.ident is not None:
                thread.join(1.0)
        self._transport.close()
