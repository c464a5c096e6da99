"""Side by side: client_cache, the official ``kubernetes`` package and client-go itself,
doing the same work against the same embedded API server in one run.

The server runs in its own process and generates realistic pods (~3 KB of JSON: labels,
annotations, owner references, managedFields, status) itself, so every contender reads the
same bytes over loopback HTTP. Each contender runs in its own process
(``bench/contenders.py``, ``bench/go/main.go``), one after the other, ``--repeats`` times;
the report gives medians and the min-max spread.

- S1 initial sync: ``--pods`` pods in one namespace into an informer (namespace index, one
  counting handler): seconds until the handler saw every pod, peak RSS, and RSS per cached
  object (after a GC, minus the process's RSS before it started informing).
- S2 watch throughput: after syncing a small namespace, the server creates ``--events``
  pods as fast as it can; events/s reaching the handler (first to last event).

- S2 latency: ``--latency-events`` creates at ``--rate`` per second; the server stamps each
  with its write time, the handler computes the delay (p50, p99).
- S3 fan-out: S2 with ``--handlers`` counting handlers.
- S6 memory options: S1 with a transform that drops managedFields (the contenders that
  have transforms: client_cache and client-go).

Writes ``bench/results/latest.json`` and ``bench/results/latest.md``. Not built yet (see
issue 10): S4 indexer/lister, S5 workqueue side by side, and the chart.

    python -m bench.bench_compare [--pods 50000] [--events 100000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kubernetes.client import CoreV1Api

from client_cache.testing.apiserver import EmbeddedApiServerProcess
from client_cache.testing.envtest import find_go

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
PYTHON_CONTENDERS = ["cc-dict", "cc-model", "k8s-informer", "watch-model", "watch-raw"]
CLIENT_CACHE = {"cc-dict", "cc-model"}
TRANSFORMS = {"cc-dict", "client-go"}  # S6: contenders that can drop managedFields
LABELS = {
    "cc-dict": "client_cache (dicts)",
    "cc-model": "client_cache (V1Pod models)",
    "k8s-informer": "kubernetes.informer",
    "watch-model": "kubernetes Watch loop (models)",
    "watch-raw": "kubernetes Watch loop (deserialize=False)",
    "client-go": "client-go (Go)",
}


def build_go() -> Path | None:
    """Build the client-go contender (bench/go) with the Go toolchain, or None without Go."""
    go = find_go()
    if go is None:
        print("client-go contender skipped: no Go toolchain", file=sys.stderr)
        return None
    out = ROOT / "go" / "bin" / "clientgo-bench"
    subprocess.run([go, "build", "-o", str(out), "."], cwd=ROOT / "go", check=True,
                   env=dict(os.environ, GOFLAGS="-mod=mod", CGO_ENABLED="0"))
    return out


def command(name: str, go_binary: Path | None, server: str, namespace: str, expect: int,
            *flags: str) -> list[str]:
    """The contender's command line (Go's flag package also takes ``--flag``)."""
    if name == "client-go":
        assert go_binary is not None
        return [str(go_binary), "--server", server, "--namespace", namespace,
                "--expect", str(expect), *flags]
    return [sys.executable, "-m", "bench.contenders", name, "--server", server,
            "--namespace", namespace, "--expect", str(expect), *flags]


def count_pods(core: CoreV1Api, namespace: str) -> int:
    listed = core.list_namespaced_pod(namespace, limit=1)
    return len(listed.items) + (listed.metadata.remaining_item_count or 0)


def load(server: EmbeddedApiServerProcess, core: CoreV1Api, namespace: str, count: int) -> None:
    server.control("load", count=count, namespace=namespace, kind="pods")
    while count_pods(core, namespace) < count:
        time.sleep(0.05)


def run_contender(cmd: list[str], server: EmbeddedApiServerProcess | None = None,
                  namespace: str = "", events: int = 0,
                  rate: float = 0.0) -> list[dict[str, Any]]:
    """Run one contender; with ``events``, start the server's load (at ``rate`` per second,
    0: as fast as it can) when it says SYNCED."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT.parent)
    results: list[dict[str, Any]] = []
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.strip()
        if line == "SYNCED" and server is not None:
            server.control("load", count=events, namespace=namespace, kind="pods", rate=rate)
        elif line.startswith("{"):
            results.append(json.loads(line))
    _, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} {cmd[1:3]} failed: {err[-2000:]}")
    return results


