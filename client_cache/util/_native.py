"""The package's optional native parts (``client_cache.codec._codec``,
``client_cache.workqueue._queue``): what each is built from, loading one only when it was
built from the sources beside it, and turning them all off.

``setup.py`` builds each part from :data:`SOURCES` and compiles the part's
:func:`source_hash` into it (``SOURCE_HASH``). In a checkout or an editable install the
C sources sit beside the Python modules; there :func:`load` refuses a part whose hash is
not that of those sources: one built before the last pull, whose functions are not the
ones the Python code calls (a missing function failed every LIST deep inside it, and the
reflector backed off forever). The package then runs its Python code, as where no C
compiler was found, and says so once in a warning naming the rebuild command. An
installed wheel has no C sources in it, and its parts are loaded as they are. Installed
without a C compiler, the package says once (a ``RuntimeWarning`` at the first use) that
the Python twins run and how to get the native parts.

Only the standard library is imported here: ``setup.py`` loads this file on its own to
read :data:`SOURCES` and :func:`source_hash`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
import warnings
from pathlib import Path
from typing import Any

__all__ = ["NATIVE_ENV", "SOURCES", "enabled", "load", "matches_sources", "source_hash"]

_log = logging.getLogger(__name__)

PACKAGE_DIR = Path(__file__).resolve().parent.parent

SOURCES: dict[str, tuple[list[str], list[str]]] = {
    "codec._codec": (
        [f"codec/csrc/{name}.c" for name in (
            "module", "strtable", "walk", "layouts", "shapes", "values", "listscan",
            "decode", "jsonscan", "jsonstring", "lines", "previous", "protobuf",
            "pbschema", "pbwire", "pbentry", "pbstruct")],
        [f"codec/csrc/{name}.h" for name in (
            "strtable", "walk", "shapes", "values", "listscan", "decode", "jsonparser",
            "lines", "previous", "protobuf", "pbdecoder", "pbstruct")]),
    "workqueue._queue": (["workqueue/csrc/queue.c"], []),
}
"""Each native part (its module under ``client_cache``) with its C sources and headers,
as paths under the package directory."""


def source_hash(name: str, directory: Path = PACKAGE_DIR) -> str | None:
    """The hash (16 hex digits) of C part ``name``'s sources and headers in
    ``directory``, in :data:`SOURCES` order; None when any of them is missing there."""
    sources, headers = SOURCES[name]
    digest = hashlib.sha256()
    for file in (*sources, *headers):
        try:
            data = (directory / file).read_bytes()
        except OSError:
            return None
        digest.update(file.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:16]


def matches_sources(module: Any, name: str, directory: Path = PACKAGE_DIR) -> bool:
    """Whether ``module`` (C part ``name``) was built from the sources in ``directory``;
    True when they are not there (an installed wheel)."""
    expected = source_hash(name, directory)
    return expected is None or getattr(module, "SOURCE_HASH", None) == expected


NATIVE_ENV = "CLIENT_CACHE_NATIVE"
"""Set to ``0`` before the package is imported to run the Python twin of every native
part (the codec's decoders and the work queue), as where no C compiler was found."""


def enabled() -> bool:
    """False when :data:`NATIVE_ENV` turns every native part off."""
    return os.environ.get(NATIVE_ENV, "1") != "0"


@functools.cache
def _say_pure_python() -> None:
    """Once per process: the native parts are not built, so the Python twins run."""
    warnings.warn("client_cache: the native parts are not built (installed without a C "
                  "compiler); running the pure-Python path, which behaves the same, only "
                  "slower. For the native parts, install a C compiler and Python's headers "
                  "and install client_cache again; CLIENT_CACHE_NATIVE=0 silences this.",
                  RuntimeWarning, stacklevel=3)


@functools.cache
def load(name: str) -> Any:
    """C part ``name`` (``client_cache.<name>``), or None when it is not built, was
    built from other sources than those beside it (then with a warning), or every
    native part is turned off (:data:`NATIVE_ENV`). Looked up once per name: the modules
    that share a part share the answer and the one warning."""
    if not enabled():
        return None
    try:
        module = importlib.import_module(f"client_cache.{name}")
    except ImportError:  # installed without a C compiler
        _say_pure_python()
        return None
    if not matches_sources(module, name):
        _log.warning("client_cache.%s was built from other C sources than those in %s; "
                     "running the Python code instead (rebuild it: pip install -e .)",
                     name, PACKAGE_DIR)
        return None
    return module
