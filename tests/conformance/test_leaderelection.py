"""Leader election with three candidates in processes of their own on one Lease, on both
servers (short timings: lease 3 s, renew deadline 2 s, retry 0.25 s): a SIGKILLed leader
is replaced within lease_duration plus the polling delays; a leader that releases on
SIGTERM is replaced within about retry_period; a leader cut off from the server by a
black-hole proxy stops acting by its renew deadline, before anyone else starts; frozen
and resumed candidates (SIGSTOP/SIGCONT at random points of the renew cycle, 0.2 s of
latency) never believe they lead at the same sampled instant."""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from client_cache.client.rest import request_json
from client_cache.leaderelection import JITTER_FACTOR, LeaderElectionRecord
from client_cache.testing.leader import CandidateProcess, Timing
from client_cache.testing.proxy import TcpProxy
from tests.conformance.util import Backend
from tests.fixtures import go_program

TIMING = Timing(lease_duration=3.0, renew_deadline=2.0, retry_period=0.25)
KILLS = 5
_leases = itertools.count(1)


def write_kubeconfig(config: dict[str, Any], path: Path, server: str | None = None) -> str:
    if server is not None:
        config = json.loads(json.dumps(config))
        config["clusters"][0]["cluster"]["server"] = server
    path.write_text(json.dumps(config), encoding="utf-8")
    path.chmod(0o600)
    return str(path)


class Candidates:
    def __init__(self, backend: Backend, ns: str, tmp_path: Path) -> None:
        self.kubeconfig = write_kubeconfig(backend.kubeconfig(), tmp_path / "kubeconfig")
        self.backend, self.ns, self.tmp_path = backend, ns, tmp_path
        self.lease = f"lease-{next(_leases)}"
        self.all: list[CandidateProcess] = []
        self._ids = itertools.count()

    def start(self, release: bool = False, kubeconfig: str | None = None,
              program: list[str] | None = None, flags: tuple[str, ...] = (),
              timing: Timing = TIMING) -> CandidateProcess:
        prefix = "go" if program else "c"
        candidate = CandidateProcess(kubeconfig or self.kubeconfig,
                                     f"{prefix}{next(self._ids)}", self.lease, self.ns,
                                     timing, release, program, flags)
        self.all.append(candidate)
        return candidate

    def current(self, among: list[CandidateProcess], timeout: float = 30.0,
                ) -> CandidateProcess:
        """The one candidate of ``among`` leading now (waiting until there is one)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leading = [c for c in among if c.leading() and c.proc.poll() is None]
            if len(leading) == 1:
                return leading[0]
            assert len(leading) < 2, "two candidates lead at once"
            time.sleep(0.02)
        raise AssertionError(f"no leader within {timeout} s")

    def leader(self, among: list[CandidateProcess], after: float = 0.0,
               timeout: float = 30.0) -> tuple[CandidateProcess, float]:
        """The candidate of ``among`` that starts leading first after ``after``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            started = [(c, e["t"]) for c in among
                       if (e := c.first("leading", after, timeout=0)) is not None]
            if started:
                return min(started, key=lambda pair: pair[1])
            time.sleep(0.02)
        raise AssertionError(f"no leader within {timeout} s: " + "; ".join(
            f"{c.identity} rc={c.proc.poll()} {[e for e in c.events if e['e'] != 'wrote']}"
            for c in among))

    def close(self) -> None:
        for candidate in self.all:
            candidate.close()


@pytest.fixture
def candidates(backend: Backend, ns: str, tmp_path: Path) -> Iterator[Candidates]:
    group = Candidates(backend, ns, tmp_path)
    try:
        yield group
    finally:
        group.close()


def polling_gap(candidate: CandidateProcess, since: float, until: float) -> float:
    """The longest wait between two reads of the lock by ``candidate`` around [since,
    until]: its jittered retry wait (1 to 2.2 retry periods) plus the request, plus any
    scheduling delay of a loaded machine, as measured (never less than the nominal
    2.2 retry periods)."""
    reads = [e["t"] for e in candidate.events if e["e"] == "read"]
    window = [t for t in reads if since - 3 * TIMING.retry_period <= t <= until]
    gaps = [b - a for a, b in itertools.pairwise(window)]
    assert all(gap >= TIMING.retry_period - 0.01 for gap in gaps), gaps  # never faster
    return max([(1 + JITTER_FACTOR) * TIMING.retry_period, *gaps])


