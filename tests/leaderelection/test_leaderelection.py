"""leaderelection: the elector and the Lease lock on the embedded server, in one process
(short durations on the real clock; the multi-process scenarios are in
tests/conformance/test_leaderelection.py)."""

from __future__ import annotations

import ctypes
import itertools
import os
import queue
import random
import signal
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from client_cache.client.rest import request_json
from client_cache.client.transport import Transport
from client_cache.leaderelection import (
    HealthzAdaptor,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionError,
    LeaderElectionRecord,
    LeaseLock,
    LockConflictError,
    LockError,
    LockNotFoundError,
    ResourceLockConfig,
    format_micro_time,
    new_leader_elector,
    parse_micro_time,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.testing.leader import CandidateProcess, Timing
from client_cache.util import wait as wait_module
from client_cache.util.clock import FakeClock
from tests.fixtures import HungServer, eventually

LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/ctl"
FAST = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.1}


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer() as srv:
        yield srv


class Candidate:
    """An elector on a thread, recording what its callbacks saw."""

    def __init__(self, server: EmbeddedApiServer, identity: str, **options: Any) -> None:
        self.api = server.api_client()
        self.leading = threading.Event()
        self.lead_stop: threading.Event | None = None
        self.stopped = threading.Event()
        self.leaders: list[str] = []
        self.stop = threading.Event()
        lock = LeaseLock("default", "ctl", self.api, ResourceLockConfig(identity))
        self.elector = new_leader_elector(LeaderElectionConfig(
            lock=lock, callbacks=LeaderCallbacks(
                on_started_leading=self._started, on_stopped_leading=self.stopped.set,
                on_new_leader=self.leaders.append),
            name="ctl", **{**FAST, **options}))
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,),
                                       name=f"test-candidate-{identity}", daemon=True)
        self.thread.start()

    def _started(self, stop: threading.Event) -> None:
        self.lead_stop = stop
        self.leading.set()

    def halt(self) -> None:
        self.stop.set()
        self.thread.join(5)
        assert not self.thread.is_alive()
        self.api.close()


def lease(server: EmbeddedApiServer) -> dict[str, Any]:
    api = server.api_client()
    status, body = request_json(api, "GET", LEASE)
    api.close()
    assert status == 200
    spec: dict[str, Any] = body["spec"]
    return spec


def test_record_round_trips_as_client_go_writes_it() -> None:
    when = datetime(2026, 11, 23, 12, 0, 0, 5, tzinfo=timezone.utc)
    record = LeaderElectionRecord("a", 15, when, when, 3)
    spec = record.to_lease_spec()
    assert spec == {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 3,
                    "acquireTime": "2026-11-23T12:00:00.000005Z",
                    "renewTime": "2026-11-23T12:00:00.000005Z"}
    assert LeaderElectionRecord.from_lease_spec(spec) == record
    assert format_micro_time(when) == "2026-11-23T12:00:00.000005Z"
    assert parse_micro_time("2026-11-23T12:00:00.5+01:00") == datetime(
        2026, 11, 23, 11, 0, 0, 500000, tzinfo=timezone.utc)


@pytest.mark.parametrize(("options", "message"), [
    ({"lease_duration": 10, "renew_deadline": 10}, "leaseDuration must be greater than"),
    ({"renew_deadline": 2.0, "retry_period": 2.0}, "renewDeadline must be greater than ret"),
    ({"lease_duration": 0.5, "renew_deadline": 0.4, "retry_period": 0.1}, "leaseDuration"),
])
def test_configuration_is_validated_as_client_go(server: EmbeddedApiServer,
                                                 options: dict[str, float],
                                                 message: str) -> None:
    lock = LeaseLock("default", "x", server.api_client(), ResourceLockConfig("me"))
    callbacks = LeaderCallbacks(lambda stop: None, lambda: None)
    with pytest.raises(LeaderElectionError, match=message):
        new_leader_elector(LeaderElectionConfig(lock=lock, callbacks=callbacks, **options))
    with pytest.raises(ValueError, match="identity"):
        LeaseLock("default", "x", None, ResourceLockConfig(""))