def per_object(run: dict[str, Any], pods: int) -> float:
    return float((run["rss_kb"] - run["baseline_rss_kb"]) * 1024 / pods)


def brief(scenarios: dict[str, list[dict[str, Any]]], pods: int) -> str:
    s1, s2, s2l, s3 = (scenarios[k][-1] for k in ("s1", "s2", "s2l", "s3"))
    text = (f"S1 {s1['seconds']:6.2f} s {per_object(s1, pods):6.0f} B/obj | S2 "
            f"{s2['events_per_second']:7,.0f}/s p50 {s2l['latency_p50_ms']:6.1f} ms p99 "
            f"{s2l['latency_p99_ms']:6.1f} ms | S3 {s3['events_per_second']:7,.0f}/s")
    if scenarios["s6"]:
        text += f" | S6 {per_object(scenarios['s6'][-1], pods):6.0f} B/obj"
    return text


def summarize(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rate", type=float, default=1000.0, help="S2 latency: writes/s")
    parser.add_argument("--latency-events", type=int, default=5000)
    parser.add_argument("--handlers", type=int, default=10, help="S3: handlers")
    parser.add_argument("--fanout-events", type=int, default=20_000)
    parser.add_argument("--only", nargs="*", help="contenders to run (default: all)")
    args = parser.parse_args()
    go_binary = build_go()
    names = [*PYTHON_CONTENDERS, *(["client-go"] if go_binary else [])]
    if args.only:
        names = [n for n in names if n in args.only]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        n: {"s1": [], "s2": [], "s2l": [], "s3": [], "s6": []} for n in names}
    started = time.monotonic()
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        core = CoreV1Api(server.api_client())
        load(server, core, "s1", args.pods)
        print(f"S1: {args.pods} pods loaded; S2: {args.events} creates per run", flush=True)
        for repeat in range(args.repeats):
            for name in names:
                runs[name]["s1"].append(run_contender(command(
                    name, go_binary, server.url, "s1", args.pods))[0])

                def streamed(tag: str, events: int, *flags: str, rate: float = 0.0,
                             name: str = name, repeat: int = repeat) -> dict[str, Any]:
                    namespace = f"{tag}-{name}-{repeat}"
                    load(server, core, namespace, 100)
                    return run_contender(command(
                        name, go_binary, server.url, namespace, 100, "--events", str(events),
                        *flags), server, namespace, events, rate)[1]

                runs[name]["s2"].append(streamed("s2", args.events))
                runs[name]["s2l"].append(streamed("s2l", args.latency_events, "--latency",
                                                  rate=args.rate))
                runs[name]["s3"].append(streamed("s3", args.fanout_events, "--handlers",
                                                 str(args.handlers)))
                if name in TRANSFORMS:
                    runs[name]["s6"].append(run_contender(command(
                        name, go_binary, server.url, "s1", args.pods, "--transform"))[0])
                print(f"  run {repeat + 1} {LABELS[name]:<42} " + brief(runs[name], args.pods),
                      flush=True)
    report = build_report(runs, args)
    report["wall_seconds"] = time.monotonic() - started
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    table = markdown(report)
    (RESULTS / "latest.md").write_text(table, encoding="utf-8")
    print(table)
    return 0


