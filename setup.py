"""The package's C extensions: the string-sharing walker (client_cache/sharing.py) and
the work queue's core operations (client_cache/workqueue/queue.py); everything else is in
pyproject.toml. Both are optional: where no C compiler is found the package installs
without them, objects keep their own strings and the work queue runs its Python code.
Each is built from the sources ``client_cache/native.py`` lists, with their hash compiled
in (``SOURCE_HASH``), which ``native.load`` checks against the sources beside it."""

import importlib.util
from pathlib import Path

from setuptools import Extension, setup

_spec = importlib.util.spec_from_file_location(
    "client_cache_native", Path(__file__).resolve().parent / "client_cache" / "native.py")
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


setup(ext_modules=[extension("_sharing"), extension("_workqueue")])