def test_one_leader_then_takeover_after_the_lease_expires(server: EmbeddedApiServer) -> None:
    a = Candidate(server, "a")
    try:
        assert a.leading.wait(5)
        b = Candidate(server, "b")
        try:
            eventually(lambda: b.elector.get_leader() == "a", 5)
            assert not b.leading.is_set() and not b.elector.is_leader()
            spec = lease(server)
            assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 1
            # a dies without releasing (its elector stops, the lease stays as it was)
            a.halt()
            assert a.stopped.is_set() and a.lead_stop is not None and a.lead_stop.is_set()
            assert b.leading.wait(5)
            spec = lease(server)
            assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
            eventually(lambda: b.leaders[-1:] == ["b"], 5)
            assert b.leaders[0] == "a"
        finally:
            b.halt()
    finally:
        a.halt()


def test_release_on_cancel_hands_over_at_once(server: EmbeddedApiServer) -> None:
    a = Candidate(server, "a", release_on_cancel=True,
                  lease_duration=30, renew_deadline=20, retry_period=0.1)
    assert a.leading.wait(5)
    b = Candidate(server, "b", lease_duration=30, renew_deadline=20, retry_period=0.1)
    try:
        eventually(lambda: b.elector.get_leader() == "a", 5)
        a.halt()
        assert lease(server)["holderIdentity"] in ("", "b")
        assert b.leading.wait(5)  # long before the 30 s lease would have expired
    finally:
        b.halt()


def test_a_leader_that_cannot_renew_stops_within_the_deadline(
        server: EmbeddedApiServer) -> None:
    a = Candidate(server, "a")
    try:
        assert a.leading.wait(5)
        server.fail_next(1000, 500)  # every request fails from now on
        assert a.lead_stop is not None
        assert a.lead_stop.wait(5)  # fenced: renew_deadline (1 s) after the last renewal
        assert a.stopped.wait(5)
        a.thread.join(5)
        assert not a.thread.is_alive()  # run returns when leadership is lost
    finally:
        server.clear_faults()
        a.halt()


