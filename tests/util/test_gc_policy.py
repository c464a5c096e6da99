"""The library spaces out the collector's full passes while reflectors run, and puts the
threshold back when the last one stops (client_cache.util.gc_policy)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod

from client_cache.shared_informer import new_shared_index_informer
from client_cache.testing import FakeControllerSource
from client_cache.util import gc_policy
from tests.fixtures import eventually

DEFAULT = (700, 10, 10)


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[None]:
    """Start from Python's default thresholds with no reflector of another test running,
    and put back what the process had."""
    eventually(lambda: gc_policy.active() == 0, 5, "a reflector of another test still runs")
    saved, was_enabled = gc.get_threshold(), gc_policy.enabled()
    gc.set_threshold(*DEFAULT)
    gc_policy.set_enabled(True)
    try:
        yield
    finally:
        gc_policy.set_enabled(was_enabled)
        gc.set_threshold(*saved)


def test_blocks_share_one_change_and_the_last_puts_it_back() -> None:
    with gc_policy.spaced_full_collections():
        assert gc.get_threshold() == (700, 10, 10 * gc_policy.SPACING)
        with gc_policy.spaced_full_collections():
            assert gc.get_threshold() == (700, 10, 10 * gc_policy.SPACING)
            assert gc_policy.active() == 2
        assert gc.get_threshold() == (700, 10, 10 * gc_policy.SPACING)
    assert gc.get_threshold() == DEFAULT and gc_policy.active() == 0


def test_concurrent_blocks_from_many_threads_leave_the_default() -> None:
    inside, leave = threading.Barrier(9), threading.Barrier(9)

    def block() -> None:
        with gc_policy.spaced_full_collections():
            inside.wait(5)
            leave.wait(5)
        for _ in range(200):
            with gc_policy.spaced_full_collections():
                pass

    threads = [threading.Thread(target=block, name=f"test-gc-{i}", daemon=True)
               for i in range(8)]
    for t in threads:
        t.start()
    inside.wait(5)
    assert gc_policy.active() == 8
    assert gc.get_threshold() == (700, 10, 10 * gc_policy.SPACING)
    leave.wait(5)
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    assert gc.get_threshold() == DEFAULT and gc_policy.active() == 0


def test_a_threshold_changed_meanwhile_is_kept() -> None:
    with gc_policy.spaced_full_collections():
        gc.set_threshold(700, 10, 55)
    assert gc.get_threshold() == (700, 10, 55)


def test_nothing_changes_when_turned_off_or_automatic_collection_is_off() -> None:
    gc_policy.set_enabled(False)
    with gc_policy.spaced_full_collections():
        assert gc.get_threshold() == DEFAULT
    gc_policy.set_enabled(True)
    gc.set_threshold(0, 10, 10)
    with gc_policy.spaced_full_collections():
        assert gc.get_threshold() == (0, 10, 10)


def test_spacing_set_while_the_collector_is_paused_holds_after_it() -> None:
    """Informers started inside low_latency_sync (collector paused) keep the spacing once
    the pause ends."""
    gc.disable()
    try:
        with gc_policy.spaced_full_collections():
            assert gc.get_threshold() == (700, 10, 10 * gc_policy.SPACING)
            gc.enable()
            assert gc.get_threshold() == (700, 10, 10 * gc_policy.SPACING)
    finally:
        gc.enable()
    assert gc.get_threshold() == DEFAULT


def test_a_running_informer_spaces_full_passes_until_it_stops() -> None:
    source = FakeControllerSource()
    source.add(V1Pod(metadata=V1ObjectMeta(name="p", namespace="ns")))
    informer = new_shared_index_informer(source, V1Pod, 0, {})
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="test-gc-informer",
                              daemon=True)
    thread.start()
    try:
        eventually(informer.has_synced, 5, "the informer did not sync")
        assert gc.get_threshold() == (700, 10, 10 * gc_policy.SPACING)
    finally:
        stop.set()
        thread.join(2)
        source.shutdown()
    assert not thread.is_alive()
    eventually(lambda: gc_policy.active() == 0, 2, "the reflector's block did not end")
    assert gc.get_threshold() == DEFAULT


class _Cyclic:
    def __init__(self) -> None:
        self.me = self


def test_full_passes_that_find_little_space_out_the_next_ones() -> None:
    with gc_policy.spaced_full_collections():
        garbage = [_Cyclic() for _ in range(gc_policy.FEW_COLLECTED)]
        del garbage
        gc.collect()  # found cycles: the factor starts from SPACING
        assert gc_policy.factor() == gc_policy.SPACING
        seen = []
        for _ in range(5):
            gc.collect()  # a full pass over a heap without garbage
            seen.append(gc_policy.factor())
            assert gc.get_threshold() == (700, 10, 10 * gc_policy.factor())
        assert seen == [20, 40, 80, 100, 100]
        assert gc_policy.MAX_SPACING == 100
    assert gc.get_threshold() == DEFAULT and gc_policy.factor() == gc_policy.SPACING
    gc.collect()
    assert gc.get_threshold() == DEFAULT  # the hook left with the last block


def test_a_full_pass_that_finds_cycles_brings_the_spacing_back() -> None:
    with gc_policy.spaced_full_collections():
        gc.collect()
        gc.collect()
        assert gc_policy.factor() > gc_policy.SPACING
        garbage = [_Cyclic() for _ in range(gc_policy.FEW_COLLECTED)]
        del garbage
        gc.collect()
        assert gc_policy.factor() == gc_policy.SPACING
        assert gc.get_threshold() == (700, 10, 10 * gc_policy.SPACING)


def test_a_threshold_set_by_someone_else_is_not_adapted() -> None:
    with gc_policy.spaced_full_collections():
        gc.set_threshold(700, 10, 55)
        gc.collect()
        assert gc.get_threshold() == (700, 10, 55)
    assert gc.get_threshold() == (700, 10, 55)
