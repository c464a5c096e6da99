"""The Go programs the comparisons and interop tests run, built once by ``make envtest``.

Each program is built from its source directory in this repository with the Go module
proxy, into the envtest cache (``~/.cache/client_cache/envtest/go-programs/``, beside the real
kube-apiserver), under a name carrying a digest of its sources, so a fresh clone reuses a
build of the same sources and a changed source is built again:

* ``leader``: client-go's leader elector as a candidate process (``tests/go/leader``);
* ``clientgo-bench``: the client-go informer contender of ``make bench`` (``bench/go``);
* ``replay``: the replay source streaming pre-generated watch events (``bench/replay``);
* ``protoschema``: the generator of the protobuf field schema (``tools/protoschema``).

``make test`` never builds them (a cold build downloads hundreds of MB of modules and
takes minutes): :func:`built` returns None until ``make envtest`` has run, and the tests
that need one skip with that instruction (fail under ``CI=true``, which builds them).

    python -m bench.go_programs build      # what make envtest runs; prints each duration
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

from client_cache.testing.envtest import find_go
from client_cache.testing.envtest_build import cache_dir

__all__ = ["PROGRAMS", "build", "built", "missing_message"]

ROOT = Path(__file__).resolve().parents[1]

PROGRAMS: dict[str, Path] = {
    "leader": ROOT / "tests" / "go" / "leader",
    "clientgo-bench": ROOT / "bench" / "go",
    "replay": ROOT / "bench" / "replay",
    "protoschema": ROOT / "tools" / "protoschema",
}


def _binary(name: str) -> Path:
    """Where ``name`` built from its current sources lives."""
    source = PROGRAMS[name]
    digest = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file()
                       and p.suffix in (".go", ".mod", ".sum") and "bin" not in p.parts):
        digest.update(path.relative_to(source).as_posix().encode())
        digest.update(path.read_bytes())
    return cache_dir().parent / "go-programs" / f"{name}-{digest.hexdigest()[:16]}"


def built(name: str) -> Path | None:
    """The binary of ``name`` for the current sources, or None when not built yet."""
    binary = _binary(name)
    return binary if binary.is_file() else None


def missing_message(name: str) -> str:
    """What a test that needs ``name`` says when it is not built."""
    return (f"the Go program {name!r} is not built: run `make envtest` first (it builds the "
            "real kube-apiserver and the Go comparison programs; needs Go)")


def build(name: str) -> Path:
    """Build ``name`` if its current sources are not built yet; returns the binary."""
    binary = _binary(name)
    if binary.is_file():
        return binary
    go = find_go()
    if go is None:
        raise RuntimeError(f"building {name} needs the Go toolchain (`go` is not on PATH)")
    binary.parent.mkdir(parents=True, exist_ok=True)
    partial = binary.with_name(binary.name + ".tmp")
    subprocess.run([go, "build", "-trimpath", "-o", str(partial), "."], cwd=PROGRAMS[name],
                   check=True, timeout=1800,
                   env=dict(os.environ, GOFLAGS="-mod=mod", CGO_ENABLED="0"))
    partial.rename(binary)
    return binary


def main(argv: list[str]) -> int:
    if argv[1:] != ["build"]:
        print(__doc__, file=sys.stderr)
        return 2
    for name in PROGRAMS:
        started = time.monotonic()
        was = built(name)
        binary = build(name)
        took = time.monotonic() - started
        print(f"{name}: {'cached' if was else f'built in {took:.0f} s'} ({binary})",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
