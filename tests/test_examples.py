"""The examples and the demo run as documented (each in its own interpreter, against the
embedded API server), within a time bound, and print what they promise."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config as kube_config
from kubernetes.client import CoreV1Api

from client_cache.testing.envtest import ControlPlane
from tests.fixtures import envtest_binaries

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(name: str, *args: str, timeout: float = 60) -> str:
    result = subprocess.run([sys.executable, str(EXAMPLES / name), *args],
                            capture_output=True, text=True, timeout=timeout, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result.stdout


def test_indexer_and_lister_example() -> None:
    out = run("indexer_and_lister.py")
    assert "on node-0: ['blog/web-0', 'shop/web-3']" in out
    assert 'lookup failed: 404 pod "db-0" not found' in out


def test_first_controller_example_replies_with_an_owned_child() -> None:
    assert run("first_controller.py") == "hello, Alice - owned by alice\n"


def test_workqueue_controller_example() -> None:
    out = run("workqueue_controller.py", "--seconds", "1.5", "--fail-rate", "0")
    assert "caches synced; starting workers" in out
    assert "pod default/web-4 is gone" in out
    assert "processed" in out.splitlines()[-1]


@pytest.mark.parametrize("name", ["sample_controller.py", "sample_controller_plain.py"])
def test_sample_controller_examples_converge(name: str) -> None:
    """Both ports of sample-controller apply the CRD, reconcile five Foos and print them in
    sync (the full scenarios run in tests/conformance/test_sample_controller.py)."""
    out = run(name)
    lines = [line for line in out.splitlines() if line.startswith("example-foo-")]
    assert lines == [f"example-foo-{i}: deployment foo-{i} available {1 + i % 3}/{1 + i % 3}"
                     for i in range(5)]


def test_cache_controller_example_deletes_everything_it_sees() -> None:
    out = run("cache_controller.py", "--pods", "4")
    deleted = sorted(line.split()[-1] for line in out.splitlines()
                     if line.startswith("deleted "))
    assert deleted == [f"default/doomed-{i}" for i in range(4)]
    assert out.splitlines()[-1] == "4 pods deleted; 0 left in the store"


def test_new_informer_example() -> None:
    out = run("new_informer.py", "--count", "3")
    lines = out.splitlines()
    for i in range(3):
        assert lines.index(f"added default/cm-{i}") < lines.index(f"deleted default/cm-{i}")
    assert lines[-1] == "3 deletions seen; the store holds 0 keys"


def test_factory_with_index_example() -> None:
    out = run("factory_with_index.py")
    assert "node-0 (zone a): ['blog/web-0', 'blog/web-6', 'shop/web-3']" in out
    assert "nodes in zone a: ['node-0', 'node-1']" in out
    assert "web pods in shop: ['web-1', 'web-3', 'web-5']" in out
    assert "after moving blog/web-0, node-2 runs ['blog/web-0', 'blog/web-2', 'shop/web-5']" in out


def test_foo_webhooks_example_defaults_and_refuses() -> None:
    out = run("foo_webhooks.py")
    assert 'created bare: spec {"deploymentName": "bare-deployment", "replicas": 1}' in out
    assert ("refused bad: admission webhook \"validate-foo.foos.samplecontroller.k8s.io\" "
            "denied the request: spec.deploymentName 'Not_A_Name' is not a DNS label") in out
    assert "created good" in out
    assert "refused the rename: " in out and "spec.deploymentName cannot change" in out


def test_custom_resource_example() -> None:
    out = run("custom_resource.py")
    assert "informing example.com/v1/widgets" in out
    assert "update default/widget-1 size=10" in out
    assert "delete default/widget-2 size=3" in out
    assert "lister holds 2: ['default/widget-0', 'default/widget-1']" in out


def test_relist_survives_example() -> None:
    out = run("relist_survives.py")
    assert re.search(r"after the cut \(re-watch, no relist\): cache matches the server "
                     r"\(5 pods; 1 fills", out), out
    assert "delete (tombstone: the watch missed it) default/web-0" in out
    assert "after compaction: cache matches the server (5 pods" in out
    assert out.splitlines()[-1].endswith("tombstones ['default/web-0']")


def test_demo_runs_to_its_summary() -> None:
    started = time.monotonic()
    out = run("demo.py", "--pods", "500", "--changes", "60", timeout=90)
    assert time.monotonic() - started < 60
    assert "syncing the initial list:" in out
    for phase in ("creating 60 pods", "updating 60 pods", "deleting 30 pods",
                  "relist (410 Expired)", "waiting for a resync tick", "done"):
        assert phase in out, phase
    assert "  stats handler: add 561, update 60, delete 30" in out
    # it fits an 80-column terminal (issue 59): two status lines and a summary, every
    # line at most 79 characters; the sync's progress counts the pods delivered
    assert max(len(line) for line in out.splitlines()) <= 79
    assert "pods delivered" in out
    assert "  the cache equals the server's 531 pods" in out
    # the final status line (printed once the workers stopped) agrees with the summary
    done = [line for line in out.splitlines() if "] done " in line][-1]
    processed = re.search(r" done +(\d+)", done)
    assert processed and f"keys processed {processed.group(1)}," in out
    assert "  informer: healthy; lists 2 (relists 1)" in out
    assert "interrupted" not in out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_demo_stops_promptly_on_a_signal(sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "demo.py"), "--pods", "500", "--changes", "100000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        started = time.monotonic()
        first = proc.stdout.readline()
        # something on the screen within a second, before the slow imports
        assert first == "client_cache demo: starting ...\n"
        assert time.monotonic() - started < 1.0
        first = proc.stdout.readline()
        match = re.search(r"pid (\d+)", first)
        assert match, first
        server_pid = int(match.group(1))
        for line in proc.stdout:  # wait until the workload runs
            if "creating 100000 pods" in line:
                break
        sent = time.monotonic()
        proc.send_signal(sig)
        # the bound is on the demo's own stop (its last line says everything stopped: the
        # workers, informers and the server process, reaped); the interpreter's teardown
        # after it is not the library's and takes a second on a loaded machine
        stopped_at = None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "interrupted; everything stopped" in line:
                stopped_at = time.monotonic()
                break
        rest, err = proc.communicate(timeout=10)
        out = "".join(lines) + rest
        assert stopped_at is not None, out
        assert stopped_at - sent < 2.0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert "interrupted; everything stopped" in out
    with pytest.raises(ProcessLookupError):
        os.kill(server_pid, 0)  # the server process is gone (and reaped)


@pytest.fixture(scope="module")
def real_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A kubeconfig for a real kube-apiserver (envtest), or a skip without the binaries."""
    with ControlPlane(envtest_binaries()) as plane:
        path = plane.write_kubeconfig(str(tmp_path_factory.mktemp("kc") / "kubeconfig"))
        CoreV1Api(plane.api_client()).create_namespaced_config_map(
            "default", {"metadata": {"name": "existing"}, "data": {"a": "1"}})
        yield path