def build_report(runs: dict[str, dict[str, list[dict[str, Any]]]],
                 args: argparse.Namespace) -> dict[str, Any]:
    contenders: dict[str, Any] = {}
    for name, scenarios in runs.items():
        s1, s2, s2l, s3, s6 = (scenarios[k] for k in ("s1", "s2", "s2l", "s3", "s6"))
        contenders[name] = {
            "label": LABELS[name],
            "s1_seconds": summarize([r["seconds"] for r in s1]),
            "s1_peak_rss_mb": summarize([r["peak_rss_kb"] / 1024 for r in s1]),
            "s1_rss_bytes_per_object": summarize([per_object(r, args.pods) for r in s1]),
            "s2_events_per_second": summarize([r["events_per_second"] for r in s2]),
            "s2_latency_p50_ms": summarize([r["latency_p50_ms"] for r in s2l]),
            "s2_latency_p99_ms": summarize([r["latency_p99_ms"] for r in s2l]),
            "s3_events_per_second": summarize([r["events_per_second"] for r in s3]),
            "s6_rss_bytes_per_object": summarize([per_object(r, args.pods) for r in s6])
            if s6 else None,
            "runs": scenarios,
        }
    return {"pods": args.pods, "events": args.events, "repeats": args.repeats,
            "rate": args.rate, "latency_events": args.latency_events,
            "handlers": args.handlers, "fanout_events": args.fanout_events,
            "date": time.strftime("%Y-%m-%d"), "contenders": contenders}


def cell(summary: dict[str, float] | None, fmt: str) -> str:
    if summary is None:
        return "n/a"
    return (f"{format(summary['median'], fmt)} ({format(summary['min'], fmt)}-"
            f"{format(summary['max'], fmt)})")


def ratio(value: float, other: float | None, lower_is_better: bool) -> str:
    if not other:
        return "-"
    return f"{(other / value if lower_is_better else value / other):.2f}x"


def markdown(report: dict[str, Any]) -> str:
    contenders = report["contenders"]
    reference = contenders.get("client-go")
    alternatives = [c for n, c in contenders.items() if n not in CLIENT_CACHE | {"client-go"}]
    best_s1 = min((c["s1_seconds"]["median"] for c in alternatives), default=None)
    best_s2 = max((c["s2_events_per_second"]["median"] for c in alternatives), default=None)
    lines = [
        f"# Side-by-side benchmark, {report['date']}",
        "",
        f"S1: initial sync of {report['pods']:,} pods (~3 KB each) into an informer with a "
        f"namespace index and one counting handler. S2: {report['events']:,} creates streamed "
        f"as fast as the server makes them; latency: {report['latency_events']:,} creates at "
        f"{report['rate']:,.0f}/s, from the server's write to the handler. S3: S2 with "
        f"{report['handlers']} handlers ({report['fanout_events']:,} creates). S6: S1 with a "
        "transform that drops managedFields. Medians of "
        f"{report['repeats']} runs (min-max); ratios above 1 mean better than the reference.",
        "",
        "| Contender | S1 sync s | S1 peak RSS MB | S1 bytes/object | S2 events/s "
        "| S2 p50 ms | S2 p99 ms | S3 events/s | S6 bytes/object "
        "| S1 vs client-go | S1 vs best Python alt. | S2 vs client-go | S2 vs best Python alt. |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in contenders.values():
        s1 = c["s1_seconds"]["median"]
        s2 = c["s2_events_per_second"]["median"]
        lines.append(
            f"| {c['label']} | {cell(c['s1_seconds'], '.2f')} "
            f"| {cell(c['s1_peak_rss_mb'], '.0f')} | {cell(c['s1_rss_bytes_per_object'], '.0f')} "
            f"| {cell(c['s2_events_per_second'], ',.0f')} "
            f"| {cell(c['s2_latency_p50_ms'], '.1f')} | {cell(c['s2_latency_p99_ms'], '.1f')} "
            f"| {cell(c['s3_events_per_second'], ',.0f')} "
            f"| {cell(c['s6_rss_bytes_per_object'], '.0f')} "
            f"| {ratio(s1, reference and reference['s1_seconds']['median'], True)} "
            f"| {ratio(s1, best_s1, True)} "
            f"| {ratio(s2, reference and reference['s2_events_per_second']['median'], False)} "
            f"| {ratio(s2, best_s2, False)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
