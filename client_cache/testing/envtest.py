"""A real control plane for tests: ``kube-apiserver`` and ``etcd`` as local processes.

This is the envtest approach (as in controller-runtime): no kubelet, no controller manager,
no containers; just the API server and its storage, on loopback, with throwaway
credentials. The binaries are *built from source* with the Go toolchain and the Go module
proxy, at pinned releases:

* ``kube-apiserver`` from the ``k8s.io/kubernetes`` module (:data:`KUBERNETES_VERSION`);
  that module refers to its staging modules (``k8s.io/api``, ``k8s.io/apiserver``...) as
  ``v0.0.0`` with local ``replace`` lines that do not apply to a dependent module, so the
  build module replaces each of them with the matching ``v0.x.y`` release;
* ``etcd`` (:data:`ETCD_VERSION`, the release the Kubernetes version's etcd client pins) as
  a three-line ``main`` around ``go.etcd.io/etcd/server/v3/etcdmain``;
* ``envtest-keygen``, a small Go program that writes the service-account signing key (so
  neither OpenSSL nor a Python crypto package is needed at run time).

The build is :mod:`client_cache.testing.envtest_build` (its names are importable from here
too). They are cached outside the clone, in ``$CLIENT_CACHE_ENVTEST_DIR`` or
``~/.cache/client_cache/envtest/k8s-<version>_etcd-<version>/``, and reused by later runs.

Command line (used by ``make envtest``)::

    python -m client_cache.testing.envtest build    # build what is missing, print the dir
    python -m client_cache.testing.envtest path     # print the dir, exit 1 if not built
    python -m client_cache.testing.envtest serve --kubeconfig PATH   # run until Ctrl-C

In Python::

    with ControlPlane() as cp:                   # etcd + kube-apiserver on free ports
        api = cp.api_client()                    # kubernetes.client.ApiClient, admin
        cp.compact()                             # compact etcd at its current revision
        cp.restart_apiserver()                   # etcd keeps the data

What :class:`ControlPlane` sets up, all in one temporary directory removed by ``stop``:
etcd with ``--unsafe-no-fsync``; the API server bound to 127.0.0.1 with a self-signed
serving certificate it generates for 127.0.0.1 (clients verify it against that
certificate), a fresh random bearer token for an ``admin`` user in ``system:masters``
(static token file), ``--authorization-mode=RBAC`` (so the admin is authorized through the
bootstrap ``cluster-admin`` binding, as on a real cluster), a fresh service-account key pair,
``--service-cluster-ip-range`` and ``--advertise-address``. The ``ServiceAccount``
admission plugin is disabled because no controller manager creates the ``default``
service accounts it would insist on. ``compaction_interval`` sets
``--etcd-compaction-interval``; ``uncached_resources`` turns the watch cache off for
some resources (``--watch-cache-sizes=<resource>#0``) so that their watches go straight to
etcd and a compaction gives them a real 410.

No server outlives its test run: ``stop`` (also run at exit) ends both processes, and on
Linux each is started with a parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), so
a test process killed outright (SIGKILL, or a SIGTERM that skips the clean-up) takes them
with it. The kernel ties that signal to the *thread* that started the process, so both
are started (and the API server restarted) by a thread the control plane owns, which
lives until ``stop``: ``restart_apiserver`` may be called from any thread.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import concurrent.futures
import contextlib
import ctypes
import json
import os
import queue
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from kubernetes.client import ApiClient, Configuration

from client_cache.testing.envtest_build import (
    ETCD_VERSION,
    KUBERNETES_VERSION,
    Binaries,
    EnvtestError,
    build,
    cache_dir,
    find_binaries,
    find_go,
)
from client_cache.util.signals import SignalRelay

__all__ = [
    "ETCD_VERSION",
    "KUBERNETES_VERSION",
    "Binaries",
    "ControlPlane",
    "EnvtestError",
    "build",
    "cache_dir",
    "find_binaries",
    "find_go",
    "main",
]

_LOOPBACK = "127.0.0.1"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_LOOPBACK, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def _dies_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when the thread starting it ends
    (Linux; None elsewhere), and that exits at once if that already happened."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the prctl took effect
            os._exit(1)

    return preexec


class _Spawner:
    """A thread that starts processes for the control plane and lives as long as it: a
    parent-death signal fires when the thread that started a process ends, so they must
    not be started by a caller's short-lived thread."""

    def __init__(self) -> None:
        self._requests: queue.Queue[
            tuple[Callable[[], Any], concurrent.futures.Future[Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="envtest-spawner",
                                        daemon=True)
        self._thread.start()

    def popen(self, args: list[str], **options: Any) -> subprocess.Popen[bytes]:
        future: concurrent.futures.Future[subprocess.Popen[bytes]] = concurrent.futures.Future()
        self._requests.put((lambda: subprocess.Popen(args, **options), future))
        return future.result()

    def close(self) -> None:
        self._requests.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join(1.0)

    def _serve(self) -> None:
        while (request := self._requests.get()) is not None:
            start, future = request
            try:
                future.set_result(start())
            except BaseException as err:  # handed to the caller
                future.set_exception(err)


def _terminate(proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


class ControlPlane:
    """etcd + kube-apiserver on free loopback ports (see the module documentation).

    ``compaction_interval`` (seconds; ``None`` keeps the server's default of 5 minutes, 0
    disables the API server's own compaction); ``uncached_resources`` (resource names such
    as ``"podtemplates"`` whose watch cache is off); ``extra_args`` are appended to the API
    server's command line. ``keep`` leaves the temporary directory (logs) after ``stop``.
    """

    def __init__(
        self,
        binaries: Binaries | None = None,
        *,
        compaction_interval: float | None = None,
        uncached_resources: tuple[str, ...] = (),
        extra_args: tuple[str, ...] = (),
        startup_timeout: float = 90.0,
        keep: bool = False,
    ) -> None:
        found = binaries or find_binaries()
        if found is None:
            raise EnvtestError(
                f"kube-apiserver and etcd are not built in {cache_dir()}: run `make envtest` "
                "(or `python -m client_cache.testing.envtest build`)")
        self.binaries = found
        self.compaction_interval = compaction_interval
        self.uncached_resources = uncached_resources
        self.extra_args = extra_args
        self.startup_timeout = startup_timeout
        self.keep = keep
        self.dir: Path | None = None
        self.token = ""
        self.port = 0
        self.etcd_url = ""
        self._etcd: subprocess.Popen[bytes] | None = None
        self._apiserver: subprocess.Popen[bytes] | None = None
        self._spawner: _Spawner | None = None
        self._logs: list[TextIO] = []

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The API server's ``https://127.0.0.1:port``."""
        return f"https://{_LOOPBACK}:{self.port}"

    @property
    def ca_file(self) -> Path:
        """The API server's self-signed serving certificate (clients trust it)."""
        assert self.dir is not None
        return self.dir / "certs" / "apiserver.crt"

    def start(self) -> ControlPlane:
        """Start etcd, then the API server; return when the API server is ready and the
        ``default`` namespace exists. Raises :class:`EnvtestError` (with the log's tail)
        if either fails to come up within ``startup_timeout``."""
        self.dir = Path(tempfile.mkdtemp(prefix="client-cache-envtest-"))
        self._spawner = _Spawner()
        atexit.register(self.stop)
        try:
            self.token = secrets.token_urlsafe(24)
            (self.dir / "tokens.csv").write_text(
                f'{self.token},admin,admin-uid,"system:masters"\n', encoding="utf-8")
            os.chmod(self.dir / "tokens.csv", 0o600)
            subprocess.run([str(self.binaries.keygen), str(self.dir / "sa.key")], check=True,
                           timeout=60)
            self._on_free_ports(self._start_etcd, self.dir / "etcd")
            self._on_free_ports(self._start_apiserver_on_a_free_port, self.dir / "certs")
        except BaseException:
            self.stop()
            raise
        return self

    def _on_free_ports(self, start: Callable[[], None], workdir: Path) -> None:
        """Run ``start`` on ports found free; when the process fails because another took
        one of them meanwhile (the gap between finding a port and the process binding it:
        busy machines running several control planes), try again on new ports, from a
        clean ``workdir``, up to three times in all."""
        for attempt in range(3):
            try:
                start()
                return
            except EnvtestError as err:
                if attempt == 2 or "address already in use" not in str(err):
                    raise
            shutil.rmtree(workdir, ignore_errors=True)

    def _start_apiserver_on_a_free_port(self) -> None:
        self.port = _free_port()
        self._start_apiserver()

    def _log(self, name: str) -> TextIO:
        assert self.dir is not None
        handle = open(self.dir / f"{name}.log", "a", encoding="utf-8")  # noqa: SIM115
        self._logs.append(handle)
        return handle

    def _start_etcd(self) -> None:
        assert self.dir is not None
        client, peer = _free_port(), _free_port()
        self.etcd_url = f"http://{_LOOPBACK}:{client}"
        peer_url = f"http://{_LOOPBACK}:{peer}"
        self._etcd = self._popen(
            [str(self.binaries.etcd), "--name", "envtest", "--data-dir", str(self.dir / "etcd"),
             "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
             "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
             "--initial-cluster", f"envtest={peer_url}", "--unsafe-no-fsync",
             "--log-level", "warn"],
            stdout=subprocess.DEVNULL, stderr=self._log("etcd"), start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2) as resp:
                    if json.loads(resp.read()).get("health") == "true":
                        return
            except (OSError, ValueError):
                pass
            self._check_alive(self._etcd, "etcd", deadline)
            time.sleep(0.1)

    def _apiserver_args(self) -> list[str]:
        assert self.dir is not None
        args = [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers={self.etcd_url}",
            f"--bind-address={_LOOPBACK}",
            f"--advertise-address={_LOOPBACK}",
            f"--secure-port={self.port}",
            f"--cert-dir={self.dir / 'certs'}",
            f"--token-auth-file={self.dir / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={self.dir / 'sa.key'}",
            f"--service-account-signing-key-file={self.dir / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--disable-admission-plugins=ServiceAccount",
            "--profiling=false",
        ]
        if self.compaction_interval is not None:
            args.append(f"--etcd-compaction-interval={self.compaction_interval:g}s")
        if self.uncached_resources:
            args.append("--watch-cache-sizes="
                        + ",".join(f"{r}#0" for r in self.uncached_resources))
        args.extend(self.extra_args)
        return args

    def _start_apiserver(self) -> None:
        self._apiserver = self._popen(
            self._apiserver_args(), stdout=subprocess.DEVNULL,
            stderr=self._log("kube-apiserver"), start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while True:
            self._check_alive(self._apiserver, "kube-apiserver", deadline)
            if self.ca_file.is_file():
                try:
                    if (self._get("/readyz") == b"ok"
                            and self._get("/api/v1/namespaces/default")):
                        return
                except (OSError, urllib.error.URLError, ssl.SSLError):
                    pass
            time.sleep(0.2)

    def _check_alive(
        self, proc: subprocess.Popen[bytes] | None, name: str, deadline: float
    ) -> None:
        assert self.dir is not None and proc is not None
        if proc.poll() is not None:
            raise EnvtestError(f"{name} exited with {proc.returncode}; its log ends with:\n"
                               f"{_tail(self.dir / f'{name}.log')}")
        if time.monotonic() > deadline:
            raise EnvtestError(f"{name} was not ready within {self.startup_timeout:g} s; its "
                               f"log ends with:\n{_tail(self.dir / f'{name}.log')}")

    def _get(self, path: str) -> bytes:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(self.url + path,
                                         headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(request, timeout=5, context=context) as resp:
            return bytes(resp.read())

    def _popen(self, args: list[str], **options: Any) -> subprocess.Popen[bytes]:
        assert self._spawner is not None, "start() first"
        return self._spawner.popen(args, preexec_fn=_dies_with_parent(), **options)

    def restart_apiserver(self) -> None:
        """Stop the API server and start it again on the same port; etcd keeps the data.
        The watch cache starts over, so watches from older resourceVersions get 410."""
        self.stop_apiserver()
        self.start_apiserver()

    def stop_apiserver(self) -> None:
        """Stop the API server alone (an outage: connections refused); etcd keeps the
        data until :meth:`start_apiserver` brings it back on the same port."""
        _terminate(self._apiserver)
        self._apiserver = None

    def start_apiserver(self) -> None:
        """Start the API server stopped by :meth:`stop_apiserver`, on the same port."""
        self._start_apiserver()

    def stop(self) -> None:
        """Stop both processes and remove the temporary directory (unless ``keep``)."""
        _terminate(self._apiserver)
        _terminate(self._etcd)
        self._apiserver = self._etcd = None
        if self._spawner is not None:
            self._spawner.close()
            self._spawner = None
        for handle in self._logs:
            handle.close()
        self._logs.clear()
        if self.dir is not None and not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- etcd --------------------------------------------------------------------------------------
    def _etcd_call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.etcd_url}{path}", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            result: dict[str, Any] = json.loads(resp.read())
            return result

    def etcd_revision(self) -> int:
        """etcd's current revision (what a quorum LIST would return as resourceVersion)."""
        reply = self._etcd_call("/v3/kv/range", {"key": base64.b64encode(b"\0").decode()})
        return int(reply["header"]["revision"])

    def compact(self, revision: int | None = None) -> int:
        """Compact etcd at ``revision`` (default: the current one) and return it: every
        older revision is gone, as after the API server's periodic compaction."""
        target = self.etcd_revision() if revision is None else revision
        self._etcd_call("/v3/kv/compaction", {"revision": str(target), "physical": True})
        return target

    # -- clients -----------------------------------------------------------------------------------
    def configuration(self) -> Any:
        """A ``kubernetes.client.Configuration`` for the admin user."""
        config = Configuration()
        config.host = self.url
        config.ssl_ca_cert = str(self.ca_file)
        config.verify_ssl = True
        config.api_key = {"authorization": self.token}
        config.api_key_prefix = {"authorization": "Bearer"}
        return config

    def pids(self) -> list[int]:
        """The process ids of the API server and etcd (for CPU accounting)."""
        return [p.pid for p in (self._apiserver, self._etcd) if p is not None]

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for the admin user."""
        return ApiClient(self.configuration())

    def kubeconfig(self) -> dict[str, Any]:
        """A kubeconfig for the admin user (embeds the serving certificate)."""
        ca = base64.b64encode(self.ca_file.read_bytes()).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "envtest",
                          "cluster": {"server": self.url, "certificate-authority-data": ca}}],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "envtest", "context": {"cluster": "envtest", "user": "admin"}}],
            "current-context": "envtest",
        }

    def write_kubeconfig(self, path: str) -> str:
        """Write :meth:`kubeconfig` as JSON (YAML loaders read it), mode 0600."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self.kubeconfig(), fh, indent=2)
        return path


def main(argv: list[str] | None = None) -> int:
    """``build``, ``path`` or ``serve`` (see the module documentation)."""
    parser = argparse.ArgumentParser(prog="python -m client_cache.testing.envtest")
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="build the pinned binaries (cached)")
    build_cmd.add_argument("--force", action="store_true", help="rebuild even if present")
    sub.add_parser("path", help="print the binaries' directory; exit 1 if not built")
    serve = sub.add_parser("serve", help="run etcd + kube-apiserver until interrupted")
    serve.add_argument("--kubeconfig", help="write an admin kubeconfig here")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            started = time.monotonic()
            binaries = build(force=args.force)
            print(f"envtest binaries ({KUBERNETES_VERSION}, etcd {ETCD_VERSION}) in "
                  f"{binaries.kube_apiserver.parent} ({time.monotonic() - started:.0f} s)")
            return 0
        if args.command == "path":
            print(cache_dir())
            return 0 if find_binaries() else 1
        with ControlPlane() as plane:
            if args.kubeconfig:
                plane.write_kubeconfig(args.kubeconfig)
            print(plane.url, flush=True)
            stop = threading.Event()
            with SignalRelay(lambda _: stop.set(), name="envtest"):
                stop.wait()
        return 0
    except EnvtestError as err:
        print(f"envtest: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
