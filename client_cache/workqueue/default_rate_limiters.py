"""Rate limiters for the rate-limiting queue (Go ``util/workqueue/default_rate_limiters.go``).

A rate limiter answers ``when(item)``: how long to wait before the item may be processed
again (each call counts a failure), ``forget(item)``: the item succeeded, clear its history,
and ``num_requeues(item)``. Delays are float seconds.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar, runtime_checkable

from client_cache.util.clock import REAL_CLOCK, PassiveClock
from client_cache.util.rate import TokenBucket

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "TokenBucket",
    "WithMaxWaitRateLimiter",
    "default_controller_rate_limiter",
    "default_item_based_rate_limiter",
    "new_item_exponential_failure_rate_limiter",
    "new_item_fast_slow_rate_limiter",
    "new_max_of_rate_limiter",
    "new_with_max_wait_rate_limiter",
]

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

_MAX_INT64_SECONDS = (2**63 - 1) / 1e9  # the largest Go time.Duration, in seconds


@runtime_checkable
class RateLimiter(Protocol[T_contra]):
    """Decides how long an item waits before it is retried (Go ``TypedRateLimiter``)."""

    def when(self, item: T_contra) -> float:
        """How many seconds ``item`` should wait before it is added again (Go ``When``)."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item``: its next failure starts over (Go ``Forget``)."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many times ``item`` has been rate limited since it was last forgotten (Go
        ``NumRequeues``)."""
        ...


class BucketRateLimiter(Generic[T]):
    """An overall (not per-item) token bucket (Go ``BucketRateLimiter``)."""

    def __init__(self, bucket: TokenBucket) -> None:
        self.bucket = bucket

    def when(self, item: T) -> float:
        """Seconds until the token bucket has a token for the next item (Go ``When``)."""
        return self.bucket.reserve()

    def num_requeues(self, item: T) -> int:
        """Always 0: the bucket does not track items (Go ``NumRequeues``)."""
        return 0

    def forget(self, item: T) -> None:
        """Nothing to forget (Go ``Forget``)."""
        pass


class _PerItemFailures(Generic[T]):
    """The per-item failure count that the item limiters share: ``when`` records a failure,
    ``num_requeues`` reads the count and ``forget`` drops it."""

    def __init__(self) -> None:
        self._failures: dict[T, int] = {}
        self._lock = threading.Lock()

    def _record_failure(self, item: T) -> int:
        """Count one more failure of ``item``; return how many there were before it."""
        with self._lock:
            before = self._failures.get(item, 0)
            self._failures[item] = before + 1
        return before

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)


class ItemExponentialFailureRateLimiter(_PerItemFailures[T]):
    """``base * 2**failures`` per item, capped at ``max_delay`` (and never overflowing)."""

    def __init__(self, base_delay: float, max_delay: float) -> None:
        super().__init__()
        self.base_delay = base_delay
        self.max_delay = max_delay

    def when(self, item: T) -> float:
        """The base delay doubled for each earlier failure of ``item``, capped (Go
        ``When``)."""
        exp = self._record_failure(item)
        try:
            backoff = math.ldexp(self.base_delay, exp)
        except OverflowError:
            return self.max_delay
        if backoff > _MAX_INT64_SECONDS:
            return self.max_delay
        return min(backoff, self.max_delay)


class ItemFastSlowRateLimiter(_PerItemFailures[T]):
    """``fast_delay`` for the first ``max_fast_attempts`` failures, then ``slow_delay``."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        super().__init__()
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts

    def when(self, item: T) -> float:
        """The fast delay for the first attempts of ``item``, the slow delay after (Go
        ``When``)."""
        failures = self._record_failure(item) + 1
        return self.fast_delay if failures <= self.max_fast_attempts else self.slow_delay


class MaxOfRateLimiter(Generic[T]):
    """The longest delay of several limiters; every limiter counts every failure."""

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self.limiters = limiters

    def when(self, item: T) -> float:
        """The longest wait any of the limiters asks for (Go ``When``)."""
        return max((limiter.when(item) for limiter in self.limiters), default=0.0)

    def num_requeues(self, item: T) -> int:
        """The highest count any of the limiters keeps (Go ``NumRequeues``)."""
        return max((limiter.num_requeues(item) for limiter in self.limiters), default=0)

    def forget(self, item: T) -> None:
        """Forget ``item`` in every limiter (Go ``Forget``)."""
        for limiter in self.limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter(Generic[T]):
    """Caps another limiter's delay at ``max_delay``."""

    def __init__(self, limiter: RateLimiter[T], max_delay: float) -> None:
        self.limiter = limiter
        self.max_delay = max_delay

    def when(self, item: T) -> float:
        """The wrapped limiter's wait, capped at the maximum (Go ``When``)."""
        return min(self.limiter.when(item), self.max_delay)

    def forget(self, item: T) -> None:
        """Stop tracking ``item``: its next failure starts over (Go ``Forget``)."""
        self.limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many times ``item`` has been rate limited since it was last forgotten (Go
        ``NumRequeues``)."""
        return self.limiter.num_requeues(item)


def new_item_exponential_failure_rate_limiter(
    base_delay: float, max_delay: float
) -> ItemExponentialFailureRateLimiter[T]:
    """A limiter whose wait for an item starts at ``base_delay`` and doubles with each
    failure, up to ``max_delay`` (Go ``NewItemExponentialFailureRateLimiter``)."""
    return ItemExponentialFailureRateLimiter(base_delay, max_delay)


def new_item_fast_slow_rate_limiter(
    fast_delay: float, slow_delay: float, max_fast_attempts: int
) -> ItemFastSlowRateLimiter[T]:
    """A limiter waiting ``fast_delay`` for an item's first ``max_fast_attempts`` failures
    and ``slow_delay`` after (Go ``NewItemFastSlowRateLimiter``)."""
    return ItemFastSlowRateLimiter(fast_delay, slow_delay, max_fast_attempts)


def new_max_of_rate_limiter(*limiters: RateLimiter[T]) -> MaxOfRateLimiter[T]:
    """A limiter whose wait is the longest of ``limiters``' (Go ``NewMaxOfRateLimiter``)."""
    return MaxOfRateLimiter(*limiters)


def new_with_max_wait_rate_limiter(
    limiter: RateLimiter[T], max_delay: float
) -> WithMaxWaitRateLimiter[T]:
    """``limiter`` with its waits capped at ``max_delay`` (Go
    ``NewWithMaxWaitRateLimiter``)."""
    return WithMaxWaitRateLimiter(limiter, max_delay)


def default_controller_rate_limiter(clock: PassiveClock = REAL_CLOCK) -> RateLimiter[T]:
    """Per-item exponential 5 ms .. 1000 s, and overall 10 qps with a burst of 100: the
    larger delay wins (Go ``DefaultControllerRateLimiter``)."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(TokenBucket(10.0, 100, clock)),
    )


def default_item_based_rate_limiter() -> RateLimiter[T]:
    """Per-item exponential 1 ms .. 1000 s (Go ``DefaultItemBasedRateLimiter``)."""
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)
