"""Building the real control plane's binaries: ``kube-apiserver``, ``etcd`` and
``envtest-keygen``, from source with the Go toolchain and the Go module proxy, at pinned
releases, cached outside the clone (:func:`cache_dir`). :mod:`client_cache.testing.envtest`
runs them; its documentation says what is built and how it is started.

controller-runtime's envtest downloads prebuilt binaries (``setup-envtest``); this builds
them instead, from what the Go module proxy serves. All names here are importable from
:mod:`client_cache.testing.envtest` too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = [
    "ETCD_VERSION",
    "GO_MINIMUM",
    "KUBERNETES_VERSION",
    "Binaries",
    "EnvtestError",
    "build",
    "cache_dir",
    "find_binaries",
    "find_go",
]

#: The pinned ``k8s.io/kubernetes`` release whose ``kube-apiserver`` is built.
KUBERNETES_VERSION = "v1.36.4"
#: The pinned etcd server release (the version Kubernetes 1.36.4's etcd client requires).
ETCD_VERSION = "v3.6.8"
#: The Go version the Kubernetes module declares; older toolchains cannot build it.
GO_MINIMUM = (1, 26)

# The k8s.io/kubernetes go.mod requires these staging modules as v0.0.0.
_STAGING_MODULES = (
    "api", "apiextensions-apiserver", "apimachinery", "apiserver", "cli-runtime",
    "client-go", "cloud-provider", "cluster-bootstrap", "code-generator", "component-base",
    "component-helpers", "controller-manager", "cri-api", "cri-client", "cri-streaming",
    "csi-translation-lib", "dynamic-resource-allocation", "endpointslice", "externaljwt",
    "kms", "kube-aggregator", "kube-controller-manager", "kube-proxy", "kube-scheduler",
    "kubectl", "kubelet", "metrics", "mount-utils", "pod-security-admission",
    "sample-apiserver", "streaming",
)

_ETCD_MAIN = """package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
"""

# Writes a fresh 2048-bit RSA key (PKCS#1 PEM) to the path given as the only argument.
_KEYGEN_MAIN = """package main

import (
\t"crypto/rand"
\t"crypto/rsa"
\t"crypto/x509"
\t"encoding/pem"
\t"os"
)

func main() {
\tkey, err := rsa.GenerateKey(rand.Reader, 2048)
\tif err != nil {
\t\tpanic(err)
\t}
\tblock := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
\tif err := os.WriteFile(os.Args[1], pem.EncodeToMemory(block), 0o600); err != nil {
\t\tpanic(err)
\t}
}
"""

class EnvtestError(RuntimeError):
    """The real control plane could not be built or started (the message says why)."""


@dataclass(frozen=True)
class Binaries:
    """Paths of the three built programs."""

    kube_apiserver: Path
    etcd: Path
    keygen: Path

    @classmethod
    def in_dir(cls, directory: Path) -> Binaries:
        """The binaries' paths in ``directory``."""
        return cls(directory / "kube-apiserver", directory / "etcd",
                   directory / "envtest-keygen")

    def exist(self) -> bool:
        """True when every binary is there."""
        return all(p.is_file() and os.access(p, os.X_OK)
                   for p in (self.kube_apiserver, self.etcd, self.keygen))


def cache_dir() -> Path:
    """Where the binaries of the pinned versions live (created by :func:`build`)."""
    override = os.environ.get("CLIENT_CACHE_ENVTEST_DIR")
    if override:
        return Path(override)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "client_cache" / "envtest" / f"k8s-{KUBERNETES_VERSION}_etcd-{ETCD_VERSION}"


def find_binaries() -> Binaries | None:
    """The built binaries, or None when :func:`build` has not run."""
    binaries = Binaries.in_dir(cache_dir())
    return binaries if binaries.exist() else None


# -- building ------------------------------------------------------------------------------------

def find_go() -> str | None:
    """The ``go`` command: on PATH, else Go's default install path; None without Go."""
    default = "/usr/local/go/bin/go"
    return shutil.which("go") or (default if os.access(default, os.X_OK) else None)


def _go() -> str:
    go = find_go()
    if go is None:
        raise EnvtestError(
            "the Go toolchain is needed to build kube-apiserver and etcd, but `go` is not on "
            f"PATH: install Go >= {GO_MINIMUM[0]}.{GO_MINIMUM[1]} (https://go.dev/dl/) or put "
            "prebuilt kube-apiserver, etcd and envtest-keygen binaries in "
            f"{cache_dir()} (or $CLIENT_CACHE_ENVTEST_DIR)"
        )
    out = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, check=False)
    version = out.stdout.strip().removeprefix("go")
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return go  # a development toolchain: let the build say if it is too old
    if (major, minor) < GO_MINIMUM and os.environ.get("GOTOOLCHAIN", "auto") == "local":
        raise EnvtestError(f"{go} is Go {version}; building Kubernetes {KUBERNETES_VERSION} "
                           f"needs Go >= {GO_MINIMUM[0]}.{GO_MINIMUM[1]}")
    return go


