"""Model-based tests: hypothesis drives random sequences of operations against the queues and
stores and checks them, step by step, against small reference models written from the
documented semantics (client-go's, see each class's docstring in ``client_cache``).

Each state machine runs :data:`EXAMPLES` examples (sequences) of up to :data:`STEPS` steps.
Keys come from a small pool, so operations collide often: re-adds, deletes of queued and of
unknown keys, relists that drop keys, resyncs with and without queued items.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any
from unittest import mock

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from client_cache.delta_fifo import DeltaFIFO, DeltaFIFOOptions, DeltaType
from client_cache.errors import ObjectNotFoundError
from client_cache.fifo import FIFO
from client_cache.heap import Heap
from client_cache.store import DeletedFinalStateUnknown, meta_namespace_key_func
from client_cache.the_real_fifo import RealFIFO, RealFIFOOptions
from client_cache.thread_safe_store import new_thread_safe_store
from client_cache.workqueue import C_CORE_AVAILABLE, C_CORE_ENV
from client_cache.workqueue import new as new_workqueue
from tests.fixtures import pod as make_pod

EXAMPLES = 500
STEPS = 40
SETTINGS = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None)

NAMES = ("a", "b", "c", "d", "e")
names = st.sampled_from(NAMES)
versions = st.integers(min_value=1, max_value=9)


def pod(name: str, version: int, node: str = "n1", app: str = "web") -> dict[str, Any]:
    return make_pod(name, "ns", {"app": app}, rv=str(version), spec={"nodeName": node})


def key(name: str) -> str:
    return f"ns/{name}"


def shape(obj: Any) -> Any:
    """A comparable form of a queued object (tombstones compare by key and state)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return ("tombstone", obj.key, shape(obj.obj))
    return obj


def delta_shapes(deltas: Any) -> list[tuple[DeltaType, Any]]:
    return [(d.type, shape(d.object)) for d in deltas]


