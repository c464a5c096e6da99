"""delta_fifo.go (delta_fifo_test.go), scenario by scenario, with our own values."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from client_cache import (
    FIFOClosedError,
    KeyFuncError,
    RequeueError,
    ZeroLengthDeltasError,
)
from client_cache.delta_fifo import (
    REPLACED_ALL_KEY,
    Delta,
    DeltaFIFO,
    DeltaFIFOOptions,
    Deltas,
    DeltaType,
    ReplacedAllInfo,
    new_delta_fifo,
    new_delta_fifo_with_options,
    queue_key_of,
)
from client_cache.fifo import pop
from client_cache.store import DeletedFinalStateUnknown as DFSU
from client_cache.store import meta_namespace_key_func
from tests.fixtures import (
    FifoObject,
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


def fifo(
    known_objects: Any = None, *, replaced: bool = False, transformer: Any = None
) -> DeltaFIFO:
    return new_delta_fifo_with_options(
        DeltaFIFOOptions(
            key_function=fifo_key,
            known_objects=known_objects,
            emit_delta_type_replaced=replaced,
            transformer=transformer,
        )
    )


def test_delta_type_values() -> None:
    assert [t.value for t in DeltaType] == ["Added", "Updated", "Deleted", "Replaced", "Sync",
                                           "ReplacedAll", "SyncAll", "Bookmark"]
    assert DeltaType.ADDED == "Added"
    assert str(FIFOClosedError()) == "DeltaFIFO: manipulating with closed queue"
    assert str(ZeroLengthDeltasError()) == "0 length Deltas object; can't get key"


def test_basic_two_producers_keep_their_order() -> None:
    """TestDeltaFIFO_basic."""
    check_two_producers_keep_order(fifo(), newest)


def test_replace_with_delete_delta_in() -> None:
    """TestDeltaFIFO_replaceWithDeleteDeltaIn: the Sync is not swallowed (issue 83810)."""
    old, new = mk("foo", 1), mk("foo", 2)
    f = fifo(known(old))
    f.delete(old)
    f.replace([new], "")
    assert f.pop(lambda o, i: None) == [D(DELETED, old), D(SYNC, new)]


@pytest.mark.parametrize("with_lister", [True, False], ids=["empty-lister", "no-lister"])
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("add-replace-empty", "A D*"),
        ("replaced-type", "A R D*"),
        ("add-delete-replace", "A D"),
        ("sync-sync", "A S S D*"),
        ("double-replace-empty", "A D*"),
        ("readd-then-replace", "A D A2 D*2"),
    ],
)
def test_replace_makes_deletions_for_objects_only_in_queue(
    with_lister: bool, case: str, expected: str
) -> None:
    """TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue."""
    obj, obj2 = mk("foo", 2), mk("foo", 3)
    lister = known() if with_lister else None
    f = fifo(lister, replaced=case == "replaced-type")
    if case == "add-replace-empty":
        f.add(obj)
        f.replace([], "0")
    elif case == "replaced-type":
        f.add(obj)
        f.replace([obj], "0")
        f.replace([], "0")
    elif case == "add-delete-replace":
        f.add(obj)
        f.delete(obj)
        f.replace([], "0")
    elif case == "sync-sync":
        f.add(obj)
        f.replace([obj], "0")
        f.replace([obj], "0")
        f.replace([], "0")
    elif case == "double-replace-empty":
        f.add(obj)
        f.replace([], "0")
        f.replace([], "1")
    else:
        f.add(obj)
        f.delete(obj)
        f.add(obj2)
        f.replace([], "0")
    table = {
        "A": D(ADDED, obj),
        "A2": D(ADDED, obj2),
        "R": D(REPLACED, obj),
        "S": D(SYNC, obj),
        "D": D(DELETED, obj),
        "D*": D(DELETED, DFSU("foo", obj)),
        "D*2": D(DELETED, DFSU("foo", obj2)),
    }
    assert f.pop(lambda o, i: None) == [table[t] for t in expected.split()]
    assert len(f) == 0 and f.list_keys() == []


def test_requeue_on_pop() -> None:
    """TestDeltaFIFO_requeueOnPop."""
    f = fifo()
    f.add(mk("foo", 10))

    def requeue_nil(obj: Any, initial: bool) -> None:
        assert newest(obj).name == "foo"
        raise RequeueError()

    f.pop(requeue_nil)
    assert f.get_by_key("foo")[1]

    def requeue_err(obj: Any, initial: bool) -> None:
        raise RequeueError(ValueError("retry me"))

    with pytest.raises(ValueError, match=r"^retry me$"):
        f.pop(requeue_err)
    assert f.get_by_key("foo")[1]

    f.pop(lambda obj, initial: None)
    assert not f.get_by_key("foo")[1]


def test_requeue_does_not_overwrite_newer_queued_item() -> None:
    f = fifo()
    f.add(mk("foo", 1))

    def requeue_after_new_event(obj: Any, initial: bool) -> None:
        f.update(mk("foo", 2))  # re-entrant write while holding the lock
        raise RequeueError()

    f.pop(requeue_after_new_event)
    assert f.get_by_key("foo")[0] == [D(UPDATED, mk("foo", 2))]


def test_add_update_then_delete() -> None:
    """TestDeltaFIFO_addUpdate."""
    f = fifo()
    f.add(mk("foo", 10))
    f.update(mk("foo", 12))
    f.delete(mk("foo", 15))
    assert f.list() == [mk("foo", 15)]
    assert f.list_keys() == ["foo"]
    deltas = f.pop(lambda o, i: None)
    assert newest(deltas).val == 15
    assert [d.type for d in deltas] == [ADDED, UPDATED, DELETED]
    with pytest.raises(TimeoutError):
        f.pop(lambda o, i: None, timeout=0.05)
    assert not f.get(mk("foo", 0))[1]


def test_transformer_runs_once_per_object_and_never_on_tombstones() -> None:
    """TestDeltaFIFO_transformer."""
    calls: dict[str, int] = {}

    def transform(obj: Any) -> Any:
        if isinstance(obj, DFSU):
            raise AssertionError("transformer called on a tombstone")
        calls[f"{obj.name}{obj.val}"] = calls.get(f"{obj.name}{obj.val}", 0) + 1
        return FifoObject(obj.name, ("x", obj.val))

    f = fifo(transformer=transform)
    f.add(mk("foo", 10))
    f.add(mk("bar", 11))
    f.update(mk("foo", 12))
    f.delete(mk("foo", 15))
    f.replace([], "")
    f.add(mk("bar", 16))
    f.replace([], "")
    assert f.list_keys() == ["foo", "bar"]
    foo = f.pop(lambda o, i: None)
    assert newest(foo) == FifoObject("foo", ("x", 15))
    assert newest(foo).val == ("x", 15)
    bar = f.pop(lambda o, i: None)
    assert newest(bar) == DFSU("bar", FifoObject("bar", ("x", 16)))
    assert all(n == 1 for n in calls.values()), calls
    assert set(calls) == {"foo10", "bar11", "foo12", "foo15", "bar16"}


def test_transformer_not_run_for_resync_but_run_for_replace() -> None:
    seen: list[Any] = []

    def transform(obj: Any) -> Any:
        seen.append(obj)
        return obj

    f = fifo(known(mk("k", 1)), transformer=transform)
    f.resync()
    assert seen == []
    assert f.pop(lambda o, i: None) == [D(SYNC, mk("k", 1))]
    f.replace([mk("k", 2)], "1")
    assert seen == [mk("k", 2)]


def test_enqueueing_no_lister() -> None:
    """TestDeltaFIFO_enqueueingNoLister: delete of an unknown key is ignored."""
    f = fifo()
    f.add(mk("foo", 10))
    f.update(mk("bar", 15))
    f.add(mk("qux", 17))
    f.delete(mk("qux", 18))
    f.delete(mk("baz", 20))
    assert [newest(f.pop(lambda o, i: None)).val for _ in range(3)] == [10, 15, 18]
    assert len(f) == 0


def test_enqueueing_with_lister() -> None:
    """TestDeltaFIFO_enqueueingWithLister: delete of a known key is queued."""
    f = fifo(known(mk("foo", 5), mk("bar", 6), mk("baz", 7)))
    f.add(mk("foo", 10))
    f.update(mk("bar", 15))
    f.delete(mk("baz", 20))
    assert [newest(f.pop(lambda o, i: None)).val for _ in range(3)] == [10, 15, 20]
    assert len(f) == 0


def test_delete_with_failing_lister_lookup_is_queued() -> None:
    class Broken(LiteralListerGetter):
        def get_by_key(self, key: str) -> tuple[Any, bool]:
            raise RuntimeError("lookup failed")

    f = fifo(Broken(list))
    f.delete(mk("ghost", 1))
    assert f.pop(lambda o, i: None) == [D(DELETED, mk("ghost", 1))]


def test_add_replace() -> None:
    """TestDeltaFIFO_addReplace."""
    f = fifo()
    f.add(mk("foo", 10))
    f.replace([mk("foo", 15)], "0")
    got: list[Any] = []
    consumer = threading.Thread(
        target=lambda: got.append(f.pop(lambda o, i: None, timeout=5)),
        name="test-popper",
        daemon=True,
    )
    consumer.start()
    consumer.join(5)
    assert newest(got[0]).val == 15
    assert [d.type for d in got[0]] == [ADDED, SYNC]
    with pytest.raises(TimeoutError):
        f.pop(lambda o, i: None, timeout=0.05)
    assert not f.get(mk("foo", 0))[1]


def test_resync_non_existing() -> None:
    """TestDeltaFIFO_ResyncNonExisting: a queued key is not resynced."""
    f = fifo(known(mk("foo", 5)))
    f.delete(mk("foo", 10))
    f.resync()
    assert f.get_by_key("foo")[0] == [D(DELETED, mk("foo", 10))]


def test_resync() -> None:
    """TestDeltaFIFO_Resync."""
    f = fifo(known(mk("foo", 5)))
    f.resync()
    assert f.get_by_key("foo")[0] == [D(SYNC, mk("foo", 5))]


def test_resync_without_known_objects_is_noop() -> None:
    f = fifo()
    f.resync()
    assert len(f) == 0


def test_delete_existing_non_propagated() -> None:
    """TestDeltaFIFO_DeleteExistingNonPropagated: delete allowed because key is queued."""
    f = fifo(known())
    f.add(mk("foo", 5))
    f.delete(mk("foo", 6))
    deltas, _ = f.get_by_key("foo")
    assert deltas == [D(ADDED, mk("foo", 5)), D(DELETED, mk("foo", 6))]


def test_replace_makes_deletions() -> None:
    """TestDeltaFIFO_ReplaceMakesDeletions, all five cases."""
    foo5, bar6, baz7 = mk("foo", 5), mk("bar", 6), mk("baz", 7)

    def pops(f: DeltaFIFO, n: int) -> list[Deltas]:
        out = [f.pop(lambda o, i: None) for _ in range(n)]
        assert len(f) == 0
        return out

    # (1)
    f = fifo(known(foo5, bar6, baz7))
    f.delete(mk("baz", 10))
    f.replace([foo5], "0")
    assert pops(f, 3) == [
        [D(DELETED, mk("baz", 10))],
        [D(SYNC, foo5)],
        [D(DELETED, DFSU("bar", bar6))],
    ]
    # (2)
    f = fifo(known(foo5, bar6, baz7))
    f.add(mk("baz", 10))
    f.replace([foo5], "0")
    assert pops(f, 3) == [
        [D(ADDED, mk("baz", 10)), D(DELETED, DFSU("baz", mk("baz", 10)))],
        [D(SYNC, foo5)],
        [D(DELETED, DFSU("bar", bar6))],
    ]
    # (3)
    f = fifo(known(foo5, bar6, baz7))
    f.delete(bar6)
    f.add(mk("bar", 100))
    f.replace([foo5], "0")
    assert pops(f, 3) == [
        [D(DELETED, bar6), D(ADDED, mk("bar", 100)), D(DELETED, DFSU("bar", mk("bar", 100)))],
        [D(SYNC, foo5)],
        [D(DELETED, DFSU("baz", baz7))],
    ]
    # (4)
    f = fifo(known(foo5, bar6, baz7))
    f.replace([mk("bar", 100), foo5], "0")
    f.replace([foo5], "0")
    assert pops(f, 3) == [
        [D(SYNC, mk("bar", 100)), D(DELETED, DFSU("bar", mk("bar", 100)))],
        [D(SYNC, foo5), D(SYNC, foo5)],
        [D(DELETED, DFSU("baz", baz7))],
    ]
    # (5) no lister
    f = fifo()
    f.add(mk("baz", 10))
    f.replace([foo5], "0")
    assert pops(f, 2) == [
        [D(ADDED, mk("baz", 10)), D(DELETED, DFSU("baz", mk("baz", 10)))],
        [D(SYNC, foo5)],
    ]


def test_replace_makes_deletions_replaced() -> None:
    """TestDeltaFIFO_ReplaceMakesDeletionsReplaced."""
    foo5, bar6, baz7 = mk("foo", 5), mk("bar", 6), mk("baz", 7)
    f = fifo(known(foo5, bar6, baz7), replaced=True)
    f.delete(mk("baz", 10))
    f.replace([mk("foo", 6)], "0")
    got = [f.pop(lambda o, i: None) for _ in range(3)]
    assert got == [
        [D(DELETED, mk("baz", 10))],
        [D(REPLACED, mk("foo", 6))],
        [D(DELETED, DFSU("bar", bar6))],
    ]


def test_replace_delta_type() -> None:
    """TestDeltaFIFO_ReplaceDeltaType."""
    f = fifo(known(mk("foo", 5)), replaced=True)
    f.replace([mk("foo", 5)], "0")
    assert f.pop(lambda o, i: None) == [D(REPLACED, mk("foo", 5))]


def test_replace_tombstone_for_missing_known_object_has_no_object() -> None:
    class Vanishing(LiteralListerGetter):
        def get_by_key(self, key: str) -> tuple[Any, bool]:
            if key == "gone":
                return None, False
            raise RuntimeError("lookup failed")

    f = fifo(Vanishing(lambda: [mk("gone", 1), mk("broken", 2)]))
    f.replace([], "0")
    got = [f.pop(lambda o, i: None) for _ in range(2)]
    assert got == [[D(DELETED, DFSU("gone", None))], [D(DELETED, DFSU("broken", None))]]


def test_update_resync_race() -> None:
    """TestDeltaFIFO_UpdateResyncRace."""
    f = fifo(known(mk("foo", 5)))
    f.update(mk("foo", 6))
    f.resync()
    assert f.pop(lambda o, i: None) == [D(UPDATED, mk("foo", 6))]


def test_has_synced_correct_on_deletion() -> None:
    """TestDeltaFIFO_HasSyncedCorrectOnDeletion: tombstones count in the initial list."""
    foo5, bar6, baz7 = mk("foo", 5), mk("bar", 6), mk("baz", 7)
    f = fifo(known(foo5, bar6, baz7))
    f.replace([foo5], "0")
    expected = [
        [D(SYNC, foo5)],
        [D(DELETED, DFSU("bar", bar6))],
        [D(DELETED, DFSU("baz", baz7))],
    ]
    for want in expected:
        assert not f.has_synced()
        got, initial = pop2(f)
        assert got == want
        assert initial is True
    assert f.has_synced()


def test_detect_line_jumpers() -> None:
    """TestDeltaFIFO_detectLineJumpers."""
    f = fifo()
    for name, val in [("foo", 10), ("bar", 1), ("foo", 11), ("foo", 13), ("zab", 30)]:
        f.add(mk(name, val))
    assert newest(pop(f)).val == 13
    f.add(mk("foo", 14))  # goes to the back
    assert [newest(pop(f)).val for _ in range(3)] == [1, 30, 14]


def test_add_if_not_present() -> None:
    """TestDeltaFIFO_addIfNotPresent."""
    f = fifo()
    with pytest.raises(KeyFuncError) as info:
        f.add_if_not_present(Deltas())
    chain: list[BaseException] = []
    cur: BaseException | None = info.value
    while cur is not None:
        chain.append(cur)
        cur = cur.__cause__
    assert any(isinstance(e, ZeroLengthDeltasError) for e in chain)

    f.add(mk("b", 3))
    assert newest(pop(f)) == mk("b", 3)
    f.add(mk("c", 4))
    assert newest(pop(f)) == mk("c", 4)
    assert len(f) == 0

    f.add(mk("a", 1))
    f.add(mk("b", 2))
    f.add_if_not_present(Deltas([D(SYNC, mk("b", 3))]))
    f.add_if_not_present([D(SYNC, mk("c", 4))])  # a plain list of Delta is accepted
    assert len(f) == 3
    assert [newest(pop(f)).val for _ in range(3)] == [1, 2, 4]


def test_add_if_not_present_rejects_non_deltas() -> None:
    f = fifo()
    for bad in (mk("a", 1), [mk("a", 1)], "a"):
        with pytest.raises(TypeError, match="must be of type Deltas"):
            f.add_if_not_present(bad)
    assert len(f) == 0


def test_key_of() -> None:
    """TestDeltaFIFO_KeyOf."""
    f = fifo()
    assert f.key_of(mk("A", 1)) == "A"
    assert f.key_of(DFSU("B", None)) == "B"
    assert f.key_of(Deltas([D(ADDED, mk("C", 1))])) == "C"
    assert f.key_of(Deltas([D(DELETED, DFSU("D", None))])) == "D"
    with pytest.raises(KeyFuncError):
        f.key_of("not a fifo object")


@pytest.mark.parametrize(
    ("actions", "synced"),
    [
        ([], False),
        (["add a"], True),
        (["replace"], True),
        (["replace a b"], False),
        (["replace a b", "pop"], False),
        (["replace a b", "pop", "pop"], True),
        (["replace a a2", "pop"], True),  # duplicate keys count once
        (["delete a"], True),
        (["resync"], False),
    ],
)
def test_has_synced(actions: list[str], synced: bool) -> None:
    """TestDeltaFIFO_HasSynced."""
    f = fifo()
    apply_sync_actions(f, actions)
    assert f.has_synced() is synced


def test_pop_should_unblock_when_closed() -> None:
    """TestDeltaFIFO_PopShouldUnblockWhenClosed."""
    f = fifo(known(mk("foo", 5)))
    check_pop_unblocks_when_closed(f)
    assert pop(f) is None  # the helper returns None on a closed queue
    f.add(mk("late", 1))  # close does not reject writes
    assert newest(pop(f)) == mk("late", 1)


def test_pop_exception_propagates_and_item_is_dropped() -> None:
    f = fifo()
    f.add(mk("a", 1))

    def boom(obj: Any, initial: bool) -> None:
        raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError, match="handler failed"):
        f.pop(boom)
    assert len(f) == 0


def test_key_errors_leave_queue_unchanged() -> None:
    f = fifo(known(mk("k", 1)))
    f.add(mk("a", 1))
    before = f.get_by_key("a")
    for op in (f.add, f.update, f.delete):
        with pytest.raises(KeyFuncError):
            op("unkeyable")
    with pytest.raises(KeyFuncError):
        f.replace([mk("b", 2), "unkeyable"], "1")
    assert f.list_keys() == ["a"]
    assert f.get_by_key("a") == before
    assert f.get_by_key("b") == (None, False)


def test_transformer_error_leaves_queue_unchanged() -> None:
    def transform(obj: Any) -> Any:
        if obj.val == "bad":
            raise ValueError("cannot transform")
        return obj

    f = fifo(known(), transformer=transform)
    f.add(mk("a", 1))
    with pytest.raises(ValueError):
        f.update(mk("a", "bad"))
    with pytest.raises(ValueError):
        f.replace([mk("b", 1), mk("c", "bad")], "1")
    assert f.list_keys() == ["a"]
    assert f.get_by_key("a")[0] == [D(ADDED, mk("a", 1))]
    assert f.has_synced()


def test_get_returns_a_copy() -> None:
    f = fifo()
    f.add(mk("a", 1))
    deltas, _ = f.get_by_key("a")
    deltas.append(D(DELETED, mk("a", 2)))
    assert f.get_by_key("a")[0] == [D(ADDED, mk("a", 1))]


def test_deltas_oldest_newest() -> None:
    d = Deltas([D(ADDED, 1), D(UPDATED, 2)])
    assert d.oldest() == D(ADDED, 1) and d.newest() == D(UPDATED, 2)
    assert Deltas().oldest() is None and Deltas().newest() is None


def test_deprecated_constructor_never_emits_replaced() -> None:
    f = new_delta_fifo(fifo_key, known(mk("a", 1)))
    f.replace([mk("a", 1)], "1")
    assert pop(f) == [D(SYNC, mk("a", 1))]
    assert f.transformer() is None


def test_has_synced_does_not_wait_for_a_pop() -> None:
    check_has_synced_does_not_wait_for_a_pop(fifo(known()))


@pytest.mark.parametrize("poppers", [1, 3])
def test_each_burst_wakes_the_sleeping_poppers(poppers: int) -> None:
    check_each_burst_wakes_the_sleeping_poppers(fifo(known()), poppers)


def test_queue_keys_of_wrappers_stay_right_once_object_classes_are_remembered() -> None:
    """The queue keys an object of a class it has seen at once; its own wrappers (deltas,
    a delta, a tombstone, a relist) are unwrapped every time, however often they come."""
    obj = {"metadata": {"namespace": "ns", "name": "a"}}
    replaced = ReplacedAllInfo([obj], "5", ["ns/a"])
    wrapped = [
        (obj, "ns/a"),
        (Deltas([Delta(DeltaType.ADDED, {"metadata": {"name": "b"}})]), "b"),
        (Delta(DeltaType.UPDATED, obj), "ns/a"),
        (DFSU("gone/key", None), "gone/key"),
        (Delta(DeltaType.DELETED, DFSU("ns/c", obj)), "ns/c"),
        (replaced, REPLACED_ALL_KEY),
    ]
    for _ in range(3):
        for item, key in wrapped:
            assert queue_key_of(meta_namespace_key_func, item) == key
    with pytest.raises(KeyFuncError):
        queue_key_of(meta_namespace_key_func, Deltas())
