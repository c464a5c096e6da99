"""The package's native parts: the codec's decoders (``client_cache.codec._codec``, C in
client_cache/codec/csrc) and the work queue (``client_cache.workqueue._queue``, C in
client_cache/workqueue/csrc); everything else is in pyproject.toml. Both are optional:
where no C compiler is found the package installs without them and runs their Python
twins. Each is built from the sources ``client_cache/util/native.py`` lists, with their
hash compiled in (``SOURCE_HASH``), which ``native.load`` checks against the sources beside
it."""

import importlib.util
from pathlib import Path

from setuptools import Extension, setup

_spec = importlib.util.spec_from_file_location(
    "client_cache_native", Path(__file__).resolve().parent / "client_cache" / "util" / "native.py")
assert _spec is not None and _spec.loader is not None
native = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(native)


def extension(name: str) -> Extension:
    sources, headers = native.SOURCES[name]
    return Extension(f"client_cache.{name}", [f"client_cache/{f}" for f in sources],
                     depends=[f"client_cache/{f}" for f in headers],
                     define_macros=[("CLIENT_CACHE_SOURCE_HASH",
                                     f'"{native.source_hash(name)}"')],
                     optional=True)


setup(ext_modules=[extension(name) for name in native.SOURCES])