class KnownStore:
    """The consumer's store that a DeltaFIFO/RealFIFO consults (the informer's indexer):
    pops are applied to it as an informer would."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}

    def list_keys(self) -> list[str]:
        return list(self.objects)

    def get_by_key(self, k: str) -> tuple[Any, bool]:
        return (self.objects[k], True) if k in self.objects else (None, False)

    def apply(self, deltas: list[tuple[DeltaType, Any]]) -> None:
        for kind, obj in deltas:
            k = obj[1] if isinstance(obj, tuple) else meta_namespace_key_func(obj)
            if kind is DeltaType.DELETED:
                self.objects.pop(k, None)
            else:
                self.objects[k] = obj


class RelistingQueueMachine(RuleBasedStateMachine):
    """Rules shared by the DeltaFIFO and RealFIFO machines: relist, resync and pop, with
    pops applied to the consumer's store on both sides. Subclasses set ``fifo``, ``known``
    and ``model`` (which has ``replace``, ``resync``, ``take`` and ``queued``)."""

    fifo: Any
    known: KnownStore
    model: Any

    @rule(listed=st.lists(st.tuples(names, versions), max_size=4,
                          unique_by=lambda t: t[0]))
    def replace(self, listed: list[tuple[str, int]]) -> None:
        objs = [pod(n, v) for n, v in listed]
        self.fifo.replace(objs, "1")
        self.model.replace(objs)

    @rule()
    def resync(self) -> None:
        self.fifo.resync()
        self.model.resync()

    @precondition(lambda self: self.model.queued() > 0)
    @rule()
    def pop(self) -> None:
        got = delta_shapes(self.fifo.pop(lambda deltas, initial: None, timeout=1))
        want = self.model.take()
        assert got == want
        self.known.apply(got)
        self.model.known.apply(want)


# --- DeltaFIFO ---------------------------------------------------------------------------


class DeltaFIFOModel:
    """Per key, the list of (type, object) not yet popped, and the order keys were queued.

    * add/update append to the key's list (a new key joins the end of the line);
    * delete of a key neither queued nor known is dropped; otherwise appended;
    * two deletions at the end merge: the older stays unless it is a tombstone;
    * replace appends Replaced/Sync for each listed object, then a tombstone (with the
      newest queued state) for each queued key not listed, then a tombstone (with the
      known state) for each known key neither listed nor queued;
    * resync appends Sync (known state) for each known key with nothing queued;
    * pop removes the oldest key and returns its list.
    """

    def __init__(self, replaced: bool) -> None:
        self.items: dict[str, list[tuple[DeltaType, Any]]] = {}
        self.line: deque[str] = deque()
        self.known = KnownStore()
        self.replaced = replaced

    def append(self, k: str, kind: DeltaType, obj: Any) -> None:
        deltas = self.items.get(k)
        if deltas is None:
            self.items[k] = [(kind, obj)]
            self.line.append(k)
            return
        deltas.append((kind, obj))
        if len(deltas) >= 2 and deltas[-1][0] is deltas[-2][0] is DeltaType.DELETED:
            older, newer = deltas[-2], deltas[-1]
            deltas[-2:] = [newer if isinstance(older[1], tuple) else older]

    def delete(self, k: str, obj: Any) -> None:
        if k not in self.items and k not in self.known.objects:
            return
        self.append(k, DeltaType.DELETED, obj)

    def replace(self, objs: list[dict[str, Any]]) -> None:
        kind = DeltaType.REPLACED if self.replaced else DeltaType.SYNC
        listed = set()
        for obj in objs:
            k = meta_namespace_key_func(obj)
            listed.add(k)
            self.append(k, kind, obj)
        for k in [k for k in self.items if k not in listed]:
            newest = self.items[k][-1][1]
            if isinstance(newest, tuple):
                newest = newest[2]
            self.append(k, DeltaType.DELETED, ("tombstone", k, newest))
        for k, obj in list(self.known.objects.items()):
            if k in listed or self.items.get(k):
                continue
            self.append(k, DeltaType.DELETED, ("tombstone", k, obj))

    def resync(self) -> None:
        for k, obj in list(self.known.objects.items()):
            if not self.items.get(k):
                self.append(k, DeltaType.SYNC, obj)

    def queued(self) -> int:
        return len(self.line)

    def take(self) -> list[tuple[DeltaType, Any]]:
        return self.items.pop(self.line.popleft())


class DeltaFIFOMachine(RelistingQueueMachine):
    def __init__(self) -> None:
        super().__init__()
        self.replaced = True
        self.model = DeltaFIFOModel(self.replaced)
        self.known = KnownStore()
        self.fifo = DeltaFIFO(DeltaFIFOOptions(known_objects=self.known,
                                               emit_delta_type_replaced=self.replaced))

    @rule(name=names, version=versions)
    def add(self, name: str, version: int) -> None:
        obj = pod(name, version)
        self.fifo.add(obj)
        self.model.append(key(name), DeltaType.ADDED, obj)

    @rule(name=names, version=versions)
    def update(self, name: str, version: int) -> None:
        obj = pod(name, version)
        self.fifo.update(obj)
        self.model.append(key(name), DeltaType.UPDATED, obj)

    @rule(name=names, version=versions)
    def delete(self, name: str, version: int) -> None:
        obj = pod(name, version)
        self.fifo.delete(obj)
        self.model.delete(key(name), obj)

    @invariant()
    def same_queue(self) -> None:
        assert self.fifo.list_keys() == list(self.model.line)
        for k in self.model.line:
            deltas, ok = self.fifo.get_by_key(k)
            assert ok and delta_shapes(deltas) == self.model.items[k]
        assert self.known.objects == self.model.known.objects


TestDeltaFIFO = DeltaFIFOMachine.TestCase
TestDeltaFIFO.settings = SETTINGS


# --- RealFIFO ----------------------------------------------------------------------------


class RealFIFOModel:
    """Every change is its own item, in arrival order.

    * add/update/delete always append (no suppression, no merging);
    * replace first appends a tombstone (last queued state) for each key with queued items
      that is not listed and whose last queued item is not a deletion, in the order the
      keys first appear in the queue; then a tombstone (known state) for each known key
      neither listed nor queued; then Replaced for each listed object;
    * resync appends Sync (known state) for each known key with nothing queued;
    * pop removes the oldest item.
    """

    def __init__(self) -> None:
        self.items: deque[tuple[DeltaType, Any]] = deque()
        self.known = KnownStore()

    @staticmethod
    def key_of(obj: Any) -> str:
        return obj[1] if isinstance(obj, tuple) else meta_namespace_key_func(obj)

    def replace(self, objs: list[dict[str, Any]]) -> None:
        listed = {meta_namespace_key_func(o) for o in objs}
        last: dict[str, tuple[DeltaType, Any]] = {}
        for item in self.items:
            last[self.key_of(item[1])] = item
        for k, (kind, obj) in list(last.items()):
            if k not in listed and kind is not DeltaType.DELETED:
                self.items.append((DeltaType.DELETED, ("tombstone", k, obj)))
        for k, obj in list(self.known.objects.items()):
            if k not in listed and k not in last:
                self.items.append((DeltaType.DELETED, ("tombstone", k, obj)))
        self.items.extend((DeltaType.REPLACED, o) for o in objs)

    def queued(self) -> int:
        return len(self.items)

    def take(self) -> list[tuple[DeltaType, Any]]:
        return [self.items.popleft()]

    def resync(self) -> None:
        queued = {self.key_of(obj) for _, obj in self.items}
        for k, obj in list(self.known.objects.items()):
            if k not in queued:
                self.items.append((DeltaType.SYNC, obj))


class RealFIFOMachine(RelistingQueueMachine):
    def __init__(self) -> None:
        super().__init__()
        self.model = RealFIFOModel()
        self.known = KnownStore()
        self.fifo = RealFIFO(RealFIFOOptions(known_objects=self.known))

    @rule(kind=st.sampled_from([DeltaType.ADDED, DeltaType.UPDATED, DeltaType.DELETED]),
          name=names, version=versions)
    def change(self, kind: DeltaType, name: str, version: int) -> None:
        obj = pod(name, version)
        {DeltaType.ADDED: self.fifo.add, DeltaType.UPDATED: self.fifo.update,
         DeltaType.DELETED: self.fifo.delete}[kind](obj)
        self.model.items.append((kind, obj))

    @precondition(lambda self: self.model.queued() > 0)
    @rule()
    def pop_batch(self) -> None:
        batch = delta_shapes(self.fifo.pop_batch(lambda deltas, initial: None, timeout=1))
        # the batch is the longest run of items with distinct keys from the front
        seen: set[str] = set()
        want = []
        for kind, obj in self.model.items:
            k = RealFIFOModel.key_of(obj)
            if k in seen:
                break
            seen.add(k)
            want.append((kind, obj))
        # the first replace's items form the initial list: a batch never crosses its end
        assert batch == want[:len(batch)] and batch
        for _ in batch:
            self.model.items.popleft()
        self.known.apply(batch)
        self.model.known.apply(batch)

    @invariant()
    def same_queue(self) -> None:
        assert len(self.fifo) == len(self.model.items)
        assert self.known.objects == self.model.known.objects


TestRealFIFO = RealFIFOMachine.TestCase
TestRealFIFO.settings = SETTINGS


# --- FIFO --------------------------------------------------------------------------------


class FIFOMachine(RuleBasedStateMachine):
    """Reference: one object per key plus a line of keys that may hold keys whose object was
    deleted (pop skips them) and, after a delete and a re-add, the same key twice (the
    first occurrence pops the object, the second is then skipped)."""

    def __init__(self) -> None:
        super().__init__()
        self.fifo = FIFO(meta_namespace_key_func)
        self.items: dict[str, Any] = {}
        self.line: deque[str] = deque()

    @rule(name=names, version=versions, update=st.booleans())
    def add(self, name: str, version: int, update: bool) -> None:
        obj = pod(name, version)
        (self.fifo.update if update else self.fifo.add)(obj)
        if key(name) not in self.items:
            self.line.append(key(name))
        self.items[key(name)] = obj

    @rule(name=names, version=versions)
    def add_if_not_present(self, name: str, version: int) -> None:
        obj = pod(name, version)
        self.fifo.add_if_not_present(obj)
        if key(name) not in self.items:
            self.line.append(key(name))
            self.items[key(name)] = obj

    @rule(name=names)
    def delete(self, name: str) -> None:
        self.fifo.delete(pod(name, 0))
        self.items.pop(key(name), None)

    @rule(listed=st.lists(st.tuples(names, versions), max_size=4))
    def replace(self, listed: list[tuple[str, int]]) -> None:
        objs = [pod(n, v) for n, v in listed]
        self.fifo.replace(objs, "1")
        self.items = {meta_namespace_key_func(o): o for o in objs}
        self.line = deque(self.items)

    @rule()
    def resync(self) -> None:
        self.fifo.resync()
        in_line = set(self.line)
        self.line.extend(k for k in self.items if k not in in_line)

    @precondition(lambda self: len(self.items) > 0)
    @rule()
    def pop(self) -> None:
        got = self.fifo.pop(lambda item, initial: None, timeout=1)
        while self.line[0] not in self.items:
            self.line.popleft()
        assert got == self.items.pop(self.line.popleft())

    @invariant()
    def same_content(self) -> None:
        assert self.fifo.list_keys() == list(self.items)
        assert len(self.fifo) == len(self.items)
        for k, obj in self.items.items():
            assert self.fifo.get_by_key(k) == (obj, True)


TestFIFO = FIFOMachine.TestCase
TestFIFO.settings = SETTINGS


# --- Heap --------------------------------------------------------------------------------


def priority(obj: dict[str, Any]) -> tuple[int, str]:
    return int(obj["metadata"]["resourceVersion"]), obj["metadata"]["name"]


class HeapMachine(RuleBasedStateMachine):
    """Reference: a dict by key; pop returns the smallest (by resourceVersion, then name)."""

    def __init__(self) -> None:
        super().__init__()
        self.heap = Heap(meta_namespace_key_func, lambda a, b: priority(a) < priority(b))
        self.items: dict[str, Any] = {}

    @rule(name=names, version=versions)
    def add(self, name: str, version: int) -> None:
        obj = pod(name, version)
        self.heap.add(obj)
        self.items[key(name)] = obj

    @rule(name=names, version=versions)
    def add_if_not_present(self, name: str, version: int) -> None:
        obj = pod(name, version)
        self.heap.add_if_not_present(obj)
        self.items.setdefault(key(name), obj)

    @rule(objs=st.lists(st.tuples(names, versions), max_size=4))
    def bulk_add(self, objs: list[tuple[str, int]]) -> None:
        self.heap.bulk_add([pod(n, v) for n, v in objs])
        for n, v in objs:
            self.items[key(n)] = pod(n, v)

    @rule(name=names)
    def delete(self, name: str) -> None:
        if key(name) in self.items:
            self.heap.delete(pod(name, 0))
            del self.items[key(name)]
        else:
            try:
                self.heap.delete(pod(name, 0))
            except ObjectNotFoundError:
                pass
            else:
                raise AssertionError("deleting an absent key must raise ObjectNotFoundError")

    @precondition(lambda self: len(self.items) > 0)
    @rule()
    def pop(self) -> None:
        got = self.heap.pop(timeout=1)
        smallest = min(self.items.values(), key=priority)
        assert got == smallest
        del self.items[meta_namespace_key_func(smallest)]

    @invariant()
    def same_content(self) -> None:
        assert len(self.heap) == len(self.items)
        assert sorted(self.heap.list_keys()) == sorted(self.items)
        for k, obj in self.items.items():
            assert self.heap.get_by_key(k) == (obj, True)


TestHeap = HeapMachine.TestCase
TestHeap.settings = SETTINGS


# --- ThreadSafeStore + indexers ----------------------------------------------------------


def by_node(obj: dict[str, Any]) -> list[str]:
    return [obj["spec"]["nodeName"]]


def by_app_and_node(obj: dict[str, Any]) -> list[str]:
    """A multi-valued index (two values per object, sometimes equal)."""
    return sorted({obj["metadata"]["labels"]["app"], obj["spec"]["nodeName"]})


INDEXERS = {"node": by_node, "multi": by_app_and_node}
nodes = st.sampled_from(["n1", "n2", "n3"])
apps = st.sampled_from(["web", "db", "n1"])


class ThreadSafeStoreMachine(RuleBasedStateMachine):
    """Reference: a plain dict; every index is recomputed from it from scratch."""

    def __init__(self) -> None:
        super().__init__()
        self.store = new_thread_safe_store(dict(INDEXERS))
        self.items: dict[str, Any] = {}

    @rule(name=names, version=versions, node=nodes, app=apps, update=st.booleans())
    def add(self, name: str, version: int, node: str, app: str, update: bool) -> None:
        obj = pod(name, version, node, app)
        (self.store.update if update else self.store.add)(key(name), obj)
        self.items[key(name)] = obj

    @rule(name=names)
    def delete(self, name: str) -> None:
        self.store.delete(key(name))
        self.items.pop(key(name), None)

    @rule(listed=st.lists(st.tuples(names, versions, nodes, apps), max_size=4))
    def replace(self, listed: list[tuple[str, int, str, str]]) -> None:
        new = {key(n): pod(n, v, node, app) for n, v, node, app in listed}
        self.store.replace(new, "1")
        self.items = dict(new)

    @invariant()
    def same_content_and_indexes(self) -> None:
        assert sorted(self.store.list_keys()) == sorted(self.items)
        for name, func in INDEXERS.items():
            index: dict[str, set[str]] = {}
            for k, obj in self.items.items():
                for value in func(obj):
                    index.setdefault(value, set()).add(k)
            assert sorted(self.store.list_index_func_values(name)) == sorted(index)
            for value, keys in index.items():
                assert set(self.store.index_keys(name, value)) == keys
                assert sorted(map(meta_namespace_key_func, self.store.by_index(name, value))) \
                    == sorted(keys)
            for value in ("n1", "n2", "n3", "web", "db"):
                if value not in index:
                    assert self.store.index_keys(name, value) == []
            for obj in self.items.values():  # index(): objects sharing any value
                want = {k for value in func(obj) for k in index[value]}
                got = {meta_namespace_key_func(o) for o in self.store.index(name, obj)}
                assert got == want


TestThreadSafeStore = ThreadSafeStoreMachine.TestCase
TestThreadSafeStore.settings = SETTINGS


# --- workqueue ---------------------------------------------------------------------------


class WorkqueueMachine(RuleBasedStateMachine):
    """Reference: a line, a dirty set and a processing set (client-go's queue rules).

    * add: ignored while shutting down or when the item is dirty (waiting); else dirty, and
      in line unless it is being processed (then done() puts it back in line);
    * get: the first in line, now processing and no longer dirty; once shut down and empty
      it reports shutdown;
    * done: no longer processing; back in line if it was added meanwhile.
    """

    def __init__(self) -> None:
        super().__init__()
        self.queue = new_workqueue()
        assert self.queue.c_core == (C_CORE_AVAILABLE and os.environ.get(C_CORE_ENV) != "0")
        self.line: deque[str] = deque()
        self.dirty: set[str] = set()
        self.processing: set[str] = set()
        self.shutting_down = False

    def teardown(self) -> None:
        self.queue.shut_down()

    @rule(item=names)
    def add(self, item: str) -> None:
        self.queue.add(item)
        if self.shutting_down or item in self.dirty:
            return
        self.dirty.add(item)
        if item not in self.processing:
            self.line.append(item)

    @precondition(lambda self: len(self.line) > 0 or self.shutting_down)
    @rule()
    def get(self) -> None:
        item, shutdown = self.queue.get(timeout=1)
        if not self.line:
            assert (item, shutdown) == (None, True)
            return
        want = self.line.popleft()
        assert (item, shutdown) == (want, False)
        self.processing.add(want)
        self.dirty.discard(want)

    @rule(item=names)
    def done(self, item: str) -> None:
        self.queue.done(item)
        if item in self.processing:
            self.processing.discard(item)
            if item in self.dirty:
                self.line.append(item)

    @rule()
    def shut_down(self) -> None:
        self.queue.shut_down()
        self.shutting_down = True

    @invariant()
    def same_state(self) -> None:
        assert self.queue.len() == len(self.line)
        assert self.queue.shutting_down() == self.shutting_down


TestWorkqueue = WorkqueueMachine.TestCase
TestWorkqueue.settings = SETTINGS


class PythonWorkqueueMachine(WorkqueueMachine):
    """The same rules on the Python code of the queue (the machine above runs the C core
    where it is built)."""

    def __init__(self) -> None:
        with mock.patch.dict(os.environ, {C_CORE_ENV: "0"}):
            super().__init__()
        assert not self.queue.c_core


TestPythonWorkqueue = PythonWorkqueueMachine.TestCase
TestPythonWorkqueue.settings = SETTINGS
