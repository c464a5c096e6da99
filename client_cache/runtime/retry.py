"""When a controller retries a failed object: its rate limiter (controller-runtime's
``controller.Options.RateLimiter``; kube-rs leaves retries to the error policy).

A reconcile that raises (without an error policy, or whose policy returns no Action) or
returns ``Action.requeue_with_backoff()`` runs again after the limiter's next delay for
that object; a reconcile that succeeds otherwise resets it (``forget``). The default,
:func:`default_rate_limiter`, is client-go's per-item exponential failure limiter: 5 ms,
doubling at every failure of the same object, up to 1,000 s. controller-runtime's default
also caps the overall rate with a 10/s, burst 100 token bucket; the port leaves that out
so one failing object never delays another's retry (give
``ControllerConfig(rate_limiter=default_controller_rate_limiter)``, from
:mod:`client_cache.workqueue`, for client-go's and controller-runtime's).
"""

from __future__ import annotations

from collections.abc import Callable

from client_cache.runtime.objectref import ObjectRef
from client_cache.workqueue.default_rate_limiters import (
    RateLimiter,
    new_item_exponential_failure_rate_limiter,
)

__all__ = ["BASE_DELAY", "MAX_DELAY", "RateLimiterFactory", "default_rate_limiter"]

BASE_DELAY = 0.005
"""The first retry's delay, in seconds."""
MAX_DELAY = 1000.0
"""The longest delay between retries of one object, in seconds."""

RateLimiterFactory = Callable[[], RateLimiter[ObjectRef]]
"""What ``ControllerConfig.rate_limiter`` holds: a function making a fresh limiter, called
once at each run (a limiter counts each object's failures, so one config can serve several
controllers without sharing them)."""


def default_rate_limiter() -> RateLimiter[ObjectRef]:
    """A new per-object exponential failure limiter, :data:`BASE_DELAY` doubling up to
    :data:`MAX_DELAY` (client-go's ``NewTypedItemExponentialFailureRateLimiter(5ms,
    1000s)``)."""
    return new_item_exponential_failure_rate_limiter(BASE_DELAY, MAX_DELAY)
