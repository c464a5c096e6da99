"""Leader election on a resource lock (Go ``tools/leaderelection``).

Several replicas of a controller run an elector each on one lock (a Lease); one of them
leads and acts, the others wait. The protocol, as client-go's:

* **acquire**: every ``retry_period`` plus up to 1.2 times it at random (Go's jitter, so
  between 1 and 2.2 ``retry_period``) a candidate reads the lock; when
  it is free, or its holder has not renewed it for ``lease_duration`` *as observed by this
  candidate's own monotonic clock* (clocks of different machines are never compared), the
  candidate writes itself in. Writes are optimistic (resourceVersion), so two candidates
  cannot both win a round.
* **renew**: the leader rewrites the lock every ``retry_period``. When it has not managed
  to for ``renew_deadline``, it stops leading: the stop event handed to
  ``on_started_leading`` is set at that moment (fencing: work must stop there), then
  ``on_stopped_leading`` runs. Since ``lease_duration`` > ``renew_deadline``, the others
  cannot take over before the old leader has stopped.

Stricter than client-go, so that a pause (a GC pause, a frozen VM, SIGSTOP) cannot make
two leaders:

* the renew deadline runs from when the last successful write was *sent*, not from when
  its answer came back: a renewal that was in flight while the process was frozen, and
  whose answer arrives after the freeze, does not extend the leadership (client-go
  restarts its deadline when the answer arrives, so a leader frozen with a renewal in
  flight believes it leads for up to ``renew_deadline`` after it resumes, possibly beside
  the candidate that took over meanwhile);
* a leader that reads the lock held by another candidate (or released) stops leading at
  once, not at its renew deadline;
* :meth:`LeaderElector.holds_lease` answers from the monotonic clock at the moment it is
  asked (leader, and the deadline not passed), so a process resumed from a pause longer
  than what was left of its deadline stops believing it leads in its first instruction
  after the pause, before the fencing timer's thread has run. The controller runtime
  asks it before every reconcile.

The remaining bound: another candidate takes over at the earliest ``lease_duration``
after it *observed* the leader's last write, which happened after that write was sent; so
the old leader's belief ends at least ``lease_duration - renew_deadline`` before, as long
as the two monotonic clocks run at the same rate (one machine: one clock) and nothing in
the old leader acts without asking (work already running learns it through the stop
event, set by a timer thread as soon as the process is scheduled again).
* **release** (``release_on_cancel``): a leader told to stop writes an empty holder with a
  one-second lease, so a successor takes over after about ``retry_period`` instead of
  ``lease_duration``.

:meth:`LeaderElector.run` blocks; it returns when ``stop`` is set or leadership is lost.
:meth:`LeaderElector.check` is the health check of client-go's ``HealthzAdaptor``.
Timers use the clock given (monotonic readings); times written to the lock are wall time.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from client_cache.errors import ClientCacheError
from client_cache.leaderelection.metrics import get_leader_metrics_provider
from client_cache.leaderelection.resourcelock import (
    Interface,
    LeaderElectionRecord,
    LockConflictError,
    LockError,
    LockNotFoundError,
)
from client_cache.util._logs import FailureEpisodes, log_failure
from client_cache.util.clock import REAL_CLOCK, WithDelayedExecution
from client_cache.util.stop import on_stop
from client_cache.util.wait import jitter

__all__ = [
    "JITTER_FACTOR",
    "HealthzAdaptor",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElectionError",
    "LeaderElector",
    "new_leader_elector",
    "run_or_die",
]

_log = logging.getLogger(__name__)

JITTER_FACTOR = 1.2
"""How far a wait of ``retry_period`` is stretched at random, as a multiple of it: a
candidate waits between 1 and 2.2 ``retry_period`` between tries (Go ``JitterFactor``)."""

RELEASE_TIMEOUT = 0.5
"""How long the release of a stopping leader may take (seconds): best effort within the
stop's budget of a second; a release the server does not answer in time leaves the lease
to expire, as a killed leader's does."""


class LeaderElectionError(ClientCacheError):
    """A configuration client-go would refuse, or a failed health check."""


@dataclass
class LeaderCallbacks:
    """What the elector calls (Go ``LeaderCallbacks``): ``on_started_leading(stop)`` on a
    thread of its own when this candidate becomes leader (``stop`` is set when it stops
    leading); ``on_stopped_leading()`` when ``run`` ends (also when it never led);
    ``on_new_leader(identity)`` when the observed leader changes (optional)."""

    on_started_leading: Callable[[threading.Event], None]
    on_stopped_leading: Callable[[], None]
    on_new_leader: Callable[[str], None] | None = None


