"""The cyclic garbage collector's share of watch throughput (run with ``make bench-micro``).

One informer caches ``--pods`` pods from the replay source (``bench/replay``, Go, at
socket speed), then takes ``--events`` MODIFIED events to one counting handler. Each
variant runs in its own process, the variants alternate, ``--repeats`` times:

- ``spaced``: the library's default (decoded objects untracked,
  :func:`client_cache.codec._sharing.untrack`; :mod:`client_cache.util.gc_policy` spaces out full
  passes);
- ``unspaced``: ``CLIENT_CACHE_GC_SPACING=0``: untracked, Python's own thresholds;
- ``tracked``: ``CLIENT_CACHE_UNTRACK=0``: the cache in the collector's sight, spaced;
- ``default-thresholds``: both off, as a plain Python process would be;
- ``collector-off``: ``gc.disable()`` after the sync (a bound, not an option).

Reported per variant (medians): CPU seconds of the process during the events, events/s,
and the collector's full passes and their time (``gc.callbacks``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

VARIANTS = ("spaced", "unspaced", "tracked", "default-thresholds", "collector-off")
ENVIRONMENTS = {"unspaced": {"CLIENT_CACHE_GC_SPACING": "0"},
                "tracked": {"CLIENT_CACHE_UNTRACK": "0"},
                "default-thresholds": {"CLIENT_CACHE_GC_SPACING": "0", "CLIENT_CACHE_UNTRACK": "0"}}


def child(variant: str, pods: int, events: int) -> dict[str, Any]:
    """One measurement in this process (the variant's environment already set)."""
    from bench.replay import ReplayServer
    from client_cache.controller import ResourceEventHandlerFuncs
    from client_cache.informers import (
        SharedInformerFactoryOptions,
        new_shared_informer_factory_with_options,
    )

    full = {"passes": 0, "seconds": 0.0, "began": 0.0}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            full["began"] = time.perf_counter()
        else:
            full["passes"] += 1
            full["seconds"] += time.perf_counter() - full["began"]

    with ReplayServer(pods=pods, events=events) as replay:
        factory = new_shared_informer_factory_with_options(
            replay.api_client(), 0, SharedInformerFactoryOptions(namespace=replay.namespace))
        done = threading.Event()
        seen = [0]

        def on_update(old: Any, new: Any) -> None:
            seen[0] += 1
            if seen[0] == events:
                done.set()

        factory.core().v1().pods().informer().add_event_handler(
            ResourceEventHandlerFuncs(update_func=on_update))
        stop = factory.start()
        try:
            factory.wait_for_cache_sync(stop, timeout=120)
            if variant == "collector-off":
                gc.disable()
            gc.callbacks.append(on_gc)
            wall, cpu = time.perf_counter(), time.process_time()
            replay.start_events()
            if not done.wait(600):
                raise RuntimeError(f"only {seen[0]} of {events} events arrived")
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            gc.callbacks.remove(on_gc)
        finally:
            stop.set()
            factory.shutdown()
    return {"cpu_s": cpu, "events_per_s": events / wall, "full_passes": full["passes"],
            "full_pass_s": full["seconds"], "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.pods, args.events)))
        return
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    for _ in range(args.repeats):
        for variant in VARIANTS:
            env = dict(os.environ, **ENVIRONMENTS.get(variant, {}))
            out = subprocess.run(
                [sys.executable, "-m", "bench.bench_gc", "--child", variant,
                 "--pods", str(args.pods), "--events", str(args.events)],
                env=env, check=True, capture_output=True, text=True).stdout
            results[variant].append(json.loads(out.splitlines()[-1]))
    print(f"{args.pods:,} cached pods, {args.events:,} MODIFIED events to one handler "
          f"(replay source), medians of {args.repeats}:")
    for variant, runs in results.items():
        def med(field: str, runs: list[dict[str, Any]] = runs) -> float:
            return statistics.median(r[field] for r in runs)
        print(f"  {variant:<19} CPU {med('cpu_s'):5.2f} s  {med('events_per_s'):8,.0f} events/s"
              f"  full passes {med('full_pass_s'):5.2f} s ({med('full_passes'):.0f})"
              f"  load {med('load'):.1f}")


if __name__ == "__main__":
    main()
