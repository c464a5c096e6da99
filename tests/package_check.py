"""The release check CI runs (`make package-check`): build the sdist and the manylinux
wheel (the wheel from the sdist, so the sdist is known to be complete; repaired by
auditwheel, `tools/build_dist.py`), check what is inside each (no C sources in the wheel,
the metadata's author and Project-URLs), install the wheel into a clean virtualenv, check
its native parts load, run the README's quick start from it, away from the source tree,
and type-check user scripts against it (``tests/runtime/test_user_typing.py``); then install the
sdist where the C compiler fails and check that one line says so and the quick start
runs on the Python twins. Exits non-zero, saying why, on the first problem.

    python -m tests.package_check [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from client_cache.util._native import SOURCES
from tests.runtime.test_user_typing import check_user_scripts
from tools import build_dist
from tools.build_dist import run

REPO = Path(__file__).resolve().parent.parent
FORBIDDEN = re.compile(r"(^|/)(tests?|__pycache__|\.venv[^/]*|\.mypy_cache|\.pytest_cache|"
                       r"\.ruff_cache|\.hypothesis|build|dist)(/|$)|\.py[co]$")


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
        dist = work / "dist"
        sdist, (wheel,) = build_dist.build(dist, this_only=True)  # the manylinux wheel
        if "manylinux" not in wheel.name:
            sys.exit(f"the wheel is not a manylinux wheel: {wheel.name}")
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
        sources = [n for n in wheel_names if n.endswith((".c", ".h")) or "/csrc/" in n]
        if sources:
            sys.exit(f"the wheel carries C sources: {sources[:5]}")
        for needed in ("Requires-Dist: kubernetes", "Requires-Dist: urllib3",
                       "Provides-Extra: prometheus", "License-Expression: Apache-2.0",
                       "Classifier: Development Status", "Author: ", "Project-URL: "):
            if needed not in metadata:
                sys.exit(f"the wheel's METADATA lacks {needed!r}")
        python = venv(work / "clean-env")
        run(python, "-m", "pip", "install", "-q", wheel)
        script = work / "quickstart.py"
        script.write_text(quick_start(), encoding="utf-8")
        out = run(python, "-I", "-W", "error::RuntimeWarning", script, cwd=work)
        if "synced default/web-0" not in out:
            sys.exit(f"the quick start printed {out!r}")
        where = run(python, "-I", "-c", "import client_cache; print(client_cache.__file__)",
                    cwd=work)
        if str(REPO) in where:
            sys.exit(f"the quick start imported the source tree ({where.strip()})")
        # the native parts are in the repaired wheel and load
        built = run(python, "-I", "-c", "from client_cache import workqueue; "
                    "from client_cache.codec import protobuf_structs, sharing; "
                    "print(sharing.AVAILABLE, workqueue.C_CORE_AVAILABLE, "
                    "protobuf_structs.AVAILABLE)", cwd=work)
        for module in ("codec/_codec", "workqueue/_queue"):
            if built.strip() != "True True True" or not any(
                    re.fullmatch(rf"client_cache/{module}\..*\.so", n) for n in wheel_names):
                sys.exit(f"the wheel lacks the built client_cache.{module} ({built.strip()})")
        # types reach the reconcile from the wheel too (mypy --strict on user scripts; the
        # typed custom resources need the [struct] extra)
        run(python, "-m", "pip", "install", "-q", "mypy", f"{wheel}[struct]")
        typing_dir = work / "typing"
        typing_dir.mkdir()
        check_user_scripts(str(python), typing_dir)
        # from the sdist without a working C compiler: one line says so, and the package
        # runs its Python twins, saying so once
        bare = venv(work / "no-compiler-env")
        installed = subprocess.run(
            [str(bare), "-m", "pip", "install", "-v", str(sdist)], capture_output=True,
            text=True, check=False, env={**os.environ, "CC": "/bin/false"})
        said = [line for line in (installed.stdout + installed.stderr).splitlines()
                if "client_cache: the native parts were not built" in line]
        if installed.returncode != 0 or len(said) != 1:
            sys.exit(f"a compiler-less install did not say one line ({len(said)}); "
                     f"exit {installed.returncode}\n{installed.stderr[-2000:]}")
        fallback = subprocess.run(
            [str(bare), "-I", str(script)], cwd=work, capture_output=True, text=True,
            check=False)
        if "synced default/web-0" not in fallback.stdout or \
                "pure-Python path" not in fallback.stderr:
            sys.exit(f"without the native parts the quick start gave {fallback.stdout!r} "
                     f"{fallback.stderr[-1000:]!r}")
        print(f"package check passed: {sdist.name} ({len(sdist_names)} files), "
              f"{wheel.name} ({len(wheel_names)} files); quick start: {out.strip()}; "
              "types reach the reconcile; a compiler-less install says so and runs the "
              "Python twins")
    finally:
        if not args.keep:
            run("rm", "-rf", work)


if __name__ == "__main__":
    main()
