"""Where the threads run: replayed watch throughput with the process free or on one core.

Under the GIL a Python process runs one thread at a time, but the kernel still moves its
threads between cores, and each hand-off of the lock can wake a thread on the other core,
whose caches do not hold what the last thread touched. This measures what that costs
(issue 20): the ``cc-dict`` contender of :mod:`bench.bench_compare` (an informer of dicts,
LIST sync, one counting handler) takes ``--events`` changes from the replay source
(``bench/replay``, Go, at socket speed) after syncing ``--pods`` pods, in four layouts:

- ``free``: no affinity set, as a process runs by default;
- ``server-pinned``: the replay server on CPU 0, the contender free on both;
- ``one-core``: the contender on CPU 1 (``taskset -c 1``), the server on CPU 0;
- ``one-core-swapped``: the contender on CPU 0, the server on CPU 1.

The layouts alternate, ``--repeats`` times, each run in its own processes after the load
has settled (:func:`bench.bench_compare.settle`); each run's result (with the 1-minute
load at its start) goes to ``bench/results/pinning-<date>.json``, and the medians (min-max,
marked as :mod:`bench.compare_report` marks a loaded run) to ``pinning-<date>.md``. Needs a
machine with at least two CPUs, Linux and ``taskset``. Run it with
``python -m bench.bench_pinning``; it is not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from bench.bench_compare import LOADED, RESULTS, Target, V, command, run_contender
from bench.compare_report import MARK, cell, med, ratio
from bench.replay import ReplayFiles, ReplayServer

LAYOUTS = ("free", "server-pinned", "one-core", "one-core-swapped")
# layout -> (the contender's CPU or None for free, the server's CPU or None for free)
PLACES: dict[str, tuple[int | None, int | None]] = {
    "free": (None, None), "server-pinned": (None, 0),
    "one-core": (1, 0), "one-core-swapped": (0, 1)}


def one_run(layout: str, files: ReplayFiles) -> dict[str, Any]:
    """One contender run on a fresh server in ``layout``; its replay S2 result."""
    contender_cpu, server_cpu = PLACES[layout]
    with ReplayServer(files=files) as server:
        if server_cpu is not None:
            server.pin({server_cpu})
        cmd = command(V("cc-dict"), None, Target(server.url), files.namespace, files.pods,
                      "--events", str(files.events), "--handlers", "1")
        if contender_cpu is not None:
            cmd = ["taskset", "-c", str(contender_cpu), *cmd]
        results = run_contender(cmd, lambda phase, s=server: s.start_events())
    return results["throughput"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2 or shutil.which("taskset") is None:
        raise SystemExit("needs two CPUs and taskset")
    files = ReplayFiles(args.pods, args.events)
    # per layout, in compare_report's shape: scenario -> each run's result
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        layout: {"throughput": []} for layout in LAYOUTS}
    print(f"replay: {files.pods:,} pods, {files.events:,} changes of {files.pod_bytes:,} B",
          flush=True)
    try:
        for repeat in range(args.repeats):
            for layout in LAYOUTS:
                began = time.monotonic()
                result = one_run(layout, files)
                runs[layout]["throughput"].append(result)
                print(f"  run {repeat + 1} {layout:<17} {time.monotonic() - began:4.0f} s "
                      f"{result['events_per_second']:9,.0f} events/s "
                      f"(load {result['load']:.1f})", flush=True)
    finally:
        files.close()
    day = datetime.date.today().isoformat()
    report = {"date": day, "pods": files.pods, "events": files.events,
              "pod_bytes": files.pod_bytes, "repeats": args.repeats, "layouts": runs}
    out = Path(args.out)
    (out / f"pinning-{day}.json").write_text(json.dumps(report, indent=2) + "\n")
    free = med(runs["free"], "throughput", "events_per_second")
    lines = [f"# Replayed watch throughput by where the threads run, {day}", "",
             f"`python -m bench.bench_pinning`: {files.pods:,} pods, then {files.events:,} "
             f"changes of {files.pod_bytes:,} B from the replay source to one counting "
             f"handler (client_cache dicts, LIST sync); the layouts alternate, "
             f"{args.repeats} runs each; medians (min-max); {MARK}: a run began above a "
             f"1-minute load of {LOADED}.", "",
             "| Layout | events/s | / free |", "|---|---|---|"]
    for layout in LAYOUTS:
        entry = runs[layout]
        rate = cell(entry, "throughput", "events_per_second", ",.0f", LOADED)
        lines.append(f"| {layout} | {rate} | "
                     f"{ratio(med(entry, 'throughput', 'events_per_second'), free)} |")
    (out / f"pinning-{day}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
