"""workqueue/parallelizer.go (parallelizer_test.go)."""

from __future__ import annotations

import threading

import pytest

from client_cache.workqueue import parallelize_until


@pytest.mark.parametrize(
    ("pieces", "workers", "chunk"), [(1000, 10, 1), (1000, 10, 10), (1000, 10, 100), (999, 10, 13)]
)
def test_parallelize_until(pieces: int, workers: int, chunk: int) -> None:
    """TestParallelizeUntil: every piece exactly once."""
    seen = [0] * pieces
    lock = threading.Lock()

    def work(i: int) -> None:
        with lock:
            seen[i] += 1

    parallelize_until(None, workers, pieces, work, chunk_size=chunk)
    assert seen == [1] * pieces


def test_parallelize_stops_on_event() -> None:
    stop = threading.Event()
    done: list[int] = []
    lock = threading.Lock()

    def work(i: int) -> None:
        with lock:
            done.append(i)
            if len(done) == 10:
                stop.set()

    parallelize_until(stop, 4, 10_000, work)
    assert 10 <= len(done) < 10_000
    parallelize_until(None, 4, 0, work)  # no pieces: returns at once
