"""Run pieces of work on a few threads (Go ``util/workqueue/parallelizer.go``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from client_cache.util.runtime import handle_crash

__all__ = ["DoWorkPieceFunc", "parallelize_until"]

DoWorkPieceFunc = Callable[[int], None]


def parallelize_until(
    stop: threading.Event | None,
    workers: int,
    pieces: int,
    do_work_piece: DoWorkPieceFunc,
    chunk_size: int = 1,
) -> None:
    """Call ``do_work_piece(i)`` for every ``i`` in ``range(pieces)`` on at most ``workers``
    threads, handing out chunks of ``chunk_size`` pieces; return when all are done. Each
    piece runs exactly once unless ``stop`` is set, which is checked before every piece.
    An exception in a piece is logged and re-raised in its worker thread (``handle_crash``);
    the other pieces still run."""
    if pieces <= 0:
        return
    chunk_size = max(chunk_size, 1)
    chunks = (pieces + chunk_size - 1) // chunk_size
    workers = max(1, min(workers, chunks))
    next_chunk = iter(range(chunks))
    lock = threading.Lock()

    def worker() -> None:
        with handle_crash():
            while True:
                with lock:
                    chunk = next(next_chunk, None)
                if chunk is None:
                    return
                start = chunk * chunk_size
                for piece in range(start, min(start + chunk_size, pieces)):
                    if stop is not None and stop.is_set():
                        return
                    do_work_piece(piece)

    threads = [
        threading.Thread(target=worker, name=f"workqueue-parallelize-{i}", daemon=True)
        for i in range(workers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
