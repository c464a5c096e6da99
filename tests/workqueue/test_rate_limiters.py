"""workqueue/default_rate_limiters.go (default_rate_limiters_test.go) and
rate_limiting_queue.go (rate_limiting_queue_test.go)."""

from __future__ import annotations

import pytest

from client_cache.util.clock import FakeClock
from client_cache.workqueue import (
    BucketRateLimiter,
    DelayingType,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    TokenBucket,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
    default_item_based_rate_limiter,
    new,
    new_rate_limiting_queue_with_delaying_interface,
)

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("native_impl")

MS = 0.001
T0 = 1_763_800_000.0


def whens(limiter: object, item: str, n: int) -> list[float]:
    return [limiter.when(item) for _ in range(n)]  # type: ignore[attr-defined]


def test_item_exponential_failure_rate_limiter() -> None:
    """TestItemExponentialFailureRateLimiter."""
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(MS, 1)
    assert whens(limiter, "one", 5) == pytest.approx([1 * MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS])
    assert limiter.num_requeues("one") == 5
    assert whens(limiter, "two", 2) == pytest.approx([1 * MS, 2 * MS])
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(MS)


def test_item_exponential_failure_rate_limiter_overflow() -> None:
    """TestItemExponentialFailureRateLimiterOverFlow."""
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(MS, 1000)
    whens(limiter, "one", 5)
    assert limiter.when("one") == pytest.approx(32 * MS)
    whens(limiter, "one", 1000)
    assert limiter.when("one") == 1000

    minute, hour = 60.0, 3600.0
    slow: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(
        minute, 1000 * hour
    )
    whens(slow, "one", 2)
    assert slow.when("one") == 4 * minute
    whens(slow, "one", 1000)
    assert slow.when("one") == 1000 * hour


def test_item_fast_slow_rate_limiter() -> None:
    """TestItemFastSlowRateLimiter."""
    limiter: ItemFastSlowRateLimiter[str] = ItemFastSlowRateLimiter(5 * MS, 10, 3)
    assert whens(limiter, "one", 5) == [5 * MS, 5 * MS, 5 * MS, 10, 10]
    assert limiter.num_requeues("one") == 5
    assert whens(limiter, "two", 2) == [5 * MS, 5 * MS]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


def test_max_of_rate_limiter() -> None:
    """TestMaxOfRateLimiter: every limiter advances; the largest delay wins."""
    limiter: MaxOfRateLimiter[str] = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(5 * MS, 3, 3), ItemExponentialFailureRateLimiter(MS, 1)
    )
    assert whens(limiter, "one", 5) == pytest.approx([5 * MS, 5 * MS, 5 * MS, 3, 3])
    assert limiter.num_requeues("one") == 5
    assert whens(limiter, "two", 2) == pytest.approx([5 * MS, 5 * MS])
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(5 * MS)


class StepLimiter:
    """Upstream's test helper: ``base`` until ``threshold`` calls, then ``max``."""

    def __init__(self, base: float, maximum: float, threshold: int) -> None:
        self.base, self.max, self.threshold, self.count = base, maximum, threshold, 0

    def when(self, item: str) -> float:
        self.count += 1
        return self.base if self.count <= self.threshold else self.max

    def num_requeues(self, item: str) -> int:
        return self.count

    def forget(self, item: str) -> None:
        self.count = 0


def test_with_max_wait_rate_limiter() -> None:
    """TestWithMaxWaitRateLimiter."""
    limiter: WithMaxWaitRateLimiter[str] = WithMaxWaitRateLimiter(
        StepLimiter(5 * MS, 1000, 100), 500
    )
    assert whens(limiter, "one", 100) == [5 * MS] * 100
    assert whens(limiter, "one", 100) == [500] * 100
    assert limiter.num_requeues("one") == 200
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0


def test_bucket_rate_limiter_reservations() -> None:
    clock = FakeClock(T0)
    limiter: BucketRateLimiter[str] = BucketRateLimiter(TokenBucket(10, 3, clock))
    assert whens(limiter, "x", 3) == [0, 0, 0]  # the burst
    assert whens(limiter, "x", 3) == pytest.approx([0.1, 0.2, 0.3])  # reservations queue up
    clock.step(0.3)
    assert limiter.when("x") == pytest.approx(0.1)
    clock.step(10)  # refills to the burst, never beyond
    assert whens(limiter, "x", 4) == pytest.approx([0, 0, 0, 0.1])
    assert limiter.num_requeues("x") == 0
    limiter.forget("x")
    assert TokenBucket(10, 0, clock).reserve() == float("inf")
    assert TokenBucket(float("inf"), 0, clock).reserve() == 0


def test_default_limiters() -> None:
    clock = FakeClock(T0)
    controller = default_controller_rate_limiter(clock)
    # 5 ms exponential per item, 10 qps / burst 100 overall: the first 100 are not delayed
    # by the bucket, so the item backoff shows; the 101st reservation waits 0.1 s.
    delays = [controller.when(f"item-{i}") for i in range(100)]
    assert delays == pytest.approx([0.005] * 100)
    assert controller.when("item-x") == pytest.approx(0.1)
    assert controller.num_requeues("item-0") == 1
    controller.forget("item-0")
    assert controller.num_requeues("item-0") == 0
    item_based = default_item_based_rate_limiter()
    assert whens(item_based, "a", 3) == pytest.approx([0.001, 0.002, 0.004])


def test_rate_limiting_queue() -> None:
    """TestRateLimitingQueue: add_rate_limited schedules with the limiter's delays."""
    clock = FakeClock(T0)
    delaying: DelayingType[str] = DelayingType(clock, new(), start_waiting_loop=False)
    q = new_rate_limiting_queue_with_delaying_interface(
        delaying, ItemExponentialFailureRateLimiter(MS, 1)
    )

    def next_delay() -> float:
        entry, ok = delaying.waiting_for_add.try_recv()
        assert ok and entry is not None
        return round(entry.ready_at - clock.now(), 6)  # epoch floats resolve ~0.24 us

    q.add_rate_limited("one")
    assert next_delay() == MS
    q.add_rate_limited("one")
    assert next_delay() == 2 * MS
    assert q.num_requeues("one") == 2
    q.add_rate_limited("two")
    assert next_delay() == MS
    q.add_rate_limited("two")
    assert next_delay() == 2 * MS
    q.forget("one")
    assert q.num_requeues("one") == 0
    q.add_rate_limited("one")
    assert next_delay() == MS
    q.shut_down()


def test_forget_and_num_requeues_of_unknown_items_are_harmless() -> None:
    for limiter in (
        ItemExponentialFailureRateLimiter[str](MS, 1),
        ItemFastSlowRateLimiter[str](MS, 1, 2),
        MaxOfRateLimiter[str](ItemExponentialFailureRateLimiter(MS, 1)),
    ):
        limiter.forget("never-seen")
        assert limiter.num_requeues("never-seen") == 0
        assert limiter.when("never-seen") == pytest.approx(MS)
