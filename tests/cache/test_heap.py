"""heap.go (heap_test.go): ascending by int ``val``."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from client_cache import HeapClosedError, KeyFuncError, ObjectNotFoundError
from client_cache.heap import Heap, new_heap
from tests.fixtures import fifo_key, mk


def heap() -> Heap:
    return new_heap(fifo_key, lambda a, b: a.val < b.val)


def test_basic_concurrent_adds_pop_in_order() -> None:
    """TestHeapBasic."""
    h = heap()
    amount = 400

    def producer(prefix: str, values: range) -> None:
        for i in values:
            h.add(mk(f"{prefix}{i}", i))

    threads = [
        threading.Thread(target=producer, args=("a", range(amount, 0, -1)), name="test-heap-a",
                         daemon=True),
        threading.Thread(target=producer, args=("b", range(1, amount + 1)), name="test-heap-b",
                         daemon=True),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    prev = 0
    for _ in range(2 * amount):
        val = h.pop(timeout=1).val
        assert val >= prev
        prev = val
    assert len(h) == 0


def test_add() -> None:
    """TestHeap_Add."""
    h = heap()
    for name, val in [("foo", 10), ("bar", 1), ("baz", 11), ("zab", 30), ("foo", 13)]:
        h.add(mk(name, val))
    assert h.pop().val == 1
    assert h.pop().val == 11
    with pytest.raises(ObjectNotFoundError, match="object not found"):
        h.delete(mk("baz", 11))  # already popped
    h.add(mk("foo", 14))
    assert h.pop().val == 14
    assert h.pop().val == 30


def test_bulk_add_visible_at_once() -> None:
    """TestHeap_BulkAdd."""
    h = heap()
    amount = 500
    t = threading.Thread(
        target=lambda: h.bulk_add([mk(f"a{i}", i) for i in range(amount, 0, -1)]),
        name="test-bulk-add",
        daemon=True,
    )
    t.start()
    prev = 0
    for _ in range(amount):
        val = h.pop(timeout=5).val
        assert val > prev  # strictly increasing: the whole batch was visible at once
        prev = val
    t.join(5)


def test_empty_pop_unblocks_on_close() -> None:
    """TestHeapEmptyPop."""
    h = heap()
    errors: list[BaseException] = []
    entered = threading.Event()

    def popper() -> None:
        entered.set()
        try:
            h.pop()
        except HeapClosedError as err:
            errors.append(err)

    t = threading.Thread(target=popper, name="test-heap-pop", daemon=True)
    t.start()
    assert entered.wait(5)
    h.close()
    t.join(1)
    assert not t.is_alive()
    assert [str(e) for e in errors] == ["heap is closed"]


def test_add_if_not_present() -> None:
    """TestHeap_AddIfNotPresent."""
    h = heap()
    for name, val in [("foo", 10), ("bar", 1), ("baz", 11), ("zab", 30), ("foo", 13)]:
        h.add_if_not_present(mk(name, val))
    assert len(h) == 4
    assert h.get_by_key("foo")[0].val == 10
    assert h.pop().val == 1
    assert h.pop().val == 10
    h.add_if_not_present(mk("bar", 14))
    assert h.pop().val == 11
    assert h.pop().val == 14


def test_delete() -> None:
    """TestHeap_Delete."""
    h = heap()
    for name, val in [("foo", 10), ("bar", 1), ("bal", 31), ("baz", 11)]:
        h.add(mk(name, val))
    h.delete(mk("bar", 200))  # by key, value ignored
    assert h.pop().val == 10
    h.add(mk("zab", 30))
    h.add(mk("faz", 30))
    before = len(h)
    with pytest.raises(ObjectNotFoundError):
        h.delete(mk("non-existent", 10))
    assert len(h) == before
    h.delete(mk("bal", 31))
    h.delete(mk("zab", 30))
    assert h.pop().val == 11
    assert h.pop() == mk("faz", 30)
    assert len(h) == 0


def test_update() -> None:
    """TestHeap_Update."""
    h = heap()
    for name, val in [("foo", 10), ("bar", 1), ("bal", 31), ("baz", 11)]:
        h.add(mk(name, val))
    h.update(mk("baz", 0))
    assert h._queue[0].key == "baz" and h._queue[0].index == 0
    assert h.pop().val == 0
    h.update(mk("bar", 100))
    assert h._queue[0].key == "foo" and h._queue[0].index == 0
    assert all(e.index == i for i, e in enumerate(h._queue))


def test_get_and_get_by_key() -> None:
    """TestHeap_Get / TestHeap_GetByKey."""
    h = heap()
    for name, val in [("foo", 10), ("bar", 1), ("bal", 31), ("baz", 11)]:
        h.add(mk(name, val))
    assert h.get(mk("baz", 0)) == (mk("baz", 11), True)
    assert h.get(mk("nope", 0)) == (None, False)
    assert h.get_by_key("baz") == (mk("baz", 11), True)
    assert h.get_by_key("nope") == (None, False)


def test_close() -> None:
    """TestHeap_Close."""
    h = heap()
    h.add(mk("a", 1))
    assert not h.is_closed()
    h.close()
    assert h.is_closed()
    assert h.pop().val == 1  # a closed heap still hands out what it holds
    with pytest.raises(HeapClosedError):
        h.pop()


def test_list_and_list_keys() -> None:
    """TestHeap_List / TestHeap_ListKeys."""
    h = heap()
    assert h.list() == [] and h.list_keys() == []
    items = {"foo": 10, "bar": 1, "bal": 30, "baz": 11, "faz": 30}
    for name, val in items.items():
        h.add(mk(name, val))
    assert {o.name: o.val for o in h.list()} == items
    assert sorted(h.list_keys()) == sorted(items)


def test_add_after_close() -> None:
    """TestHeapAddAfterClose."""
    h = heap()
    h.add(mk("kept", 1))
    h.close()
    for call in (lambda: h.add(mk("a", 1)), lambda: h.add_if_not_present(mk("a", 1)),
                 lambda: h.bulk_add([mk("a", 1)])):
        with pytest.raises(HeapClosedError, match=r"^heap is closed$"):
            call()
    h.delete(mk("kept", 0))  # delete does not check closed
    assert len(h) == 0


def test_pop_timeout_and_key_errors() -> None:
    h = heap()
    with pytest.raises(TimeoutError):
        h.pop(timeout=0.02)
    with pytest.raises(KeyFuncError):
        h.add("unkeyable")
    with pytest.raises(KeyFuncError):
        h.bulk_add([mk("ok", 1), "unkeyable", mk("late", 2)])
    assert h.list_keys() == ["ok"]  # items before the failure stay, as upstream


def test_random_operations_keep_heap_order() -> None:
    rnd = random.Random(7)
    h = heap()
    model: dict[str, Any] = {}
    for _ in range(3000):
        op = rnd.random()
        key = f"k{rnd.randrange(60)}"
        if op < 0.5:
            val = rnd.randrange(1000)
            h.add(mk(key, val))
            model[key] = val
        elif op < 0.7 and key in model:
            h.delete(mk(key, 0))
            del model[key]
        elif op < 0.9 and model:
            obj = h.pop()
            assert obj.val == min(model.values())
            del model[obj.name]
        assert all(e.index == i for i, e in enumerate(h._queue))
    assert sorted(h.list_keys()) == sorted(model)
