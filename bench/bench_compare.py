"""Side by side: client_cache, the official ``kubernetes`` package, client-go itself and a
floor (urllib3 and the JSON decoder, no cache), doing the same work against the same
servers in one run.

Every contender runs in its own process (``bench/contenders.py``, ``bench/go/main.go``),
one after the other, ``--repeats`` times; the report gives medians, the min-max spread and
the 1-minute load when each run began (each run first waits, up to 3 minutes, for the load
to fall to 2.5; runs that still began above it are marked). A variant is
a contender on one initial-sync path: LIST (resourceVersion 0, which both servers serve
whole), watch-list (``sendInitialEvents``), or a paged LIST (resourceVersion "", limit
500, so paging is measured); client-go also with protobuf where the server speaks it.

Servers and scenarios:

- the embedded API server (its own process, JSON only), ``--pods`` generated pods:
  S1 initial sync (seconds until the handler saw every pod, peak RSS, RSS per cached
  object after a GC), then on the same informer S2 (``--events`` mixed changes as fast as
  the server makes them, events/s to the handler; the model-building contenders get
  ``--model-events``) and S2 latency (``--latency-events`` at ``--rate``/s, write to
  handler); S3 fan-out (mixed changes to 100 pods, ``--handlers`` handlers); S6 (S1 with
  a transform that drops managedFields, or with them skipped while decoding);
- the replay source (``bench/replay``, Go, at socket speed), ``--replay-pods`` pods and
  ``--replay-events`` changes: S2 and S3 again, without the embedded server's own limits;
- the real kube-apiserver + etcd (``make envtest``), when its binaries exist:
  S1 with ``--real-pods`` pods, client-go with JSON and with protobuf; and the server's
  own delivery of the LIST and the watch-list, in JSON and in protobuf, read with nothing
  decoded (``bench.contenders.delivery``): the time no client can beat on that path;
- no server: S4 indexer and lister, S5 workqueue.

The run also records the machine's thread hand-off round trip (``bench/machine.py``) at its
start, before the replay source and at its end.

Writes ``bench/results/latest.json``, ``latest.md`` (``bench/compare_report.py``: tables,
ratios, issue 20's targets) and ``latest.png`` (needs matplotlib, the ``bench`` extra).

    python -m bench.bench_compare [--pods 50000] [--repeats 3] [--no-real] [--no-replay]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes.client import CoreV1Api

from bench import go_programs
from bench.compare_report import chart, markdown
from bench.contenders import PAGE_SIZE
from bench.machine import handoff_round_trip_us
from bench.replay import ReplayFiles, ReplayServer
from client_cache.testing.apiserver import EmbeddedApiServerProcess, sample_object
from client_cache.testing.envtest import ControlPlane, find_binaries, find_go

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
LOADED = 2.5  # a run that began above this 1-minute load is marked
SETTLE_SECONDS = 180.0  # the longest wait for the load to fall to LOADED before a run
LABELS = {
    "cc-dict": "client_cache (dicts)",
    "cc-dict-own-keys": "client_cache (dicts, key tables not shared)",
    "cc-dict-v032": "client_cache (dicts, client-go v0.32's informer: DeltaFIFO)",
    "cc-dict-rebuilt": "client_cache (dicts, unchanged parts not taken from the cache)",
    "cc-dict-skip": "client_cache (dicts, managedFields skipped while decoding)",
    "cc-model": "client_cache (V1Pod models)",
    "cc-struct": "client_cache (structs, no managedFields)",
    "k8s-informer": "kubernetes.informer",
    "watch-model": "kubernetes Watch loop (models)",
    "watch-raw": "kubernetes Watch loop (deserialize=False)",
    "client-go": "client-go",
    "floor": "floor: urllib3 + orjson, no cache",
    "wire": "server delivery: bytes read, nothing decoded",
}
SYNC_LABELS = {"list": "LIST", "watch-list": "watch-list", "paged": "paged LIST"}
MODEL_CONTENDERS = {"cc-model", "k8s-informer", "watch-model"}  # S2: --model-events


@dataclass(frozen=True)
class Variant:
    """A contender on one sync path (and, for client-go, one encoding)."""

    contender: str
    sync: str = "list"
    protobuf: bool = False

    @property
    def key(self) -> str:
        return f"{self.contender}/{self.sync}" + ("/protobuf" if self.protobuf else "")

    @property
    def label(self) -> str:
        encoding = ", protobuf" if self.protobuf else (
            ", JSON" if self.contender in ("client-go", "wire") else "")
        return f"{LABELS[self.contender]}{encoding}, {SYNC_LABELS[self.sync]}"


V = Variant
EMBEDDED = [V("cc-dict"), V("cc-dict", "watch-list"), V("cc-dict", "paged"),
            V("cc-dict-v032"), V("cc-dict-own-keys"), V("cc-struct"),
            V("cc-struct", "watch-list"), V("cc-model"),
            V("cc-model", "watch-list"), V("k8s-informer"), V("watch-model"),
            V("watch-raw"), V("client-go"), V("client-go", "watch-list"),
            V("client-go", "paged"), V("floor"), V("floor", "watch-list")]
FANOUT = [V("cc-dict"), V("cc-model"), V("k8s-informer"), V("watch-raw"), V("client-go")]
REPLAY = [V("cc-dict"), V("cc-dict", "watch-list"), V("cc-dict-v032"),
          V("cc-dict-own-keys"),
          V("cc-dict-rebuilt"), V("cc-struct"), V("watch-raw"),
          V("client-go"), V("client-go", "watch-list"), V("floor"), V("floor", "watch-list")]
REPLAY_FANOUT = [V("cc-dict"), V("cc-dict-rebuilt"), V("client-go")]
REAL = [V("cc-dict"), V("cc-dict", "watch-list"), V("cc-dict", "paged"), V("cc-struct"),
        V("cc-struct", "watch-list"), V("cc-dict", protobuf=True),
        V("cc-dict", "watch-list", protobuf=True), V("cc-struct", protobuf=True),
        V("cc-struct", "watch-list", protobuf=True),
        V("cc-dict-skip"), V("cc-dict-skip", protobuf=True),
        V("k8s-informer"),
        V("client-go", protobuf=True), V("client-go", "watch-list", protobuf=True),
        V("client-go"), V("client-go", "watch-list"), V("client-go", "paged"), V("floor"),
        V("floor", "watch-list")]
DELIVERY = [V("wire"), V("wire", "watch-list"), V("wire", protobuf=True),
            V("wire", "watch-list", protobuf=True)]  # the real server's own sending
TRANSFORMS = [V("cc-dict"), V("cc-dict-skip"), V("client-go")]  # S6: managedFields dropped
S4_CONTENDERS = ["cc-dict", "k8s-informer", "client-go"]  # those with a store to query
S5_CONTENDERS = ["cc-dict", "client-go"]  # those with a workqueue


def build_go() -> Path | None:
    """The client-go contender (bench/go), built by ``make envtest`` or here once
    (:mod:`bench.go_programs`); None without the Go toolchain."""
    if go_programs.built("clientgo-bench") is None and find_go() is None:
        print("client-go contender skipped: no Go toolchain", file=sys.stderr)
        return None
    return go_programs.build("clientgo-bench")


@dataclass
class Target:
    """Where a contender connects: URL, bearer token, CA file (https)."""

    url: str
    token: str = "embedded-token"
    ca_file: str = ""


def command(variant: Variant, go_binary: Path | None, target: Target | None, namespace: str,
            expect: int, *flags: str) -> list[str]:
    """The contender's command line (Go's flag package also takes ``--flag``)."""
    where = ["--server", target.url, "--token", target.token, "--namespace", namespace,
             "--expect", str(expect)] if target else []
    if target and target.ca_file:
        where += ["--ca-file", target.ca_file]
    if variant.contender == "client-go":
        assert go_binary is not None
        return [str(go_binary), *where, "--sync", variant.sync,
                *(["--protobuf"] if variant.protobuf else []), *flags]
    return [sys.executable, "-m", "bench.contenders", variant.contender, *where,
            "--sync", variant.sync, *(["--protobuf"] if variant.protobuf else []), *flags]


def settle(limit: float = SETTLE_SECONDS) -> float:
    """Wait (up to ``limit`` seconds) until the 1-minute load is at most :data:`LOADED`,
    so each run begins on a quiet machine: the previous run's own work, and a real
    apiserver still busy after its pods were created, leave the load high for a while.
    Returns the load when the wait ended; a run that still began above it is marked."""
    deadline = time.monotonic() + limit
    load = os.getloadavg()[0]
    while load > LOADED and time.monotonic() < deadline:
        time.sleep(2.0)  # the kernel updates the load average every 5 s; nothing to wake on
        load = os.getloadavg()[0]
    return load


def probe(report: dict[str, Any], when: str) -> None:
    """Record the machine's thread hand-off round trip now (after the load settles), as
    ``report["handoff_us"][when]``."""
    load = settle()
    us = handoff_round_trip_us()
    report.setdefault("handoff_us", {})[when] = {"us": us, "load": load}
    print(f"thread hand-off round trip ({when}): {us:.0f} us", flush=True)


def run_contender(cmd: list[str], on_ready: Callable[[str], None] | None = None,
                  cwd: Path | None = None) -> dict[str, dict[str, Any]]:
    """Run one contender and return its results by scenario, each with the 1-minute load
    when it began. ``on_ready(phase)`` runs when the contender prints ``READY <phase>``
    (the driver starts the server's changes then). Waits first for the load to settle.
    A contender that fails is run once more (its results then say ``retried`` with the
    first exit code), so one crash does not cost the whole benchmark; a second failure
    raises. ``cwd`` (this checkout by default) is where a Python contender's ``bench``
    and ``client_cache`` come from (bench/bench_alternate.py runs two checkouts')."""
    first_failure: int | None = None
    for attempt in range(2):
        load = settle()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, cwd=cwd or ROOT.parent)
        results: dict[str, dict[str, Any]] = {}
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.strip()
            if line.startswith("READY ") and on_ready is not None:
                on_ready(line.split()[1])
            elif line.startswith("{"):
                result = json.loads(line)
                result["load"] = load
                if first_failure is not None:
                    result["retried"] = first_failure
                results[result["scenario"]] = result
        _, err = proc.communicate(timeout=900)
        if proc.returncode == 0:
            return results
        message = (f"{cmd[0]} {cmd[1:4]} exited with {proc.returncode}: "
                   f"{err[-2000:] or '(nothing on stderr)'}")
        if attempt == 1 or on_ready is not None:  # a server's load cannot be replayed
            raise RuntimeError(message)
        print(f"  {message}; running it once more", flush=True)
        first_failure = proc.returncode
    raise AssertionError("unreachable")


def count_pods(core: CoreV1Api, namespace: str) -> int:
    listed = core.list_namespaced_pod(namespace, limit=1)
    return len(listed.items) + (listed.metadata.remaining_item_count or 0)


def load(server: EmbeddedApiServerProcess, core: CoreV1Api, namespace: str, count: int) -> None:
    server.control("load", count=count, namespace=namespace, kind="pods")
    while count_pods(core, namespace) < count:
        time.sleep(0.05)


def list_bytes(core: CoreV1Api, namespace: str, pods: int) -> dict[str, int]:
    """The measured sizes: one whole LIST (resourceVersion 0) and its mean pod, and how
    many pages the paged path reads."""
    body = core.list_namespaced_pod(namespace, resource_version="0",
                                    _preload_content=False).data
    items = json.loads(body)["items"]
    pod = sum(len(json.dumps(i, separators=(",", ":"))) for i in items) // max(1, len(items))
    return {"list_bytes": len(body), "pod_bytes": pod,
            "pages": -(-pods // PAGE_SIZE), "page_size": PAGE_SIZE}


class Runs:
    """Results by section (``embedded``, ``replay``, ``real``, ``local``), variant key
    and scenario; each a list over the repeats."""

    def __init__(self) -> None:
        self.data: dict[str, dict[str, dict[str, Any]]] = {}

    def add(self, section: str, variant: Variant | str, results: dict[str, dict[str, Any]],
            **rename: str) -> None:
        key = variant.key if isinstance(variant, Variant) else variant
        label = variant.label if isinstance(variant, Variant) else LABELS[variant]
        entry = self.data.setdefault(section, {}).setdefault(key, {"label": label})
        for scenario, result in results.items():
            entry.setdefault(rename.get(scenario, scenario), []).append(result)


def compile_bytecode() -> None:
    """Compile client_cache's and the benchmark's modules to bytecode first, as installing
    a wheel does (pip compiles at install). An editable checkout has no bytecode, and
    where ``PYTHONDONTWRITEBYTECODE`` is set (this machine's default) imports do not
    cache it either, so every contender process compiled the library inside its timed
    sync: ``import client_cache.informers`` took 0.24 s instead of 0.06 s."""
    for package in ("client_cache", "bench"):
        if not compileall.compile_dir(str(ROOT.parent / package), quiet=1):
            raise RuntimeError(f"{package}: a module failed to compile")


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
    parser.add_argument("--replay-pods", type=int, default=10_000)
    parser.add_argument("--replay-events", type=int, default=100_000)
    parser.add_argument("--real-pods", type=int, default=30_000)
    parser.add_argument("--no-replay", action="store_true")
    parser.add_argument("--no-real", action="store_true")
    parser.add_argument("--objects", type=int, default=100_000, help="S4: cached pods")
    parser.add_argument("--lookup-seconds", type=float, default=0.3,
                        help="S4: seconds each kind of lookup is timed")
    parser.add_argument("--keys", type=int, default=50_000, help="S5: workqueue keys")
    parser.add_argument("--only", nargs="*", help="contenders to run (default: all)")
    parser.add_argument("--out", default=str(RESULTS),
                        help="directory for latest.json, latest.md and latest.png")
    parser.add_argument("--no-chart", action="store_true", help="no PNG")
    args = parser.parse_args()
    compile_bytecode()
    go_binary = build_go()

    def chosen(variants: list[Variant]) -> list[Variant]:
        return [v for v in variants if (go_binary or v.contender != "client-go")
                and (not args.only or v.contender in args.only)]

    runs = Runs()
    report: dict[str, Any] = {"args": vars(args), "date": time.strftime("%Y-%m-%d"),
                              "load_limit": LOADED, "sizes": {}}
    started = time.monotonic()
    probe(report, "at the start")
    embedded(args, chosen, go_binary, runs, report)
    if not args.no_replay:
        probe(report, "before the replay source")
        replay(args, chosen, go_binary, runs, report)
    binaries = find_binaries()
    if args.no_real:
        report["real_skipped"] = "--no-real"
    elif binaries is None:
        report["real_skipped"] = "no envtest binaries (run `make envtest`)"
    else:
        real(args, chosen, go_binary, runs, report, binaries)
    local(args, go_binary, runs)
    probe(report, "at the end")
    report["sections"] = runs.data
    report["wall_seconds"] = time.monotonic() - started
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "latest.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    table = markdown(report)
    (out / "latest.md").write_text(table, encoding="utf-8")
    print(table)
    if not args.no_chart:
        chart(report, out / "latest.png")
    print(f"{report['wall_seconds'] / 60:.1f} min", flush=True)
    return 0


def multiple_of_four(text: str) -> int:
    value = int(text)
    if value <= 0 or value % 4:
        raise argparse.ArgumentTypeError("must be a positive multiple of 4 (the mixed load "
                                         "cycles create, update, update, delete)")
    return value


def progress(section: str, variant: Variant, repeat: int, began: float,
             results: dict[str, dict[str, Any]]) -> None:
    parts = [f"{k} " + ", ".join(f"{m} {v:,.2f}" for m, v in r.items()
                                 if m in ("seconds", "events_per_second", "latency_p99_ms"))
             for k, r in results.items()]
    print(f"  {section} run {repeat + 1} {variant.label:<58} {time.monotonic() - began:4.0f} s "
          + " | ".join(parts), flush=True)


def embedded(args: argparse.Namespace, chosen: Callable[[list[Variant]], list[Variant]],
             go_binary: Path | None, runs: Runs, report: dict[str, Any]) -> None:
    """S1, S2, S2 latency, S3 and S6 against the embedded server."""
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        core = CoreV1Api(server.api_client())
        load(server, core, "s1", args.pods)
        # measuring the sizes is also the unmeasured first full LIST: the first contender
        # does not pay for the server settling after the load (25-40 % slower before)
        report["sizes"]["embedded"] = list_bytes(core, "s1", args.pods)
        print(f"embedded: {args.pods:,} pods loaded", flush=True)
        target = Target(server.url)

        def mixed(namespace: str, phases: dict[str, tuple[int, float]],
                  ) -> Callable[[str], None]:
            def start(phase: str) -> None:
                count, rate = phases[phase]
                server.control("load", count=count, namespace=namespace, kind="pods",
                               rate=rate, mix="mixed")
            return start

        for repeat in range(args.repeats):
            for v in chosen(EMBEDDED):
                events = args.model_events if v.contender in MODEL_CONTENDERS else args.events
                began = time.monotonic()
                results = run_contender(command(
                    v, go_binary, target, "s1", args.pods, "--events", str(events),
                    "--latency-events", str(args.latency_events)),
                    mixed("s1", {"throughput": (events, 0.0),
                                 "latency": (args.latency_events, args.rate)}))
                runs.add("embedded", v, results)
                progress("embedded", v, repeat, began, results)
            for v in chosen(FANOUT):
                namespace = f"s3-{v.contender}-{repeat}"
                load(server, core, namespace, 100)
                began = time.monotonic()
                results = run_contender(command(
                    v, go_binary, target, namespace, 100, "--events", str(args.fanout_events),
                    "--handlers", str(args.handlers)),
                    mixed(namespace, {"throughput": (args.fanout_events, 0.0)}))
                runs.add("embedded", v, results, throughput="fanout", sync="fanout_sync")
                progress("embedded S3", v, repeat, began, results)
            for v in chosen(TRANSFORMS):
                began = time.monotonic()
                results = run_contender(command(v, go_binary, target, "s1", args.pods,
                                                "--transform"))
                runs.add("embedded", v, results, sync="transform")
                progress("embedded S6", v, repeat, began, results)


def replay(args: argparse.Namespace, chosen: Callable[[list[Variant]], list[Variant]],
           go_binary: Path | None, runs: Runs, report: dict[str, Any]) -> None:
    """S2 and S3 from the replay source: each run gets a fresh server on the same files."""
    files = ReplayFiles(args.replay_pods, args.replay_events)
    report["sizes"]["replay"] = {"pod_bytes": files.pod_bytes, "pods": files.pods,
                                 "events": files.events}
    print(f"replay: {files.pods:,} pods, {files.events:,} changes of "
          f"{files.pod_bytes:,} B", flush=True)
    try:
        for repeat in range(args.repeats):
            for handlers, variants in ((1, REPLAY), (args.handlers, REPLAY_FANOUT)):
                for v in chosen(variants):
                    with ReplayServer(files=files) as server:
                        began = time.monotonic()
                        results = run_contender(
                            command(v, go_binary, Target(server.url), files.namespace,
                                    files.pods, "--events", str(files.events),
                                    "--handlers", str(handlers)),
                            lambda phase, s=server: s.start_events())
                    if handlers == 1:
                        runs.add("replay", v, results)
                    else:
                        runs.add("replay", v, results, throughput="fanout", sync="fanout_sync")
                    progress(f"replay x{handlers}", v, repeat, began, results)
    finally:
        files.close()


def real_pod(i: int) -> dict[str, Any]:
    """The ``i``-th pod written to the real server: the load generator's pod with the
    fields a client may set (the server adds managedFields and the rest)."""
    obj = sample_object("pods", i)
    md = obj["metadata"]
    meta = {"name": f"web-{i:06d}", "labels": md.get("labels"),
            "annotations": md.get("annotations"), "ownerReferences": md.get("ownerReferences")}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": obj["spec"]}


def real(args: argparse.Namespace, chosen: Callable[[list[Variant]], list[Variant]],
         go_binary: Path | None, runs: Runs, report: dict[str, Any], binaries: Any) -> None:
    """S1 against the real kube-apiserver + etcd, and the server's own delivery of each
    sync path's initial data in JSON and protobuf (the ``wire`` variants)."""
    with ControlPlane(binaries) as plane:
        core = CoreV1Api(plane.api_client())
        core.create_namespace({"metadata": {"name": "s1"}})
        began = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            for _ in pool.map(lambda i: core.create_namespaced_pod(
                    "s1", real_pod(i), _preload_content=False), range(args.real_pods)):
                pass
        print(f"real: {args.real_pods:,} pods created in {time.monotonic() - began:.0f} s",
              flush=True)
        report["sizes"]["real"] = list_bytes(core, "s1", args.real_pods)
        target = Target(plane.url, plane.token, str(plane.ca_file))
        for repeat in range(args.repeats):
            for v, flags in [*((v, ()) for v in chosen(REAL)),
                             *((v, ("--mode", "delivery")) for v in chosen(DELIVERY))]:
                began = time.monotonic()
                results = run_contender(command(v, go_binary, target, "s1", args.real_pods,
                                                *flags))
                runs.add("real", v, results)
                progress("real", v, repeat, began, results)


def local(args: argparse.Namespace, go_binary: Path | None, runs: Runs) -> None:
    """S4 (indexer and lister) and S5 (workqueue): no server."""
    for repeat in range(args.repeats):
        for name in S4_CONTENDERS:
            if (name == "client-go" and go_binary is None) or (args.only and name not in args.only):
                continue
            v = Variant(name)
            runs.add("local", name, run_contender(command(
                v, go_binary, None, "", 0, "--mode", "s4", "--objects", str(args.objects),
                "--seconds", str(args.lookup_seconds))))
            if name in S5_CONTENDERS:
                runs.add("local", name, run_contender(command(
                    v, go_binary, None, "", 0, "--mode", "s5", "--keys", str(args.keys))))
        print(f"  local run {repeat + 1} done", flush=True)


if __name__ == "__main__":
    sys.exit(main())
