"""One replica's membership in a ring, and which keys it may reconcile now.

A :class:`ShardMember` holds a Lease of its own (``<namespace>/<identity>``, labelled with
the ring) and watches the ring's other Leases with an informer filtered by that label.
What it does, in order:

* **Liveness.** Another member is live while its Lease is there, has a holder, and has
  changed (a new resourceVersion) less than its ``leaseDurationSeconds`` ago *by this
  process's monotonic clock*, as the leader elector judges a leader: clocks of different
  machines are never compared. A Lease first seen counts as just changed. A Lease seen
  expired is deleted, with its resourceVersion as precondition so a renewal that raced
  the deletion wins.
* **Views.** The *target* view is this member plus the live others. The *published* view
  is the one written in this member's Lease (:data:`VIEW_ANNOTATION`): the keys the ring
  over it gives this member are the keys it *claims*. When the target changes, the keys
  this member would lose stop being started at once; as soon as none of them is being
  reconciled (in flight, :meth:`ShardMember.begin` to :meth:`ShardMember.end`), the
  target is written as the new published view.
* **Clearance.** A key may be started (:meth:`ShardMember.begin`) when the published and
  the target ring both give it to this member, no live other member claims it in its
  own published view, this member still holds its Lease (its last successful write was
  sent less than ``renew_deadline`` ago, by the monotonic clock read then), and the
  informer has delivered this member's write of its current view (or its first write
  after a lapse). That last condition is what makes claims exclusive: of two members
  claiming one key, the later write is read by its writer after the earlier one, so at
  most one of them sees the key clear; and a member resumed from a pause or a partition
  reads the others afresh before it starts anything.

* **A blind member.** When the Lease watch has not delivered this member's own write
  for ``renew_deadline`` (a half-dead connection: nothing closed, nothing arrives; the
  watch is opened again after a lease duration of silence), its view of the others is
  not live: it starts nothing, and once its reconciles in flight end it publishes an
  empty view. A live Lease with an empty view claims nothing and is left out of the
  others' rings, so they take its share; when its own writes come through again it
  publishes its view and rejoins as after a lapse. Without this, a member that had seen
  the others expire kept renewing a one-member view that claimed every key, and the
  ring stalled.
* **Outages.** The Lease informer's reflector waits at most ``retry_period`` between
  failed rounds (client-go's reflector backs off to 30 s): after the API server comes
  back, a member reads the ring again within about a retry period, as the leader elector
  renews within one, instead of starting nothing for up to half a minute.

So a key moves without overlap: the old owner stops starting it, finishes what runs,
publishes its new view; the new owner has published its claim and starts once it has
read the old owner's release (or the old owner's Lease expired: it had fenced itself
``lease_duration - renew_deadline`` before). A member leaving (:meth:`ShardMember.stop`)
lets its running reconciles finish and deletes its Lease, so its keys move at once.

What a *key* is depends on the mode: in ``hash`` and ``labels`` modes the primary
object's ``namespace/name``, placed on a consistent-hash ring
(:class:`~client_cache.sharding._ring.HashRing`); in ``server`` mode the object's
``metadata.uid``, placed by the server's FNV-1a hash on contiguous ranges
(:class:`~client_cache.sharding._ranges.RangeRing`). The views, claims and drains are
the same over either.

``on_change`` is called (on the member's thread) whenever what :meth:`begin` may answer
changes other than by time: the controller then triggers the keys it gained.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from client_cache.api.schema import GroupVersionResource
from client_cache.cache_sync import wait_for_cache_sync
from client_cache.client.transport import Transport
from client_cache.errors import ClientCacheError
from client_cache.leaderelection.resourcelock import (
    LeaderElectionRecord,
    LeaseLock,
    LockConflictError,
    LockError,
    LockNotFoundError,
    ResourceLockConfig,
)
from client_cache.listwatch import new_filtered_list_watch_from_client
from client_cache.sharding._ranges import RangeRing
from client_cache.sharding._ring import HashRing
from client_cache.sharding.config import RING_LABEL, VIEW_ANNOTATION, ShardingConfig
from client_cache.sharding.metrics import get_sharding_metrics_provider
from client_cache.shared_informer import (
    SharedIndexInformer,
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
)
from client_cache.store import DeletedFinalStateUnknown
from client_cache.util._logs import log_visibly
from client_cache.util.timestamps import parse_micro_time
from client_cache.util.wait import jitter

__all__ = ["ShardMember", "ShardingError"]

_log = logging.getLogger(__name__)

LEASES = GroupVersionResource("coordination.k8s.io", "v1", "leases")

LEAVE_TIMEOUT = 0.5
"""How long deleting its own Lease may take when a member leaves (seconds): best effort
within a stop's budget; a Lease the server did not delete in time expires, as a killed
member's does."""