def test_a_race_has_one_winner(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    first = LeaseLock("default", "ctl", api, ResourceLockConfig("a"))
    second = LeaseLock("default", "ctl", api, ResourceLockConfig("b"))
    now = datetime.now(timezone.utc)
    first.create(LeaderElectionRecord("a", 15, now, now))
    first.get()
    second.get()
    first.update(LeaderElectionRecord("a", 15, now, now, 0))
    with pytest.raises(LockConflictError):
        second.update(LeaderElectionRecord("b", 15, now, now, 1))  # wrote over a stale read
    assert lease(server)["holderIdentity"] == "a"
    api.close()


def test_health_check_flags_a_stuck_leader(server: EmbeddedApiServer) -> None:
    """Healthy while leading and renewing; unhealthy once the elector still believes it
    leads but has not renewed for lease_duration + timeout (here: it lost the server)."""
    a = Candidate(server, "a")
    adaptor = HealthzAdaptor(timeout=0.2)
    adaptor.check()  # no elector yet: healthy
    adaptor.set_leader_election(a.elector)
    try:
        assert a.leading.wait(5)
        adaptor.check()
        assert adaptor.name() == "leaderElection"
        server.fail_next(1000, 500)
        assert a.stopped.wait(5)

        def unhealthy() -> bool:
            try:
                adaptor.check()
            except LeaderElectionError as err:
                return "failed election to renew leadership on lease ctl" in str(err)
            return False

        eventually(unhealthy, 5, "the stuck leader was not flagged")
    finally:
        server.clear_faults()
        a.halt()


def test_a_candidate_process_ends_with_its_parent(server: EmbeddedApiServer,
                                                  tmp_path: Any) -> None:
    """The end of a candidate's stdin (its parent died, however) stops it gracefully."""
    kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    candidate = CandidateProcess(kubeconfig, "orphan", "orphans", "default",
                                 Timing(lease_duration=1.5, renew_deadline=1.0,
                                        retry_period=0.1))
    try:
        assert candidate.first("leading", timeout=30) is not None
        assert candidate.proc.stdin is not None
        candidate.proc.stdin.close()  # what the parent's death does to the pipe
        assert candidate.proc.wait(10) == 0
        assert candidate.first("exit", timeout=5) is not None
    finally:
        candidate.close()


def _threads_of(pid: int) -> list[int]:
    return [int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid]


@pytest.mark.skipif(not Path("/proc/self/task").is_dir()
                    or not hasattr(ctypes.CDLL(None), "tgkill"),
                    reason="needs Linux's /proc and tgkill to aim a signal at one thread")
def test_a_candidate_stops_when_another_thread_takes_its_sigterm(
        server: EmbeddedApiServer, tmp_path: Any) -> None:
    """A SIGTERM the OS hands to one of the candidate's other threads (as it may, for a
    signal sent to the process) still stops it: its main thread waits on the signal
    wakeup descriptor. Before, it waited in a join the signal did not interrupt, and the
    candidate kept renewing its lease (seen once in twenty runs on a loaded machine)."""
    kubeconfig = server.write_kubeconfig(str(tmp_path / "kubeconfig"))
    candidate = CandidateProcess(kubeconfig, "aimed", "aimed", "default",
                                 Timing(lease_duration=1.5, renew_deadline=1.0,
                                        retry_period=0.1), release=True)
    try:
        assert candidate.first("leading", timeout=30) is not None
        pid = candidate.proc.pid
        tgkill = ctypes.CDLL(None, use_errno=True).tgkill
        assert tgkill(pid, _threads_of(pid)[0], signal.SIGTERM) == 0, ctypes.get_errno()
        assert candidate.proc.wait(10) == 0
        assert candidate.first("stopped", timeout=5) is not None
        assert candidate.first("exit", timeout=5) is not None
        api = server.api_client()
        try:
            status, lease = request_json(api, "GET", LEASE.replace("ctl", "aimed"))
        finally:
            api.close()
        assert status == 200
        # it released the lease on its way
        assert lease.get("spec", {}).get("holderIdentity") == "", (lease,
                                                                   candidate.events[-8:])
    finally:
        candidate.close()


class HeldByAnother:
    """A lock another candidate renews before every read: never free. Each ``get`` is
    reported on ``reads`` with the fake clock's reading."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.reads: queue.Queue[float] = queue.Queue()
        self.renewals = itertools.count()

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, bytes]:
        renewed = datetime.fromtimestamp(next(self.renewals), timezone.utc)
        record = LeaderElectionRecord("other", 15, renewed, renewed)
        self.reads.put(self.clock.monotonic())
        return record, repr(record).encode()

    def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        raise AssertionError("the lock is never free")

    update = create

    def record_event(self, message: str) -> None:
        pass

    def identity(self) -> str:
        return "me"

    def describe(self) -> str:
        return "default/held"


@pytest.mark.parametrize("draw", [0.0, 0.999])
def test_a_candidate_retries_after_retry_period_jittered_as_client_go(
        draw: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Go's acquire loop waits retry_period + rand * 1.2 * retry_period between tries."""
    monkeypatch.setattr(wait_module, "_rand", random.Random())
    monkeypatch.setattr(wait_module._rand, "random", lambda: draw)
    clock = FakeClock(1000.0)
    lock = HeldByAnother(clock)
    elector = new_leader_elector(LeaderElectionConfig(
        lock=lock, callbacks=LeaderCallbacks(lambda stop: None, lambda: None),
        lease_duration=15, renew_deadline=10, retry_period=2, clock=clock))
    stop = threading.Event()
    thread = threading.Thread(target=elector.run, args=(stop,), name="test-jitter",
                              daemon=True)
    thread.start()
    try:
        first = lock.reads.get(timeout=5)
        expected_wait = 2 + draw * 1.2 * 2
        for _ in range(3):
            eventually(clock.has_waiters)
            clock.step(expected_wait - 0.01)
            with pytest.raises(queue.Empty):
                lock.reads.get(timeout=0.05)  # not yet: the wait is longer
            clock.step(0.01)
            assert lock.reads.get(timeout=5) - first == pytest.approx(expected_wait)
            first += expected_wait
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


class ScriptedLock:
    """A lock held by "me" whose ``update`` runs ``on_update`` first (to block it, or to
    make it fail) and whose ``get`` returns ``held_by``'s record."""

    def __init__(self) -> None:
        self.on_update: Any = None
        self.held_by = "me"
        self.updates = 0
        self.created = threading.Event()

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, bytes]:
        if not self.created.is_set():
            raise LockNotFoundError("none yet")
        now = datetime.now(timezone.utc)
        record = LeaderElectionRecord(self.held_by, 15, now, now)
        return record, repr(record).encode()

    def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        self.created.set()

    def update(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        self.updates += 1
        if self.on_update is not None:
            self.on_update()

    def record_event(self, message: str) -> None:
        pass

    def identity(self) -> str:
        return "me"

    def describe(self) -> str:
        return "default/scripted"


def leading_elector(lock: ScriptedLock, clock: FakeClock,
                    ) -> tuple[Any, threading.Event, threading.Event, threading.Thread]:
    """An elector on ``lock`` that has acquired it; returns it, the stop event its
    leading work got (set when it stops leading), run's stop and its thread."""
    handed: queue.Queue[threading.Event] = queue.Queue()
    elector = new_leader_elector(LeaderElectionConfig(
        lock=lock, callbacks=LeaderCallbacks(handed.put, lambda: None),
        lease_duration=15, renew_deadline=10, retry_period=2, clock=clock))
    stop = threading.Event()
    thread = threading.Thread(target=elector.run, args=(stop,), name="test-elector",
                              daemon=True)
    thread.start()
    return elector, handed.get(timeout=5), stop, thread


def test_a_renewal_answered_after_a_pause_does_not_extend_leadership() -> None:
    """Issue 59: the renew deadline runs from when the last successful renewal was sent.
    A renewal sent at t=1 whose answer arrives after a 20 s freeze leaves the leader
    without the lease (client-go restarts its deadline when the answer arrives)."""
    clock = FakeClock(1000.0)
    lock = ScriptedLock()
    sending, answer = threading.Event(), threading.Event()

    def frozen_in_flight() -> None:
        sending.set()
        assert answer.wait(5)

    elector, lead_stop, stop, thread = leading_elector(lock, clock)
    try:
        assert elector.holds_lease()
        eventually(clock.has_waiters)
        lock.on_update = frozen_in_flight
        clock.step(2.0)  # the retry period: a renewal goes out and hangs
        assert sending.wait(5)
        clock.step(20.0)  # the process is frozen; the fence timer would fire on resume
        assert not elector.holds_lease()  # asked at once after the pause: no
        answer.set()  # the renewal's success arrives late
        assert lead_stop.wait(5)
        thread.join(5)
        assert not thread.is_alive() and not elector.holds_lease()
    finally:
        answer.set()
        stop.set()
        thread.join(5)


def test_a_leader_that_reads_another_holder_stops_at_once() -> None:
    """Issue 59: a renewal refused because another candidate holds the lock ends the
    leadership when the lock is read, not at the renew deadline (the fake clock never
    reaches it here)."""
    clock = FakeClock(1000.0)
    lock = ScriptedLock()

    def conflict() -> None:
        lock.held_by = "other"
        raise LockConflictError("changed under us")

    elector, lead_stop, stop, thread = leading_elector(lock, clock)
    try:
        eventually(clock.has_waiters)
        lock.on_update = conflict
        clock.step(2.0)
        assert lead_stop.wait(5)
        assert not elector.holds_lease() and elector.get_leader() == "other"
        thread.join(5)
        assert not thread.is_alive()
    finally:
        stop.set()
        thread.join(5)


@pytest.mark.parametrize("holder", ["me", "other"])
def test_a_release_that_conflicts_reads_the_lock_again(holder: str) -> None:
    """A release refused as a conflict (the stop abandoned a renewal the server had
    applied: the version read last is stale) reads the lock again and releases that
    version while this candidate still holds it; held by another, it leaves it alone."""
    clock = FakeClock(1000.0)
    lock = ScriptedLock()
    written: list[str] = []

    def conflict_once(record: LeaderElectionRecord) -> None:
        written.append(record.holder_identity)
        if len(written) == 1:
            lock.held_by = holder
            raise LockConflictError("renewed under us")

    elector, _, stop, thread = leading_elector(lock, clock)
    try:
        lock.update = lambda record, timeout=None: conflict_once(record)  # type: ignore[method-assign]
        assert elector.release(timeout=1.0)
        assert written == (["", ""] if holder == "me" else [""])
        assert not elector.is_leader()
    finally:
        stop.set()
        thread.join(5)


def test_a_lease_lock_labels_annotates_and_deletes_on_a_precondition(
        server: EmbeddedApiServer) -> None:
    """The port's additions for shard members: labels written at create and kept,
    annotations merged, a delete held to a resourceVersion."""
    api = server.api_client()
    lock = LeaseLock("default", "member", api, ResourceLockConfig("me"),
                     labels={"ring": "r1"})
    now = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    record = LeaderElectionRecord("me", 10, now, now, 0)
    lock.create(record, annotations={"view": "a,b"})
    first = lock.lease
    assert first is not None
    assert first["metadata"]["labels"] == {"ring": "r1"}
    lock.update(record, annotations={"other": "x"})
    _, lease = request_json(api, "GET", "/apis/coordination.k8s.io/v1/namespaces/default/"
                            "leases/member")
    assert lease["metadata"]["labels"] == {"ring": "r1"}
    assert lease["metadata"]["annotations"] == {"view": "a,b", "other": "x"}
    stale = first["metadata"]["resourceVersion"]
    with pytest.raises(LockConflictError, match="changed since"):
        lock.delete(resource_version=stale)
    assert lock.get()[0].holder_identity == "me"  # kept: it was renewed after `stale`
    assert lock.delete() is True  # held to the version just read
    assert lock.lease is None
    with pytest.raises(LockNotFoundError):
        lock.get()
    assert lock.delete(resource_version=lease["metadata"]["resourceVersion"]) is False
    with pytest.raises(LockError, match="no resourceVersion"):
        lock.delete()
    with pytest.raises(ValueError, match="without '/'"):
        LeaseLock("default", "a/b", api, ResourceLockConfig("me"))
    lock.close()


def test_lease_locks_share_a_transport_and_a_stop_ends_their_requests() -> None:
    """Locks given one transport leave it open when closed; a set ``stop`` abandons the
    request in flight on a hung server at once (a LockError with no status)."""
    with HungServer() as hung:
        api = hung.api_client()
        transport = Transport(api)
        stop = threading.Event()
        lock = LeaseLock("default", "hung", api, ResourceLockConfig("me"), timeout=30.0,
                         transport=transport, stop=stop)
        errors: queue.Queue[BaseException] = queue.Queue()

        def read() -> None:
            try:
                lock.get()
            except BaseException as err:  # handed to the test thread
                errors.put(err)
        reader = threading.Thread(target=read, name="test-lock-read", daemon=True)
        reader.start()
        assert hung.connected.wait(5)
        stop.set()
        err = errors.get(timeout=1.0)
        assert isinstance(err, LockError) and err.status is None
        reader.join(1.0)
        assert not reader.is_alive()
        lock.close()
        other = LeaseLock("default", "hung", api, ResourceLockConfig("me"),
                          transport=transport)
        assert other._own_transport() is transport  # still open, still shared
        transport.close()
        api.close()
