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
- S2 watch throughput: then, on the same informer, the server makes ``--events`` mixed
  changes (create, update, update, delete, so the namespace keeps its size) as fast as it
  can: events/s reaching the handler (first to last event). The contenders that build
  models get ``--model-events`` instead, to fit the time budget.
- S2 latency: then ``--latency-events`` more changes at ``--rate`` per second; the server
  stamps each with its write time, the handler computes the delay (p50, p99).
- S3 fan-out: mixed changes to an informer of 100 pods with ``--handlers`` handlers.
- S4 indexer and lister: a store of ``--objects`` pods; adds, updates, namespace and custom
  index lookups, a namespace listed by label selector, per second (no server).
- S5 workqueue: ``--keys`` keys through add, get, done with 1 and 8 workers (no server).
- S6 memory options: S1 with a transform that drops managedFields (the contenders that
  have transforms: client_cache and client-go).

Writes ``bench/results/latest.json``, ``bench/results/latest.md`` (tables, ratios and the
issue's targets) and ``bench/results/latest.png`` (S1 and S2; needs matplotlib, the
``bench`` extra).

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
MODEL_CONTENDERS = {"cc-model", "k8s-informer", "watch-model"}  # S2: --model-events
S4_CONTENDERS = {"cc-dict", "k8s-informer", "client-go"}  # those with a store to query
S5_CONTENDERS = {"cc-dict", "client-go"}  # those with a workqueue
SCENARIOS = ("s1", "s2", "s2l", "s3", "s4", "s5", "s6")
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
    target = ["--server", server, "--namespace", namespace, "--expect", str(expect)] \
        if server else []
    if name == "client-go":
        assert go_binary is not None
        return [str(go_binary), *target, *flags]
    return [sys.executable, "-m", "bench.contenders", name, *target, *flags]


def count_pods(core: CoreV1Api, namespace: str) -> int:
    listed = core.list_namespaced_pod(namespace, limit=1)
    return len(listed.items) + (listed.metadata.remaining_item_count or 0)


def load(server: EmbeddedApiServerProcess, core: CoreV1Api, namespace: str, count: int) -> None:
    server.control("load", count=count, namespace=namespace, kind="pods")
    while count_pods(core, namespace) < count:
        time.sleep(0.05)


