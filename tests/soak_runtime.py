"""Runtime soak: a runtime Controller under a steady stream of updates, its process's
memory, threads and file descriptors sampled over the run (issue 67).

The embedded API server runs in its own process with ``--objects`` ConfigMaps (2,000).
A runtime ``Controller`` of them reconciles each change (a trivial reconcile); a writer
thread patches a random object ``--rate`` times a second (100), each write paced from a
fixed schedule (not a sleep after each: the rate holds whatever a write takes). Every
``--every`` seconds (10) the soak samples this process's resident memory (``VmRSS``),
its live threads and its open file descriptors, and the reconciles so far.

After ``--warmup`` seconds (60) the samples must stay flat: threads and file descriptors
within ``--slack-fds`` (2, pooled connections come and go) of the first sample after the
warm-up, resident memory growing by at most ``--max-growth-mib`` (8 MiB) from it, and
the controller reconciling throughout. It prints the table of samples and exits 1 when a
bound is broken.

    python -m tests.soak_runtime [--seconds 300] [--objects 2000] [--rate 100]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import sys
import threading
import time
from typing import Any

from kubernetes.client import CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.informers import new_shared_informer_factory_with_options
from client_cache.informers.factory import SharedInformerFactoryOptions
from client_cache.runtime import Action, Context, Controller, ControllerConfig
from client_cache.testing.apiserver import EmbeddedApiServerProcess


def rss_mib() -> float:
    """This process's resident memory (MiB)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def open_fds() -> int:
    """This process's open file descriptors."""
    return len(os.listdir("/proc/self/fd"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--every", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=60.0)
    parser.add_argument("--slack-fds", type=int, default=2)
    parser.add_argument("--max-growth-mib", type=float, default=8.0)
    args = parser.parse_args(argv)
    namespace = "soak"
    with EmbeddedApiServerProcess(bookmark_interval=10.0) as server:
        server.control("load", count=args.objects, namespace=namespace, kind="configmaps")
        api = server.api_client()
        core = CoreV1Api(api)
        deadline = time.monotonic() + 120
        while len(core.list_namespaced_config_map(namespace).items) < args.objects:
            if time.monotonic() > deadline:
                print("the objects were not created", file=sys.stderr)
                return 1
            time.sleep(0.5)
        names = [c.metadata.name for c in core.list_namespaced_config_map(namespace).items]
        reconciles = [0]

        def reconcile(obj: Any, ctx: Context[None]) -> Action:
            reconciles[0] += 1
            return Action.await_change()

        factory = new_shared_informer_factory_with_options(
            api, 0, SharedInformerFactoryOptions(namespace=namespace))
        controller: Controller[Any] = Controller(
            factory, GroupVersionResource("", "v1", "configmaps"),
            config=ControllerConfig(name="soak", events=False, client_qps=0))
        runner = threading.Thread(target=controller.run, args=(reconcile,),
                                  name="soak-controller", daemon=True)
        stop = threading.Event()
        writes = [0]

        def write() -> None:
            writer_api = server.api_client()
            writer = CoreV1Api(writer_api)
            rng = random.Random(1)
            started = time.monotonic()
            while not stop.is_set():
                due = started + writes[0] / args.rate
                if stop.wait(max(0.0, due - time.monotonic())):
                    break
                writer.patch_namespaced_config_map(
                    rng.choice(names), namespace, {"data": {"n": str(writes[0])}})
                writes[0] += 1
            writer_api.close()

        writer = threading.Thread(target=write, name="soak-writer", daemon=True)
        runner.start()
        writer.start()
        samples: list[tuple[float, float, int, int, int, int]] = []
        began = time.monotonic()
        while time.monotonic() - began < args.seconds:
            stop.wait(args.every)
            samples.append((time.monotonic() - began, rss_mib(), threading.active_count(),
                            open_fds(), reconciles[0], writes[0]))
        stop.set()
        writer.join(10)
        controller.shutdown()
        runner.join(30)
        api.close()
    print("| s | RSS (MiB) | threads | fds | reconciles | writes |")
    print("|---|---|---|---|---|---|")
    for at, rss, threads, fds, done, written in samples:
        print(f"| {at:.0f} | {rss:.1f} | {threads} | {fds} | {done} | {written} |")
    settled = [s for s in samples if s[0] >= args.warmup]
    if len(settled) < 2:
        print("too short a run to judge", file=sys.stderr)
        return 1
    first = settled[0]
    broken = []
    growth = max(s[1] for s in settled) - first[1]
    if growth > args.max_growth_mib:
        broken.append(f"resident memory grew {growth:.1f} MiB after the warm-up")
    if any(s[2] != first[2] for s in settled):
        broken.append(f"threads changed: {sorted({s[2] for s in settled})}")
    if any(abs(s[3] - first[3]) > args.slack_fds for s in settled):
        broken.append(f"file descriptors changed: {sorted({s[3] for s in settled})}")
    if any(b[4] <= a[4] for a, b in itertools.pairwise(settled)):
        broken.append("the controller stopped reconciling")
    rate = (settled[-1][5] - first[5]) / (settled[-1][0] - first[0])
    print(f"after the warm-up: RSS +{growth:.1f} MiB, writes {rate:.0f}/s, "
          f"reconciles {(settled[-1][4] - first[4]) / (settled[-1][0] - first[0]):.0f}/s")
    for line in broken:
        print(f"FAILED: {line}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