def last_renewal_seen(successor: CandidateProcess, holder: str, until: float,
                      ) -> float | None:
    """When ``successor`` first read the record it took the lease over from, if that was
    ``holder``'s: its last renewal as the server stored it (a renewal sent just before a
    kill can land later, on a slow server: the lease runs from there, as it should).
    None when the successor took the lease from another holder."""
    reads = [e for e in successor.events if e["e"] == "read" and e["t"] <= until]
    final = reads[-1]
    if final["holder"] != holder:
        return None
    return next(e["t"] for e in reads if (e["holder"], e["renew"]) == (holder, final["renew"]))


def last_write_took(candidate: CandidateProcess, until: float) -> float:
    """How long ``candidate``'s last write of the lock before ``until`` took."""
    began = candidate.last("writing", before=until)
    ended = candidate.last("wrote", before=until)
    assert began is not None and ended is not None and ended["t"] >= began["t"]
    return float(ended["t"] - began["t"])


@pytest.mark.slow
@pytest.mark.xdist_group("lease-processes")
def test_a_killed_leader_is_replaced(candidates: Candidates) -> None:
    alive = [candidates.start() for _ in range(3)]
    takeovers = []
    bounds = []
    lost_before_kill = 0
    for _ in range(KILLS):
        leader = candidates.current(alive)
        killed_at = leader.kill()  # returns once all its output has been read
        alive.remove(leader)
        successor, started = candidates.leader(alive, after=killed_at)
        seen = last_renewal_seen(successor, leader.identity, started)
        if leader.last("stopped") is not None or seen is None:
            # it had lost the lease on its own just before (a slow server), or another
            # had taken it from it before the kill and lost it too (it had not noticed
            # yet): the successor did not wait for our kill, so this round measures nothing
            lost_before_kill += 1
        else:
            takeovers.append(started - killed_at)
            # the successor saw the last renewal up to one poll after it was written (or
            # when it read it, if it landed later), notices the expiry at the first poll
            # after lease_duration from then; 1 s for the requests themselves, or the
            # taking write's own time if longer (a loaded server's)
            gap = polling_gap(successor, killed_at - TIMING.lease_duration, started)
            bounds.append(TIMING.lease_duration + gap + max(gap, seen - killed_at)
                          + max(1.0, last_write_took(successor, started) + 0.5))
        alive.append(candidates.start())
    print(f"takeover after SIGKILL over {len(takeovers)} kills: median "
          f"{statistics.median(takeovers):.2f} s, max {max(takeovers):.2f} s "
          f"(bounds {min(bounds):.2f}..{max(bounds):.2f} s; {lost_before_kill} leaders lost "
          "the lease on their own first)")
    assert len(takeovers) >= KILLS - 2
    # nobody jumps a valid lease: at best the kill came right before a renewal
    assert min(takeovers) >= TIMING.lease_duration - 1.2 * TIMING.retry_period - 0.05
    assert all(t <= bound for t, bound in zip(takeovers, bounds, strict=True)), \
        (takeovers, bounds)


def test_a_released_lease_is_taken_at_once(candidates: Candidates) -> None:
    first = candidates.start(release=True)
    candidates.leader([first])
    others = [candidates.start(), candidates.start()]
    for other in others:
        assert other.first("leader", timeout=10) is not None  # they see the leader
    stopped_at = first.terminate()
    successor, started = candidates.leader(others, after=stopped_at)
    # at the successor's next poll after the release (1 s for the requests)
    assert started - stopped_at <= polling_gap(successor, stopped_at, started) + 1.0


