"""The import contract of the layers (tools/check_layers.py, docs/concepts/layout.md): the
tree keeps it, and the check catches each kind of breach in a made-up package."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "check_layers.py"


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_layers", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_layers"] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


check = _checker()


def package(tmp_path: Path, files: dict[str, str]) -> Path:
    """A made-up ``client_cache`` under ``tmp_path`` with ``files`` (path: source) and an
    empty ``__init__.py`` in every folder."""
    root = tmp_path / "client_cache"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for folder in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        (folder / "__init__.py").touch()
    return root


def test_the_package_keeps_the_contract() -> None:
    done = subprocess.run([sys.executable, str(TOOL)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout
    assert "0 violation(s)" in done.stdout


@pytest.mark.parametrize(("source", "text", "rule"), [
    ("util/clock.py", "from client_cache import store\n", "layer util may not import layer cache"),
    ("util/clock.py", "import client_cache.codec._wire\n", "layer util may not import layer codec"),
    ("codec/wire.py", "from client_cache.store import x\n",
     "layer codec may not import layer cache"),
    ("store.py", "def f():\n    from client_cache.health import serve\n",
     "layer cache may not import layer health"),
    ("reflector.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
     "    from client_cache.aio import events\n", "layer cache may not import layer aio"),
    ("workqueue/queue.py", "from client_cache.runtime import Controller\n",
     "layer cache may not import layer runtime"),
    ("health/server.py", "from client_cache.aio import events\n",
     "layer health may not import layer aio"),
    ("store.py", "from client_cache.testing import apiserver\n",
     "layer cache may not import layer testing"),
    ("api/meta.py", "from client_cache.client import rest\n",
     "layer api may not import layer client"),
    ("api/meta.py", "from client_cache.codec import wire\n",
     "layer api may not import layer codec"),
    ("codec/wire.py", "from client_cache.api.meta import describe\n",
     "layer codec may not import layer api"),
    ("client/rest.py", "from client_cache.store import x\n",
     "layer client may not import layer cache"),
    ("client/rest.py", "from client_cache import errors\n",
     "layer client may not import layer cache"),
])
def test_an_import_that_climbs_a_layer_is_refused(tmp_path: Path, source: str, text: str,
                                                  rule: str) -> None:
    root = package(tmp_path, {"store.py": "", "util/clock.py": "", "codec/wire.py": "",
                              "health/server.py": "", "aio/events.py": "",
                              "runtime/controller.py": "", "reflector.py": "",
                              "workqueue/queue.py": "", "testing/apiserver.py": "",
                              "api/meta.py": "", "client/rest.py": "", "errors.py": "",
                              source: text})
    [found] = check.violations(root)
    assert rule in found and source.removesuffix(".py").replace("/", ".") in found


def test_what_the_contract_allows_passes(tmp_path: Path) -> None:
    root = package(tmp_path, {
        "util/clock.py": "",
        "codec/wire.py": "from client_cache.util import clock\n",
        "api/meta.py": "from client_cache.util.clock import x\n",
        "client/rest.py": "from client_cache.api import meta\n"
                          "from client_cache.codec import wire\n",
        "store.py": "from client_cache.codec import wire\nfrom client_cache.util.clock import x\n"
                    "from client_cache.client.rest import y\nfrom client_cache.api.meta import z\n",
        "runtime/controller.py": "from client_cache import store\n"
                                 "from client_cache.leaderelection import elector\n",
        "leaderelection/elector.py": "from client_cache.store import y\n",
        "testing/server.py": "from client_cache.runtime import controller\n",
        "informers/factory.py": "from client_cache import store\n",
    })
    assert check.violations(root) == []


def test_a_function_local_import_hiding_a_cycle_is_refused(tmp_path: Path) -> None:
    root = package(tmp_path, {
        "api/meta.py": "from client_cache.api.errors import E\n",
        "api/errors.py": "def f():\n    from client_cache.api.meta import describe\n",
        "store.py": "def g():\n    from client_cache.api.meta import describe\n",  # no cycle
    })
    [found] = check.violations(root)
    assert ("client_cache.api.errors (line 2) imports client_cache.api.meta inside a function"
            in found)
    assert "hiding a cycle" in found


def test_a_cycle_through_several_modules_is_found(tmp_path: Path) -> None:
    root = package(tmp_path, {
        "a.py": "from client_cache import b\n",
        "b.py": "from client_cache.c import x\n",
        "c.py": "def f():\n    import client_cache.a\n",
    })
    [found] = check.violations(root)
    assert "client_cache.c (line 2) imports client_cache.a inside a function" in found


def test_relative_imports_are_resolved(tmp_path: Path) -> None:
    root = package(tmp_path, {"util/clock.py": "from ..store import x\n", "store.py": ""})
    [found] = check.violations(root)
    assert "client_cache.util.clock (line 1) imports client_cache.store" in found


def test_the_command_fails_on_a_breach(tmp_path: Path) -> None:
    root = package(tmp_path, {"util/clock.py": "import client_cache.store\n",
                              "store.py": ""})
    done = subprocess.run([sys.executable, str(TOOL), str(root)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 1
    assert "1 violation(s)" in done.stdout


MOVED = {"meta": "api.meta", "schema": "api.schema", "labels": "api.labels",
         "fields": "api.fields", "apis": "api.lists", "watch": "api.watch",
         "status_errors": "api.errors", "transport": "client.transport",
         "rest": "client.rest", "pager": "client.pager",
         "stream_watcher": "client.stream_watcher", "codec.gc_policy": "util.gc_policy",
         # behind the public line
         "processor": "_processor", "reflector_watch": "_reflector_watch",
         "reflector_watch_list": "_reflector_watch_list", "synctrack": "_synctrack",
         "reflector_consistency": "_reflector_consistency", "workqueue.core": "workqueue._core",
         "runtime.leading": "runtime._leading", "sharding.membership": "sharding._membership",
         "sharding.ring": "sharding._ring", "sharding.keys": "sharding._keys",
         "sharding.sharder": "sharding._sharder",
         **{f"util.{name}": f"util._{name}" for name in (
             "env", "logs", "moved", "native", "parking", "server_answers", "sync_signal")},
         **{f"codec.{name}": f"codec._{name}" for name in (
             "decoding", "extension", "list_body", "protobuf_shapes", "protobuf_structs",
             "protobuf_schema", "sharing", "unfit", "watch_decoders", "wire")}}


def test_a_moved_module_imports_under_its_old_name_with_a_warning() -> None:
    # in a fresh interpreter: this one may have imported an old name already
    script = f"""
import importlib, warnings
for old, new in {MOVED!r}.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module("client_cache." + old)
    assert module is importlib.import_module("client_cache." + new), old
    assert module.__spec__.name == "client_cache." + new, old
    assert [w.category for w in caught] == [DeprecationWarning], (old, caught)
    assert "client_cache." + new in str(caught[0].message)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    from client_cache.listwatch import resource_path
from client_cache.client.rest import resource_path as moved
assert resource_path is moved and caught[0].category is DeprecationWarning
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    assert done.stdout.strip() == "ok", done.stderr


def test_the_new_modules_import_without_a_warning() -> None:
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c",
                           "import client_cache, client_cache.runtime, client_cache.testing, "
                           "client_cache.sharding, client_cache.aio, client_cache.crd"],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