def _run(cmd: list[str], cwd: Path, log: TextIO, env: dict[str, str]) -> None:
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise EnvtestError(f"`{' '.join(cmd)}` failed in {cwd} (exit {proc.returncode}):\n"
                           f"{proc.stderr[-4000:]}")


def _apiserver_module(directory: Path) -> None:
    staging = KUBERNETES_VERSION.replace("v1.", "v0.", 1)
    replaces = "\n".join(f"\tk8s.io/{m} => k8s.io/{m} {staging}" for m in _STAGING_MODULES)
    (directory / "go.mod").write_text(
        f"module envtestapiserver\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes "
        f"{KUBERNETES_VERSION}\n\nreplace (\n{replaces}\n)\n", encoding="utf-8")


def build(*, force: bool = False, log: TextIO | None = None) -> Binaries:
    """Build (or reuse) the pinned binaries into :func:`cache_dir` and return them.

    Needs Go and the Go module proxy (``GOPROXY``, checked against the checksum database as
    usual). A cold build takes several minutes; later calls return at once. Each binary is
    written under a temporary name and renamed, so an interrupted build leaves nothing
    half-written behind.
    """
    log = log or sys.stderr
    target = Binaries.in_dir(cache_dir())
    if target.exist() and not force:
        return target
    go = _go()
    out_dir = cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod")
    version_pkg = "k8s.io/component-base/version"
    minor = KUBERNETES_VERSION.split(".")[1]
    apiserver_ldflags = " ".join([
        "-s -w",
        f"-X {version_pkg}.gitVersion={KUBERNETES_VERSION}",
        f"-X {version_pkg}.gitMajor=1",
        f"-X {version_pkg}.gitMinor={minor}",
        f"-X {version_pkg}.gitTreeState=clean",
    ])
    with tempfile.TemporaryDirectory(prefix="envtest-build-") as tmp:
        work = Path(tmp)
        steps: list[tuple[Path, str, list[list[str]]]] = []
        if force or not target.kube_apiserver.is_file():
            apiserver = work / "apiserver"
            apiserver.mkdir()
            _apiserver_module(apiserver)
            out = str(out_dir / "kube-apiserver.tmp")
            steps.append((apiserver, "kube-apiserver", [
                [go, "get", f"k8s.io/kubernetes/cmd/kube-apiserver@{KUBERNETES_VERSION}"],
                [go, "build", "-trimpath", "-ldflags", apiserver_ldflags, "-o", out,
                 "k8s.io/kubernetes/cmd/kube-apiserver"],
            ]))
        if force or not (target.etcd.is_file() and target.keygen.is_file()):
            tools = work / "tools"
            (tools / "etcd").mkdir(parents=True)
            (tools / "keygen").mkdir()
            (tools / "go.mod").write_text("module envtesttools\n\ngo 1.26.0\n",
                                          encoding="utf-8")
            (tools / "etcd" / "main.go").write_text(_ETCD_MAIN, encoding="utf-8")
            (tools / "keygen" / "main.go").write_text(_KEYGEN_MAIN, encoding="utf-8")
            steps.append((tools, "etcd", [
                [go, "get", f"go.etcd.io/etcd/server/v3@{ETCD_VERSION}"],
                [go, "build", "-trimpath", "-ldflags", "-s -w",
                 "-o", str(out_dir / "etcd.tmp"), "./etcd"],
            ]))
            steps.append((tools, "envtest-keygen", [
                [go, "build", "-trimpath", "-o", str(out_dir / "envtest-keygen.tmp"),
                 "./keygen"],
            ]))
        for cwd, name, commands in steps:
            started = time.monotonic()
            log.write(f"envtest: building {name}...\n")
            for cmd in commands:
                _run(cmd, cwd, log, env)
            os.replace(out_dir / f"{name}.tmp", out_dir / name)
            log.write(f"envtest: built {name} in {time.monotonic() - started:.0f} s\n")
    if not target.exist():  # pragma: no cover - a build that "worked" but wrote nothing
        raise EnvtestError(f"the build finished but {out_dir} lacks a binary")
    return target


# -- running -------------------------------------------------------------------------------------