def run_contender(cmd: list[str], server: EmbeddedApiServerProcess | None = None,
                  namespace: str = "", loads: dict[str, tuple[int, float]] | None = None,
                  ) -> dict[str, dict[str, Any]]:
    """Run one contender and return its results by scenario. When it prints ``READY
    <phase>``, start the server's mixed load ``loads[phase]`` = (changes, rate per second;
    0 means as fast as the server can) in ``namespace``."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT.parent)
    results: dict[str, dict[str, Any]] = {}
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.strip()
        if line.startswith("READY ") and server is not None and loads:
            count, rate = loads[line.split()[1]]
            server.control("load", count=count, namespace=namespace, kind="pods", rate=rate,
                           mix="mixed")
        elif line.startswith("{"):
            result = json.loads(line)
            results[result["scenario"]] = result
    _, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} {cmd[1:3]} failed: {err[-2000:]}")
    return results


def per_object(run: dict[str, Any], pods: int) -> float:
    return float((run["rss_kb"] - run["baseline_rss_kb"]) * 1024 / pods)


def brief(runs: dict[str, list[dict[str, Any]]], pods: int) -> str:
    parts = []
    if runs["s1"]:
        parts.append(f"S1 {runs['s1'][-1]['seconds']:6.2f} s "
                     f"{per_object(runs['s1'][-1], pods):6.0f} B/obj")
    if runs["s2"]:
        s2, s2l = runs["s2"][-1], runs["s2l"][-1]
        parts.append(f"S2 {s2['events_per_second']:7,.0f}/s p50 {s2l['latency_p50_ms']:5.1f} "
                     f"p99 {s2l['latency_p99_ms']:6.1f} ms")
    if runs["s3"]:
        parts.append(f"S3 {runs['s3'][-1]['events_per_second']:7,.0f}/s")
    if runs["s4"]:
        s4 = runs["s4"][-1]
        parts.append(f"S4 ns {s4['namespace_lookups_per_second']:6,.0f}/s sel "
                     f"{s4['selector_lists_per_second']:5,.0f}/s")
    if runs["s5"]:
        s5 = runs["s5"][-1]
        parts.append(f"S5 {s5['workers_1_per_second']:9,.0f}/s "
                     f"{s5['workers_8_per_second']:9,.0f}/s")
    if runs["s6"]:
        parts.append(f"S6 {per_object(runs['s6'][-1], pods):6.0f} B/obj")
    return " | ".join(parts)


def summarize(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def multiple_of_four(text: str) -> int:
    value = int(text)
    if value <= 0 or value % 4:
        raise argparse.ArgumentTypeError("must be a positive multiple of 4 (the mixed load "
                                         "cycles create, update, update, delete)")
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--events", type=multiple_of_four, default=100_000)
    parser.add_argument("--model-events", type=multiple_of_four, default=8_000,
                        help="S2 changes for the contenders that build models")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rate", type=float, default=1000.0, help="S2 latency: writes/s")
    parser.add_argument("--latency-events", type=multiple_of_four, default=3000)
    parser.add_argument("--handlers", type=int, default=10, help="S3: handlers")
    parser.add_argument("--fanout-events", type=multiple_of_four, default=6_000)
    parser.add_argument("--objects", type=int, default=100_000, help="S4: cached pods")
    parser.add_argument("--lookup-seconds", type=float, default=0.3,
                        help="S4: seconds each kind of lookup is timed")
    parser.add_argument("--keys", type=int, default=50_000, help="S5: workqueue keys")
    parser.add_argument("--only", nargs="*", help="contenders to run (default: all)")
    parser.add_argument("--chart", default=str(RESULTS / "latest.png"),
                        help="PNG chart of S1 and S2 (needs matplotlib; '' for none)")
    args = parser.parse_args()
    go_binary = build_go()
    names = [*PYTHON_CONTENDERS, *(["client-go"] if go_binary else [])]
    if args.only:
        names = [n for n in names if n in args.only]
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        n: {k: [] for k in SCENARIOS} for n in names}
    started = time.monotonic()
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        core = CoreV1Api(server.api_client())
        load(server, core, "s1", args.pods)
        # one unmeasured full LIST, so that the first contender does not pay for the
        # server settling after the load (its first S1 was 25-40 % slower than the rest)
        assert core.list_namespaced_pod("s1", _preload_content=False).data
        print(f"S1: {args.pods:,} pods loaded", flush=True)
        for repeat in range(args.repeats):
            for name in names:
                began = time.monotonic()
                runs[name] = run_all(name, repeat, runs[name], server, core, go_binary, args)
                print(f"  run {repeat + 1} {LABELS[name]:<42} {time.monotonic() - began:4.0f} s "
                      + brief(runs[name], args.pods), flush=True)
    report = build_report(runs, args)
    report["wall_seconds"] = time.monotonic() - started
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "latest.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    table = markdown(report)
    (RESULTS / "latest.md").write_text(table, encoding="utf-8")
    print(table)
    if args.chart:
        chart(report, Path(args.chart))
    print(f"{report['wall_seconds'] / 60:.1f} min", flush=True)
    return 0


def run_all(name: str, repeat: int, runs: dict[str, list[dict[str, Any]]],
            server: EmbeddedApiServerProcess, core: CoreV1Api, go_binary: Path | None,
            args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """One repeat of every scenario for contender ``name``."""
    events = args.model_events if name in MODEL_CONTENDERS else args.events
    # S1, then S2 on the same informer: the mixed changes keep the namespace's size
    inform = run_contender(command(
        name, go_binary, server.url, "s1", args.pods, "--events", str(events),
        "--latency-events", str(args.latency_events)), server, "s1",
        {"throughput": (events, 0.0), "latency": (args.latency_events, args.rate)})
    runs["s1"].append(inform["sync"])
    runs["s2"].append(inform["throughput"])
    runs["s2l"].append(inform["latency"])
    namespace = f"s3-{name}-{repeat}"
    load(server, core, namespace, 100)
    fanout = run_contender(command(
        name, go_binary, server.url, namespace, 100, "--events", str(args.fanout_events),
        "--handlers", str(args.handlers)), server, namespace,
        {"throughput": (args.fanout_events, 0.0)})
    runs["s3"].append(fanout["throughput"])
    if name in S4_CONTENDERS:
        runs["s4"].append(run_contender(command(
            name, go_binary, "", "", 0, "--mode", "s4", "--objects", str(args.objects),
            "--seconds", str(args.lookup_seconds)))["s4"])
    if name in S5_CONTENDERS:
        runs["s5"].append(run_contender(command(
            name, go_binary, "", "", 0, "--mode", "s5", "--keys", str(args.keys)))["s5"])
    if name in TRANSFORMS:
        runs["s6"].append(run_contender(command(
            name, go_binary, server.url, "s1", args.pods, "--transform"))["sync"])
    return runs


S4_METRICS = ("add_per_second", "update_per_second", "namespace_lookups_per_second",
              "index_lookups_per_second", "selector_lists_per_second")
S5_METRICS = ("workers_1_per_second", "workers_8_per_second")


def build_report(runs: dict[str, dict[str, list[dict[str, Any]]]],
                 args: argparse.Namespace) -> dict[str, Any]:
    contenders: dict[str, Any] = {}
    for name, scenarios in runs.items():
        s1, s2, s2l, s3, s4, s5, s6 = (scenarios[k] for k in SCENARIOS)
        contenders[name] = {
            "label": LABELS[name],
            "s1_seconds": summarize([r["seconds"] for r in s1]),
            "s1_peak_rss_mb": summarize([r["peak_rss_kb"] / 1024 for r in s1]),
            "s1_rss_bytes_per_object": summarize([per_object(r, args.pods) for r in s1]),
            "s2_events": s2[0]["events"],
            "s2_events_per_second": summarize([r["events_per_second"] for r in s2]),
            "s2_latency_p50_ms": summarize([r["latency_p50_ms"] for r in s2l]),
            "s2_latency_p99_ms": summarize([r["latency_p99_ms"] for r in s2l]),
            "s3_events_per_second": summarize([r["events_per_second"] for r in s3]),
            "s4": {m: summarize([r[m] for r in s4]) for m in S4_METRICS} if s4 else None,
            "s5": {m: summarize([r[m] for r in s5]) for m in S5_METRICS} if s5 else None,
            "s6_rss_bytes_per_object": summarize([per_object(r, args.pods) for r in s6])
            if s6 else None,
            "runs": scenarios,
        }
    return {"pods": args.pods, "events": args.events, "model_events": args.model_events,
            "repeats": args.repeats, "rate": args.rate, "latency_events": args.latency_events,
            "handlers": args.handlers, "fanout_events": args.fanout_events,
            "objects": args.objects, "keys": args.keys,
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


def median(contender: dict[str, Any] | None, *path: str) -> float | None:
    """The median at ``path`` in a contender's report, or None where it has none."""
    node: Any = contender
    for key in path:
        if node is None:
            return None
        node = node.get(key)
    return None if node is None else float(node["median"])


