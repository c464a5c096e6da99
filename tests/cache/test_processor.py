"""One handler's buffer and delivery thread (client_cache._processor.ProcessorListener)."""

from __future__ import annotations

import queue
import threading
from typing import Any

from client_cache._processor import (
    AddNotification,
    DeleteNotification,
    ProcessorListener,
    UpdateNotification,
)
from client_cache.controller import ResourceEventHandlerFuncs
from tests.fixtures import eventually


def listener(on_add: Any) -> ProcessorListener:
    return ProcessorListener(ResourceEventHandlerFuncs(add_func=on_add), 0, 0, 0.0,
                             lambda: True, "test")


def test_everything_arrives_in_order_while_the_producer_races_the_handler() -> None:
    seen: list[int] = []
    done = threading.Event()
    count = 20_000

    def on_add(obj: Any) -> None:
        seen.append(obj)
        if obj == count - 1:
            done.set()

    pl = listener(on_add)
    pl.start()
    for i in range(count):
        pl.add(AddNotification(i, False))
    assert done.wait(30)
    assert seen == list(range(count)) and pl.pending() == 0 and pl.handled == count
    thread = pl.stop()
    assert thread is not None
    thread.join(1)
    assert not thread.is_alive()


def test_stop_drops_what_is_buffered_and_the_thread_ends() -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def on_add(obj: Any) -> None:
        seen.append(obj)
        entered.set()
        release.wait(10)

    pl = listener(on_add)
    pl.start()
    pl.add(AddNotification(0, False))
    assert entered.wait(5)
    for i in range(1, 6):
        pl.add(AddNotification(i, False))
    assert pl.pending() == 5
    thread = pl.stop()
    release.set()
    assert thread is not None
    thread.join(1)
    assert not thread.is_alive() and seen == [0]
    pl.add(AddNotification(9, False))  # after stop: ignored, and not held
    assert seen == [0] and pl.pending() == 0


def test_a_listener_that_went_to_sleep_is_woken_by_each_notification() -> None:
    # the handler finishes each notification before the next is added, so the delivery
    # thread goes to sleep in between every time: a lost wake-up hangs the test
    delivered: queue.Queue[int] = queue.Queue()
    pl = listener(delivered.put)
    pl.start()
    for i in range(2_000):
        pl.add(AddNotification(i, False))
        assert delivered.get(timeout=5) == i
    thread = pl.stop()
    assert thread is not None
    thread.join(1)
    assert not thread.is_alive() and pl.handled == 2_000


def test_a_batch_taken_before_stop_is_not_delivered_after_it() -> None:
    entered, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def on_add(obj: Any) -> None:
        seen.append(obj)
        if obj == 1:
            entered.set()
            release.wait(10)

    pl = listener(on_add)
    for i in range(1, 6):  # buffered before the thread starts: taken as one batch
        pl.add(AddNotification(i, False))
    pl.start()
    assert entered.wait(5)
    eventually(lambda: pl.pending() == 4, 5, "the rest of the batch is not counted")
    thread = pl.stop()
    release.set()
    assert thread is not None
    thread.join(1)
    assert not thread.is_alive() and seen == [1]


def test_each_kind_reaches_its_method_and_a_failing_initial_add_still_counts() -> None:
    calls: queue.Queue[tuple[Any, ...]] = queue.Queue()

    def on_add(obj: Any) -> None:
        calls.put(("add", obj))
        if obj == "bad":
            raise ValueError("a handler bug")

    pl = ProcessorListener(ResourceEventHandlerFuncs(
        add_func=on_add, update_func=lambda old, new: calls.put(("update", old, new)),
        delete_func=lambda obj: calls.put(("delete", obj))), 0, 0, 0.0, lambda: True, "test")
    pl.add(AddNotification("bad", True))
    pl.add(AddNotification("good", True))
    pl.add(UpdateNotification("good", "better"))
    pl.add(DeleteNotification("better"))
    assert not pl.has_synced()  # two initial adds not handled yet
    pl.start()
    got = [calls.get(timeout=5) for _ in range(4)]
    assert got == [("add", "bad"), ("add", "good"), ("update", "good", "better"),
                   ("delete", "better")]
    eventually(lambda: pl.handled == 4, 5, "not every notification was counted")
    assert pl.errors == 1 and pl.has_synced()  # the failed add was handled all the same
    thread = pl.stop()
    assert thread is not None
    thread.join(1)
    assert not thread.is_alive()
