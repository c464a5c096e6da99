"""synctrack (synctrack_test.go, lazy_test.go)."""

from __future__ import annotations

import threading

import pytest

from client_cache._synctrack import AsyncTracker, Lazy, SingleFileTracker


@pytest.mark.parametrize(("upstream", "finish", "synced"),
                         [(False, True, False), (True, False, False), (False, False, False),
                          (True, True, True)])
def test_basic_logic(upstream: bool, finish: bool, synced: bool) -> None:
    """TestBasicLogic / TestSingleFile, for both trackers."""
    single = SingleFileTracker(lambda: upstream)
    many: AsyncTracker[str] = AsyncTracker(lambda: upstream)
    single.start()
    many.start("key")
    if finish:
        single.finished()
        many.finished("key")
    assert single.has_synced() is synced and many.has_synced() is synced


def test_async_locking() -> None:
    """TestAsyncLocking."""
    tracker: AsyncTracker[int] = AsyncTracker(lambda: True)
    threads = []
    for i in range(11):
        tracker.start(i)
        threads.append(threading.Thread(target=tracker.finished, args=(i,),
                                        name=f"test-finish-{i}", daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert tracker.has_synced()


def test_single_file_counting() -> None:
    """TestSingleFileCounting: a negative counter is a logic error."""
    tracker = SingleFileTracker(lambda: True)
    for _ in range(100):
        tracker.start()
    assert not tracker.has_synced()
    for _ in range(99):
        tracker.finished()
    assert not tracker.has_synced()
    tracker.finished()
    assert tracker.has_synced()
    with pytest.raises(RuntimeError, match="negative counter"):
        tracker.finished()


def test_upstream_checked_first() -> None:
    """TestNoStaleValue (simplified): the upstream is consulted before the count."""
    order: list[str] = []
    tracker = SingleFileTracker(lambda: order.append("upstream") or False)
    assert not tracker.has_synced() and order == ["upstream"]


def test_lazy_caches_until_notify_and_does_not_cache_errors() -> None:
    """TestLazy / TestLazyOnlyOnce / TestLazyError."""
    calls = [0]
    fail = [True]

    def evaluate() -> int:
        calls[0] += 1
        if fail[0]:
            fail[0] = False
            raise ValueError("first evaluation fails")
        return calls[0]

    lazy: Lazy[int] = Lazy(evaluate)
    with pytest.raises(ValueError):
        lazy.get()
    assert lazy.get() == 2 and lazy.get() == 2  # cached
    lazy.notify()
    assert lazy.get() == 3
    results: list[int] = []
    lazy.notify()
    threads = [threading.Thread(target=lambda: results.append(lazy.get()), name=f"test-lazy-{i}",
                                daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert results == [4, 4, 4] and calls[0] == 4