def targets(report: dict[str, Any]) -> list[str]:
    """Issue 10's targets, each with the measured figure and met or missed (by how much)."""
    c = report["contenders"]
    cc, go = c.get("cc-dict"), c.get("client-go")
    lines = []

    def check(text: str, value: float | None, goal: float, higher_is_better: bool,
              unit: str = "") -> None:
        if value is None:
            return
        met = value >= goal if higher_is_better else value <= goal
        verdict = "met" if met else (
            f"missed by {goal / value:.2f}x" if higher_is_better else
            f"missed by {value / goal:.2f}x")
        lines.append(f"- {text}: {value:,.2f}{unit} (target {'>=' if higher_is_better else '<='}"
                     f" {goal:,.2f}{unit}): {verdict}")

    s1 = median(cc, "s1_seconds")
    for other in ("k8s-informer", "watch-model"):
        theirs = median(c.get(other), "s1_seconds")
        if s1 and theirs:
            check(f"S1 client_cache (dicts) speed-up over {LABELS[other]}", theirs / s1, 10,
                  True, "x")
    go_s1 = median(go, "s1_seconds")
    if s1 and go_s1:
        check("S1 client_cache (dicts) time / client-go's", s1 / go_s1, 2, False, "x")
    check("S2 client_cache (dicts) events/s", median(cc, "s2_events_per_second"), 20_000, True)
    check("S2 client_cache (dicts) p99 ms at "
          f"{report['rate']:,.0f} changes/s", median(cc, "s2_latency_p99_ms"), 5, False)
    go_bytes = median(go, "s1_rss_bytes_per_object")
    go_bytes_t = median(go, "s6_rss_bytes_per_object")
    cc_bytes = median(cc, "s1_rss_bytes_per_object")
    cc_bytes_t = median(cc, "s6_rss_bytes_per_object")
    if go_bytes and cc_bytes:
        check("S6 client_cache (dicts) bytes per pod / client-go's", cc_bytes / go_bytes, 2,
              False, "x")
    if go_bytes_t and cc_bytes_t:
        check("S6 with the managedFields transform, client_cache / client-go",
              cc_bytes_t / go_bytes_t, 1, False, "x")
    return lines


