"""Memory of a metadata-only informer against a full one: bytes of RSS per cached pod.

The embedded API server (its own process) holds ``--pods`` realistic pods (about 2.3 KB of
JSON each: labels, annotations, owner reference, managedFields, a container with twelve
environment variables, status). For each mode a fresh child process measures its RSS,
syncs one informer on the pods (full: wire dicts; metadata: ``PartialObjectMetadata`` wire
dicts from :func:`~client_cache.informers.new_metadata_shared_informer_factory`), collects
garbage and measures again; the difference over the number of pods is the cost of one
cached pod. Medians of ``--repeats``.

Writes ``bench/results/metadata.json`` and ``bench/results/metadata.md``.

    python -m bench.bench_metadata [--pods 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.contenders import rss_kb, save_results

PODS_GVR = ("", "v1", "pods")


def child(url: str, mode: str, pods: int) -> None:
    from kubernetes.client import ApiClient, Configuration

    from client_cache.api.schema import GroupVersionResource
    from client_cache.informers import (
        new_metadata_shared_informer_factory,
        new_shared_informer_factory,
    )

    config = Configuration()
    config.host = url
    api = ApiClient(config)
    gc.collect()
    before = rss_kb()
    new = new_metadata_shared_informer_factory if mode == "metadata" else \
        new_shared_informer_factory
    factory = new(api, 0)
    informer = factory.for_resource(GroupVersionResource(*PODS_GVR)).informer()
    stop = threading.Event()
    started = time.monotonic()
    factory.start(stop)
    assert all(factory.wait_for_cache_sync(stop).values())
    seconds = time.monotonic() - started
    cached = len(informer.get_indexer().list_keys())
    gc.collect()
    after = rss_kb()
    stop.set()
    factory.shutdown(timeout=5)
    print(json.dumps({"bytes_per_pod": (after - before) * 1024 / cached, "pods": cached,
                      "sync_seconds": seconds}), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.pods)
        return 0
    from client_cache.testing.apiserver import EmbeddedApiServerProcess

    runs: dict[str, list[dict[str, float]]] = {"full": [], "metadata": []}
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        server.control("load", count=args.pods, namespace="meta", kind="pods")
        while server.control("state")["resourceVersion"] < args.pods:
            time.sleep(0.2)
        for _ in range(args.repeats):
            for mode, results in runs.items():
                out = subprocess.run(
                    [sys.executable, "-m", "bench.bench_metadata", "--pods", str(args.pods),
                     "--child", server.url, mode], capture_output=True, text=True, check=True,
                    cwd=Path(__file__).resolve().parent.parent)
                results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    report = {mode: {key: statistics.median(r[key] for r in rs)
                     for key in ("bytes_per_pod", "sync_seconds", "pods")}
              for mode, rs in runs.items()}
    ratio = report["metadata"]["bytes_per_pod"] / report["full"]["bytes_per_pod"]
    report["metadata_vs_full"] = ratio
    text = (
        "# Metadata-only informers: memory per cached pod\n\n"
        f"{int(report['full']['pods']):,} realistic pods on the embedded server; one informer "
        f"per child process; RSS after sync and a GC minus RSS before, per pod; medians of "
        f"{args.repeats} (`make bench`, bench/bench_metadata.py).\n\n"
        "| informer | bytes per cached pod | sync s |\n|---|---|---|\n"
        f"| full (wire dicts) | {report['full']['bytes_per_pod']:,.0f} | "
        f"{report['full']['sync_seconds']:.2f} |\n"
        f"| metadata-only (PartialObjectMetadata dicts) | "
        f"{report['metadata']['bytes_per_pod']:,.0f} | "
        f"{report['metadata']['sync_seconds']:.2f} |\n\n"
        f"Metadata-only holds {ratio:.2f}x the bytes of the full informer.\n")
    save_results("metadata", report, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
