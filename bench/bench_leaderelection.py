"""Leader election: how long after a SIGKILL of the leader a new one acts, over ``--kills``
kills, on the embedded server and on the real kube-apiserver (when built).

Three candidates (``client_cache.testing.leader``, each a process of its own) share one
Lease with lease_duration 3 s, renew_deadline 2 s, retry_period 0.25 s. Each round kills
the current leader and measures, on the machine's monotonic clock, the time until another
candidate's ``on_started_leading`` runs; the killed one is replaced by a fresh candidate.
The expected worst case is lease_duration + 2 x (1 + 1.2) x retry_period: a candidate
waits a retry_period plus up to 1.2 times it between attempts (Go's jitter), so it notices
the last renewal up to one such wait late, and the expiry up to one more.

Writes ``bench/results/leaderelection.json`` and ``.md``.

    python -m bench.bench_leaderelection [--kills 20]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.contenders import RESULTS, save_results
from client_cache.leaderelection import JITTER_FACTOR
from client_cache.testing.leader import CandidateProcess, Timing

TIMING = Timing(lease_duration=3.0, renew_deadline=2.0, retry_period=0.25)


def embedded_kubeconfig(url: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "s", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "c", "context": {"cluster": "s", "user": "u"}}],
            "current-context": "c"}


@contextlib.contextmanager
def servers() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    from client_cache.testing.apiserver import EmbeddedApiServerProcess
    from client_cache.testing.envtest import ControlPlane, find_binaries

    with contextlib.ExitStack() as stack:
        embedded = stack.enter_context(EmbeddedApiServerProcess(bookmark_interval=60))
        found = [("embedded", embedded_kubeconfig(embedded.url))]
        binaries = find_binaries()
        if binaries is not None:
            plane = stack.enter_context(ControlPlane(binaries))
            found.append(("kube-apiserver", plane.kubeconfig()))
        else:
            print("real server skipped: run `make envtest` first", file=sys.stderr)
        yield found


def leading_now(candidates: list[CandidateProcess], timeout: float = 60) -> CandidateProcess:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        leaders = [c for c in candidates if c.leading() and c.proc.poll() is None]
        if len(leaders) == 1:
            return leaders[0]
        time.sleep(0.02)
    raise TimeoutError("no leader")


def first_leading(candidates: list[CandidateProcess], after: float,
                  timeout: float = 60) -> float:
    """When the first of ``candidates`` started leading after ``after``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = [e["t"] for c in candidates
                   if (e := c.first("leading", after, timeout=0)) is not None]
        if started:
            return min(started)
        time.sleep(0.02)
    raise TimeoutError("no new leader")


def takeovers(kubeconfig: str, kills: int) -> list[float]:
    ids = itertools.count()
    alive: list[CandidateProcess] = []
    every: list[CandidateProcess] = []

    def start() -> None:
        candidate = CandidateProcess(kubeconfig, f"c{next(ids)}", "bench", "default", TIMING)
        alive.append(candidate)
        every.append(candidate)

    times: list[float] = []
    try:
        for _ in range(3):
            start()
        while len(times) < kills:
            leader = leading_now(alive)
            killed_at = leader.kill()
            alive.remove(leader)
            started = first_leading(alive, killed_at)
            if leader.last("stopped") is None:  # it was leading when killed
                times.append(started - killed_at)
            start()
    finally:
        for candidate in every:
            candidate.close()
    return times


def bound(timing: dict[str, float]) -> float:
    """The expected worst takeover time for these timings (see the module documentation)."""
    return timing["lease_duration"] + 2 * (1 + JITTER_FACTOR) * timing["retry_period"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--render", action="store_true",
                        help="only redraw leaderelection.md from leaderelection.json")
    args = parser.parse_args()
    if args.render:
        saved = json.loads((RESULTS / "leaderelection.json").read_text(encoding="utf-8"))
        saved["bound_s"] = bound(saved["timing"])
        save_results("leaderelection", saved, render(saved))
        return 0
    report: dict[str, Any] = {"timing": vars(TIMING), "kills": args.kills,
                              "bound_s": bound(vars(TIMING))}
    with servers() as found, tempfile.TemporaryDirectory() as tmp:
        for name, config in found:
            path = Path(tmp) / f"{name}.kubeconfig"
            path.write_text(json.dumps(config), encoding="utf-8")
            times = sorted(takeovers(str(path), args.kills))
            report[name] = {"takeovers_s": times, "min": times[0],
                            "median": statistics.median(times),
                            "p90": times[int(0.9 * (len(times) - 1))], "max": times[-1]}
    save_results("leaderelection", report, render(report))
    return 0


def render(report: dict[str, Any]) -> str:
    """The Markdown table of a report (``--render`` redraws it from the saved JSON)."""
    rows = "".join(f"| {name} | {r['min']:.2f} | {r['median']:.2f} | {r['p90']:.2f} | "
                   f"{r['max']:.2f} |\n"
                   for name, r in report.items() if isinstance(r, dict) and "max" in r)
    timing = report["timing"]
    return (
        "# Leader election: takeover after SIGKILL of the leader\n\n"
        f"Three candidates in processes of their own on one Lease (lease_duration "
        f"{timing['lease_duration']:g} s, renew_deadline {timing['renew_deadline']:g} s, "
        f"retry_period {timing['retry_period']:g} s); {report['kills']} kills per server; "
        "time from the kill to another candidate's on_started_leading (`make bench`, "
        "bench/bench_leaderelection.py). Expected worst case lease_duration + "
        f"2 x (1 + {JITTER_FACTOR:g}) x retry_period = {report['bound_s']:.2f} s.\n\n"
        "| server | min s | median s | p90 s | max s |\n|---|---|---|---|---|\n" + rows)

if __name__ == "__main__":
    sys.exit(main())
