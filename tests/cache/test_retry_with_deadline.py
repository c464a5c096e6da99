"""retry_with_deadline.go (retry_with_deadline_test.go)."""

from __future__ import annotations

import pytest

from client_cache.errors import is_internal_error, new_internal_error
from client_cache.retry_with_deadline import new_retry_with_deadline
from client_cache.util.clock import FakeClock

INTERNAL = new_internal_error("etcd leader changed")
OTHER = RuntimeError("not retryable")


@pytest.mark.parametrize(
    ("duration", "steps"),
    [
        # (a) zero duration: never retry
        (0.0, [(0, INTERNAL, False), (1, INTERNAL, False)]),
        # (b) 1 s window, reset 30 s: internal errors 1 s apart
        (1.0, [(1, INTERNAL, True), (1, INTERNAL, True), (1, INTERNAL, False)]),
        # (c) a non-retryable error alone
        (1.0, [(1, OTHER, False)]),
        # (d) other errors are ignored within a burst
        (1.0, [(1, INTERNAL, True), (0, OTHER, True), (1, INTERNAL, True)]),
    ],
)
def test_retry_with_deadline(
    duration: float, steps: list[tuple[float, BaseException, bool]]
) -> None:
    """TestRetryWithDeadline: each step moves the clock, records an error, checks."""
    clock = FakeClock(1000.0)
    retry = new_retry_with_deadline(duration, 30.0, is_internal_error, clock)
    for advance, err, expected in steps:
        clock.step(advance)
        retry.after(err)
        assert retry.should_retry() is expected


def test_new_burst_after_reset_period() -> None:
    clock = FakeClock(1000.0)
    retry = new_retry_with_deadline(5.0, 60.0, is_internal_error, clock)
    retry.after(INTERNAL)
    clock.step(6)
    assert not retry.should_retry()  # the burst is older than 5 s
    clock.step(60)
    retry.after(INTERNAL)  # a minute later: a new burst
    assert retry.should_retry()
    retry.after(None)  # ignored
    assert retry.should_retry()