class ShardingError(ClientCacheError):
    """A failed membership health check: the member's Lease is not being renewed."""


@dataclass(frozen=True)
class _Seen:
    """Another member's Lease as last seen: its resourceVersion, when (monotonic) that
    version was first seen, its holder, lease duration and published view."""

    rv: str
    changed_at: float
    holder: str
    duration: float
    view: frozenset[str]


Ring = HashRing | RangeRing
"""What a member's views are: a consistent-hash ring over keys (``hash`` and ``labels``
modes) or contiguous ranges of the uid hash (``server`` mode)."""


@dataclass(frozen=True)
class _State:
    """What :meth:`ShardMember.begin` decides on, replaced whole when it changes."""

    published: Ring
    target: Ring
    claims: tuple[tuple[str, Ring], ...]  # live others and the rings they act on
    caught_up: bool


def _view_of(lease: dict[str, Any]) -> frozenset[str]:
    text = ((lease.get("metadata") or {}).get("annotations") or {}).get(VIEW_ANNOTATION, "")
    return frozenset(part for part in str(text).split(",") if part)


class ShardMember:
    """See the module documentation. ``config`` must be resolved
    (:meth:`ShardingConfig.resolved`); ``api_client`` is a ``kubernetes`` ``ApiClient``."""

    def __init__(self, config: ShardingConfig, api_client: Any, *,
                 on_change: Callable[[], None] | None = None) -> None:
        if not config.ring or not config.identity:
            raise ValueError("ShardMember needs a resolved ShardingConfig (ring, identity)")
        self.config = config
        self.identity = config.identity
        self._api = api_client
        self._listeners: list[Callable[[], None]] = [] if on_change is None else [on_change]
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._leaving = False
        self._seen: dict[str, _Seen] = {}
        self._rings: dict[frozenset[str], Ring] = {}
        self._position = RangeRing.position if config.by_server else HashRing.position
        solo = self._ring(frozenset())
        self._state = _State(solo, solo, (), False)
        self._target_since = 0.0
        self._lease: dict[str, Any] | None = None  # our Lease as last written
        self._held_until = 0.0  # monotonic: last successful write sent + renew_deadline
        self._awaiting: set[str] = set()  # our written resourceVersions not yet seen
        self._own_seen = ""  # the resourceVersion of our Lease the informer last delivered
        self._deleting: set[str] = set()  # expired Leases' versions we tried to delete
        self._inflight: Counter[str] = Counter()
        self._dirty = False  # something the loop must look at arrived since it last did
        self._epoch = 0  # counts lapses: what was decided before one is to be redone
        self._started = False
        self._metrics = get_sharding_metrics_provider()
        self._unseen_since: float | None = None  # monotonic: our first write not yet seen
        self._blind_after = config.renew_deadline
        self._blind = False  # our own renewals are not coming back through the watch
        self._claims_folded = False  # _saw changed the claims: a change to announce
        lw = new_filtered_list_watch_from_client(
            api_client, LEASES, config.namespace,
            lambda options: setattr(options, "label_selector", f"{RING_LABEL}={config.ring}"),
            idle_timeout=lease_watch_idle_timeout(config),
            request_timeout=lease_watch_idle_timeout(config))
        # after an outage the member starts nothing until this informer has delivered its
        # own write: its reflector retries within a retry period, not client-go's 30 s
        self._informer: SharedIndexInformer[Any] = new_shared_index_informer_with_options(
            lw, None, SharedIndexInformerOptions(max_backoff=config.retry_period / 2))
        self._registration = self._informer.add_event_handler(_Handler(self))
        self._informer_stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # the Lease writes' own connections, so that a stop can abandon one in flight
        self._transport = Transport(api_client)
        self._own = self._lock_of(self.identity, self._stop)

    def __repr__(self) -> str:
        return (f"<ShardMember {self.identity!r} of ring {self.config.ring!r} in "
                f"{self.config.namespace}>")

    # -- what a worker asks -------------------------------------------------------------------
    def begin(self, key: str) -> bool:
        """Whether this member may start reconciling ``key`` now (see the module
        documentation); when True, the key counts as in flight until :meth:`end`."""
        h = self._position(key)
        with self._lock:
            if not self._may_start_locked(h, time.monotonic()):
                return False
            self._inflight[key] += 1
            return True

    def end(self, key: str) -> None:
        """The reconcile of ``key`` that :meth:`begin` allowed has finished."""
        with self._lock:
            self._inflight[key] -= 1
            if self._inflight[key] <= 0:
                del self._inflight[key]
                self._dirty = True
                self._wake.notify_all()

    def keeps(self, key: str, epoch: int) -> bool:
        """Whether something :meth:`begin` allowed for ``key`` while :meth:`epoch` was
        ``epoch`` may go on (a daemon, which is in flight for as long as it runs): the
        member has not lapsed since, still holds its Lease, its view of the ring is live
        and its target view still gives it the key. When this turns False the member's
        listeners are told, so the holder can end it and let the handover go on."""
        h = self._position(key)
        now = time.monotonic()
        with self._lock:
            return (not self._leaving and epoch == self._epoch and now < self._held_until
                    and not self._blind_locked(now)
                    and self._state.target.owner_of_hash(h) == self.identity)

    def wants(self, key: str) -> bool:
        """Whether ``key`` is this member's in its target view: it is, or will be once
        handed over, this member's to reconcile."""
        with self._lock:
            return self._state.target.owner(key) == self.identity

    def ready(self) -> bool:
        """Whether this member may start anything now: it holds its Lease, has read the
        others since its last view change (or lapse), and is not leaving."""
        now = time.monotonic()
        with self._lock:
            return (not self._leaving and self._state.caught_up
                    and now < self._held_until and not self._blind_locked(now))

    def assigned(self, key: str) -> bool:
        """Whether the views give ``key`` to this member: its published and target rings
        do and no live other member claims it; :meth:`owns` is this and :meth:`ready`."""
        with self._lock:
            return self._assigned_locked(self._position(key))

    def _assigned_locked(self, h: int) -> bool:
        state, me = self._state, self.identity
        if state.published.owner_of_hash(h) != me or state.target.owner_of_hash(h) != me:
            return False
        return all(ring.owner_of_hash(h) != member for member, ring in state.claims)

    def owns(self, key: str) -> bool:
        """Whether :meth:`begin` would allow ``key`` now (nothing is registered)."""
        with self._lock:
            return self._may_start_locked(self._position(key), time.monotonic())

    def _may_start_locked(self, h: int, now: float) -> bool:
        if self._leaving or now >= self._held_until:
            if self._state.caught_up and not self._leaving:
                self._lapsed_locked()
            return False
        if not self._state.caught_up or self._blind_locked(now):
            return False
        return self._assigned_locked(h)

    def _blind_locked(self, now: float) -> bool:
        """Whether this member's view of the ring is not live: the Lease watch has not
        delivered its own write for ``renew_deadline`` since it was sent (a half-dead
        connection, a watch that hangs). Such a member starts nothing and publishes an
        empty view (it claims nothing, and the others leave it out of their rings) once
        its reconciles in flight have ended, so it can never stall the ring with claims
        made from what it no longer sees."""
        since = self._unseen_since
        return since is not None and now - since > self._blind_after

    def _lapsed_locked(self) -> None:
        """A lapse (a pause, a partition): read the others afresh after the next
        successful write before starting anything again."""
        state = self._state
        self._state = _State(state.published, state.target, state.claims, False)
        self._awaiting.clear()
        self._epoch += 1

    def epoch(self) -> int:
        """How many times this member lapsed (its Lease not renewed in time, or its
        Lease watch blind past ``renew_deadline``, so its keys may have been reconciled
        elsewhere meanwhile): a caller that keeps what the member allowed redoes it when
        this changes."""
        with self._lock:
            return self._epoch

    def holds_lease(self) -> bool:
        """Whether this member's last successful renewal was sent less than
        ``renew_deadline`` ago (the monotonic clock read now)."""
        with self._lock:
            return time.monotonic() < self._held_until

    def members(self) -> list[str]:
        """The members of the target view: this one and the live others, sorted."""
        with self._lock:
            return sorted(self._state.target.members)

    def target_selector(self) -> str:
        """Server mode: the shard selector of this member's range in the target view
        (the objects it reconciles, or will once handed over): the whole space before
        it has read the ring; ``ValueError`` in the other modes."""
        if not self.config.by_server:
            raise ValueError(f"shard {self.identity}: a shard selector needs "
                             f"mode='server', not {self.config.mode!r}")
        with self._lock:
            target = self._state.target
            if self.identity not in target.members:
                target = self._ring(frozenset({self.identity}))
        assert isinstance(target, RangeRing)
        return target.selector_of(self.identity)

    def published(self) -> list[str]:
        """The members of the view this member acts on (written in its Lease), sorted."""
        with self._lock:
            return sorted(self._state.published.members)

    def check(self, max_tolerable_expired_lease: float = 20.0) -> None:
        """Raise :class:`ShardingError` when this member has not renewed its Lease for
        ``lease_duration + max_tolerable_expired_lease`` seconds: stuck, so the others
        have taken its keys (a health check, as the elector's ``check``)."""
        with self._lock:
            if not self._started or self._stop.is_set():
                return
            since = time.monotonic() - (self._held_until - self.config.renew_deadline)
        if since > self.config.lease_duration + max_tolerable_expired_lease:
            raise ShardingError(f"shard {self.identity}: membership lease "
                                f"{self.config.namespace}/{self.identity} not renewed for "
                                f"{since:.0f} s")

    # -- life --------------------------------------------------------------------------------
    def start(self) -> ShardMember:
        """Start the Lease informer and the membership thread."""
        with self._lock:
            if self._started:
                return self
            self._started = True
        for target, role in ((self._informer.run, "leases"), (self._run, "membership")):
            args = (self._informer_stop,) if role == "leases" else ()
            thread = threading.Thread(target=target, args=args, daemon=True,
                                      name=f"shard-{self.identity}-{role}")
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Leave the ring: no key is started any more, the running ones get up to
        ``timeout`` seconds to end, then the Lease is deleted (the others take the keys
        as soon as they see it go) and the threads end."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._leaving = True
            while self._inflight and time.monotonic() < deadline:
                self._wake.wait(max(0.0, deadline - time.monotonic()))
            still = sorted(self._inflight)
        if still:
            _log.warning("shard %s: leaving with %d reconciles still running", self.identity,
                         len(still))
        self._stop.set()  # the membership thread's request in flight is abandoned
        with self._lock:
            self._wake.notify_all()
        for thread in self._threads[1:]:
            thread.join(max(0.5, deadline - time.monotonic()))
        if self._lease is not None and not still:  # best effort, within the budget
            self._delete(self.identity, str(self._lease["metadata"]["resourceVersion"]),
                         timeout=LEAVE_TIMEOUT, leaving=True)
        self._informer_stop.set()
        for thread in self._threads[:1]:
            thread.join(1.0)
        self._transport.close()
        self._metrics.set_members(self.config.ring, 0)

    # -- the membership thread ---------------------------------------------------------------
    def _run(self) -> None:
        try:
            self._loop()
        except Exception:
            _log.exception("shard %s: membership failed; this member starts nothing more",
                           self.identity)
            with self._lock:
                self._held_until = 0.0

    def _loop(self) -> None:
        if not wait_for_cache_sync(self._stop, self._registration.has_synced):
            return
        next_renewal = 0.0
        last = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            with self._lock:
                self._dirty = False
                if now - last > 2 * self.config.retry_period + 1.0:
                    # this process did not run (frozen, starved): the others' renewals
                    # it could not see are still queued, so their Leases count from now
                    # rather than expiring all at once (only ever later: safe)
                    self._seen = {name: dataclasses.replace(seen, changed_at=now)
                                  for name, seen in self._seen.items()}
            last = now
            publish = self._recompute(now)
            if publish or now >= next_renewal:
                if self._write():
                    next_renewal = time.monotonic() + jitter(self.config.retry_period, 0.1)
                else:  # retry sooner than a renewal, within the deadline
                    next_renewal = time.monotonic() + self.config.retry_period / 2
                    self._note_lapse(time.monotonic())
                self._recompute(time.monotonic())
            with self._lock:
                if self._stop.is_set():
                    break
                wait = next_renewal - time.monotonic()
                for seen in self._seen.values():
                    expiry = seen.changed_at + seen.duration - time.monotonic()
                    if expiry > 0:
                        wait = min(wait, expiry + 0.001)
                if wait > 0 and not self._dirty and not self._publish_due_locked():
                    self._wake.wait(wait)

    def _note_lapse(self, now: float) -> None:
        """After a failed write: once the renew deadline has passed, count the lapse now
        and tell the listeners, rather than when a worker next asks or the server next
        answers (an outage delivers neither): a label-mode member ends its run while
        the server is still away, so its supervisor can start it again at once."""
        with self._lock:
            if self._leaving or now < self._held_until or not self._state.caught_up:
                return
            self._lapsed_locked()
        # visible by default: this replica starts nothing until it has written again
        log_visibly(_log, logging.WARNING, "shard %s: lease %s/%s not renewed within the "
                    "renew deadline: lapsed, starting nothing until renewed", self.identity,
                    self.config.namespace, self.identity)
        self._changed()

    def _publish_due_locked(self) -> bool:
        """The target differs from the published view and nothing it takes away runs; for
        a blind member (:meth:`_blind_locked`), it still claims something and nothing
        runs (its empty view is then due)."""
        state = self._state
        if self._blind_locked(time.monotonic()):
            return bool(state.published.members) and not self._inflight
        if state.target == state.published:
            return False
        me = self.identity
        return all(state.target.owner(key) == me for key in self._inflight)

    def _recompute(self, now: float) -> bool:
        """Refresh liveness and the target; True when the target should be published."""
        expired: list[tuple[str, str]] = []
        changed = False
        with self._lock:
            live: dict[str, _Seen] = {}
            for name, seen in self._seen.items():
                if now < seen.changed_at + seen.duration:
                    live[name] = seen
                elif seen.rv not in self._deleting:
                    expired.append((name, seen.rv))
            state = self._state
            # a live Lease with an empty view is a member that claims nothing (blind):
            # it is left out of the target ring, so its share is not left to it
            target = self._ring(frozenset(n for n, seen in live.items() if seen.view)
                                | {self.identity})
            claims = tuple((name, self._ring(seen.view)) for name, seen in sorted(live.items())
                           if seen.view)
            if target != state.target or claims != state.claims or self._claims_folded:
                if target != state.target:
                    self._target_since = now
                self._state = _State(state.published, target, claims, state.caught_up)
                self._claims_folded = False
                changed = True
            due = self._publish_due_locked()
        for name, rv in expired:
            _log.info("shard %s: member %s's lease expired; removing it", self.identity, name)
            self._deleting.add(rv)
            self._delete(name, rv)
        if changed:
            self._metrics.set_members(self.config.ring, len(target.members))
            self._changed()
        return due

    def _claim_now_locked(self, name: str, view: frozenset[str]) -> None:
        """Fold the claims of ``name``'s newly read view into the state at once, before
        anything else is read: the write of this member's that the informer delivers
        next may mark it caught up, and a worker must not pass :meth:`begin` in between
        on a state without these claims (two members started together ran one key at
        once, a few milliseconds apart). Claims only ever added here (safe); the
        membership thread recomputes the whole state, dropping what expired."""
        state = self._state
        claims = dict(state.claims)
        ring = self._ring(view)
        if claims.get(name) == ring:
            return
        claims[name] = ring
        self._state = _State(state.published, state.target, tuple(sorted(claims.items())),
                             state.caught_up)
        self._claims_folded = True  # the thread's recompute still announces the change

    def _ring(self, members: frozenset[str]) -> Ring:
        ring = self._rings.get(members)
        if ring is None:
            if len(self._rings) > 64:
                self._rings.clear()
            ring = self._rings[members] = RangeRing(members) if self.config.by_server \
                else HashRing(members, self.config.virtual_nodes)
        return ring

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Also call ``callback`` (on the member's thread) at every change, as
        ``on_change``; the sharder of the label-assigned mode listens this way."""
        with self._lock:
            self._listeners = [*self._listeners, callback]

    def remove_listener(self, callback: Callable[[], None]) -> None:
        """Stop calling ``callback``."""
        with self._lock:
            self._listeners = [cb for cb in self._listeners if cb is not callback]

    def _changed(self) -> None:
        for callback in self._listeners:
            try:
                callback()
            except Exception:
                _log.exception("shard %s: a change callback failed", self.identity)

    def _write(self) -> bool:
        """Renew our Lease, publishing the target when nothing it takes away runs;
        create it when it is missing. True on success."""
        with self._lock:
            blind = self._blind_locked(time.monotonic())
            if blind:  # claim nothing, as soon as nothing runs
                publishing = False
                view = self._state.published if self._inflight else self._ring(frozenset())
            else:
                publishing = self._publish_due_locked()
                view = self._state.target if publishing else self._state.published
            lease = self._lease
            flipped = blind != self._blind
            if flipped:
                self._blind = blind
                if blind:
                    log_visibly(_log, logging.WARNING, "shard %s: the watch of the ring's "
                                "Leases has not delivered this member's own renewal for "
                                "%.1f s; it claims nothing until it does", self.identity,
                                time.monotonic() - (self._unseen_since or 0.0))
                else:
                    _log.info("shard %s: the watch of the ring's Leases delivers again",
                              self.identity)
        now = datetime.now(timezone.utc)
        acquired = None if lease is None else parse_micro_time(
            (lease.get("spec") or {}).get("acquireTime"))
        record = LeaderElectionRecord(holder_identity=self.identity,
                                      lease_duration_seconds=int(self.config.lease_duration),
                                      acquire_time=acquired or now, renew_time=now)
        annotations = {VIEW_ANNOTATION: ",".join(sorted(view.members))}
        sent = time.monotonic()
        left = self._held_until - sent
        timeout = left if left > 0.05 else self.config.renew_deadline
        try:
            if lease is None:
                self._own.create(record, timeout, annotations=annotations)
            else:
                self._own.update(record, timeout, annotations=annotations)
        except (LockConflictError, LockNotFoundError):
            self._lease = self._read_own()  # re-read (409) or create next time (404)
            return False
        except LockError as err:
            if err.status is None:
                _log.debug("shard %s: renewing failed: %s", self.identity, err)
            else:
                _log.warning("shard %s: renewing lease %s/%s: HTTP %d", self.identity,
                             self.config.namespace, self.identity, err.status)
            return False
        answer = self._own.lease
        assert answer is not None  # a successful write keeps the server's answer
        rv = str(answer["metadata"]["resourceVersion"])
        caught_up = False
        with self._lock:
            lapsed = sent >= self._held_until
            self._lease = answer
            self._held_until = sent + self.config.renew_deadline
            if self._own_seen != rv and self._unseen_since is None:
                self._unseen_since = sent
            state = self._state
            if blind and not view.members:  # acts on nothing: rejoins when it sees again
                state = self._state = _State(view, state.target, state.claims,
                                             state.caught_up)
            if publishing or lapsed:  # read the others afresh from this write on
                if lapsed and state.caught_up:
                    self._epoch += 1
                self._awaiting = {rv}
                state = self._state = _State(view, state.target, state.claims, False)
            elif not state.caught_up:
                self._awaiting.add(rv)
            if not state.caught_up and self._own_seen == rv:  # its event came first
                self._awaiting.clear()
                self._state = _State(state.published, state.target, state.claims, True)
                caught_up = True
        if publishing:
            drained = time.monotonic() - self._target_since
            self._metrics.observe_drain(self.config.ring, drained)
            _log.info("shard %s: acting on %d members now (%s)", self.identity,
                      len(view.members), ",".join(sorted(view.members)))
        if publishing or caught_up or flipped:  # blind: what keeps() answers changed
            self._changed()
        return True

    def _lock_of(self, name: str, stop: threading.Event | None) -> LeaseLock:
        """A lock on the ring's Lease ``name``, sending through this member's
        connections; ``stop`` abandons its request in flight when set."""
        return LeaseLock(self.config.namespace, name, self._api,
                         ResourceLockConfig(identity=self.identity),
                         timeout=self.config.renew_deadline,
                         labels={RING_LABEL: self.config.ring},
                         transport=self._transport, stop=stop)

    def _read_own(self) -> dict[str, Any] | None:
        try:
            self._own.get()
        except LockNotFoundError:
            return None
        except LockError:
            return self._lease
        return self._own.lease

    def _delete(self, name: str, rv: str, timeout: float | None = None, *,
                leaving: bool = False) -> None:
        """Delete Lease ``name`` if still at ``rv``. The membership thread's deletes of
        expired Leases end with its stop; the member's own at ``leaving`` comes after the
        stop and is bounded by ``timeout`` (the stop's budget) alone."""
        lock = self._lock_of(name, None if leaving else self._stop)
        try:
            lock.delete(timeout, resource_version=rv)
        except LockConflictError:
            pass  # renewed meanwhile: alive after all
        except LockError as err:
            if err.status is None:
                _log.debug("shard %s: deleting lease %s failed: %s", self.identity, name,
                           err)
            else:
                log_visibly(_log, logging.WARNING, "shard %s: deleting lease %s/%s: HTTP %d",
                            self.identity, self.config.namespace, name, err.status)

    # -- what the informer says ------------------------------------------------------------
    def _saw(self, lease: Any, gone: bool) -> None:
        if isinstance(lease, DeletedFinalStateUnknown):
            lease, gone = lease.obj, True
        if not isinstance(lease, dict):
            return
        md = lease.get("metadata") or {}
        name, rv = str(md.get("name", "")), str(md.get("resourceVersion", ""))
        spec = lease.get("spec") or {}
        changed = False
        with self._lock:
            if name == self.identity:
                self._own_seen = "" if gone else rv
                if not gone and self._unseen_since is not None:  # the watch delivers
                    if self._blind_locked(time.monotonic()):
                        # it sees again after claiming nothing: others may have held its
                        # keys meanwhile, and its other watches may have been half-dead
                        # too; a rejoin as after a lapse, which the controller hears of
                        # (what it skipped while blind is triggered again)
                        self._epoch += 1
                        changed = True
                    self._unseen_since = None
                    self._dirty = True
                    self._wake.notify_all()
                if gone:
                    self._lease = None  # deleted under us (judged expired): recreate it
                elif rv in self._awaiting:
                    self._awaiting.clear()
                    state = self._state
                    self._state = _State(state.published, state.target, state.claims, True)
                    self._dirty = True
                    self._wake.notify_all()
                    changed = True
                elif not changed:
                    return
            else:
                old = self._seen.get(name)
                if gone or not spec.get("holderIdentity") or md.get("deletionTimestamp"):
                    self._seen.pop(name, None)
                elif old is None or old.rv != rv:
                    seen = self._seen[name] = _Seen(
                        rv, time.monotonic(), str(spec["holderIdentity"]),
                        float(spec.get("leaseDurationSeconds") or 0), _view_of(lease))
                    if seen.view:
                        self._claim_now_locked(name, seen.view)
                else:
                    return
                self._dirty = True
                self._wake.notify_all()
        if changed:
            self._changed()


def lease_watch_idle_timeout(config: ShardingConfig) -> float:
    """How long the watch of a ring's Leases may stay silent before it is taken for dead
    and opened again, and how long a LIST of them may take: a lease duration (every live
    member renews within a retry period, and this member's own renewals come through it
    too; a ring's Leases are a few small objects), and at least two retry periods."""
    return max(config.lease_duration, 2 * config.retry_period)


class _Handler:
    """The Lease informer's event handler: every add, update and delete goes to the
    member."""

    def __init__(self, member: ShardMember) -> None:
        self._member = member

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._member._saw(obj, False)

    def on_update(self, old: Any, new: Any) -> None:
        self._member._saw(new, False)

    def on_delete(self, obj: Any) -> None:
        self._member._saw(obj, True)
