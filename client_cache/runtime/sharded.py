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
  objects labelled for this member (:meth:`ShardGate.tweak`); the gate hands its
  questions to the member's :class:`~client_cache.sharding._labelled.LabelShare`, which
  keeps the labelled keys, lets a drained object go once its running reconcile ends and
  elects the member that runs the sharder. A member whose Lease lapsed ends its run
  (``RunSummary.lost_shard``), as a controller-runtime manager exits when it loses its
  lease: its cache may still hold objects the sharder gave away meanwhile, and a new
  process lists afresh
  (:class:`~client_cache.sharding.WorkerGroup` starts it again). The lapse is counted
  at the renew deadline even while the server is away (an outage), so the run ends
  then, and the new process is already waiting when the server returns.
* **Server mode** (``mode="server"``). The keys are the primary objects' uids, owned by
  contiguous ranges of their hash; the primary informer sends the member's shard
  selector (:meth:`ShardGate.tweak`, :class:`~client_cache.sharding._ranged.RangeShare`)
  and fills its cache again when the member's range moves. Otherwise it is hash mode:
  the same drains, retriggering of gained and skipped keys, and refresh after a lapse.
  A request's uid is the cached object's (the ref's own when the object is not cached,
  as a child's owner reference gives it); a request with neither is not this
  replica's to start.

The gate reports ``shard_keys_owned`` and ``shard_handovers_total``; ``ctx.shard`` is
:attr:`ShardGate.identity`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from client_cache.api.schema import GroupVersionResource
from client_cache.runtime.objectref import ObjectRef
from client_cache.sharding import ShardingConfig, ShardMember, get_sharding_metrics_provider
from client_cache.sharding._labelled import LabelShare
from client_cache.sharding._ranged import RangeShare
from client_cache.util.stop import on_stop

__all__ = ["ShardGate"]

_log = logging.getLogger(__name__)


class ShardGate:
    """See the module documentation. ``refs`` lists the cached primary objects' refs;
    ``trigger`` requests a reconcile of one; ``gvr`` and ``namespace`` are the primary
    resource's (the sharder's, in label mode); ``on_lost`` runs once when a label-mode
    member lapsed; ``refresh(stop)`` re-establishes the caches' watches and returns True
    once they are back (False: stopped first), called after a lapse before every key is
    reconciled again; ``uid_of(ref)`` is, in server mode, the uid a request is sharded
    by ("" for none; without it, the ref's own)."""

    def __init__(self, config: ShardingConfig, name: str, api_client: Any,
                 refs: Callable[[], Iterable[ObjectRef]],
                 trigger: Callable[[ObjectRef], None], *,
                 gvr: GroupVersionResource | None = None, namespace: str = "",
                 on_lost: Callable[[], None] = lambda: None,
                 refresh: Callable[[threading.Event], bool] | None = None,
                 uid_of: Callable[[ObjectRef], str] | None = None) -> None:
        self.config = config.resolved(name)
        self.by_labels = self.config.by_labels
        self.by_server = self.config.by_server
        if (self.by_labels or self.by_server) and gvr is None:
            raise ValueError(f"{self.config.mode}-assigned sharding needs the primary "
                             "resource (gvr)")
        self._name = name
        self._refs = refs
        self._trigger = trigger
        self._refresh = refresh
        self._changed = threading.Event()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._owned: set[ObjectRef] = set()
        self._skipped: set[ObjectRef] = set()  # wanted here, skipped while not yet clear
        self._first = True
        self._epoch = 0
        self._uid_of = uid_of if uid_of is not None else (lambda ref: ref.uid)
        # server mode: the uids each ref began with (a reconcile and a daemon may both
        # hold one ref)
        self._began: dict[ObjectRef, list[str]] = {}
        self._metrics = get_sharding_metrics_provider()
        self.member = ShardMember(self.config, api_client, on_change=self._member_changed)
        self.labels = (LabelShare(self.config, self.member, api_client, gvr, namespace, name,
                                  on_lost) if gvr is not None and self.by_labels else None)
        self.ranges = (RangeShare(self.member, api_client, gvr, namespace, name)
                       if gvr is not None and self.by_server else None)
        self._threads = [threading.Thread(target=self._react, daemon=True,
                                          name=f"controller-{name}-shard")]
        if self.labels is not None:
            self._threads.append(self.labels.thread)

    @property
    def lost(self) -> bool:
        """Label mode: the member's Lease lapsed, so the run ends."""
        return self.labels is not None and self.labels.lost

    @property
    def identity(self) -> str:
        """This replica's identity in the ring (``ctx.shard``)."""
        return self.member.identity

    def tweak(self, options: Any) -> None:
        """Label mode: add this member's label selector to a list or watch request's
        options; server mode: set its shard selector."""
        if self.ranges is not None:
            self.ranges.tweak(options)
            return
        assert self.labels is not None
        self.labels.tweak(options)

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
        if self.labels is not None:
            self.labels.member_changed()  # lapsed, and knows it now that it wrote again
        if self.ranges is not None:
            self.ranges.member_changed()  # the range moved: the cache is filled again
        if self.member.ready():
            self._ready.set()
        self._changed.set()

    # -- the workers' questions -------------------------------------------------------------
    def begin(self, ref: ObjectRef) -> bool:
        """Whether this replica may reconcile ``ref`` now; True registers it in flight
        until :meth:`end`. In hash mode, a request refused only because the key is still
        on its way here is remembered and triggered again when it arrives."""
        if self.labels is not None:
            return self.labels.begin(ref.key())
        key = self._key(ref)
        if not key:
            return False  # server mode, no uid: not cached, nothing to reconcile here
        if self.member.begin(key):
            if self.by_server:
                with self._lock:
                    self._began.setdefault(ref, []).append(key)
            return True
        if self.member.wants(key):
            with self._lock:
                self._skipped.add(ref)
            self._changed.set()  # the state may have changed under us (a lapse)
        return False

    def end(self, ref: ObjectRef) -> None:
        """The reconcile :meth:`begin` allowed has finished."""
        if self.labels is not None:
            self.labels.end(ref.key())
        elif self.by_server:
            with self._lock:
                keys = self._began[ref]
                key = keys.pop()
                if not keys:
                    del self._began[ref]
            self.member.end(key)
        else:
            self.member.end(ref.key())

    def epoch(self) -> int:
        """How many times the member lapsed (:meth:`ShardMember.epoch`): what
        :meth:`keeps` is given for something begun now."""
        return self.member.epoch()

    def keeps(self, ref: ObjectRef, epoch: int) -> bool:
        """Whether something :meth:`begin` allowed for ``ref`` while :meth:`epoch` was
        ``epoch`` may go on (a daemon, in flight for as long as it runs): in label mode
        the key is still labelled here and not draining; otherwise the member has not
        lapsed, holds its Lease, sees the ring and its target view still gives it the key
        (:meth:`ShardMember.keeps`). The member's listeners hear when this may change."""
        if self.labels is not None:
            return self.member.epoch() == epoch and self.labels.keeps(ref.key())
        if self.by_server:
            with self._lock:
                began = self._began.get(ref)
                key = began[-1] if began else self._key(ref)
            return bool(key) and self.member.keeps(key, epoch)
        return self.member.keeps(ref.key(), epoch)

    def _key(self, ref: ObjectRef) -> str:
        """What the member shards ``ref`` by: its key, or in server mode its uid."""
        return self._uid_of(ref) if self.by_server else ref.key()

    # -- label mode: what the primary informer says ----------------------------------------
    def observe(self, obj: Any) -> bool:
        """Label mode: an object of this member was added or updated. True when it is to
        drain (do not trigger it: it is let go once its running reconcile ends)."""
        assert self.labels is not None
        return self.labels.observe(obj)

    def forget(self, obj: Any) -> None:
        """Label mode: an object left this member's informer (deleted, or relabelled)."""
        assert self.labels is not None
        self.labels.forget(obj)

    def synced(self) -> None:
        """The primary informer holds its first list: keys gained later were handed over.
        Called before the workers start. In hash and server mode the keys owned are
        counted again from the filled cache (the member may have become ready while it
        was still empty), without triggering them: the first list queued every one."""
        if self.labels is not None:
            self._first = False
            self.labels.synced()
            return
        with self._lock:  # counted under the lock: a ring change reacted to meanwhile
            owned = self._assigned_refs()  # cannot then be overwritten by an older count
            gained = owned - self._owned
            self._owned = owned
            self._first = False
        self._account(len(owned), gained, first=True)

    # -- hash mode: triggering gained keys ---------------------------------------------------
    def _react(self) -> None:
        while True:
            self._changed.wait()
            if self._stop.is_set():
                return
            self._changed.clear()
            if self.labels is not None:
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
        with self._lock:
            owned = self._assigned_refs()
            if epoch != self._epoch:  # after a lapse every key is reconciled again
                self._epoch, self._owned = epoch, set()
            gained = owned - self._owned
            skipped = {ref for ref in self._skipped if ref in owned}
            self._skipped -= skipped
            self._owned = owned
            first, self._first = self._first, self._first and not owned
        for ref in gained | skipped:
            self._trigger(ref)
        self._account(len(owned), gained, first=first)

    def _assigned_refs(self) -> set[ObjectRef]:
        """The cached primary objects' refs the member's ring assigns here."""
        assigned, by_server = self.member.assigned, self.by_server
        return {ref for ref in self._refs() if assigned(ref.uid if by_server else ref.key())}

    def _account(self, owned: int, gained: set[ObjectRef], *, first: bool) -> None:
        """Report ``owned`` keys, of which ``gained`` are new here."""
        ring = self.config.ring
        self._metrics.set_keys_owned(ring, owned)
        # a member's first keys are handed over too when it joined a ring with others in
        # it (they held them); only the first keys of a ring of one came from no one
        if gained and (not first or len(self.member.members()) > 1):
            self._metrics.add_handovers(ring, len(gained))
        if gained:
            _log.info("controller %s: shard %s reconciles %d keys (%d new)", self._name,
                      self.identity, owned, len(gained))

    def stop(self, timeout: float = 5.0) -> None:
        """Leave the ring (running reconciles have ended: the controller's workers were
        joined) and stop the threads."""
        self._stop.set()
        self._changed.set()
        if self.labels is not None:
            self.labels.stop()
        self.member.stop(timeout)
        if self.labels is not None:
            self.labels.join()
        for thread in self._threads:
            if thread.ident is not None:
                thread.join(1.0)
