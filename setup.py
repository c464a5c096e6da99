"""The package's native parts: the codec's decoders (``client_cache.codec._codec``, C in
client_cache/codec/csrc) and the work queue (``client_cache.workqueue._queue``, C in
client_cache/workqueue/csrc); everything else is in pyproject.toml. Both are optional:
where no C compiler is found the package installs without them and runs their Python
twins. Each is built from the sources ``client_cache/util/_native.py`` lists, with their
hash compiled in (``SOURCE_HASH``), which ``native.load`` checks against the sources beside
it."""

import importlib.util
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_spec = importlib.util.spec_from_file_location(
    "client_cache_native", Path(__file__).resolve().parent / "client_cache" / "util" / "_native.py")
assert _spec is not None and _spec.loader is not None
native = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(native)


def extension(name: str) -> Extension:
    sources, headers = native.SOURCES[name]
    return Extension(f"client_cache.{name}", [f"client_cache/{f}" for f in sources],
                     depends=[f"client_cache/{f}" for f in headers],
                     define_macros=[("CLIENT_CACHE_SOURCE_HASH",
                                     f'"{native.source_hash(name)}"')])


class OptionalBuildExt(build_ext):
    """Build each native part if a C compiler can; otherwise install without it and say
    so in one line (instead of setuptools' screenful per failed extension)."""

    def run(self) -> None:
        self.failed: list[str] = []
        try:
            super().run()
        except Exception as err:  # no compiler at all: nothing could be tried
            self.failed = [f"{type(err).__name__}: {err}".splitlines()[0]]
        if self.failed:
            print(f"client_cache: the native parts were not built ({self.failed[0]}); "
                  "installing the pure-Python path, which behaves the same, only slower. "
                  "For the native parts: install a C compiler and Python's headers (e.g. "
                  "apt install gcc python3-dev), then install again.", file=sys.stderr)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as err:
            self.failed.append(f"{ext.name}: {type(err).__name__}")


setup(ext_modules=[extension(name) for name in native.SOURCES],
      cmdclass={"build_ext": OptionalBuildExt})
