"""The release check CI runs (`make package-check`): build the sdist and the wheel (the
wheel from the sdist, so the sdist is known to be complete), check what is inside each,
install the wheel into a clean virtualenv and run the README's quick start from it, away
from the source tree. Exits non-zero, saying why, on the first problem.

    python -m tests.package_check [--keep]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from client_cache.util.native import SOURCES

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN = re.compile(r"(^|/)(tests?|__pycache__|\.venv[^/]*|\.mypy_cache|\.pytest_cache|"
                       r"\.ruff_cache|\.hypothesis|build|dist)(/|$)|\.py[co]$")


def run(*args: str | Path, cwd: Path | None = None) -> str:
    result = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, args))}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def venv(path: Path) -> Path:
    run(sys.executable, "-m", "venv", path)
    python = path / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "--upgrade", "pip")
    return python


def check_names(kind: str, names: list[str], required: list[str]) -> None:
    bad = [n for n in names if FORBIDDEN.search(n)]
    if bad:
        sys.exit(f"{kind} holds files it must not: {bad[:10]}")
    missing = [r for r in required if not any(n.endswith(r) for n in names)]
    if missing:
        sys.exit(f"{kind} lacks {missing}")


def quick_start() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    marker = readme.index("<!-- quickstart")
    block = re.search(r"```python\n(.*?)```", readme[marker:], re.S)
    if block is None:
        sys.exit("no quick start block in README.md")
    return block.group(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="client_cache-package-"))
    try:
        builder = venv(work / "build-env")
        run(builder, "-m", "pip", "install", "-q", "build")
        dist = work / "dist"
        run(builder, "-m", "build", "--outdir", dist, REPO)
        (sdist,) = dist.glob("*.tar.gz")
        (wheel,) = dist.glob("*.whl")
        with tarfile.open(sdist) as archive:
            sdist_names = [n.split("/", 1)[1] for n in archive.getnames() if "/" in n]
        c_files = [f"client_cache/{name}" for sources, headers in SOURCES.values()
                   for name in (*sources, *headers)]  # every C part's, as setup.py builds
        check_names("sdist", sdist_names, ["pyproject.toml", "setup.py", "README.md", "LICENSE",
                                           "CHANGELOG.md", "client_cache/py.typed", *c_files])
        with zipfile.ZipFile(wheel) as archive:
            wheel_names = archive.namelist()
            metadata = next(archive.read(n).decode() for n in wheel_names
                            if n.endswith(".dist-info/METADATA"))
        check_names("wheel", wheel_names, ["client_cache/py.typed",
                                           "client_cache/__init__.py",
                                           "client_cache/testing/apiserver/__init__.py"])
        for needed in ("Requires-Dist: kubernetes", "Requires-Dist: urllib3",
                       "Provides-Extra: prometheus", "License-Expression: Apache-2.0",
                       "Classifier: Development Status"):
            if needed not in metadata:
                sys.exit(f"the wheel's METADATA lacks {needed!r}")
        python = venv(work / "clean-env")
        run(python, "-m", "pip", "install", "-q", wheel)
        script = work / "quickstart.py"
        script.write_text(quick_start(), encoding="utf-8")
        out = run(python, "-I", script, cwd=work)  # -I: not the source tree's package
        if "synced default/web-0" not in out:
            sys.exit(f"the quick start printed {out!r}")
        where = run(python, "-I", "-c", "import client_cache; print(client_cache.__file__)",
                    cwd=work)
        if str(REPO) in where:
            sys.exit(f"the quick start imported the source tree ({where.strip()})")
        # the C extensions (string sharing, the work queue's core) are built where a
        # compiler is (as here)
        built = run(python, "-I", "-c", "from client_cache import workqueue; "
                    "from client_cache.codec import protobuf_structs, sharing; "
                    "print(sharing.AVAILABLE, workqueue.C_CORE_AVAILABLE, "
                    "protobuf_structs.AVAILABLE)", cwd=work)
        for module in ("codec/_codec", "workqueue/_queue"):
            if built.strip() != "True True True" or not any(
                    re.fullmatch(rf"client_cache/{module}\..*\.so", n) for n in wheel_names):
                sys.exit(f"the wheel lacks the built client_cache.{module} ({built.strip()})")
        print(f"package check passed: {sdist.name} ({len(sdist_names)} files), "
              f"{wheel.name} ({len(wheel_names)} files); quick start: {out.strip()}")
    finally:
        if not args.keep:
            run("rm", "-rf", work)


if __name__ == "__main__":
    main()