@dataclass
class LeaderElectionConfig:
    """Go ``LeaderElectionConfig``. Durations in seconds, client-go's defaults; validated
    as client-go validates them (see :func:`new_leader_elector`). ``callbacks`` default to
    doing nothing (the controller runtime adds its own around them)."""

    lock: Interface
    callbacks: LeaderCallbacks = field(default_factory=lambda: LeaderCallbacks(
        lambda stop: None, lambda: None))
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = False
    name: str = ""
    clock: WithDelayedExecution = field(default=REAL_CLOCK)
    coordinated: bool = False
    """Coordinated leader election (Go ``Coordinated``, KEP-4355): the API server picks
    the holder among the Lease's candidates (run a
    :class:`~client_cache.leaderelection.LeaseCandidate` beside the elector); this
    elector never takes the Lease, it only renews it while the server names it holder,
    and stops renewing once the server marks the term's end (``preferredHolder``)."""


def _validate(config: LeaderElectionConfig) -> None:
    if config.lease_duration <= config.renew_deadline:
        raise LeaderElectionError("leaseDuration must be greater than renewDeadline")
    if config.renew_deadline <= JITTER_FACTOR * config.retry_period:
        raise LeaderElectionError("renewDeadline must be greater than retryPeriod*JitterFactor")
    if config.lease_duration < 1:
        raise LeaderElectionError("leaseDuration must be greater than zero")
    if config.renew_deadline < 1:
        raise LeaderElectionError("renewDeadline must be greater than zero")
    if config.retry_period <= 0:
        raise LeaderElectionError("retryPeriod must be greater than zero")
    if config.callbacks.on_started_leading is None:
        raise LeaderElectionError("OnStartedLeading callback must not be nil")
    if config.callbacks.on_stopped_leading is None:
        raise LeaderElectionError("OnStoppedLeading callback must not be nil")
    if config.lock is None:
        raise LeaderElectionError("Lock must not be nil")
    if not config.lock.identity():
        raise LeaderElectionError("Lock identity is empty")


