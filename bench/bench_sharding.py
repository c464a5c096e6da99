"""A sharded controller on this machine: one member process against two, on a CPU-bound
reconcile, and the memory of a member in hash, label and server mode.

Method. 2,000 ConfigMaps (2 KiB of data each) in a fresh namespace. ``N`` member
processes of ``client_cache.testing.shard_worker`` start, list and sync their cache and
wait; then all are told to go at once and join the ring. Each reconcile runs ``--work``
(80,000) iterations of a pure-Python loop: a fixed amount of work, counted, never
calibrated by a clock (about
5 ms here on a quiet machine; a member calibrating "5 ms" at start did less work when
started on a busy machine, and a two-member run once reported 10 s of reconcile CPU in
4.17 s on 2 cores). The figure is the reconciles per second from the first reconcile's
start to the end of the last one of the first pass (every object reconciled once); runs
alternate 1, 2, 1, 2... (``--rounds`` of each) and the table gives the medians.

CPU accounting. Over each run's window the CPU seconds of every process are read from
``/proc`` (``utime + stime``): the members, the API server (the embedded server's
process; kube-apiserver and etcd), and this harness. A run whose processes did more CPU
than the machine has in that window (cores x seconds, 5 % for the sampling) fails: its
figure would not be a measurement. The table gives each part's share of the machine, so
what two members cannot gain is seen to go to the server and the harness.

Where the rest goes. Each two-member run reports how far apart the members began, and
for how much of the window the member with the larger share worked alone after the
other finished (the ring's imbalance), and for what share of its own window (its first
reconcile to its last) each member was on a CPU. A control alternated with the runs runs the busy
loop alone, the work of a pass split over one process and then two at once: what two
processes can gain on this machine at all.

Memory: 2,000 ConfigMaps of ``--memory-kib`` (16 KiB) in another namespace, so the cache
outweighs the interpreter; the resident set of each of two members once every object was
reconciled, in hash mode (every member caches all 2,000 objects), in label mode (each
caches its own; the member running the sharder also holds the metadata of every object)
and in server mode (each caches its uid range, filtered by the server: both servers run
with ``ShardedListAndWatch`` on).
The server runs beside the members on the same two cores.

Writes ``bench/results/sharding.json`` and ``.md``.

    python -m bench.bench_sharding [--rounds 5] [--objects 2000] [--work 80000] [--real]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from kubernetes.client import CoreV1Api

from bench.contenders import save_results
from client_cache.testing.leader import Timing
from client_cache.testing.shard_worker import ShardWorkerProcess, busy

TIMING = Timing(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)
_namespaces = itertools.count(1)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """The CPU seconds (user + system, every thread) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime


def own_cpu_seconds() -> float:
    """This harness's CPU seconds so far (every thread)."""
    times = os.times()
    return times.user + times.system


@contextlib.contextmanager
def servers(real: bool) -> Iterator[list[tuple[str, Callable[[], Any], dict[str, Any],
                                              Callable[[], list[int]]]]]:
    """``(name, api client factory, kubeconfig, server pids)`` of each server run."""
    from client_cache.testing.apiserver import EmbeddedApiServerProcess
    from client_cache.testing.envtest import ControlPlane, find_binaries

    with contextlib.ExitStack() as stack:
        # shard selectors on (alpha in v1.36) on both servers, for the server mode's row
        embedded = stack.enter_context(EmbeddedApiServerProcess(
            bookmark_interval=60, feature_gates={"ShardedListAndWatch": True}))
        config = {"apiVersion": "v1", "kind": "Config",
                  "clusters": [{"name": "e", "cluster": {"server": embedded.url}}],
                  "users": [{"name": "u", "user": {}}],
                  "contexts": [{"name": "e", "context": {"cluster": "e", "user": "u"}}],
                  "current-context": "e"}
        found: list[tuple[str, Callable[[], Any], dict[str, Any], Callable[[], list[int]]]] = [
            ("embedded", embedded.api_client, config,
             lambda: [embedded.pid] if embedded.pid else [])]
        binaries = find_binaries() if real else None
        if binaries is not None:
            plane = stack.enter_context(ControlPlane(
                binaries, extra_args=("--feature-gates=ShardedListAndWatch=true",)))
            found.append(("kube-apiserver", plane.api_client, plane.kubeconfig(), plane.pids))
        elif real:
            print("real server skipped: run `make envtest` first", file=sys.stderr)
        yield found


def busy_loops(processes: int, iterations: int) -> float:
    """Wall seconds for ``processes`` processes each running ``iterations`` of the
    reconcile's busy loop at once (nothing else: the machine's own ceiling)."""
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(processes + 1)  # every worker started and imported
    with context.Pool(processes, initializer=ready.wait) as pool:
        ready.wait()
        started = time.monotonic()
        pool.map(busy, [iterations] * processes, chunksize=1)
        return time.monotonic() - started


