"""client_cache.util._native: a C part is loaded only when it was built from the sources beside
it, so a checkout pulled without a rebuild runs the Python code instead of calling
functions its old build lacks."""

from __future__ import annotations

import importlib
import logging
import os
import shutil
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from client_cache.util import _native as native

pytestmark = pytest.mark.native_twins  # make test-no-native runs it: the loader itself


@pytest.fixture(autouse=True)
def fresh_loads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test looks its parts up anew (``native.load`` answers once per name), with
    the parts on (these tests are of the loader, also in the leg that turns them off)."""
    monkeypatch.delenv(native.NATIVE_ENV, raising=False)
    native.load.cache_clear()
    yield
    native.load.cache_clear()


@pytest.mark.parametrize("name", sorted(native.SOURCES))
def test_the_built_parts_carry_the_hash_of_the_sources_beside_them(name: str) -> None:
    try:
        module = importlib.import_module(f"client_cache.{name}")
    except ImportError:
        pytest.skip(f"client_cache.{name} is not built here (no C compiler)")
    assert native.source_hash(name) == module.SOURCE_HASH
    assert native.load(name) is module


@pytest.mark.parametrize("stale", [
    types.SimpleNamespace(SOURCE_HASH="0" * 16),  # built from older sources
    types.SimpleNamespace(),  # built before the parts carried a hash
])
def test_a_part_built_from_other_sources_is_refused_with_a_warning(
        stale: object, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(native.importlib, "import_module", lambda _name: stale)
    with caplog.at_level(logging.WARNING, logger="client_cache.util._native"):
        assert native.load("codec._codec") is None
        assert native.load("codec._codec") is None  # asked again: no second warning
    (record,) = caplog.records
    assert "client_cache.codec._codec" in record.getMessage()
    assert "pip install -e ." in record.getMessage()


def test_a_part_that_is_not_built_is_none_and_said_once(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 60: installed without a C compiler, the package says once that the Python
    twins run and how to get the native parts (a RuntimeWarning, not a log line)."""
    def missing(name: str) -> object:
        raise ImportError(name)
    monkeypatch.setattr(native.importlib, "import_module", missing)
    native._say_pure_python.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="client_cache.util._native"), \
                pytest.warns(RuntimeWarning, match="pure-Python path") as said:
            assert native.load("workqueue._queue") is None
            assert native.load("codec._codec") is None
        assert len(said) == 1 and "C compiler" in str(said[0].message)
        assert caplog.records == []
    finally:
        native._say_pure_python.cache_clear()


def test_without_the_sources_beside_it_any_build_is_taken(tmp_path: Path) -> None:
    """An installed wheel holds no C sources: its parts are loaded as they are."""
    assert native.source_hash("codec._codec", tmp_path) is None
    assert native.matches_sources(types.SimpleNamespace(), "codec._codec", tmp_path)


def test_the_hash_follows_every_source_and_header(tmp_path: Path) -> None:
    sources, headers = native.SOURCES["codec._codec"]
    for file in (*sources, *headers):
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(native.PACKAGE_DIR / file, tmp_path / file)
    assert native.source_hash("codec._codec", tmp_path) == native.source_hash("codec._codec")
    seen = {native.source_hash("codec._codec")}
    for file in (sources[-1], headers[0]):
        with (tmp_path / file).open("ab") as fh:
            fh.write(b"\n")
        seen.add(native.source_hash("codec._codec", tmp_path))
    assert len(seen) == 3


def test_native_0_turns_every_part_off() -> None:
    """With CLIENT_CACHE_NATIVE=0 the package imports and runs its Python twins: no
    native module is loaded, a LIST body and a watch line decode as they do natively."""
    code = (
        "import sys\n"
        "from client_cache.codec import extension, sharing\n"
        "from client_cache import workqueue\n"
        "from client_cache.client.stream_watcher import json_lines\n"
        "assert not extension.AVAILABLE and not sharing.AVAILABLE\n"
        "assert not workqueue.C_CORE_AVAILABLE and not workqueue.new().c_core\n"
        "assert not [m for m in sys.modules if m.endswith(('._codec', '._queue'))]\n"
        "[e] = json_lines().decode(b'{\"type\":\"ADDED\",\"object\":{\"a\":1}}\\n')\n"
        "assert e.object == {'a': 1}, e\n"
        "print('ok')\n")
    env = {**os.environ, native.NATIVE_ENV: "0"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=False)
    assert done.stdout.strip() == "ok", done.stderr


def test_native_parts_are_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(native.NATIVE_ENV, raising=False)
    assert native.enabled()
    monkeypatch.setenv(native.NATIVE_ENV, "0")
    assert not native.enabled()
    assert native.load("codec._codec") is None
