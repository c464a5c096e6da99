"""A thread-safe keyed priority queue (Go ``tools/cache/heap.go``).

Items are ordered by ``less_func(a, b)`` (true means ``a`` pops before ``b``) and keyed by a
key function: adding an item whose key is present replaces it and re-sorts it. ``pop``
blocks while the heap is empty and raises :class:`~client_cache.errors.HeapClosedError` once
the heap is closed and empty (a closed heap still hands out what it holds). After
``close()``, ``add``, ``bulk_add`` and ``add_if_not_present`` raise ``HeapClosedError``;
``delete`` still works.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from client_cache.errors import HeapClosedError, ObjectNotFoundError
from client_cache.store import KeyFunc, checked_key

__all__ = ["Heap", "LessFunc", "new_heap"]

LessFunc = Callable[[Any, Any], bool]
"""``less(a, b)``: whether ``a`` sorts before ``b`` (Go ``LessFunc``)."""

_Objects = list[Any]
_Keys = list[str]


class _Entry:
    __slots__ = ("index", "key", "obj")

    def __init__(self, key: str, obj: Any, index: int) -> None:
        self.key = key
        self.obj = obj
        self.index = index


class Heap:
    """See the module documentation. Build with :func:`new_heap`."""

    def __init__(self, key_func: KeyFunc, less_func: LessFunc) -> None:
        self._key_func = key_func
        self._less = less_func
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._items: dict[str, _Entry] = {}
        self._queue: list[_Entry] = []
        self._closed = False

    # -- binary heap over self._queue, keeping entry.index in step ------------------------
    def _swap(self, i: int, j: int) -> None:
        q = self._queue
        q[i], q[j] = q[j], q[i]
        q[i].index = i
        q[j].index = j

    def _up(self, i: int) -> None:
        q = self._queue
        while i > 0:
            parent = (i - 1) // 2
            if not self._less(q[i].obj, q[parent].obj):
                break
            self._swap(i, parent)
            i = parent

    def _down(self, i: int) -> bool:
        q, n, start = self._queue, len(self._queue), i
        while True:
            left = 2 * i + 1
            if left >= n:
                break
            child = left
            if left + 1 < n and self._less(q[left + 1].obj, q[left].obj):
                child = left + 1
            if not self._less(q[child].obj, q[i].obj):
                break
            self._swap(i, child)
            i = child
        return i > start

    def _fix(self, i: int) -> None:
        if not self._down(i):
            self._up(i)

    def _remove_at(self, i: int) -> _Entry:
        last = len(self._queue) - 1
        if i != last:
            self._swap(i, last)
        entry = self._queue.pop()
        if i != last:
            self._fix(i)
        return entry

    # -- API --------------------------------------------------------------------------------
    def _key(self, obj: Any) -> str:
        return checked_key(self._key_func, obj)

    def _add_locked(self, key: str, obj: Any) -> None:
        entry = self._items.get(key)
        if entry is not None:
            entry.obj = obj
            self._fix(entry.index)
        else:
            entry = _Entry(key, obj, len(self._queue))
            self._items[key] = entry
            self._queue.append(entry)
            self._up(entry.index)

    def add(self, obj: Any) -> None:
        """Insert ``obj`` or replace the item with its key."""
        key = self._key(obj)
        with self._lock:
            if self._closed:
                raise HeapClosedError()
            self._add_locked(key, obj)
            self._cond.notify_all()

    update = add

    def bulk_add(self, items: Iterable[Any]) -> None:
        """Add several items under one lock, waking consumers once. A key error stops the
        loop; the items before it stay added (as upstream)."""
        with self._lock:
            if self._closed:
                raise HeapClosedError()
            try:
                for obj in items:
                    self._add_locked(self._key(obj), obj)
            finally:
                self._cond.notify_all()

    def add_if_not_present(self, obj: Any) -> None:
        """Insert ``obj`` unless its key is present."""
        key = self._key(obj)
        with self._lock:
            if self._closed:
                raise HeapClosedError()
            if key not in self._items:
                self._add_locked(key, obj)
                self._cond.notify_all()

    def delete(self, obj: Any) -> None:
        """Remove the item with ``obj``'s key; raises
        :class:`~client_cache.errors.ObjectNotFoundError` when absent."""
        key = self._key(obj)
        with self._lock:
            entry = self._items.pop(key, None)
            if entry is None:
                raise ObjectNotFoundError()
            self._remove_at(entry.index)

    def pop(self, timeout: float | None = None) -> Any:
        """Wait for and remove the smallest item. Raises
        :class:`~client_cache.errors.HeapClosedError` when closed and empty, and
        ``TimeoutError`` when ``timeout`` passes first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not self._queue:
                if self._closed:
                    raise HeapClosedError()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise TimeoutError("heap pop timed out")
                self._cond.wait(remaining)
            entry = self._remove_at(0)
            del self._items[entry.key]
            return entry.obj

    def list(self) -> _Objects:
        """Every stored object (Go ``List``)."""
        with self._lock:
            return [entry.obj for entry in self._items.values()]

    def list_keys(self) -> _Keys:
        """The keys of every stored object (Go ``ListKeys``)."""
        with self._lock:
            return list(self._items)

    def get(self, obj: Any) -> tuple[Any, bool]:
        """``(stored object, True)`` for ``obj``'s key, ``(None, False)`` when absent (Go
        ``Get``)."""
        return self.get_by_key(self._key(obj))

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """``(stored object, True)`` for ``key``, ``(None, False)`` when absent (Go
        ``GetByKey``)."""
        with self._lock:
            entry = self._items.get(key)
            return (None, False) if entry is None else (entry.obj, True)

    def close(self) -> None:
        """Close the heap and wake every blocked ``pop``."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        """True once ``close`` was called (Go ``IsClosed``)."""
        with self._lock:
            return self._closed

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)


def new_heap(key_func: KeyFunc, less_func: LessFunc) -> Heap:
    """A new empty :class:`Heap` (Go ``NewHeap``)."""
    return Heap(key_func, less_func)
