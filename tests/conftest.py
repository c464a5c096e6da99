"""Shared fixtures: every test is checked for leaked threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import freezegun
import pytest

from client_cache.codec import _extension as extension
from client_cache.codec import _protobuf_structs as protobuf_structs
from client_cache.codec import _sharing as sharing
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.util import _native as native
from client_cache.util.features import WATCH_LIST_CLIENT, feature_gates
from client_cache.workqueue import C_CORE_AVAILABLE, C_CORE_ENV
from tests.fixtures import missing, missing_native

# freezegun scans every loaded module when it starts; touching the kubernetes client's lazily
# loaded pydantic models then makes pydantic build schemas against freezegun's fake datetime
# class and fail. Those packages never need frozen time here.
freezegun.configure(extend_ignore_list=["kubernetes", "pydantic", "pydantic_core"])


def alive_threads() -> set[threading.Thread]:
    """Threads alive now (for fixtures that check leaks themselves)."""
    return _alive_threads()


def _alive_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.is_alive()}


@pytest.fixture(autouse=True)
def no_thread_leak(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that leaves a thread running more than 1 s after it returns.

    The library's contract is that every thread it starts ends within 1 s of its stop
    signal; a test must give that signal before it returns. Tests marked
    ``threads_outlive_test`` share a module-scoped system whose fixture checks this at its
    own teardown instead.
    """
    if request.node.get_closest_marker("threads_outlive_test"):
        yield
        return
    before = _alive_threads()
    yield
    deadline = time.monotonic() + 1.0
    leaked = _alive_threads() - before
    for thread in leaked:
        thread.join(max(0.0, deadline - time.monotonic()))
    still = sorted(t.name for t in _alive_threads() - before)
    assert not still, f"threads still alive 1 s after the test: {still}"


@pytest.fixture
def empty_sharing_tables() -> Iterator[None]:
    """The sharing tables emptied before and after the test (client_cache.codec._sharing), so
    what it shares does not depend on the tests before it."""
    sharing.clear_table()
    yield
    sharing.clear_table()


@pytest.fixture
def embedded_server() -> Iterator[EmbeddedApiServer]:
    """A fresh embedded API server for the test (stopped after it)."""
    with EmbeddedApiServer() as srv:
        yield srv


@pytest.fixture
def server(embedded_server: EmbeddedApiServer) -> EmbeddedApiServer:
    """The embedded server under the name most tests use (a module's own ``server``
    fixture, with other options, takes precedence)."""
    return embedded_server


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A ``native_only`` test is of the native part itself: its Python-twin variant
    (``native_impl`` = ``"python"``) is dropped at collection, not run to skip. With the
    native parts turned off (``CLIENT_CACHE_NATIVE=0``, ``make test-no-native``) the
    native variants and the ``needs_native`` tests are dropped the same way: in that leg
    they cannot run. Every test
    that takes ``native_impl`` is marked ``native_twins`` (the leg selects by it)."""
    for item in items:
        if "native_impl" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.native_twins)
    off = not native.enabled()

    def cannot_run(item: pytest.Item) -> bool:
        if off and item.get_closest_marker("needs_native") is not None:
            return True
        callspec = getattr(item, "callspec", None)
        variant = callspec.params.get("native_impl") if callspec is not None else None
        if variant == "native":
            return off
        return variant == "python" and item.get_closest_marker("native_only") is not None
    dropped = [item for item in items if cannot_run(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not cannot_run(item)]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A ``needs_native`` test runs only on the built codec: skipped without it, failed
    under ``CI=true`` (:func:`tests.fixtures.missing_native`)."""
    if item.get_closest_marker("needs_native") is not None and not sharing.AVAILABLE:
        missing_native("client_cache.codec._codec")


@pytest.fixture(params=["native", "python"])
def native_impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once on the native parts and once on their Python twins, which must
    behave alike (CPython's test_json pattern: one test, a C and a Python run). The
    Python run turns the codec's native part off for every codec module
    (``extension.AVAILABLE`` and the flags derived from it) and makes every work queue
    run its Python code. Without the native parts the native run is skipped, except
    under ``CI=true``, where they must have been built; ``CLIENT_CACHE_NATIVE=0`` drops
    the native runs at collection (the CI leg that runs without them)."""
    if request.param == "native":
        if not (extension.AVAILABLE and C_CORE_AVAILABLE):
            missing("the native parts were not built (no C compiler)")
        monkeypatch.delenv(C_CORE_ENV, raising=False)
    else:
        monkeypatch.setattr(extension, "AVAILABLE", False)
        monkeypatch.setattr(sharing, "AVAILABLE", False)
        monkeypatch.setattr(protobuf_structs, "AVAILABLE", False)
        monkeypatch.setenv(C_CORE_ENV, "0")
    return str(request.param)


@pytest.fixture(params=["watch-list", "list"])
def fill_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test once with informers filling from a watch-list stream (client-go
    v0.36's default) and once from LIST (``WatchListClient=false``, the v0.32 path)."""
    with feature_gates().set_for_testing(WATCH_LIST_CLIENT, request.param == "watch-list"):
        yield str(request.param)


@pytest.fixture
def list_path() -> Iterator[None]:
    """For a test that needs informers to fill from LIST (``WatchListClient=false``); ask
    for it before the fixtures that build informers."""
    with feature_gates().set_for_testing(WATCH_LIST_CLIENT, False):
        yield