def describe_machine() -> str:
    """Cores and Python, for the report."""
    return f"{os.cpu_count()} cores, Python {platform.python_version()}"


def populate(api: Any, objects: int, kib: int) -> str:
    ns = f"shard-bench-{next(_namespaces)}"
    core = CoreV1Api(api)
    core.create_namespace({"metadata": {"name": ns}})
    data = {f"k{i}": f"{i}" * (kib * 1024 // 10) for i in range(10)}
    for i in range(objects):
        core.create_namespaced_config_map(ns, {"metadata": {"name": f"obj-{i:05d}"},
                                               "data": data})
    return ns


def one_run(kubeconfig: str, ns: str, members: int, mode: str, objects: int,
            work: int, run: int, server_pids: list[int]) -> dict[str, Any]:
    flags = ("--work", str(work), "--mode", mode, "--wait-go")
    procs = [ShardWorkerProcess(kubeconfig, f"b{run}-{i}", ns, TIMING, ring=f"bench{run}",
                                flags=flags) for i in range(members)]
    try:
        for proc in procs:  # each with its cache synced (hash mode), before its ring
            assert proc.wait_for(lambda ev: any(e["e"] == "waiting" for e in ev), 60), proc
        before = ([cpu_seconds(p.proc.pid) for p in procs],
                  [cpu_seconds(pid) for pid in server_pids], own_cpu_seconds())
        started = time.monotonic()
        for proc in procs:
            proc.go()

        def keys() -> set[str]:
            return {e["k"] for p in procs for e in p.snapshot() if e["e"] == "f"}

        deadline = time.monotonic() + 600
        while len(keys()) < objects:  # the members' lines arrive on reader threads
            assert time.monotonic() < deadline, f"{len(keys())} of {objects} reconciled"
            time.sleep(0.2)
        wall = time.monotonic() - started
        member_cpu = sum(cpu_seconds(p.proc.pid) for p in procs) - sum(before[0])
        server_cpu = sum(cpu_seconds(pid) for pid in server_pids) - sum(before[1])
        harness_cpu = own_cpu_seconds() - before[2]
        cores = os.cpu_count() or 1
        total = member_cpu + server_cpu + harness_cpu
        if total > cores * wall * 1.05:
            raise AssertionError(f"{total:.2f} CPU seconds in {wall:.2f} s on {cores} cores: "
                                 "more than the machine has; the run measured nothing")
        split = sorted(len({e["k"] for e in p.snapshot() if e["e"] == "f"}) for p in procs)
        events = [e for p in procs for e in p.snapshot() if e["e"] in ("s", "f")]
        first = min(e["t"] for e in events if e["e"] == "s")
        seen: set[str] = set()
        last = first
        for event in sorted(events, key=lambda e: e["t"]):
            if event["e"] == "f" and event["k"] not in seen:
                seen.add(event["k"])
                last = event["t"]
        done = sum(1 for e in events if e["e"] == "f" and e["t"] <= last)
        # each member's own window: its first start and its last finish of the pass
        spans = [(min(e["t"] for e in p.snapshot() if e["e"] == "s"),
                  max(e["t"] for e in p.snapshot() if e["e"] == "f" and e["t"] <= last))
                 for p in procs]
        return {"members": members, "mode": mode, "seconds": last - first,
                "reconciles": done, "per_second": done / (last - first),
                "wall": wall, "split": split,
                "start_spread": max(a for a, _ in spans) - min(a for a, _ in spans),
                "alone": max(b for _, b in spans) - min(b for _, b in spans),
                "active": sum(b - a for a, b in spans),  # member-seconds with work to do
                "cpu": {"members": member_cpu, "server": server_cpu,
                        "harness": harness_cpu},
                "rss_mb": [round(p.rss() / 2**20, 1) for p in procs]}
    finally:
        for proc in procs:
            proc.close()


def share(run: dict[str, Any], part: str) -> float:
    """``part``'s CPU over the run as a share of the machine (cores x wall)."""
    return float(run["cpu"][part]) / ((os.cpu_count() or 1) * float(run["wall"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--work", type=int, default=80_000,
                        help="busy-loop iterations per reconcile (about 5 ms here)")
    parser.add_argument("--memory-kib", type=int, default=16,
                        help="data per object of the memory comparison")
    parser.add_argument("--real", action="store_true",
                        help="also on the kube-apiserver of `make envtest`")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"machine": describe_machine(), "objects": args.objects,
                              "work": args.work, "servers": {}}
    lines = ["# Sharding: one member process against two", "",
             f"{args.objects} ConfigMaps, a reconcile of {args.work:,} iterations of a "
             "pure-Python loop (a fixed amount of work), medians of "
             f"{args.rounds} alternated runs; method in `bench/bench_sharding.py`.",
             f"Machine: {describe_machine()}.", ""]
    run = itertools.count()
    with servers(args.real) as found, TemporaryDirectory() as tmp:
        for name, api_client, config, pids in found:
            kubeconfig = str(Path(tmp, f"{name}.json"))
            Path(kubeconfig).write_text(json.dumps(config), encoding="utf-8")
            ns = populate(api_client(), args.objects, 2)
            runs: dict[str, list[dict[str, Any]]] = {"1": [], "2": []}
            loops: dict[str, list[float]] = {"1": [], "2": []}
            for _ in range(args.rounds):
                for members in (1, 2):
                    runs[str(members)].append(one_run(kubeconfig, ns, members, "hash",
                                                      args.objects, args.work, next(run),
                                                      pids()))
                for processes in (1, 2):  # the control: the busy loop alone, as much
                    loops[str(processes)].append(  # work as a member's pass
                        busy_loops(processes, args.work * args.objects // 2))
            big = populate(api_client(), args.objects, args.memory_kib)
            memory = {mode: one_run(kubeconfig, big, 2, mode, args.objects, 0, next(run),
                                    pids())
                      for mode in ("hash", "labels", "server")}
            report["servers"][name] = {"runs": runs, "memory": memory, "loops": loops}
            rate = {k: statistics.median(r["per_second"] for r in v) for k, v in runs.items()}
            lines += [f"## {name}", "",
                      "| members | reconciles/s (median) | runs | CPU of the machine: "
                      "members, server, harness (medians) |", "|---|---|---|---|"]
            for k in ("1", "2"):
                parts = ", ".join(
                    f"{statistics.median(share(r, part) for r in runs[k]):.0%}"
                    for part in ("members", "server", "harness"))
                lines.append(f"| {k} | {rate[k]:.0f} | "
                             + ", ".join(f"{r['per_second']:.0f}" for r in runs[k])
                             + f" | {parts} |")
            per_reconcile = statistics.median(
                float(r["cpu"]["members"]) / r["reconciles"] for r in runs["1"]) * 1000
            larger = statistics.median(max(r["split"]) / sum(r["split"]) for r in runs["2"])
            idle = statistics.median(1 - share(r, "members") - share(r, "server")
                                     - share(r, "harness") for r in runs["2"])
            two = runs["2"]
            # paired: each round's runs and control were alternated, so a round's ratios
            # share the machine's state (its speed drifts by 15 % between minutes)
            paired = statistics.median(b["per_second"] / a["per_second"]
                                       for a, b in zip(runs["1"], two, strict=True))
            ceiling = statistics.median(2 * a / b for a, b in zip(loops["1"], loops["2"],
                                                                  strict=True))
            spread = statistics.median(r["start_spread"] for r in two)
            alone = statistics.median(r["alone"] / r["seconds"] for r in two)
            busy = statistics.median(float(r["cpu"]["members"]) / r["active"] for r in two)
            costs = sorted(float(r["cpu"]["members"]) / r["reconciles"] * 1000
                           for r in runs["1"])
            lines += ["", f"Two members against one: **{rate['2'] / rate['1']:.2f}x** "
                      f"(paired by round: {paired:.2f}x). "
                      f"One member spends {per_reconcile:.1f} ms of CPU a reconcile (its "
                      "work, the informer and the runtime). With two: "
                      f"{statistics.median(share(r, 'server') for r in two):.0%} of the "
                      "machine goes to the server and "
                      f"{statistics.median(share(r, 'harness') for r in two):.0%} to the "
                      f"harness, {idle:.0%} stays idle. The ring gives the larger member "
                      f"{larger:.0%} of the keys (at most {1 / larger:.2f}x); the members "
                      f"begin {spread * 1000:.0f} ms apart, and the larger one works "
                      f"alone for the last {alone:.0%} of the window. The control, the "
                      "busy loop alone in two processes against one (the same work, "
                      f"paired by round): **{ceiling:.2f}x**, what this machine gives two "
                      "processes at all. The machine and the ring together allow "
                      f"{ceiling / (2 * larger):.2f}x. Each of two members is on a CPU "
                      f"for {busy:.0%} of its own window (from its first reconcile to its "
                      "last); one member's CPU a reconcile, the same work in every run, "
                      f"ranges from {costs[0]:.1f} to {costs[-1]:.1f} ms over the runs: "
                      "the machine's speed, which moves a median of a few runs by as "
                      "much.", "",
                      f"Memory, {args.objects} ConfigMaps of {args.memory_kib} KiB:", "",
                      "| mode, 2 members | resident memory per member (MiB) |", "|---|---|"]
            for mode, result in memory.items():
                lines.append(f"| {mode} | {', '.join(map(str, result['rss_mb']))} |")
            lines.append("")
    save_results("sharding", report, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
