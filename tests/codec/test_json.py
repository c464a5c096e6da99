"""The JSON decoder pauses the garbage collector for large bodies only."""

from __future__ import annotations

import gc
import json
import sys
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from client_cache import FakeCustomStore
from client_cache.codec import _wire as wire
from client_cache.listwatch import ListWatch
from client_cache.reflector import ReflectorOptions, new_reflector_with_options

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("native_impl"), pytest.mark.c_path]


@pytest.fixture
def collections_run() -> Iterator[list[int]]:
    """Counts garbage collections that start while the test runs."""
    started: list[int] = []

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(callback)
    try:
        yield started
    finally:
        gc.callbacks.remove(callback)


def big_body() -> bytes:
    items = [{"metadata": {"name": f"p-{i}", "labels": {"a": "b"}}, "spec": {"x": [i]}}
             for i in range(20_000)]
    body = json.dumps({"items": items}).encode()
    assert len(body) >= wire.GC_PAUSE_THRESHOLD
    return body


def test_large_bodies_decode_without_repeated_collections(collections_run: list[int]) -> None:
    body = big_body()
    gc.collect()
    collections_run.clear()
    wire._decode(body)  # the plain decoder runs many collections meanwhile...
    plain = len(collections_run)
    if plain <= 1:
        # ...on Python 3.11 and older; from 3.12 the collector runs only at the
        # interpreter's eval-breaker checks, which a decode in C never reaches, so there is
        # nothing for the pause to prevent (measured on 3.13: one pass, after the decode)
        assert sys.version_info >= (3, 12) and wire.BACKEND == "orjson"
        pytest.skip("this Python does not collect during a decode in C")
    collections_run.clear()
    decoded = wire.loads(body)
    # at most the one young-generation pass right after the collector is back on
    assert len(collections_run) <= 1 < plain
    assert len(decoded["items"]) == 20_000 and gc.isenabled()


def test_small_bodies_and_a_disabled_collector_are_left_alone() -> None:
    assert wire.loads(b'{"a": 1}') == {"a": 1} and gc.isenabled()
    gc.disable()
    try:
        assert len(wire.loads(big_body())["items"]) == 20_000
        assert not gc.isenabled()  # not turned on behind the caller's back
    finally:
        gc.enable()


def test_errors_still_reenable_the_collector() -> None:
    with pytest.raises(ValueError):
        wire.loads(b"[" * wire.GC_PAUSE_THRESHOLD)
    assert gc.isenabled()


def test_gc_paused_nests_and_restores_the_collector_state() -> None:
    assert gc.isenabled()
    with wire.gc_paused():
        assert not gc.isenabled()
        with wire.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds the pause
    assert gc.isenabled()
    gc.disable()
    try:
        with wire.gc_paused():
            pass
        assert not gc.isenabled()  # a collector the caller turned off stays off
    finally:
        gc.enable()


class _Node:
    """A container the collector tracks, which a weak reference can watch."""

    def __init__(self) -> None:
        self.peer: Any = None


def _more_than_a_young_collection() -> list[list[int]]:
    """Tracked, acyclic, long-lived objects, as a sync builds: twice the first threshold
    (700 before Python 3.13, 2,000 since), so a pause ending after them promotes."""
    return [[i] for i in range(2 * gc.get_threshold()[0])]


def _in_generation(obj: object, generation: int) -> bool:
    return any(o is obj for o in gc.get_objects(generation))


def test_what_a_pause_built_ends_in_the_oldest_generation_and_nothing_stays_frozen() -> None:
    assert gc.get_freeze_count() == 0
    with wire.gc_paused(promote=True):
        built = _more_than_a_young_collection()  # as a sync builds
    # promoted without a walk; before, the young collections walked it on its way up
    assert _in_generation(built[-1], 2) and not _in_generation(built[-1], 0)
    assert gc.get_freeze_count() == 0 and gc.isenabled()


def test_cyclic_garbage_from_a_pause_is_still_collected() -> None:
    with wire.gc_paused(promote=True):
        a, b = _Node(), _Node()
        a.peer, b.peer = b, a
        gone = weakref.ref(a)
        del a, b
        built = _more_than_a_young_collection()  # so the promotion does run
    assert gone() is not None and _in_generation(built[-1], 2)  # promoted, cycle and all
    gc.collect()
    assert gone() is None  # nothing was left frozen


def test_a_pause_that_did_not_ask_leaves_the_generations_alone() -> None:
    with wire.gc_paused():  # a large body decoded for a caller: what lives is theirs
        built = _more_than_a_young_collection()
    assert not _in_generation(built[-1], 2)


def test_nothing_is_counted_or_promoted_after_a_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    """low_latency_sync freezes at its end, inside the pause: what the sync built is frozen
    already, and counting the frozen objects would walk them all (60 ms for 320k objects
    seen on the event loop)."""
    counted: list[int] = []
    real_count = gc.get_freeze_count
    monkeypatch.setattr(gc, "get_freeze_count", lambda: counted.append(1) or real_count())
    try:
        with wire.gc_paused():
            with wire.gc_paused(promote=True):  # a reflector's sync, ended first
                built = [[i] for i in range(100)]
            gc.freeze()
        assert counted == [] and built
    finally:
        gc.unfreeze()


def test_objects_the_process_froze_stay_frozen() -> None:
    gc.freeze()  # as a process does before a fork
    try:
        frozen = gc.get_freeze_count()
        with wire.gc_paused(promote=True):
            built = _more_than_a_young_collection()  # enough to be promoted otherwise
        assert gc.get_freeze_count() == frozen  # not released by our promotion
        assert not _in_generation(built[-1], 2)  # and nothing promoted behind its back
    finally:
        gc.unfreeze()


def test_the_reflector_lists_and_replaces_with_the_collector_paused() -> None:
    seen: list[bool] = []

    def listed(options: Any) -> Any:
        seen.append(gc.isenabled())
        return {"metadata": {"resourceVersion": "5"}, "items": []}

    store = FakeCustomStore(replace_func=lambda items, rv: seen.append(gc.isenabled()))
    r = new_reflector_with_options(ListWatch(listed, lambda o: None), None, store,
                                   ReflectorOptions(name="gc"))
    assert r._list(threading.Event())
    assert seen == [False, False] and gc.isenabled()
