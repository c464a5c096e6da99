"""Idle CPU: what a synced, idle controller costs while nothing changes.

A child process (so that nothing else runs in it) starts a ``SharedInformerFactory`` with
three informers (pods, configmaps, secrets, 200 objects each) against the embedded API
server (its own process), waits for the caches to sync, starts two workers blocked on a
rate-limited workqueue, then measures its own CPU time (user + system,
``time.process_time``) over ``--seconds`` of idleness. Nothing in the library polls, so
the figure is the cost of the watches' keepalive traffic and the delaying queue's
heartbeat, nothing else. The target (issue 16): well under 1 % of a core.

Writes ``bench/results/idle.json`` and ``bench/results/idle.md``.

    python -m bench.bench_idle [--seconds 60]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.contenders import save_results


def child(url: str, seconds: float) -> None:
    """The measured process: print one JSON line with the CPU figures."""
    from kubernetes.client import ApiClient, Configuration

    from client_cache.informers import new_shared_informer_factory
    from client_cache.workqueue import (
        default_controller_rate_limiter,
        new_typed_rate_limiting_queue,
    )

    config = Configuration()
    config.host = url
    factory = new_shared_informer_factory(ApiClient(config), 0)
    for informer in (factory.core().v1().pods(), factory.core().v1().config_maps(),
                     factory.core().v1().secrets()):
        informer.informer()
    stop = threading.Event()
    factory.start(stop)
    assert all(factory.wait_for_cache_sync(stop).values())
    queue: Any = new_typed_rate_limiting_queue(default_controller_rate_limiter())

    def worker() -> None:
        while True:
            item, shutdown = queue.get()
            if shutdown:
                return
            queue.done(item)

    workers = [threading.Thread(target=worker, name=f"worker-{i}", daemon=True)
               for i in range(2)]
    for thread in workers:
        thread.start()
    time.sleep(2.0)  # let start-up work settle
    cpu0, wall0 = time.process_time(), time.monotonic()
    time.sleep(seconds)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    threads = threading.active_count()
    queue.shut_down()
    stop.set()
    factory.shutdown(timeout=5)
    print(json.dumps({"cpu_seconds": cpu, "wall_seconds": wall, "threads": threads}),
          flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.seconds)
        return 0
    from kubernetes.client import CoreV1Api

    from client_cache.testing.apiserver import EmbeddedApiServerProcess

    with EmbeddedApiServerProcess(bookmark_interval=1.0) as server:
        server.control("load", count=200, namespace="idle", kind="pods")
        core = CoreV1Api(server.api_client())
        for i in range(200):
            core.create_namespaced_config_map("idle", {"metadata": {"name": f"cm-{i}"}})
            core.create_namespaced_secret("idle", {"metadata": {"name": f"s-{i}"}})
        out = subprocess.run(
            [sys.executable, "-m", "bench.bench_idle", "--child", server.url, "--seconds",
             str(args.seconds)], capture_output=True, text=True, check=True,
            cwd=Path(__file__).resolve().parent.parent)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["core_percent"] = 100.0 * result["cpu_seconds"] / result["wall_seconds"]
    result["load_1min"] = os.getloadavg()[0]
    text = (
        "# Idle CPU\n\n"
        "3 synced informers (pods, configmaps, secrets; 200 objects each) and 2 workers "
        "blocked on a rate-limited workqueue, nothing changing, measured over "
        f"{result['wall_seconds']:.0f} s in a process of their own (`make bench`, "
        "bench/bench_idle.py).\n\n"
        "| CPU seconds | wall seconds | % of one core | threads | 1-min load |\n"
        "|---|---|---|---|---|\n"
        f"| {result['cpu_seconds']:.3f} | {result['wall_seconds']:.1f} | "
        f"{result['core_percent']:.3f} % | {result['threads']} | "
        f"{result['load_1min']:.2f} |\n\n"
        "Target (issue 16): well under 1 % of a core: "
        f"{'met' if result['core_percent'] < 1.0 else 'missed'}.\n")
    save_results("idle", result, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