def test_examples_read_a_real_cluster_with_a_kubeconfig(real_kubeconfig: str) -> None:
    """With --kubeconfig the examples only read: they report what is there, change nothing."""
    out = run("new_informer.py", "--kubeconfig", real_kubeconfig, timeout=90)
    assert "added default/existing" in out and "deleted" not in out
    out = run("custom_resource.py", "--kubeconfig", real_kubeconfig,
              "--resource", "v1/configmaps", "--seconds", "1", timeout=90)
    assert "informing core/v1/configmaps" in out
    assert "default/existing" in out.splitlines()[-1]
    out = run("cache_controller.py", "--kubeconfig", real_kubeconfig, timeout=90)
    assert "0 pods deleted" in out.splitlines()[-1]
    out = run("demo.py", "--kubeconfig", real_kubeconfig, "--seconds", "1", timeout=90)
    assert "watching (read-only)" in out and "summary:" in out
    assert "interrupted" not in out
    # nothing was changed on the server
    with open(real_kubeconfig, encoding="utf-8") as fh:
        client = kube_config.new_client_from_config_dict(json.load(fh))
    names = [c.metadata.name for c in CoreV1Api(client).list_namespaced_config_map(
        "default").items]
    assert "existing" in names and not [n for n in names if n.startswith("cm-")]
    client.close()


def test_read_modify_write_example() -> None:
    out = run("read_modify_write.py")
    assert "dict mode: dict-mode is Running" in out
    assert "model mode: model-mode is Running, Ready=True" in out
    assert "to_model round trip equal: True" in out


def test_async_operator_example() -> None:
    out = run("async_operator.py")
    for i, team in enumerate(("payments", "search", "search")):
        assert f"reconcile: created default/web-{i}-team (team {team})" in out
        assert f"events(): ADDED default/web-{i}-team team={team}" in out
    assert "controller: 3 reconciles, 0 errors" in out
    assert "config maps: web-0-team, web-1-team, web-2-team" in out
    assert "library threads left: []" in out