class LeaderElector:
    """See the module documentation. Build with :func:`new_leader_elector`."""

    def __init__(self, config: LeaderElectionConfig) -> None:
        _validate(config)
        self.config = config
        self._clock = config.clock
        self._failing = FailureEpisodes(monotonic=self._clock.monotonic)
        self._lock = threading.Lock()
        self._observed = LeaderElectionRecord()
        self._run_stop = threading.Event()  # the stop of the current run (set: stopping)
        self._observed_raw = b""
        self._observed_at = 0.0  # monotonic reading when the record last changed
        self._reported_leader = ""
        self._leading_until = 0.0  # monotonic: last successful write sent + renew_deadline
        self._wake = threading.Condition()
        self._metrics = get_leader_metrics_provider()

    def __repr__(self) -> str:
        return f"<LeaderElector {self.config.lock.describe()} as {self.identity()!r}>"

    # -- observation ------------------------------------------------------------------------
    def identity(self) -> str:
        """This candidate's identity in the lock (Go ``config.Lock.Identity()``)."""
        return self.config.lock.identity()

    def get_leader(self) -> str:
        """The identity of the leader last observed ("" when none)."""
        with self._lock:
            return self._observed.holder_identity

    def is_leader(self) -> bool:
        """Whether this candidate was the leader at its last observation."""
        return self.get_leader() == self.identity()

    def holds_lease(self) -> bool:
        """Whether this candidate leads at this instant: it was the holder at its last
        observation and its last successful write was sent less than ``renew_deadline``
        ago, by the monotonic clock read now (see the module documentation: stricter than
        Go's ``IsLeader``, which :meth:`is_leader` is)."""
        with self._lock:
            if self._observed.holder_identity != self.identity():
                return False
            until = self._leading_until
        return self._clock.monotonic() < until

    def _failed(self, err: BaseException, msg: str, *args: Any) -> None:
        """A read or write of the lock failed: logged by episode, the first at ERROR
        even with no logging configured, repeats counted (client-go logs every one)."""
        log_failure(_log, self._failing, "lock", f"{msg}|{type(err).__name__}", msg, *args)

    def _wrote(self, record: LeaderElectionRecord, sent: float) -> None:
        """``record`` was written by a request sent at ``sent`` (monotonic)."""
        self._failing.ended("lock")
        with self._lock:
            self._observed = record
            self._observed_raw = record.raw()
            self._observed_at = self._clock.monotonic()
            self._leading_until = sent + self.config.renew_deadline

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        with self._lock:
            self._observed = record
            self._observed_raw = record.raw()
            self._observed_at = self._clock.monotonic()

    def _lease_valid(self, now: float) -> bool:
        with self._lock:
            return self._observed_at + self._observed.lease_duration_seconds > now

    def check(self, max_tolerable_expired_lease: float) -> None:
        """Raise :class:`LeaderElectionError` when this candidate believes it leads but has
        not renewed for ``lease_duration + max_tolerable_expired_lease`` (Go ``Check``, the
        liveness check: such a leader is stuck)."""
        if not self.is_leader():
            return
        with self._lock:
            since = self._clock.monotonic() - self._observed_at
        if since > self.config.lease_duration + max_tolerable_expired_lease:
            raise LeaderElectionError(
                f"failed election to renew leadership on lease {self.config.name}")

    # -- the protocol -----------------------------------------------------------------------
    def _fresh_record(self) -> LeaderElectionRecord:
        """This candidate holding the lock from now, for ``lease_duration``."""
        wall = datetime.now(timezone.utc)
        return LeaderElectionRecord(
            holder_identity=self.identity(),
            lease_duration_seconds=int(self.config.lease_duration),
            acquire_time=wall, renew_time=wall)

    def _observe(self, record: LeaderElectionRecord, raw: bytes) -> None:
        """Take ``record`` (read from the lock, encoded ``raw``) as observed when it
        changed since the last read (the lease's expiry counts from then)."""
        with self._lock:
            changed = raw != self._observed_raw
        if changed:
            self._set_observed(record)

    def try_acquire_or_renew(self, timeout: float | None = None) -> bool:
        """One round: take or renew the lock if allowed; True when this candidate holds it
        afterwards (Go ``tryAcquireOrRenew``). ``timeout`` bounds each request."""
        lock = self.config.lock
        record = self._fresh_record()
        now = self._clock.monotonic()
        if self.is_leader() and self._lease_valid(now):  # the fast path: renew blindly
            with self._lock:
                old = self._observed
            renewed = _renewal(record, old)
            sent = self._clock.monotonic()
            try:
                lock.update(renewed, timeout)
                self._wrote(renewed, sent)
                return True
            except LockError as err:
                if self._run_stop.is_set():  # the stop abandoned it: ask nothing more
                    return False
                _log.debug("renewing lease %s optimistically failed (%s); reading it",
                           lock.describe(), type(err).__name__)
        try:
            old, raw = lock.get(timeout)
        except LockNotFoundError:
            sent = self._clock.monotonic()
            try:
                lock.create(record, timeout)
            except LockConflictError:
                _log.debug("another candidate created lease %s first", lock.describe())
                return False
            except LockError as err:
                self._failed(err, "error initially creating leader election record %s: %s",
                             lock.describe(), err)
                return False
            self._wrote(record, sent)
            return True
        except LockError as err:
            self._failed(err, "error retrieving resource lock %s: %s", lock.describe(), err)
            return False
        self._observe(old, raw)
        if old.holder_identity and self._lease_valid(now) and not self.is_leader():
            _log.debug("lock is held by %s and has not yet expired", old.holder_identity)
            return False
        if self.is_leader():
            record = _renewal(record, old)
        else:
            record = dataclasses.replace(record,
                                         leader_transitions=old.leader_transitions + 1)
        sent = self._clock.monotonic()
        try:
            lock.update(record, timeout)
        except LockConflictError:
            _log.debug("lost the race for lease %s", lock.describe())
            return False
        except LockError as err:
            self._failed(err, "Failed to update lock %s: %s", lock.describe(), err)
            return False
        self._wrote(record, sent)
        return True

    def try_coordinated_renew(self, timeout: float | None = None) -> bool:
        """One round of coordinated leader election (Go ``tryCoordinatedRenew``): read the
        Lease and renew it only while the API server's coordinator names this candidate
        holder and has not marked the term's end; never create or take it. True when
        this candidate holds it afterwards."""
        lock = self.config.lock
        record = self._fresh_record()
        try:
            old, raw = lock.get(timeout)
        except LockNotFoundError:
            _log.info("lease lock %s not found (the coordinator has not elected anyone)",
                      lock.describe())
            return False
        except LockError as err:
            self._failed(err, "error retrieving lease lock %s: %s", lock.describe(), err)
            return False
        self._observe(old, raw)
        if not self._lease_valid(self._clock.monotonic()):
            _log.info("lease %s has expired", lock.describe())
            return False
        if not self.is_leader():
            _log.debug("lease %s is held by %s and has not yet expired", lock.describe(),
                       old.holder_identity)
            return False
        if old.preferred_holder:
            _log.debug("lease %s is marked as 'end of term'", lock.describe())
            return False
        record = dataclasses.replace(_renewal(record, old), strategy=old.strategy)
        sent = self._clock.monotonic()
        try:
            lock.update(record, timeout)
        except LockError as err:
            self._failed(err, "Failed to update lock %s: %s", lock.describe(), err)
            return False
        self._wrote(record, sent)
        return True

    def _round(self, timeout: float | None = None) -> bool:
        """One acquire-or-renew round, coordinated or not."""
        if self.config.coordinated:
            return self.try_coordinated_renew(timeout)
        return self.try_acquire_or_renew(timeout)

    def _report_transition(self) -> None:
        leader = self.get_leader()
        if leader == self._reported_leader:
            return
        self._reported_leader = leader
        callback = self.config.callbacks.on_new_leader
        if callback is not None:
            threading.Thread(target=_guarded(callback, leader), daemon=True,
                             name=f"leaderelection-new-leader-{self.config.name}").start()

    def _sleep(self, seconds: float, stop: threading.Event) -> bool:
        """Wait ``seconds`` on the clock or until ``stop``; False when stopped."""
        if stop.is_set():
            return False
        fired = threading.Event()

        def ring() -> None:
            fired.set()
            self._notify()

        timer = self._clock.after_func(seconds, ring)
        registration = on_stop(stop, self._notify)
        try:
            with self._wake:
                self._wake.wait_for(lambda: stop.is_set() or fired.is_set(), None)
        finally:
            registration.cancel()
            timer.stop()
        return not stop.is_set()

    def _notify(self) -> None:
        with self._wake:
            self._wake.notify_all()

    def _acquire(self, stop: threading.Event) -> bool:
        """Retry every jittered ``retry_period`` until the lock is ours (True) or stop."""
        desc = self.config.lock.describe()
        _log.info("attempting to acquire leader lease %s...", desc)
        while not stop.is_set():
            acquired = self._round()
            self._report_transition()
            if acquired:
                self.config.lock.record_event("became leader")
                _log.info("successfully acquired lease %s", desc)
                return True
            _log.debug("failed to acquire lease %s", desc)
            if not self._sleep(jitter(self.config.retry_period, JITTER_FACTOR), stop):
                break
        return False

    def _renew(self, stop: threading.Event, leading: threading.Event) -> None:
        """Renew every ``retry_period`` until ``stop``, until another holder is read, or
        until no renewal has succeeded for ``renew_deadline`` counted from when the last
        successful one was sent. A timer fences at that deadline, setting ``leading``
        even while a renewal request still hangs (a server gone silent); each request is
        bounded by the time left (Go: the renew context's deadline)."""
        desc = self.config.lock.describe()
        clock = self._clock

        def left() -> float:
            with self._lock:
                until = self._leading_until
            return until - clock.monotonic()

        fence = clock.after_func(max(0.0, left()), leading.set)
        try:
            while not stop.is_set() and not leading.is_set():
                remaining = left()
                if remaining <= 0:
                    break
                if self._round(timeout=remaining):
                    fence.stop()
                    fence = clock.after_func(max(0.0, left()), leading.set)
                self._report_transition()
                if not self.is_leader():
                    _log.info("lease %s is held by %r now: stopping leading at once", desc,
                              self.get_leader())
                    break
                remaining = left()
                if remaining <= 0 or not self._sleep(min(self.config.retry_period, remaining),
                                                     stop):
                    break
        finally:
            fence.stop()
        if not stop.is_set():
            leading.set()
            if self.is_leader():
                _log.info("failed to renew lease %s: timed out waiting for the condition",
                          desc)

    def release(self, timeout: float | None = None) -> bool:
        """Give the lock up if held: an empty holder with a one-second lease (Go
        ``release``). True when released or not held. ``timeout`` bounds the release
        (None: the lock's own per request); the release at the end of :meth:`run` gives
        it :data:`RELEASE_TIMEOUT`, best effort within a stop's budget (the lease then
        expires as usual). A conflict (a renewal the stop abandoned had reached the
        server) reads the lock again and, if this candidate still holds it, releases
        that version, within the same ``timeout``; Go gives up there."""
        if not self.is_leader():
            return True
        wall = datetime.now(timezone.utc)
        with self._lock:
            transitions = self._observed.leader_transitions
        record = LeaderElectionRecord("", 1, wall, wall, transitions)
        lock, clock = self.config.lock, self._clock
        deadline = None if timeout is None else clock.monotonic() + timeout

        def left() -> float | None:  # the lock bounds a request to at least 50 ms
            return None if deadline is None else max(0.0, deadline - clock.monotonic())
        try:
            try:
                lock.update(record, timeout=timeout)
            except LockConflictError:
                # the stop abandoned a renewal the server had already applied, so the
                # version last read is stale: read again and release if still ours
                # (Go fails here and leaves the lease to expire)
                current, _ = lock.get(timeout=left())
                if current.holder_identity != self.identity():
                    self._set_observed(current)
                    return True
                lock.update(record, timeout=left())
        except LockError as err:
            _log.error("Failed to release lock: %s", err)
            return False
        self._set_observed(record)
        return True

    def run(self, stop: threading.Event) -> None:
        """Acquire, lead, renew until ``stop`` or a lost lease; ``on_stopped_leading`` runs
        at the end in any case (Go ``Run``)."""
        leading = threading.Event()  # set: stop leading
        worker: threading.Thread | None = None
        # a stop abandons the lock's request in flight at once (a hung server would hold
        # it for the lock's request timeout); the release that follows is a new request
        abort = getattr(self.config.lock, "abort", None)
        self._run_stop = stop
        aborting = on_stop(stop, abort) if callable(abort) else None
        try:
            if not self._acquire(stop):
                return
            forward = on_stop(stop, leading.set)
            self._metrics.on(self.config.name)
            worker = threading.Thread(
                target=_guarded(self.config.callbacks.on_started_leading, leading),
                name=f"leaderelection-leading-{self.config.name or self.identity()}",
                daemon=True)
            worker.start()
            try:
                self._renew(stop, leading)
            finally:
                with self._lock:
                    self._leading_until = 0.0  # holds_lease() is False from here on
                leading.set()  # fencing: before anything else, stop the leader's work
                self._metrics.off(self.config.name)
                forward.cancel()
                if self.config.release_on_cancel:
                    self.release(timeout=RELEASE_TIMEOUT)
        finally:
            if aborting is not None:
                aborting.cancel()
            close = getattr(self.config.lock, "close", None)
            if callable(close):  # the lock's connections end with the run (made anew
                close()          # at its next request, if it runs again)
            _guarded(self.config.callbacks.on_stopped_leading)()
            if worker is not None:
                worker.join(1.0)


