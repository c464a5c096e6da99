"""Worker pool over the rate-limiting queue: 8 workers, 100k keys, random re-adds and
failures retried with ``add_rate_limited``.

Checks: no key is ever processed by two workers at once; every key ends processed
successfully; ``shut_down_with_drain`` returns only when no item is in flight; every
worker thread ends.
"""

from __future__ import annotations

import os
import random
import threading

import pytest

from client_cache.workqueue import (
    ItemExponentialFailureRateLimiter,
    RateLimitingQueueConfig,
    new_rate_limiting_queue_with_config,
)

KEYS = int(os.environ.get("CLIENT_CACHE_WORKQUEUE_KEYS", "100000"))
WORKERS = 8

pytestmark = pytest.mark.usefixtures("native_impl")  # the C core and the Python code


def test_worker_pool() -> None:
    seed = random.randrange(1 << 30)
    queue = new_rate_limiting_queue_with_config(
        ItemExponentialFailureRateLimiter[str](0.0001, 0.002),
        RateLimitingQueueConfig[str](name="stress"),
    )
    inner = queue.delaying.queue  # the plain work queue, inspected once quiet
    lock = threading.Lock()
    changed = threading.Condition(lock)
    in_flight: set[str] = set()
    pending_retry: set[str] = set()
    succeeded: set[str] = set()
    problems: list[str] = []
    counts = {"get": 0, "done": 0, "failures": 0, "readds": 0}
    all_done = threading.Event()

    def worker(n: int) -> None:
        rnd = random.Random(seed + n)
        while True:
            key, shutdown = queue.get()
            if shutdown:
                return
            assert key is not None
            with lock:
                counts["get"] += 1
                if key in in_flight:
                    problems.append(f"{key} handed to two workers")
                in_flight.add(key)
                pending_retry.discard(key)
                quiet = all_done.is_set()  # once every key succeeded: no more adds
            fail = not quiet and rnd.random() < 0.1 and queue.num_requeues(key) < 3
            with lock:
                if not all_done.is_set() and rnd.random() < 0.05:
                    queue.add(f"k{rnd.randrange(KEYS)}")  # a random re-add of some key
                    counts["readds"] += 1
                in_flight.discard(key)
                if fail:
                    counts["failures"] += 1
                    pending_retry.add(key)
                    queue.add_rate_limited(key)
                else:
                    succeeded.add(key)
                    if len(succeeded) == KEYS:
                        all_done.set()
                counts["done"] += 1
                changed.notify_all()
            if not fail:
                queue.forget(key)
            queue.done(key)

    workers = [
        threading.Thread(target=worker, args=(i,), name=f"test-worker-{i}", daemon=True)
        for i in range(WORKERS)
    ]
    for t in workers:
        t.start()
    for i in range(KEYS):
        queue.add(f"k{i}")
    assert all_done.wait(120), f"only {len(succeeded)} of {KEYS} keys succeeded (seed {seed})"

    def quiet() -> bool:
        with inner._cond:
            return (not pending_retry and inner._core.queued_locked() == 0
                    and not inner._core.dirty_locked())

    with changed:
        assert changed.wait_for(quiet, 30), f"queue never went quiet (seed {seed})"
    # Items may still be in flight here; nothing can be added any more.
    queue.shut_down_with_drain()
    with lock:
        assert not in_flight, f"drain returned with {sorted(in_flight)[:5]} in flight"
        assert counts["get"] == counts["done"], counts
    with inner._cond:
        assert not inner._core.processing_locked()
    for t in workers:
        t.join(1.0)
        assert not t.is_alive()
    assert not problems, (seed, problems[:5])
    assert len(succeeded) == KEYS
    assert counts["failures"] > 0 and counts["readds"] > 0
