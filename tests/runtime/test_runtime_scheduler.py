"""runtime/scheduler.py: kube-rs's scheduler rules on the fake clock (collapse, debounce,
hold while reconciling, backoff)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from client_cache.runtime import ObjectRef, ReasonKind, ReconcileReason, Scheduler
from client_cache.util.clock import FakeClock
from client_cache.workqueue.priority import LOW_PRIORITY
from tests.runtime.handed_out import take_all

A = ObjectRef("a", "ns", "Foo", "example.com/v1")
B = ObjectRef("b", "ns", "Foo", "example.com/v1")
UPDATED = ReconcileReason.object_updated()
RETRY = ReconcileReason.reconciler_requested_retry()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


def make(clock: FakeClock, debounce: float = 0.0) -> Iterator[Scheduler]:
    scheduler = Scheduler("test", debounce, clock=clock)
    yield scheduler
    scheduler.shut_down()


@pytest.fixture
def sched(clock: FakeClock) -> Iterator[Scheduler]:
    yield from make(clock)


@pytest.fixture
def debounced(clock: FakeClock) -> Iterator[Scheduler]:
    yield from make(clock, debounce=1.0)


def step(s: Scheduler, clock: FakeClock, seconds: float) -> None:
    """Advance the fake clock; when that fired a timer, wait until the loop handled it."""
    passes = s.wait_for_idle_loop()
    waiting = clock.waiter_count()
    clock.step(seconds)
    if clock.waiter_count() < waiting:
        s.wait_for_idle_loop(passes)


def nothing_due(s: Scheduler) -> bool:
    s.wait_for_idle_loop()
    try:
        s.get(timeout=0)
    except TimeoutError:
        return True
    return False


def take(s: Scheduler) -> tuple[ObjectRef, ReasonKind]:
    request = s.get(timeout=5)
    assert request is not None
    s.done(request.obj_ref)
    return request.obj_ref, request.reason.kind


def test_identical_requests_collapse_and_the_first_reason_stays(sched: Scheduler) -> None:
    sched.schedule(A, UPDATED)
    sched.schedule(A, ReconcileReason.bulk_reconcile())
    sched.schedule(B, UPDATED)
    assert len(sched) == 2
    assert sorted([take(sched), take(sched)], key=str) == [
        (A, ReasonKind.OBJECT_UPDATED), (B, ReasonKind.OBJECT_UPDATED)]
    assert nothing_due(sched)


def test_an_earlier_request_replaces_a_later_one(sched: Scheduler, clock: FakeClock) -> None:
    sched.schedule(A, RETRY, 10.0)
    sched.schedule(A, UPDATED)  # earlier: replaces the retry, and its reason wins
    assert take(sched) == (A, ReasonKind.OBJECT_UPDATED)
    step(sched, clock, 11.0)  # the retry's timer fires: already served, ignored
    assert nothing_due(sched)


def test_a_later_request_does_not_postpone(sched: Scheduler, clock: FakeClock) -> None:
    sched.schedule(A, RETRY, 2.0)
    sched.schedule(A, UPDATED, 5.0)
    step(sched, clock, 2.0)
    assert take(sched) == (A, ReasonKind.RECONCILER_REQUESTED_RETRY)
    step(sched, clock, 3.0)
    assert nothing_due(sched)


def test_debounce_timeline_of_seed_003(debounced: Scheduler, clock: FakeClock) -> None:
    """debounce 1 s: t=0 trigger, t=0.3 trigger (absorbed), runs once at t=1; a trigger at
    t=1.2 runs at t=2.2."""
    debounced.schedule(A, UPDATED)
    step(debounced, clock, 0.3)
    debounced.schedule(A, UPDATED)
    step(debounced, clock, 0.6)  # t=0.9
    assert nothing_due(debounced)
    step(debounced, clock, 0.1)  # t=1.0
    assert take(debounced) == (A, ReasonKind.OBJECT_UPDATED)
    assert nothing_due(debounced)
    step(debounced, clock, 0.2)  # t=1.2
    debounced.schedule(A, UPDATED)
    step(debounced, clock, 0.9)  # t=2.1
    assert nothing_due(debounced)
    step(debounced, clock, 0.1)  # t=2.2
    assert take(debounced) == (A, ReasonKind.OBJECT_UPDATED)


def test_an_object_being_reconciled_is_held(sched: Scheduler) -> None:
    sched.schedule(A, UPDATED)
    first = sched.get(timeout=5)
    assert first is not None
    sched.schedule(A, RETRY)  # while A is reconciling
    sched.schedule(B, UPDATED)
    assert take(sched) == (B, ReasonKind.OBJECT_UPDATED)  # others go on
    assert nothing_due(sched)  # A is held, not handed to a second worker
    sched.done(A)
    assert take(sched) == (A, ReasonKind.RECONCILER_REQUESTED_RETRY)  # once, after
    assert nothing_due(sched)


def test_backoff_doubles_from_5_ms_and_forget_resets(sched: Scheduler,
                                                     clock: FakeClock) -> None:
    delays = [sched.backoff(A, ReconcileReason.error_policy_requested_retry())
              for _ in range(4)]
    assert delays == [0.005, 0.01, 0.02, 0.04]
    assert sched.num_requeues(A) == 4
    step(sched, clock, 0.005)  # the earliest of the collapsed retries
    assert take(sched) == (A, ReasonKind.ERROR_POLICY_REQUESTED_RETRY)
    sched.forget(A)
    assert sched.num_requeues(A) == 0
    assert sched.backoff(A, ReconcileReason.error_policy_requested_retry()) == 0.005


def test_shut_down_wakes_getters_and_drops_pending(sched: Scheduler) -> None:
    sched.schedule(A, RETRY, 100.0)
    sched.shut_down()
    assert sched.get(timeout=5) is None
    assert len(sched) == 0
    sched.schedule(B, UPDATED)  # ignored once shut down
    assert sched.get(timeout=5) is None


def test_bad_debounce(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="debounce"):
        Scheduler("x", -1.0, clock=clock)


C = ObjectRef("c", "ns", "Foo", "example.com/v1")


def test_due_requests_run_highest_priority_first(sched: Scheduler) -> None:
    sched.schedule(A, UPDATED, priority=LOW_PRIORITY)
    sched.schedule(B, UPDATED, priority=LOW_PRIORITY)
    sched.schedule(C, UPDATED)  # a change: the default priority, ahead of both
    assert sched.priorities
    assert take_all(sched) == [("c", 0), ("a", LOW_PRIORITY), ("b", LOW_PRIORITY)]


def test_a_collapse_raises_the_priority_and_never_lowers_it(sched: Scheduler) -> None:
    sched.schedule(A, UPDATED, priority=LOW_PRIORITY)
    sched.schedule(B, UPDATED, priority=LOW_PRIORITY)
    sched.schedule(B, RETRY, priority=5)  # later or equal run time: raises B only
    sched.schedule(C, UPDATED, priority=3)
    sched.schedule(C, UPDATED, priority=LOW_PRIORITY)  # lower: C keeps 3
    assert take_all(sched) == [("b", 5), ("c", 3), ("a", LOW_PRIORITY)]


def test_a_delayed_request_comes_due_at_its_priority(sched: Scheduler,
                                                     clock: FakeClock) -> None:
    sched.schedule(A, RETRY, 2.0, priority=7)
    sched.schedule(B, UPDATED, 2.0)
    sched.schedule(C, UPDATED, 1.0, priority=LOW_PRIORITY)
    step(sched, clock, 1.0)
    step(sched, clock, 1.0)  # all three due now: by priority, not by due time
    assert take_all(sched) == [("a", 7), ("b", 0), ("c", LOW_PRIORITY)]


def test_a_request_moved_later_keeps_the_higher_priority(sched: Scheduler,
                                                         clock: FakeClock) -> None:
    sched.schedule(A, RETRY, 5.0, priority=LOW_PRIORITY)
    sched.schedule(A, UPDATED, 1.0, priority=4)  # earlier: replaces, at 4
    sched.schedule(B, UPDATED, 1.0)
    step(sched, clock, 1.0)
    assert take_all(sched) == [("a", 4), ("b", 0)]
    step(sched, clock, 4.0)  # the old timer: served already
    assert nothing_due(sched)


def test_a_request_held_while_reconciling_keeps_its_priority(sched: Scheduler) -> None:
    sched.schedule(A, UPDATED)
    first = sched.get(timeout=5)
    assert first is not None and first.priority == 0
    sched.schedule(A, RETRY, priority=9)  # while A reconciles
    sched.schedule(B, UPDATED)
    sched.schedule(C, UPDATED, priority=LOW_PRIORITY)
    sched.done(A)
    assert take_all(sched) == [("a", 9), ("b", 0), ("c", LOW_PRIORITY)]


def test_without_priorities_due_requests_run_first_come(clock: FakeClock) -> None:
    plain = Scheduler("plain", clock=clock, priorities=False)
    try:
        assert not plain.priorities
        plain.schedule(A, UPDATED, priority=LOW_PRIORITY)
        plain.schedule(B, UPDATED, priority=9)
        plain.schedule(C, UPDATED)
        assert [name for name, _ in take_all(plain)] == ["a", "b", "c"]
    finally:
        plain.shut_down()