def markdown(report: dict[str, Any]) -> str:
    contenders = report["contenders"]
    reference = contenders.get("client-go")
    alternatives = [c for n, c in contenders.items() if n not in CLIENT_CACHE | {"client-go"}]
    best_s1 = min((c["s1_seconds"]["median"] for c in alternatives), default=None)
    best_s2 = max((c["s2_events_per_second"]["median"] for c in alternatives), default=None)
    lines = [
        f"# Side-by-side benchmark, {report['date']}",
        "",
        "Every contender runs in its own process against the same embedded API server "
        "(its own process too), over loopback HTTP. "
        f"Medians of {report['repeats']} runs (min-max). Ratios above 1 mean better than the "
        "reference.",
        "",
        f"- S1: initial sync of {report['pods']:,} pods (~3 KB of JSON each, page size 500) "
        "into an informer with a namespace index and one counting handler; bytes/object is "
        "the RSS after a GC minus the RSS before informing, per pod.",
        f"- S2: then, on the same informer, {report['events']:,} mixed changes (create, "
        "update, update, delete) streamed as fast as the server makes them "
        f"({report['model_events']:,} for the contenders that build models, which are too "
        "slow for more in the time budget); events/s reaching the handler. Latency: "
        f"{report['latency_events']:,} more changes at {report['rate']:,.0f}/s, from the "
        "server's write (stamped in the object) to the handler call.",
        f"- S3: {report['fanout_events']:,} mixed changes with {report['handlers']} "
        "handlers on one informer (events/s per handler).",
        "- S6: S1 with a transform that drops managedFields (the contenders that have "
        "transforms).",
        "",
        "| Contender | S1 sync s | S1 peak RSS MB | S1 bytes/object | S6 bytes/object "
        "| S2 events/s | S2 p50 ms | S2 p99 ms | S3 events/s "
        "| S1 vs client-go | S1 vs best Python alt. | S2 vs client-go | S2 vs best Python alt. |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in contenders.values():
        s1 = c["s1_seconds"]["median"]
        s2 = c["s2_events_per_second"]["median"]
        lines.append(
            f"| {c['label']} | {cell(c['s1_seconds'], '.2f')} "
            f"| {cell(c['s1_peak_rss_mb'], '.0f')} | {cell(c['s1_rss_bytes_per_object'], ',.0f')} "
            f"| {cell(c['s6_rss_bytes_per_object'], ',.0f')} "
            f"| {cell(c['s2_events_per_second'], ',.0f')} "
            f"| {cell(c['s2_latency_p50_ms'], '.1f')} | {cell(c['s2_latency_p99_ms'], '.1f')} "
            f"| {cell(c['s3_events_per_second'], ',.0f')} "
            f"| {ratio(s1, reference and reference['s1_seconds']['median'], True)} "
            f"| {ratio(s1, best_s1, True)} "
            f"| {ratio(s2, reference and reference['s2_events_per_second']['median'], False)} "
            f"| {ratio(s2, best_s2, False)} |")
    with_s4 = [c for c in contenders.values() if c["s4"]]
    if with_s4:
        lines += [
            "",
            f"S4: a store of {report['objects']:,} pods (100 namespaces, 500 nodes): adds, "
            "updates, namespace-index lookups, lookups in a custom index by node, and a "
            "namespace's pods listed by label selector (`app=web-3`, 1 in 10), per second. "
            "kubernetes.informer's `ObjectCache` has no index, so its lookups scan.",
            "",
            "| Contender | add/s | update/s | namespace lookups/s | node-index lookups/s "
            "| selector lists/s | lookups vs client-go | selector lists vs client-go |",
            "|---|---|---|---|---|---|---|---|",
        ]
        lines += metric_rows(with_s4, "s4", S4_METRICS, ("namespace_lookups_per_second",
                                                         "selector_lists_per_second"), reference)
    with_s5 = [c for c in contenders.values() if c["s5"]]
    if with_s5:
        lines += [
            "",
            f"S5: {report['keys']:,} distinct keys through add, get, done on the plain "
            "workqueue, with 1 and 8 workers (threads; goroutines for client-go), per second.",
            "",
            "| Contender | 1 worker | 8 workers | 1 worker vs client-go |",
            "|---|---|---|---|",
        ]
        lines += metric_rows(with_s5, "s5", S5_METRICS, ("workers_1_per_second",), reference)
    goals = targets(report)
    if goals:
        lines += ["", "Targets (issue 10):", "", *goals]
    return "\n".join(lines) + "\n"


def metric_rows(contenders: list[dict[str, Any]], key: str, metrics: tuple[str, ...],
                compared: tuple[str, ...], reference: dict[str, Any] | None) -> list[str]:
    """Table rows of scenario ``key``: each metric's cell, then the ratio to client-go of
    each ``compared`` metric (higher is better)."""
    ref = reference[key] if reference else None
    rows = []
    for c in contenders:
        data = c[key]
        cells = [cell(data[m], ",.0f") for m in metrics]
        cells += [ratio(data[m]["median"], ref and ref[m]["median"], False) for m in compared]
        rows.append(f"| {c['label']} | " + " | ".join(cells) + " |")
    return rows


def chart(report: dict[str, Any], path: Path) -> None:
    """A PNG with S1 sync time and S2 events/s per contender (medians, min-max bars)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no chart: matplotlib is not installed (pip install -e '.[bench]')",
              file=sys.stderr)
        return
    contenders = list(report["contenders"].values())
    labels = [c["label"].replace(" (", "\n(") for c in contenders]
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, key, title in ((axes[0], "s1_seconds",
                            f"S1: seconds to sync {report['pods']:,} pods (lower is better)"),
                           (axes[1], "s2_events_per_second",
                            "S2: watch events/s to one handler (higher is better)")):
        medians = [c[key]["median"] for c in contenders]
        low = [c[key]["median"] - c[key]["min"] for c in contenders]
        high = [c[key]["max"] - c[key]["median"] for c in contenders]
        colors = ["#2a7ab9" if "client_cache" in c["label"] else
                  "#7f7f7f" if "client-go" in c["label"] else "#d98c3f" for c in contenders]
        ax.barh(labels, medians, xerr=[low, high], color=colors, capsize=3)
        ax.invert_yaxis()
        ax.set_title(title, fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
        for y, value in enumerate(medians):
            ax.text(value, y, f" {value:,.1f}" if value < 100 else f" {value:,.0f}",
                    va="center", fontsize=8)
    fig.suptitle(f"client_cache side-by-side benchmark, {report['date']} "
                 f"(medians of {report['repeats']} runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"chart: {path}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