def test_a_leader_cut_off_stops_before_anyone_else_starts(
        candidates: Candidates, backend: Backend) -> None:
    url = urlsplit(backend.kubeconfig()["clusters"][0]["cluster"]["server"])
    with TcpProxy(url.hostname or "127.0.0.1", url.port or 443) as proxy:
        proxied = write_kubeconfig(backend.kubeconfig(), candidates.tmp_path / "proxied",
                                   f"{url.scheme}://127.0.0.1:{proxy.port}")
        cut = candidates.start(kubeconfig=proxied)
        candidates.leader([cut])
        others = [candidates.start(), candidates.start()]
        for other in others:
            assert other.first("leader", timeout=10) is not None
        proxy.blackhole()
        holed_at = time.monotonic()
        stopped = cut.first("stopped", after=holed_at, timeout=10)
        assert stopped is not None, "the cut-off leader never stopped acting"
        last_write = cut.last("wrote", before=stopped["t"])
        assert last_write is not None
        assert stopped["t"] <= last_write["t"] + TIMING.renew_deadline + 0.2
        _, started = candidates.leader(others, after=holed_at)
        assert started > stopped["t"], "leading windows overlap"


GO_SOURCE = Path(__file__).resolve().parents[1] / "go" / "leader"


def go_candidate() -> list[str]:
    """client-go's elector as a program (tests/go/leader), built by ``make envtest``
    (:mod:`bench.go_programs`); skipped until then (failed under CI=true)."""
    return [str(go_program("leader"))]


def lease_record(backend: Backend, ns: str, name: str) -> LeaderElectionRecord:
    api = backend.api_client()
    try:
        status, lease = request_json(
            api, "GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}")
    finally:
        api.close()
    assert status == 200
    return LeaderElectionRecord.from_lease_spec(lease["spec"])


@pytest.mark.slow
@pytest.mark.xdist_group("lease-processes")
# the first run on a machine builds the Go candidate (go_candidate's own limit is 1200 s):
# on a fresh, loaded machine that took longer than the suite's 120 s per test
@pytest.mark.timeout(1320)
def test_go_and_python_candidates_hand_over(candidates: Candidates, backend: Backend,
                                            ns: str) -> None:
    """client-go's elector and ours share a Lease: each reads the other's record, and each
    takes over at once when the other releases it."""
    go_first = candidates.start(release=True, program=go_candidate())
    candidates.leader([go_first])
    python = candidates.start(release=True)
    seen = python.first("leader", timeout=10)
    assert seen is not None and seen["leader"] == go_first.identity
    released_at = go_first.terminate()
    _, started = candidates.leader([python], after=released_at)
    assert started - released_at <= 1.2 * TIMING.retry_period + 1.0
    record = lease_record(backend, ns, candidates.lease)
    assert record.holder_identity == python.identity and record.leader_transitions >= 1
    go_second = candidates.start(release=True, program=go_candidate())
    seen = go_second.first("leader", timeout=10)
    assert seen is not None and seen["leader"] == python.identity
    released_at = python.terminate()
    _, started = candidates.leader([go_second], after=released_at)
    assert started - released_at <= 1.2 * TIMING.retry_period + 1.0
    assert lease_record(backend, ns, candidates.lease).leader_transitions > \
        record.leader_transitions


PAUSE_TIMING = Timing(lease_duration=1.5, renew_deadline=1.0, retry_period=0.25)
PAUSE_ROUNDS = 30
# The slowest path by which the others take the lease of a leader frozen just after its
# renewal reached the server at R, behind the proxy's 0.2 s each way. A candidate's
# acquire cycle is at most one wait (retry plus jitter, 0.55 s) and a round trip (0.4 s):
# its first read after R reaches it by R + 0.95 + 0.2 and starts the record's whole-second
# lease; two more cycles give a read that finds it expired; its write lands 0.2 s later.
# The frozen leader's freeze began at most 0.2 s before R (a renewal in flight) and its
# own next renewal lands at least 0.2 s after it resumes, so a longer freeze is lost.
_CYCLE = PAUSE_TIMING.retry_period * (1 + JITTER_FACTOR) + 0.4
TAKEOVER_BOUND = _CYCLE + 0.2 + 2 * _CYCLE + 0.2


