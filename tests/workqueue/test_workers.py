"""client_cache.workqueue.workers: run_workers, the sample-controller's worker loop."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from client_cache import workqueue
from client_cache.workqueue import (
    new_item_exponential_failure_rate_limiter,
    new_rate_limiting_queue,
    run_workers,
)
from tests.fixtures import eventually


def test_workers_process_every_item_retry_a_failure_and_end_at_stop() -> None:
    queue = new_rate_limiting_queue(new_item_exponential_failure_rate_limiter(0.001, 0.01))
    done: list[str] = []
    failed_once: set[str] = set()
    lock = threading.Lock()

    def process(item: str) -> None:
        if item == "flaky" and item not in failed_once:
            failed_once.add(item)
            raise RuntimeError("try again")
        with lock:
            done.append(f"{threading.current_thread().name}:{item}")

    for item in ("a", "b", "c", "flaky"):
        queue.add(item)
    stop = threading.Event()
    runner = threading.Thread(target=run_workers, args=(queue, process, 2, stop),
                              kwargs={"name": "test-worker"}, name="test-run-workers")
    runner.start()
    eventually(lambda: len(done) == 4, 10)
    assert sorted(d.split(":")[1] for d in done) == ["a", "b", "c", "flaky"]
    assert {d.split(":")[0] for d in done} <= {"test-worker-0", "test-worker-1"}
    assert queue.num_requeues("flaky") == 0  # forgotten once it succeeded
    stop.set()
    runner.join(5)
    assert not runner.is_alive() and queue.shutting_down()
    assert not [t for t in threading.enumerate() if t.name.startswith("test-worker-")]


def test_a_plain_queue_drops_a_failed_item_and_zero_workers_is_refused() -> None:
    queue: workqueue.Typed[str] = workqueue.new()
    seen: list[str] = []

    def process(item: str) -> None:
        seen.append(item)
        raise ValueError("no")

    queue.add("x")
    stop = threading.Event()
    runner = threading.Thread(target=run_workers, args=(queue, process, 1, stop),
                              name="test-run-workers")
    runner.start()
    eventually(lambda: seen == ["x"], 10)
    stop.set()
    runner.join(5)
    assert not runner.is_alive() and queue.len() == 0
    with pytest.raises(ValueError, match="at least 1"):
        run_workers(queue, process, 0, stop)


def test_a_failure_names_an_object_item_by_kind_and_name_never_its_content(
        caplog: pytest.LogCaptureFixture) -> None:
    class Item(dict):  # type: ignore[type-arg]
        def __hash__(self) -> int:
            return 1

    queue: workqueue.Typed[Any] = workqueue.new()
    item = Item(kind="Secret", metadata={"name": "db", "namespace": "prod"},
                data={"password": "hunter2"})
    stop = threading.Event()

    def process(obj: Any) -> None:
        stop.set()
        raise RuntimeError("boom")

    queue.add(item)
    with caplog.at_level(logging.ERROR, logger="client_cache.workqueue"):
        run_workers(queue, process, 1, stop)
    [record] = caplog.records
    assert "Secret prod/db" in record.getMessage()
    assert "hunter2" not in record.getMessage()
