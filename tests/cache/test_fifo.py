"""fifo.go (fifo_test.go), plus the Store semantics FIFO must satisfy (TestFIFOCache)."""

from __future__ import annotations

from typing import Any

import pytest

from client_cache import KeyFuncError, RequeueError
from client_cache.fifo import FIFO, Queue, new_fifo, pop
from tests.cache.test_store import do_test_store
from tests.fixtures import (
    apply_sync_actions,
    check_each_burst_wakes_the_sleeping_poppers,
    check_has_synced_does_not_wait_for_a_pop,
    check_pop_unblocks_when_closed,
    check_two_producers_keep_order,
    fifo_key,
    mk,
    pop2,
    store_key_func,
)


def test_fifo_cache_store_semantics() -> None:
    """TestFIFOCache: FIFO satisfies the Store contract, Replace drops old items."""
    do_test_store(new_fifo(store_key_func))


def test_fifo_is_a_queue() -> None:
    assert isinstance(new_fifo(fifo_key), Queue)


def test_basic_two_producers_keep_their_order() -> None:
    """TestFIFO_basic."""
    check_two_producers_keep_order(new_fifo(fifo_key), lambda obj: obj)


def test_requeue_on_pop() -> None:
    """TestFIFO_requeueOnPop."""
    f = new_fifo(fifo_key)
    f.add(mk("foo", 10))

    def requeue_nil(obj: Any, initial: bool) -> None:
        assert obj == mk("foo", 10)
        raise RequeueError()

    assert f.pop(requeue_nil) == mk("foo", 10)
    assert f.get_by_key("foo")[1]

    def requeue_err(obj: Any, initial: bool) -> None:
        raise RequeueError(ValueError("try again"))

    with pytest.raises(ValueError, match=r"^try again$"):
        f.pop(requeue_err)
    assert f.get_by_key("foo")[1]
    f.pop(lambda o, i: None)
    assert not f.get_by_key("foo")[1]
    assert str(RequeueError()) == "the popped item should be requeued without returning an error"


def test_add_update() -> None:
    """TestFIFO_addUpdate."""
    f = new_fifo(fifo_key)
    f.add(mk("foo", 10))
    f.update(mk("foo", 15))
    assert f.list() == [mk("foo", 15)]
    assert f.list_keys() == ["foo"]
    assert pop(f) == mk("foo", 15)
    with pytest.raises(TimeoutError):
        f.pop(lambda o, i: None, timeout=0.05)
    assert not f.get(mk("foo", 0))[1]


def test_add_replace() -> None:
    """TestFIFO_addReplace."""
    f = new_fifo(fifo_key)
    f.add(mk("foo", 10))
    f.replace([mk("foo", 15)], "15")
    assert pop(f) == mk("foo", 15)
    with pytest.raises(TimeoutError):
        f.pop(lambda o, i: None, timeout=0.05)
    assert not f.get(mk("foo", 0))[1]


def test_detect_line_jumpers() -> None:
    """TestFIFO_detectLineJumpers."""
    f = new_fifo(fifo_key)
    for name, val in [("foo", 10), ("bar", 1), ("foo", 11), ("foo", 13), ("zab", 30)]:
        f.add(mk(name, val))
    assert pop(f).val == 13
    f.add(mk("foo", 14))
    assert [pop(f).val for _ in range(3)] == [1, 30, 14]


def test_add_if_not_present() -> None:
    """TestFIFO_addIfNotPresent."""
    f = new_fifo(fifo_key)
    f.add(mk("a", 1))
    f.add(mk("b", 2))
    f.add_if_not_present(mk("b", 3))
    f.add_if_not_present(mk("c", 4))
    assert len(f) == 3
    assert [pop(f).val for _ in range(3)] == [1, 2, 4]


@pytest.mark.parametrize(
    ("actions", "synced"),
    [
        ([], False),
        (["add a"], True),
        (["replace"], True),
        (["replace a b"], False),
        (["replace a b", "pop"], False),
        (["replace a b", "pop", "pop"], True),
    ],
)
def test_has_synced(actions: list[str], synced: bool) -> None:
    """TestFIFO_HasSynced."""
    f = new_fifo(fifo_key)
    apply_sync_actions(f, actions)
    assert f.has_synced() is synced


def test_pop_should_unblock_when_closed() -> None:
    """TestFIFO_PopShouldUnblockWhenClosed."""
    check_pop_unblocks_when_closed(new_fifo(fifo_key))


@pytest.mark.parametrize("poppers", [1, 3])
def test_each_burst_wakes_the_sleeping_poppers(poppers: int) -> None:
    check_each_burst_wakes_the_sleeping_poppers(new_fifo(fifo_key), poppers)


def test_delete_leaves_key_in_line_and_pop_skips_it() -> None:
    f = new_fifo(fifo_key)
    f.replace([mk("a", 1), mk("b", 2)], "1")
    f.delete(mk("a", 0))
    f.add(mk("a", 3))  # 'a' is now in line twice: [a, b, a]
    assert list(f._queue) == ["a", "b", "a"]
    item, initial = pop2(f)
    assert item == mk("a", 3) and initial is True  # the first entry finds the new object
    assert not f.has_synced()
    assert pop2(f) == (mk("b", 2), True)
    assert f.has_synced()
    with pytest.raises(TimeoutError):
        f.pop(lambda o, i: None, timeout=0.05)  # the second 'a' entry is skipped
    assert len(f._queue) == 0


def test_resync_requeues_missing_keys() -> None:
    f = new_fifo(fifo_key)
    f.add(mk("a", 1))
    f._queue.clear()  # simulate a lost queue entry
    f.resync()
    assert pop(f) == mk("a", 1)


def test_key_errors_leave_fifo_unchanged() -> None:
    f = FIFO(fifo_key)
    f.add(mk("a", 1))
    for op in (f.add, f.delete, f.add_if_not_present):
        with pytest.raises(KeyFuncError):
            op(42)
    with pytest.raises(KeyFuncError):
        f.replace([mk("b", 1), 42], "1")
    assert f.list_keys() == ["a"]
    assert pop(f) == mk("a", 1)


def test_has_synced_does_not_wait_for_a_pop() -> None:
    check_has_synced_does_not_wait_for_a_pop(new_fifo(fifo_key))


def test_skipping_the_last_initial_key_runs_the_synced_callbacks() -> None:
    """A deleted key still counts toward the initial population: the pop that skips the
    last one completes it, so the ``on_synced`` callbacks run and ``has_synced`` turns
    True there, not at some later pop."""
    f = new_fifo(fifo_key)
    f.replace([mk("a", 1), mk("b", 2)], "1")
    called: list[bool] = []
    f.on_synced(lambda: called.append(True))
    f.delete(mk("b", 0))
    assert pop(f) == mk("a", 1)
    assert not f.has_synced() and called == []
    with pytest.raises(TimeoutError):
        f.pop(lambda o, i: None, timeout=0.05)  # skips 'b', then finds the queue empty
    assert called == [True]
    assert f.has_synced()
