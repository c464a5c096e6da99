"""The benchmark's Python contenders take the sync path they are labelled with, and the
floor reads what the others read: run as ``make bench`` runs them, at a small scale."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.client import CoreV1Api

from bench import bench_compare, bench_pinning, contenders
from bench.replay import ReplayServer
from client_cache.testing.apiserver import WRITTEN_AT_ANNOTATION, EmbeddedApiServer
from tests.fixtures import go_program

# The benchmark's harness, not the library: one Python (make test) is enough.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PODS = 1100  # three pages of 500


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer() as srv:
        core = CoreV1Api(srv.api_client())
        for i in range(PODS):
            core.create_namespaced_pod("s1", {"metadata": {"name": f"p{i}"}})
        yield srv


def contender(*args: str) -> dict[str, dict[str, float]]:
    done = subprocess.run([sys.executable, "-m", "bench.contenders", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {line["scenario"]: line for line in lines}


@pytest.mark.parametrize(("name", "sync", "lists"), [
    ("cc-dict", "list", 1), ("cc-dict", "watch-list", 0), ("cc-dict", "paged", 3),
    ("cc-dict-skip", "list", 1), ("cc-dict-skip", "watch-list", 0),
    ("floor", "list", 1), ("floor", "watch-list", 0)])
def test_contenders_take_the_sync_path_asked_for(
        server: EmbeddedApiServer, name: str, sync: str, lists: int) -> None:
    before = server.list_requests
    result = contender(name, "--server", server.url, "--namespace", "s1",
                       "--expect", str(PODS), "--sync", sync)
    assert result["sync"]["objects"] == PODS
    assert server.list_requests - before == lists


@pytest.mark.parametrize("sync", ["list", "watch-list"])
def test_client_cache_contenders_ask_for_protobuf(server: EmbeddedApiServer,
                                                   sync: str) -> None:
    before = server.list_requests
    result = contender("cc-dict", "--server", server.url, "--namespace", "s1",
                       "--expect", str(PODS), "--sync", sync, "--protobuf")
    assert result["sync"]["objects"] == PODS
    assert server.list_requests - before == (1 if sync == "list" else 0)
    with pytest.raises(subprocess.CalledProcessError) as failed:
        contender("k8s-informer", "--server", server.url, "--namespace", "s1",
                  "--expect", str(PODS), "--protobuf")
    assert "k8s-informer reads JSON only" in failed.value.stderr


def test_only_client_cache_takes_other_paths(server: EmbeddedApiServer) -> None:
    with pytest.raises(subprocess.CalledProcessError) as failed:
        contender("k8s-informer", "--server", server.url, "--namespace", "s1",
                  "--expect", str(PODS), "--sync", "paged")
    assert "syncs with a LIST only" in failed.value.stderr


@pytest.mark.parametrize("sync", ["list", "watch-list"])
def test_the_wire_contender_times_delivery_and_nothing_else(
        server: EmbeddedApiServer, sync: str) -> None:
    result = contender("wire", "--mode", "delivery", "--server", server.url,
                       "--namespace", "s1", "--sync", sync)
    assert result["delivery"]["bytes"] > PODS * len('{"metadata":{"name":"p0"}}')
    assert result["delivery"]["content_type"].startswith("application/json")
    with pytest.raises(subprocess.CalledProcessError) as failed:
        contender("wire", "--server", server.url, "--namespace", "s1", "--expect", "1")
    assert "wire runs in delivery mode only" in failed.value.stderr


@pytest.mark.parametrize("sync", ["list", "watch-list"])
def test_the_floor_syncs_then_reads_every_change(sync: str) -> None:
    go_program("replay")
    with ReplayServer(pods=300, events=2000) as replay:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.contenders", "floor", "--server", replay.url,
             "--namespace", "bench", "--expect", "300", "--events", "2000", "--sync", sync],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        results = {}
        try:
            for line in proc.stdout:
                if line.startswith("READY"):
                    replay.start_events()
                elif line.startswith("{"):
                    result = json.loads(line)
                    results[result["scenario"]] = result
            assert proc.wait(60) == 0
        finally:  # a contender left waiting dies with the test
            proc.kill()
            proc.wait()
    assert results["sync"]["objects"] == 300
    assert results["throughput"]["events"] == 2000
    assert results["throughput"]["events_per_second"] > 0


def test_client_go_paged_variant_watches_from_its_list(server: EmbeddedApiServer) -> None:
    """client-go's tweak also runs on watches, before the client marks them as watches: a
    tweak that reset every resourceVersion made the watch replay all pods as ADDED, which
    the contender counted as the changes it waits for."""
    binary = go_program("clientgo-bench")
    core = CoreV1Api(server.api_client())
    before = server.list_requests
    proc = subprocess.Popen(
        [str(binary), "--server", server.url, "--namespace", "s1", "--expect", str(PODS),
         "--sync", "paged", "--events", "4", "--latency-events", "4"],
        stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    results = {}
    created = 0
    try:
        for line in proc.stdout:
            if line.startswith("READY"):
                for _ in range(4):  # wall time: compared with the Go process's own clock
                    stamp = {WRITTEN_AT_ANNOTATION: f"{time.time():.6f}"}
                    core.create_namespaced_pod("s1", {"metadata": {
                        "name": f"new{created}", "annotations": stamp}})
                    created += 1
            elif line.startswith("{"):
                result = json.loads(line)
                results[result["scenario"]] = result
        assert proc.wait(60) == 0
    finally:  # a contender left waiting (a timeout, a failed create) dies with the test
        proc.kill()
        proc.wait()
    assert server.list_requests - before == 3  # 1,100 pods in pages of 500
    assert results["sync"]["objects"] == PODS
    assert results["latency"]["events"] == 4  # the changes made, and nothing replayed


def test_a_contender_that_crashes_once_is_run_again_and_marked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One crashed contender does not end the benchmark: it runs once more and its
    results say so; a second crash raises with the exit code."""
    monkeypatch.setattr(bench_compare, "settle", lambda: 0.0)
    marker = tmp_path / "crashed-once"
    script = ("import json, pathlib, sys\n"
              f"m = pathlib.Path({str(marker)!r})\n"
              "if not m.exists():\n"
              "    m.touch(); sys.exit(7)\n"
              "print(json.dumps({'scenario': 'sync', 'seconds': 1.0}))\n")
    results = bench_compare.run_contender([sys.executable, "-c", script])
    assert results == {"sync": {"scenario": "sync", "seconds": 1.0, "load": 0.0,
                                "retried": 7}}
    with pytest.raises(RuntimeError, match="exited with 3"):
        bench_compare.run_contender([sys.executable, "-c", "import sys; sys.exit(3)"])


