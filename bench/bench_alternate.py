"""Before and after, alternated: the same client_cache contenders from two checkouts, run
in turn on the same servers, so that a change to a hot path is measured against the
machine's drift (which moves single runs by a third here) rather than against another
day's run.

    python -m bench.bench_alternate BEFORE_DIR AFTER_DIR [--rounds 4] [--pods 50000]

Each directory is a checkout with its native parts built in place (``python setup.py
build_ext --inplace``). Each contender runs from its own directory (its ``bench`` and its
``client_cache``); the servers are this checkout's. The scenarios are issue 58's: S1
against the embedded server (``--pods`` pods, dicts, LIST and watch-list) and S2 from the
replay source (dicts, one handler and ``--handlers`` handlers). The order of the two
trees alternates from round to round. Prints each run and, per scenario, the medians, the
min-max spread of each side and the after/before ratio of the medians; ``--out`` also
writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from kubernetes.client import CoreV1Api

from bench.bench_compare import Target, Variant, command, load, run_contender
from bench.replay import ReplayFiles, ReplayServer
from client_cache.testing.apiserver import EmbeddedApiServerProcess

S1 = [Variant("cc-dict", "list"), Variant("cc-dict", "watch-list")]
S2 = Variant("cc-dict", "list")


def s1(tree: Path, server_url: str, pods: int) -> dict[str, float]:
    """Seconds to sync ``pods`` pods, per sync path, from ``tree``."""
    out = {}
    for v in S1:
        results = run_contender(command(v, None, Target(server_url), "s1", pods, "--events",
                                        "0", "--latency-events", "0"), cwd=tree)
        out[f"S1 {v.sync} (s)"] = results["sync"]["seconds"]
    return out


def s2(tree: Path, files: ReplayFiles, handlers: int) -> float:
    """Events a second to the handlers from the replay source, from ``tree``."""
    with ReplayServer(files=files) as server:
        results = run_contender(
            command(S2, None, Target(server.url), files.namespace, files.pods, "--events",
                    str(files.events), "--handlers", str(handlers)),
            lambda phase, s=server: s.start_events(), cwd=tree)
    return float(results["throughput"]["events_per_second"])


def run_s1(args: argparse.Namespace, trees: dict[str, Path],
           record: Any) -> None:
    """S1's rounds against one embedded server loaded with ``args.pods`` pods."""
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        load(server, CoreV1Api(server.api_client()), "s1", args.pods)
        CoreV1Api(server.api_client()).list_namespaced_pod("s1", resource_version="0",
                                                           _preload_content=False)
        for round_ in range(args.rounds):
            order = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
            print(f"S1 round {round_ + 1}", flush=True)
            for side in order:
                record(side, s1(trees[side], server.url, args.pods))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--pods", type=int, default=50_000, help="S1's pods (0: no S1)")
    parser.add_argument("--replay-pods", type=int, default=10_000)
    parser.add_argument("--replay-events", type=int, default=100_000)
    parser.add_argument("--handlers", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    runs: dict[str, dict[str, list[float]]] = {"before": {}, "after": {}}

    def record(side: str, figures: dict[str, float]) -> None:
        for name, value in figures.items():
            runs[side].setdefault(name, []).append(value)
        print(f"  {side}: " + ", ".join(f"{k} {v:,.2f}" for k, v in figures.items()),
              flush=True)

    started = time.monotonic()
    if args.pods:
        run_s1(args, trees, record)
    files = ReplayFiles(args.replay_pods, args.replay_events)
    try:
        for round_ in range(args.rounds):
            order = ["before", "after"] if round_ % 2 == 0 else ["after", "before"]
            print(f"S2 round {round_ + 1}", flush=True)
            for side in order:
                record(side, {
                    "S2 one handler (events/s)": s2(trees[side], files, 1),
                    f"S2 {args.handlers} handlers (events/s)": s2(trees[side], files,
                                                                  args.handlers)})
    finally:
        files.close()
    summary: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()},
                               "minutes": (time.monotonic() - started) / 60, "scenarios": {}}
    print(f"\n{'scenario':34} {'before (median, min-max)':>28} {'after':>28} {'ratio':>6}")
    for name in runs["before"]:
        b, a = runs["before"][name], runs["after"][name]
        ratio = statistics.median(a) / statistics.median(b)
        summary["scenarios"][name] = {"before": b, "after": a, "ratio": ratio}
        print(f"{name:34} {fmt(b):>28} {fmt(a):>28} {ratio:6.2f}")
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return 0


def fmt(values: list[float]) -> str:
    return f"{statistics.median(values):,.2f} ({min(values):,.2f}-{max(values):,.2f})"


if __name__ == "__main__":
    raise SystemExit(main())
