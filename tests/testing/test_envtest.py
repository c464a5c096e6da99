"""The envtest module: clear errors without Go or binaries, the build module it writes,
and a control plane's lifecycle (temporary files, TLS, token, restart, compaction)."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import urllib3
from kubernetes import config as kconfig
from kubernetes.client import ApiException, CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.testing import envtest, envtest_build
from client_cache.testing.envtest import (
    KUBERNETES_VERSION,
    ControlPlane,
    EnvtestError,
    find_binaries,
)
from tests.fixtures import envtest_binaries, eventually


def test_missing_binaries_say_how_to_build_them(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIENT_CACHE_ENVTEST_DIR", str(tmp_path / "none"))
    assert find_binaries() is None
    with pytest.raises(EnvtestError, match="make envtest"):
        ControlPlane()
    assert envtest.main(["path"]) == 1


def test_missing_go_toolchain_is_a_clear_error(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLIENT_CACHE_ENVTEST_DIR", str(tmp_path / "none"))
    monkeypatch.setattr(envtest_build.shutil, "which", lambda name: None)
    monkeypatch.setattr(envtest_build.os, "access", lambda path, mode: False)
    with pytest.raises(EnvtestError, match=r"`go` is not on PATH.*Go >= 1\.26"):
        envtest.build()
    assert not (tmp_path / "none" / "kube-apiserver").exists()


def test_build_module_replaces_every_staging_module(tmp_path: Path) -> None:
    envtest_build._apiserver_module(tmp_path)
    gomod = (tmp_path / "go.mod").read_text()
    assert f"require k8s.io/kubernetes {KUBERNETES_VERSION}\n" in gomod
    staging = KUBERNETES_VERSION.replace("v1.", "v0.", 1)
    for module in ("api", "apimachinery", "apiserver", "client-go", "kubelet", "streaming"):
        assert f"\tk8s.io/{module} => k8s.io/{module} {staging}\n" in gomod
    assert gomod.count("=>") == len(envtest_build._STAGING_MODULES)


@pytest.fixture
def binaries() -> envtest.Binaries:
    return envtest_binaries()


def test_control_plane_lifecycle(binaries: envtest.Binaries, tmp_path: Path) -> None:
    plane = ControlPlane(binaries, compaction_interval=0,
                         uncached_resources=("podtemplates",))
    with plane:
        assert plane.dir is not None
        workdir = plane.dir
        args = plane._apiserver_args()
        assert "--etcd-compaction-interval=0s" in args
        assert "--watch-cache-sizes=podtemplates#0" in args
        assert "--authorization-mode=RBAC" in args and "--bind-address=127.0.0.1" in args
        # the kubeconfig verifies the server's certificate and authenticates with the token
        path = plane.write_kubeconfig(str(tmp_path / "kubeconfig"))
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with open(path, encoding="utf-8") as fh:
            loaded = json.load(fh)
        client = kconfig.new_client_from_config_dict(loaded)
        core = CoreV1Api(client)
        assert core.read_namespace("default").metadata.name == "default"
        # without the token the server refuses (anonymous is not authorized by RBAC)
        anonymous = plane.configuration()
        anonymous.api_key = {}
        with pytest.raises(ApiException) as info:
            CoreV1Api(envtest.ApiClient(anonymous)).list_namespace()
        assert info.value.status in (401, 403)
        # our list-watch verifies TLS as the kubeconfig says: without the CA it fails, it
        # never falls back to an unverified connection
        pods = GroupVersionResource("", "v1", "pods")
        assert "items" in ClientListerWatcher(client, pods, "default").list(ListOptions())
        untrusted = copy.deepcopy(loaded)
        for cluster in untrusted["clusters"]:
            cluster["cluster"].pop("certificate-authority-data", None)
            cluster["cluster"].pop("certificate-authority", None)
        stranger = kconfig.new_client_from_config_dict(untrusted)
        assert stranger.configuration.verify_ssl
        with pytest.raises(urllib3.exceptions.SSLError):
            ClientListerWatcher(stranger, pods, "default").list(ListOptions())
        with pytest.raises(urllib3.exceptions.SSLError):
            ClientListerWatcher(stranger, pods, "default").watch(ListOptions())
        stranger.close()
        # compaction and restart keep the data
        created = core.create_namespaced_config_map(
            "default", {"metadata": {"name": "survivor"}, "data": {"a": "1"}})
        compacted = plane.compact()
        assert compacted >= int(created.metadata.resource_version)
        # restarted by a thread that then ends (the servers' parent-death signal is tied
        # to the control plane's own thread, not to this one)
        restarter = threading.Thread(target=plane.restart_apiserver, name="test-restarter")
        restarter.start()
        restarter.join()
        again = CoreV1Api(plane.api_client()).read_namespaced_config_map("survivor", "default")
        assert again.metadata.resource_version == created.metadata.resource_version
        assert plane.etcd_revision() >= compacted
        client.close()
    # everything it wrote (token, keys, certificates, etcd data) is gone
    assert not workdir.exists()
    assert plane._apiserver is None and plane._etcd is None


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat_line = (entry / "stat").read_text()
            except OSError:
                continue
            # the fields after the command (which is in parentheses) start with state, ppid
            if int(stat_line.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_servers_die_with_a_killed_test_process(binaries: envtest.Binaries) -> None:
    """A process running a control plane that is SIGKILLed (no clean-up at all) leaves no
    etcd or kube-apiserver behind."""
    runner = subprocess.Popen([sys.executable, "-m", "client_cache.testing.envtest", "serve"],
                              stdout=subprocess.PIPE, text=True)
    servers: list[int] = []
    try:
        assert runner.stdout is not None
        assert runner.stdout.readline().startswith("https://127.0.0.1:")
        servers = _children(runner.pid)
        assert len(servers) == 2  # etcd and kube-apiserver
        runner.kill()
        runner.wait(5)
        eventually(lambda: all(_gone(pid) for pid in servers), timeout=10,
                   message=lambda: f"still running: {[p for p in servers if not _gone(p)]}")
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(5)
        for pid in servers:  # a failed run must not leave them running either
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_control_plane_moves_to_new_ports_when_one_is_taken(
        binaries: envtest.Binaries, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process binding a found port before etcd or the API server does (busy CI
    machines run several control planes): the start goes on, on new ports."""
    with contextlib.ExitStack() as held:
        taken = []
        for _ in range(2):  # one for etcd's client URL, one for the API server
            sock = held.enter_context(socket.create_server(("127.0.0.1", 0)))
            taken.append(sock.getsockname()[1])
        real = envtest._free_port
        # etcd: a taken client port and a free peer port, then two free ones; the API
        # server: a taken port, then a free one
        offered = iter([taken[0], real(), real(), real(), taken[1]])
        monkeypatch.setattr(envtest, "_free_port", lambda: next(offered, None) or real())
        with ControlPlane(binaries) as plane:
            assert plane.port not in taken
            assert f":{taken[0]}" not in plane.etcd_url
            assert plane._get("/readyz") == b"ok"