def _renewal(record: LeaderElectionRecord, old: LeaderElectionRecord,
             ) -> LeaderElectionRecord:
    """``record`` renewing ``old``: its acquire time and transition count kept."""
    return dataclasses.replace(record, acquire_time=old.acquire_time,
                               leader_transitions=old.leader_transitions)


def _guarded(callback: Callable[..., None], *args: object) -> Callable[[], None]:
    def run() -> None:
        try:
            callback(*args)
        except Exception:
            _log.exception("leader election callback %s failed",
                           getattr(callback, "__name__", repr(callback)))
    return run


def new_leader_elector(config: LeaderElectionConfig) -> LeaderElector:
    """Go ``NewLeaderElector``: raises :class:`LeaderElectionError` for a configuration
    client-go refuses (lease_duration must exceed renew_deadline, which must exceed 1.2 x
    retry_period; all positive; both callbacks; a lock with an identity)."""
    return LeaderElector(config)


def run_or_die(stop: threading.Event, config: LeaderElectionConfig) -> None:
    """Go ``RunOrDie``: build the elector (raising on a bad configuration) and run it."""
    new_leader_elector(config).run(stop)


class HealthzAdaptor:
    """A liveness check for an elector (Go ``HealthzAdaptor``): healthy unless the elector
    believes it leads while its lease expired more than ``timeout`` seconds ago."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._elector: LeaderElector | None = None
        self._lock = threading.Lock()

    def name(self) -> str:
        """The check's name in health output (Go ``Name``)."""
        return "leaderElection"

    def set_leader_election(self, elector: LeaderElector) -> None:
        """Attach the elector whose lease is checked (Go ``SetLeaderElection``)."""
        with self._lock:
            self._elector = elector

    def check(self) -> None:
        """Raise :class:`LeaderElectionError` when unhealthy (no elector yet: healthy)."""
        with self._lock:
            elector = self._elector
        if elector is not None:
            elector.check(self.timeout)
