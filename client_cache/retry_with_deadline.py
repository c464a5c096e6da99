"""Retry transient errors for a while (Go ``tools/cache/retry_with_deadline.go``).

The Reflector uses it to re-establish a watch right away after an internal server error,
for at most ``max_retry_duration`` counted from the first error of a burst. Errors that are
``min_reset_period`` or more apart start a new burst.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from client_cache.util.clock import PassiveClock

__all__ = ["RetryWithDeadline", "new_retry_with_deadline"]


@runtime_checkable
class RetryWithDeadline(Protocol):
    """Decides whether a failed watch is retried at once: retryable errors are, until they
    have gone on for ``max_retry_duration`` seconds; a quiet ``min_reset_period`` starts
    the count again (Go ``RetryWithDeadline``)."""

    def after(self, err: BaseException | None) -> None:
        """Record the outcome of an attempt (None: success) (Go ``After``)."""
        ...

    def should_retry(self) -> bool:
        """True when the last error may be retried now (Go ``ShouldRetry``)."""
        ...


class _RetryWithDeadline:
    def __init__(
        self,
        max_retry_duration: float,
        min_reset_period: float,
        is_retryable: Callable[[BaseException | None], bool],
        clock: PassiveClock,
    ) -> None:
        self._max = max_retry_duration
        self._min_reset = min_reset_period
        self._is_retryable = is_retryable
        self._clock = clock
        self._first: float | None = None
        self._last: float | None = None
        self._lock = threading.Lock()

    def after(self, err: BaseException | None) -> None:
        """Record ``err`` if it is retryable (anything else, ``None`` included, is ignored)."""
        if not self._is_retryable(err):
            return
        with self._lock:
            now = self._clock.monotonic()
            if self._last is None or now - self._last >= self._min_reset:
                self._first = None  # a new burst
            if self._first is None:
                self._first = now
            self._last = now

    def should_retry(self) -> bool:
        """Whether the current burst is still within ``max_retry_duration`` (inclusive)."""
        with self._lock:
            if self._max <= 0:
                return False
            if self._first is not None and self._clock.monotonic() - self._first <= self._max:
                return True
            self._first = None
            self._last = None
            return False


def new_retry_with_deadline(
    max_retry_duration: float,
    min_reset_period: float,
    is_retryable: Callable[[BaseException | None], bool],
    clock: PassiveClock,
) -> RetryWithDeadline:
    """A :class:`RetryWithDeadline` (Go ``NewRetryWithDeadline``)."""
    return _RetryWithDeadline(max_retry_duration, min_reset_period, is_retryable, clock)