def belief_intervals(candidate: CandidateProcess, end: float) -> list[tuple[float, float]]:
    """The spans over which ``candidate``'s 10 ms samples said it held the lease: from the
    first true sample to the last true one (an interval still open ends at ``end``)."""
    spans: list[tuple[float, float]] = []
    start: float | None = None
    for event in list(candidate.events):
        if event["e"] != "believe":
            continue
        if event["v"]:
            start = event["t"]
        elif start is not None:
            spans.append((start, event["last"]))
            start = None
    if start is not None:
        spans.append((start, end))
    return spans


@pytest.mark.slow
@pytest.mark.xdist_group("lease-processes")
@pytest.mark.timeout(300)  # 30 rounds take about 80 s; a loaded machine's server start more
def test_no_two_candidates_believe_they_lead_across_pauses(
        candidates: Candidates, backend: Backend) -> None:
    """Issue 59: three candidates behind 0.2 s of latency; in each of 30 rounds one of
    them (the leader four times in five) is frozen with SIGSTOP at a random point of its
    renew cycle, then resumed (lease 1.5 s, renew deadline 1 s, retry 0.25 s). A third of
    the freezes are shorter than the renew deadline (0.05 to 1 s); a third last one to two
    leases, where the others may or may not take the lease before the frozen one renews
    again; a third last 0.5 to 1.5 s longer than the slowest path by which the others
    can read the lease expired and take it (:data:`TAKEOVER_BOUND`, 3.25 s), so a frozen
    leader is replaced. Each candidate samples ``holds_lease()`` every 10 ms; no two
    candidates' believing spans overlap, and the lease changed hands along the way."""
    url = urlsplit(backend.kubeconfig()["clusters"][0]["cluster"]["server"])
    rng = random.Random(59)
    with TcpProxy(url.hostname or "127.0.0.1", url.port or 443, latency=0.2) as proxy:
        slow = write_kubeconfig(backend.kubeconfig(), candidates.tmp_path / "slow",
                                f"{url.scheme}://127.0.0.1:{proxy.port}")
        group = [candidates.start(kubeconfig=slow, flags=("--sample", "--rejoin"),
                                  timing=PAUSE_TIMING) for _ in range(3)]
        candidates.leader(group)
        for _ in range(PAUSE_ROUNDS):
            believing = [c for c in group if (b := c.last("believe")) and b["v"]]
            victim = believing[0] if believing and rng.random() < 0.8 else rng.choice(group)
            # a random point of the renew cycle, then a freeze of one of the three kinds:
            # the scenario itself (the samples, not these sleeps, are what is checked)
            time.sleep(rng.uniform(0.0, 2 * PAUSE_TIMING.retry_period))
            lease = PAUSE_TIMING.lease_duration
            low, high = rng.choice(((0.05, 1.0), (lease, 2 * lease),
                                    (TAKEOVER_BOUND + 0.5, TAKEOVER_BOUND + 1.5)))
            pause = rng.uniform(low, high)
            os.kill(victim.proc.pid, signal.SIGSTOP)
            try:
                time.sleep(pause)
            finally:
                os.kill(victim.proc.pid, signal.SIGCONT)
        time.sleep(0.1)  # the last resumed candidate's first samples
        end = time.monotonic()
    spans = {c.identity: belief_intervals(c, end) for c in group}
    for (a, a_spans), (b, b_spans) in itertools.combinations(spans.items(), 2):
        for a_start, a_end in a_spans:
            for b_start, b_end in b_spans:
                assert a_end < b_start or b_end < a_start, (
                    f"{a} believed it led over {a_start:.3f}-{a_end:.3f} and {b} over "
                    f"{b_start:.3f}-{b_end:.3f}")
    handovers = sorted((start, who) for who, s in spans.items() for start, _ in s)
    changes = sum(1 for (_, x), (_, y) in itertools.pairwise(handovers) if x != y)
    assert changes >= 5, f"the lease changed hands only {changes} times: {spans}"
