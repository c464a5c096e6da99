"""the_real_fifo.go (the_real_fifo_test.go, client-go v0.35), scenario by scenario."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from client_cache import FIFOClosedError, KeyFuncError, RequeueError, new_store
from client_cache.controller import process_deltas, process_deltas_in_batch
from client_cache.delta_fifo import Delta, Deltas, DeltaType
from client_cache.store import DeletedFinalStateUnknown as DFSU
from client_cache.the_real_fifo import (
    RealFIFO,
    RealFIFOOptions,
    new_real_fifo,
    new_real_fifo_with_options,
)
from client_cache.util import features
from tests.fixtures import (
    LiteralListerGetter,
    apply_sync_actions,
    check_each_burst_wakes_the_sleeping_poppers,
    check_has_synced_does_not_wait_for_a_pop,
    check_pop_unblocks_when_closed,
    check_two_producers_keep_order,
    fifo_key,
    known,
    mk,
    newest,
    pop2,
)

ADDED, UPDATED, DELETED, REPLACED, SYNC = (
    DeltaType.ADDED,
    DeltaType.UPDATED,
    DeltaType.DELETED,
    DeltaType.REPLACED,
    DeltaType.SYNC,
)


def D(t: DeltaType, obj: Any) -> Delta:
    return Delta(t, obj)


def rfifo(known_objects: Any = None, transformer: Any = None, batch: int = 1000) -> RealFIFO:
    return new_real_fifo_with_options(
        RealFIFOOptions(
            key_function=fifo_key,
            known_objects=known_objects if known_objects is not None else known(),
            transformer=transformer,
            batch_size=batch,
        )
    )


def pop_all(f: RealFIFO) -> list[Delta]:
    """Pop everything queued, concatenating the one-delta Deltas (``collapseDeltas``)."""
    out: list[Delta] = []
    while len(f):
        deltas = f.pop(lambda o, i: None, timeout=1)
        assert len(deltas) == 1
        out.extend(deltas)
    return out


def test_known_objects_required() -> None:
    with pytest.raises(ValueError, match="known_objects must be provided"):
        new_real_fifo(fifo_key, None)  # type: ignore[arg-type]


def test_basic_two_producers_keep_their_order() -> None:
    """TestRealFIFO_basic."""
    check_two_producers_keep_order(rfifo(), newest, amount=300)


def test_replace_with_delete_delta_in() -> None:
    """TestRealFIFO_replaceWithDeleteDeltaIn."""
    old, new = mk("foo", 1), mk("foo", 2)
    f = rfifo(known(old))
    f.delete(old)
    f.replace([new], "")
    assert list(f._items) == [D(DELETED, old), D(REPLACED, new)]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("add-replace-empty", "A D*"),
        ("add-delete-replace", "A D"),
        ("replaced-twice", "A R R D*"),
        ("double-replace-empty", "A D*"),
        ("readd-then-replace", "A D A2 D*2"),
    ],
)
def test_replace_makes_deletions_for_objects_only_in_queue(case: str, expected: str) -> None:
    """TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue."""
    obj, obj2 = mk("foo", 2), mk("foo", 3)
    f = rfifo()
    f.add(obj)
    if case == "add-replace-empty":
        f.replace([], "0")
    elif case == "add-delete-replace":
        f.delete(obj)
        f.replace([], "0")
    elif case == "replaced-twice":
        f.replace([obj], "0")
        f.replace([obj], "0")
        f.replace([], "0")
    elif case == "double-replace-empty":
        f.replace([], "0")
        f.replace([], "1")
    else:
        f.delete(obj)
        f.add(obj2)
        f.replace([], "0")
    table = {
        "A": D(ADDED, obj),
        "A2": D(ADDED, obj2),
        "R": D(REPLACED, obj),
        "D": D(DELETED, obj),
        "D*": D(DELETED, DFSU("foo", obj)),
        "D*2": D(DELETED, DFSU("foo", obj2)),
    }
    assert pop_all(f) == [table[t] for t in expected.split()]
    assert len(f) == 0


def test_add_update_deliver_every_event() -> None:
    """TestRealFIFO_addUpdate."""
    f = rfifo()
    f.add(mk("foo", 10))
    f.update(mk("foo", 12))
    f.delete(mk("foo", 15))
    assert pop_all(f) == [
        D(ADDED, mk("foo", 10)),
        D(UPDATED, mk("foo", 12)),
        D(DELETED, mk("foo", 15)),
    ]


def test_transformer() -> None:
    """TestRealFIFO_transformer: each non-tombstone object transformed once."""
    calls: list[Any] = []

    def transform(obj: Any) -> Any:
        assert not isinstance(obj, DFSU)
        calls.append(obj)
        return mk(obj.name, ("t", obj.val))

    f = rfifo(transformer=transform)
    f.add(mk("foo", 10))
    f.add(mk("bar", 11))
    f.update(mk("foo", 12))
    f.delete(mk("foo", 15))
    f.replace([], "")
    f.add(mk("bar", 16))
    f.replace([], "")
    got = pop_all(f)
    assert calls == [mk("foo", 10), mk("bar", 11), mk("foo", 12), mk("foo", 15), mk("bar", 16)]
    assert got == [
        D(ADDED, mk("foo", ("t", 10))),
        D(ADDED, mk("bar", ("t", 11))),
        D(UPDATED, mk("foo", ("t", 12))),
        D(DELETED, mk("foo", ("t", 15))),
        D(DELETED, DFSU("bar", mk("bar", ("t", 11)))),
        D(ADDED, mk("bar", ("t", 16))),
        D(DELETED, DFSU("bar", mk("bar", ("t", 16)))),
    ]


def test_enqueueing_no_lister() -> None:
    """TestRealFIFO_enqueueingNoLister: a delete of an unknown key IS queued."""
    f = rfifo()
    f.add(mk("foo", 10))
    f.update(mk("bar", 15))
    f.add(mk("qux", 17))
    f.delete(mk("qux", 18))
    f.delete(mk("baz", 20))
    assert [d.object.val for d in pop_all(f)] == [10, 15, 17, 18, 20]


def test_enqueueing_with_lister() -> None:
    """TestRealFIFO_enqueueingWithLister."""
    f = rfifo(known(mk("foo", 5), mk("bar", 6), mk("baz", 7)))
    f.add(mk("foo", 10))
    f.update(mk("bar", 15))
    f.delete(mk("baz", 20))
    assert [d.object.val for d in pop_all(f)] == [10, 15, 20]


def test_add_replace() -> None:
    """TestRealFIFO_addReplace."""
    f = rfifo()
    f.add(mk("foo", 10))
    f.replace([mk("foo", 15)], "0")
    assert pop_all(f) == [D(ADDED, mk("foo", 10)), D(REPLACED, mk("foo", 15))]


def test_resync_non_existing() -> None:
    """TestRealFIFO_ResyncNonExisting."""
    f = rfifo(known(mk("foo", 5)))
    f.delete(mk("foo", 10))
    f.resync()
    assert list(f._items) == [D(DELETED, mk("foo", 10))]


def test_resync() -> None:
    """TestRealFIFO_Resync."""
    f = rfifo(known(mk("foo", 5)))
    f.resync()
    assert list(f._items) == [D(SYNC, mk("foo", 5))]


def test_delete_existing_non_propagated() -> None:
    """TestRealFIFO_DeleteExistingNonPropagated."""
    f = rfifo()
    f.add(mk("foo", 5))
    f.delete(mk("foo", 6))
    assert list(f._items) == [D(ADDED, mk("foo", 5)), D(DELETED, mk("foo", 6))]


def test_replace_makes_deletions() -> None:
    """TestRealFIFO_ReplaceMakesDeletions: tombstones come before the Replaced items."""
    foo5, bar6, baz7 = mk("foo", 5), mk("bar", 6), mk("baz", 7)
    # (1)
    f = rfifo(known(foo5, bar6, baz7))
    f.delete(mk("baz", 10))
    f.replace([foo5], "0")
    assert pop_all(f) == [
        D(DELETED, mk("baz", 10)),
        D(DELETED, DFSU("bar", bar6)),
        D(REPLACED, foo5),
    ]
    # (2)
    f = rfifo(known(foo5, bar6, baz7))
    f.add(mk("baz", 10))
    f.replace([foo5], "0")
    assert pop_all(f) == [
        D(ADDED, mk("baz", 10)),
        D(DELETED, DFSU("baz", mk("baz", 10))),
        D(DELETED, DFSU("bar", bar6)),
        D(REPLACED, foo5),
    ]
    # (3)
    f = rfifo(known(foo5, bar6, baz7))
    f.delete(bar6)
    f.add(mk("bar", 100))
    f.replace([foo5], "0")
    assert pop_all(f) == [
        D(DELETED, bar6),
        D(ADDED, mk("bar", 100)),
        D(DELETED, DFSU("bar", mk("bar", 100))),
        D(DELETED, DFSU("baz", baz7)),
        D(REPLACED, foo5),
    ]
    # (4)
    f = rfifo(known(foo5, bar6, baz7))
    f.replace([mk("bar", 100), foo5], "0")
    f.replace([foo5], "0")
    assert pop_all(f) == [
        D(DELETED, DFSU("baz", baz7)),
        D(REPLACED, mk("bar", 100)),
        D(REPLACED, foo5),
        D(DELETED, DFSU("bar", mk("bar", 100))),
        D(REPLACED, foo5),
    ]
    # (5) empty known objects
    f = rfifo()
    f.add(mk("baz", 10))
    f.replace([foo5], "0")
    assert pop_all(f) == [
        D(ADDED, mk("baz", 10)),
        D(DELETED, DFSU("baz", mk("baz", 10))),
        D(REPLACED, foo5),
    ]


def test_replace_makes_deletions_replaced() -> None:
    """TestRealFIFO_ReplaceMakesDeletionsReplaced."""
    f = rfifo(known(mk("foo", 5), mk("bar", 6), mk("baz", 7)))
    f.delete(mk("baz", 10))
    f.replace([mk("foo", 6)], "0")
    assert pop_all(f) == [
        D(DELETED, mk("baz", 10)),
        D(DELETED, DFSU("bar", mk("bar", 6))),
        D(REPLACED, mk("foo", 6)),
    ]


def test_replace_known_lookup_failures_place_empty_tombstones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Flaky(LiteralListerGetter):
        def get_by_key(self, key: str) -> tuple[Any, bool]:
            if key == "gone":
                return None, False
            raise RuntimeError("lookup failed")

    f = rfifo(Flaky(lambda: [mk("gone", 1), mk("broken", 2)]))
    f.replace([], "0")
    assert pop_all(f) == [D(DELETED, DFSU("gone", None)), D(DELETED, DFSU("broken", None))]
    text = caplog.text
    assert "key does not exist in known objects store" in text
    assert "error during lookup" in text


def test_update_resync_race() -> None:
    """TestRealFIFO_UpdateResyncRace."""
    f = rfifo(known(mk("foo", 5)))
    f.update(mk("foo", 6))
    f.resync()
    assert pop_all(f) == [D(UPDATED, mk("foo", 6))]


def test_has_synced_correct_on_deletion() -> None:
    """TestRealFIFO_HasSyncedCorrectOnDeletion."""
    foo5, bar6, baz7 = mk("foo", 5), mk("bar", 6), mk("baz", 7)
    f = rfifo(known(foo5, bar6, baz7))
    f.replace([foo5], "0")
    for want in (D(DELETED, DFSU("bar", bar6)), D(DELETED, DFSU("baz", baz7)), D(REPLACED, foo5)):
        assert not f.has_synced()
        got, initial = pop2(f)
        assert got == Deltas([want]) and initial is True
    assert f.has_synced()


def test_detect_line_jumpers() -> None:
    """TestRealFIFO_detectLineJumpers: no coalescing, no line jumping."""
    f = rfifo()
    for name, val in [("foo", 10), ("bar", 1), ("foo", 11), ("foo", 13), ("zab", 30)]:
        f.add(mk(name, val))
    assert newest(f.pop(lambda o, i: None)).val == 10
    f.add(mk("foo", 14))
    assert [d.object.val for d in pop_all(f)] == [1, 11, 13, 30, 14]


def test_key_of() -> None:
    """TestRealFIFO_KeyOf."""
    f = rfifo()
    assert f.key_of(mk("A", 1)) == "A"
    assert f.key_of(DFSU("B", None)) == "B"
    assert f.key_of(Deltas([D(ADDED, mk("C", 1))])) == "C"
    assert f.key_of(Deltas([D(DELETED, DFSU("D", None))])) == "D"
    assert f.key_of(D(UPDATED, mk("E", 1))) == "E"
    with pytest.raises(KeyFuncError):
        f.key_of(Deltas())


@pytest.mark.parametrize(
    ("actions", "synced"),
    [
        ([], False),
        (["add a"], True),
        (["replace"], True),
        (["replace a b"], False),
        (["replace a b", "pop"], False),
        (["replace a b", "pop", "pop"], True),
        (["replace a a2", "pop"], False),  # duplicates are two items here
        (["replace a a2", "pop", "pop"], True),
    ],
)
def test_has_synced(actions: list[str], synced: bool) -> None:
    """TestRealFIFO_HasSynced."""
    f = rfifo()
    apply_sync_actions(f, actions)
    assert f.has_synced() is synced


def test_initial_population_counts_items_queued_before_replace() -> None:
    f = rfifo()
    f._items.append(D(ADDED, mk("pre", 1)))  # queued without marking populated
    f.replace([mk("a", 1)], "0")
    assert f._initial_population_count == 3  # pre, its tombstone, and a
    for _ in range(3):
        assert pop2(f)[1] is True
    assert f.has_synced()


def test_pop_should_unblock_when_closed() -> None:
    """TestRealFIFO_PopShouldUnblockWhenClosed."""
    f = rfifo(known(mk("foo", 5)))
    check_pop_unblocks_when_closed(f)
    with pytest.raises(FIFOClosedError):
        f.pop_batch(lambda batch, initial: None)


def o(n: int) -> Any:
    return mk(f"o{n}", n)


@pytest.mark.parametrize(
    ("initial", "actions", "batch", "expected"),
    [
        ([1, 2, 3], [], 1000, [["R1", "R2", "R3"]]),
        ([1, 2], [3, 4], 2, [["R1", "R2"], ["U3", "U4"]]),
        ([1], [1, 1], 1000, [["R1"], ["U1"], ["U1"]]),
        ([1, 2], [2, 3], 1000, [["R1", "R2"], ["U2", "U3"]]),
        ([1, 2, 3], [2], 1000, [["R1", "R2", "R3"], ["U2"]]),
        ([1, 2, 3], [], 2, [["R1", "R2"], ["R3"]]),
        (None, [1, 2, 3], 2, [["U1", "U2"], ["U3"]]),
        ([1, 2, 3], [4], 2, [["R1", "R2"], ["R3"], ["U4"]]),
    ],
)
def test_pop_multiple_deltas_in_batch(
    initial: list[int] | None, actions: list[int], batch: int, expected: list[list[str]]
) -> None:
    """TestRealFIFO_PopMultipleDeltaInBatch."""
    f = rfifo(batch=batch)
    if initial is not None:
        f.replace([o(n) for n in initial], "")
    for n in actions:
        f.update(o(n))
    got: list[list[str]] = []
    initial_items: list[str] = []
    while len(f):

        def process(deltas: list[Delta], in_initial: bool) -> None:
            names = [f"{'R' if d.type is REPLACED else 'U'}{d.object.val}" for d in deltas]
            got.append(names)
            if in_initial:
                initial_items.extend(names)

        f.pop_batch(process, timeout=1)
    assert got == expected
    assert initial_items == [f"R{n}" for n in (initial or [])]


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ([3], [[3]]),
        ([1, 2, 3], [[1, 2, 3]]),
        ([1, 2, 3, 4], [[1, 2, 3], [4]]),
        ([3, 1, 4], [[3], [1, 4]]),
    ],
)
def test_pop_broken_items_in_batch(items: list[int], expected: list[list[int]]) -> None:
    """TestRealFIFO_PopBrokenItemsInBatch: an unkeyable item closes its batch."""
    f = rfifo()
    for n in items:
        f._items.append(D(ADDED, mk("bad", n) if n in (3, 4) else o(n)))

    def flaky_key(obj: Any) -> str:
        if obj.name == "bad":
            raise ValueError("no key")
        return str(obj.name)

    f._key_func = flaky_key
    got: list[list[int]] = []
    while len(f):
        f.pop_batch(lambda ds, i: got.append([d.object.val for d in ds]), timeout=1)
    assert got == expected


def test_requeue_is_not_supported() -> None:
    f = rfifo()
    f.add(mk("a", 1))

    def requeue(obj: Any, initial: bool) -> None:
        raise RequeueError()

    with pytest.raises(RequeueError):
        f.pop(requeue)
    assert len(f) == 0


def test_key_errors_leave_queue_unchanged() -> None:
    f = rfifo(known(mk("k", 1)))
    f.add(mk("a", 1))
    for op in (f.add, f.update, f.delete):
        with pytest.raises(KeyFuncError):
            op("unkeyable")
    with pytest.raises(KeyFuncError):
        f.replace([mk("b", 1), "unkeyable"], "1")
    assert list(f._items) == [D(ADDED, mk("a", 1))]


# --- atomic replace (Go AtomicFIFO; kube-rs store swap, seed 000) -------------------------

def atomic_fifo(store: Any = None, **options: Any) -> RealFIFO:
    """An atomic RealFIFO (client-go v0.36's informer queue): no known objects."""
    return new_real_fifo_with_options(RealFIFOOptions(
        key_function=fifo_key, atomic_events=True, **options))


class Recorder:
    """A handler that records each notification with the store's content at that moment."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.calls: list[tuple[str, str, list[str]]] = []

    def _record(self, kind: str, obj: Any) -> None:
        name = obj.key if isinstance(obj, DFSU) else obj.name
        state = sorted(f"{o.name}={o.val}" for o in self.store.list())
        self.calls.append((kind, name, state))

    def on_add(self, obj: Any, initial: bool) -> None:
        self._record("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._record("update", new)

    def on_delete(self, obj: Any) -> None:
        self._record("delete", obj)


def test_atomic_replace_is_one_item_applied_in_one_step() -> None:
    store = new_store(fifo_key)
    fifo = atomic_fifo(store)
    handler = Recorder(store)

    def process(deltas: Any, initial: bool) -> None:
        process_deltas(handler, store, deltas, initial)

    fifo.replace([mk("a", 1), mk("b", 1), mk("c", 1)], "10")
    assert len(fifo) == 1 and not fifo.has_synced()
    fifo.pop(process, timeout=1)
    assert fifo.has_synced()
    first = ["a=1", "b=1", "c=1"]
    assert handler.calls == [("add", n, first) for n in "abc"]
    handler.calls.clear()
    fifo.resync()  # one SyncAll item: an update of every stored object
    assert len(fifo) == 1
    fifo.pop(process, timeout=1)
    assert handler.calls == [("update", n, first) for n in "abc"]
    fifo.replace([mk("b", 2), mk("c", 1), mk("d", 1)], "20")
    fifo.resync()  # queued behind the relist: it syncs the relisted content
    assert len(fifo) == 2
    handler.calls.clear()
    fifo.pop(process, timeout=1)
    final = ["b=2", "c=1", "d=1"]
    # every notification already sees the whole new state; the deletion comes first
    assert handler.calls == [("delete", "a", final), ("update", "b", final),
                             ("update", "c", final), ("add", "d", final)]
    handler.calls.clear()
    fifo.pop(process, timeout=1)
    assert sorted(handler.calls) == [("update", n, final) for n in "bcd"]


def test_atomic_options_are_checked_as_client_go_checks_them() -> None:
    """Go panics on these "coding errors"; ValueError here. The 0.6 spelling
    ``atomic_replace`` still works, with a DeprecationWarning."""
    with pytest.raises(ValueError, match="known_objects must not be provided"):
        RealFIFO(RealFIFOOptions(known_objects=known(), atomic_events=True))
    with pytest.raises(ValueError, match="unlock_while_processing must be false"):
        RealFIFO(RealFIFOOptions(known_objects=known(), unlock_while_processing=True))
    with pytest.raises(ValueError, match="emit_delta_type_bookmark must be false"):
        RealFIFO(RealFIFOOptions(known_objects=known(), emit_delta_type_bookmark=True))
    with pytest.raises(ValueError, match="known_objects must be provided"):
        RealFIFO(RealFIFOOptions())
    with pytest.warns(DeprecationWarning, match="atomic_events"):
        fifo = RealFIFO(RealFIFOOptions(known_objects=known(), atomic_replace=True))
    assert fifo.atomic_events


def test_bookmarks_are_queued_only_when_asked_and_reach_the_store() -> None:
    store = new_store(fifo_key)
    handler = Recorder(store)
    silent = atomic_fifo()
    silent.bookmark("5")
    assert len(silent) == 0
    fifo = atomic_fifo(emit_delta_type_bookmark=True)
    fifo.add(mk("a", 1))
    fifo.bookmark("7")
    batches: list[list[str]] = []

    def process(batch: list[Any], initial: bool) -> None:
        batches.append([d.type.value for d in batch])
        process_deltas_in_batch(handler, store, batch, initial)
    for _ in range(2):
        fifo.pop_batch(process, timeout=1)
    assert batches == [["Added"], ["Bookmark"]]  # a bookmark is popped alone
    with features.feature_gates().set_for_testing(features.ATOMIC_FIFO, True):
        assert store.last_store_sync_resource_version() == "7"


class _Watched:
    """A queue's lock that notes when the test's writer thread asks for it."""

    def __init__(self, inner: Any, trying: threading.Event) -> None:
        self.inner, self.trying = inner, trying

    def _note(self) -> None:
        if threading.current_thread().name == "test-write":
            self.trying.set()

    def __enter__(self) -> Any:
        self._note()
        return self.inner.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self.inner.__exit__(*exc)

    def acquire(self, *args: Any) -> Any:
        self._note()
        return self.inner.acquire(*args)

    def release(self) -> None:
        self.inner.release()


@pytest.mark.parametrize("unlock", [True, False])
def test_unlock_while_processing_lets_writers_in_during_a_pop(unlock: bool) -> None:
    """With ``unlock_while_processing`` an add waits for no handler (Go
    ``UnlockWhileProcessingFIFO``); without it the add waits for the pop to end."""
    fifo = atomic_fifo(unlock_while_processing=unlock)
    fifo.add(mk("a", 1))
    inside, release, added = threading.Event(), threading.Event(), threading.Event()
    trying = threading.Event()  # the writer has reached the queue's lock
    fifo._lock = _Watched(fifo._lock, trying)  # type: ignore[assignment]

    def process(deltas: Any, initial: bool) -> None:
        inside.set()
        assert release.wait(5)

    def write() -> None:
        fifo.add(mk("b", 1))
        added.set()
    popper = threading.Thread(target=fifo.pop, args=(process,), name="test-pop")
    popper.start()
    assert inside.wait(5)
    writer = threading.Thread(target=write, name="test-write")
    writer.start()
    if unlock:
        assert added.wait(5)  # in while the pop still processes
    else:
        assert trying.wait(5)  # the writer asks for the lock the pop holds...
        assert not added.is_set() and writer.is_alive()  # ...and waits for it
    release.set()
    popper.join(5)
    writer.join(5)
    assert added.is_set() and len(fifo) == 1


def test_atomic_replace_is_popped_alone_in_batches() -> None:
    fifo = atomic_fifo()
    fifo.add(mk("x", 1))
    fifo.replace([mk("a", 1), mk("b", 1)], "5")
    fifo.add(mk("y", 1))
    batches: list[list[str]] = []
    for _ in range(3):
        fifo.pop_batch(lambda batch, initial: batches.append([d.type.value for d in batch]),
                       timeout=1)
    assert batches == [["Added"], ["ReplacedAll"], ["Added"]]


def test_atomic_replace_key_error_queues_nothing() -> None:
    fifo = atomic_fifo()
    with pytest.raises(KeyFuncError):
        fifo.replace([mk("a", 1), "not-an-object"], "1")
    assert len(fifo) == 0


def test_has_synced_does_not_wait_for_a_pop() -> None:
    check_has_synced_does_not_wait_for_a_pop(rfifo(known()))


@pytest.mark.parametrize("poppers", [1, 3])
def test_each_burst_wakes_the_sleeping_poppers(poppers: int) -> None:
    check_each_burst_wakes_the_sleeping_poppers(rfifo(known()), poppers)