def test_the_counter_stamps_the_marked_event_in_the_handler(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The throughput span starts at the marked event's own time, not when the main thread
    next looks: with every event in before it wakes (a contender pinned beside its server
    failed CI so, dividing by a span of 0), the span still runs first to last event."""
    ticks = iter([10.0, 11.0, 12.5, 14.0])
    monkeypatch.setattr(contenders.time, "perf_counter", lambda: next(ticks))
    counter = contenders.Counter()
    counter.bump()  # the sync's event, before the mark
    counter.mark = 2
    counter.bump()
    counter.bump()
    counter.bump()
    counter.wait_for(4, timeout=0)
    assert (counter.marked, counter.last) == (11.0, 14.0)


def test_a_pinned_replay_server_runs_every_thread_on_the_cpus_given() -> None:
    """bench_pinning's server layouts: ``ReplayServer.pin`` moves each of the Go
    program's threads (not only its first) to the CPUs given."""
    go_program("replay")
    cpus = sorted(os.sched_getaffinity(0))
    with ReplayServer(pods=10, events=4) as replay:
        tasks = Path(f"/proc/{replay.pid}/task")
        assert len(list(tasks.iterdir())) > 1  # a Go program runs several threads
        replay.pin({cpus[-1]})
        for task in tasks.iterdir():
            assert os.sched_getaffinity(int(task.name)) == {cpus[-1]}


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or shutil.which("taskset") is None,
                    reason="bench_pinning needs two CPUs and taskset")
def test_bench_pinning_runs_each_layout_and_reports_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m bench.bench_pinning`` at a small scale: each layout's contender takes
    every change, and the reports (JSON and table) have one entry per layout, in order."""
    monkeypatch.setattr(bench_compare, "settle", lambda: 0.0)
    monkeypatch.setattr(sys, "argv", ["bench_pinning", "--pods", "50", "--events", "200",
                                      "--repeats", "1", "--out", str(tmp_path)])
    go_program("replay")
    bench_pinning.main()
    report = json.loads(next(tmp_path.glob("pinning-*.json")).read_text())
    assert (report["pods"], report["events"], report["repeats"]) == (50, 200, 1)
    assert list(report["layouts"]) == list(bench_pinning.LAYOUTS)
    for layout, runs in report["layouts"].items():
        (result,) = runs["throughput"]
        assert result["events"] == 200 and result["events_per_second"] > 0, layout
    table = next(tmp_path.glob("pinning-*.md")).read_text()
    assert [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| ")
            and not line.startswith("| Layout") and not line.startswith("|---")] == [
        f"| {layout}" for layout in bench_pinning.LAYOUTS]
