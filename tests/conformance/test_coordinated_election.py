"""Coordinated leader election (KEP-4355) on both servers: LeaseCandidates stand for a
Lease, the API server elects the one with the oldest emulation version, and coordinated
electors follow its choice: the elected one leads, the other never does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoordinationV1Api

from client_cache.leaderelection import (
    OLDEST_EMULATION_VERSION,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaseCandidate,
    LeaseLock,
    ResourceLockConfig,
    new_leader_elector,
)

LEASE = "cle-target"


class Replica:
    """A LeaseCandidate and a coordinated elector of one identity, each on its thread."""

    def __init__(self, api: Any, ns: str, identity: str, emulation: str, *,
                 lease_duration: float = 15, renew_deadline: float = 10) -> None:
        self.leading = threading.Event()
        self.stopped = threading.Event()  # it led, then stopped leading
        self.stop = threading.Event()
        self.candidate = LeaseCandidate(api, ns, identity, LEASE, binary_version="1.36.0",
                                        emulation_version=emulation)
        elector = new_leader_elector(LeaderElectionConfig(
            lock=LeaseLock(ns, LEASE, api, ResourceLockConfig(identity)),
            lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=0.5,
            coordinated=True, callbacks=LeaderCallbacks(self._started, self._ended)))
        self.threads = [
            threading.Thread(target=self.candidate.run, args=(self.stop,), daemon=True,
                             name=f"test-candidate-{identity}"),
            threading.Thread(target=elector.run, args=(self.stop,), daemon=True,
                             name=f"test-elector-{identity}")]
        for thread in self.threads:
            thread.start()

    def _started(self, stop: threading.Event) -> None:
        self.leading.set()

    def _ended(self) -> None:
        if self.leading.is_set():
            self.stopped.set()

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(5)
            assert not thread.is_alive(), thread.name


@pytest.fixture
def replicas(api: Any, ns: str) -> Iterator[list[Replica]]:
    made = [Replica(api, ns, "newer", "1.36.0"), Replica(api, ns, "older", "1.35.0")]
    try:
        yield made
    finally:
        for replica in made:
            replica.close()


def test_the_server_elects_the_oldest_emulation_version(
        api: Any, ns: str, replicas: list[Replica]) -> None:
    newer, older = replicas
    # the coordinator pings, waits up to 5 s for answers, then writes the Lease (on the
    # real server it first takes its own lease: allow for that)
    assert older.leading.wait(60), "the coordinator did not elect the older candidate"
    assert not newer.leading.is_set()
    lease = CoordinationV1Api(api).read_namespaced_lease(LEASE, ns)
    assert lease.spec.holder_identity == "older"
    assert lease.spec.strategy == OLDEST_EMULATION_VERSION
    assert not lease.spec.preferred_holder


@pytest.mark.slow
def test_a_better_candidate_takes_over_at_the_end_of_the_term(api: Any, ns: str) -> None:
    """The holder is alive but a candidate with an older emulation version stands: the
    server marks the end of the holder's term (``preferredHolder``), the holder stops
    renewing, and once the Lease expires the server gives it to the better one."""
    newer = Replica(api, ns, "newer", "1.36.0", lease_duration=3, renew_deadline=2)
    older: Replica | None = None
    try:
        assert newer.leading.wait(60), "the only candidate was not elected"
        older = Replica(api, ns, "older", "1.35.0", lease_duration=3, renew_deadline=2)
        assert older.leading.wait(90), "the better candidate never took over"
        assert newer.stopped.is_set()  # its term ended before the other's began
        lease = CoordinationV1Api(api).read_namespaced_lease(LEASE, ns)
        assert lease.spec.holder_identity == "older" and not lease.spec.preferred_holder
    finally:
        newer.close()
        if older is not None:
            older.close()
