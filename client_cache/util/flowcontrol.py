"""Client-side request throttling (Go ``k8s.io/client-go/util/flowcontrol``).

:class:`TokenBucketRateLimiter` lets ``qps`` requests a second through on average, with
bursts of up to ``burst``; :meth:`~TokenBucketRateLimiter.accept` blocks the caller until
its turn. :func:`throttle_client` puts one in front of every request a ``kubernetes``
``ApiClient`` sends (its ``rest_client.request``), as client-go's REST client does with
``rest.Config.QPS``/``Burst``, so that a controller stuck in an error loop cannot hammer
the apiserver. The library's own LIST and WATCH requests use a pool of their own and are
not throttled (a watch is one long request).
"""

from __future__ import annotations

from typing import Any

from client_cache.util.clock import REAL_CLOCK, Clock
from client_cache.util.rate import TokenBucket
from client_cache.util.rest_metrics import RateLimiter, set_client_limiter

__all__ = ["TokenBucketRateLimiter", "new_token_bucket_rate_limiter", "throttle_client"]

class TokenBucketRateLimiter:
    """A blocking token bucket (Go ``flowcontrol.tokenBucketRateLimiter``)."""

    def __init__(self, qps: float, burst: int, clock: Clock = REAL_CLOCK) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"qps must be > 0 and burst >= 1, not {qps} and {burst}")
        self._qps = qps
        self._bucket = TokenBucket(qps, burst, clock)
        self._clock = clock

    def qps(self) -> float:
        """The sustained rate, in tokens per second."""
        return self._qps

    def try_accept(self) -> bool:
        """Take a token if one is free now (Go ``TryAccept``)."""
        return self._bucket.try_reserve()

    def accept(self) -> None:
        """Take a token, waiting for it as long as needed (Go ``Accept``)."""
        wait = self._bucket.reserve()
        if wait > 0:
            self._clock.sleep(wait)


def new_token_bucket_rate_limiter(qps: float, burst: int) -> TokenBucketRateLimiter:
    """A limiter allowing ``qps`` requests per second on average and bursts of ``burst`` (Go
    ``flowcontrol.NewTokenBucketRateLimiter``)."""
    return TokenBucketRateLimiter(qps, burst)


def throttle_client(api_client: Any, limiter: RateLimiter) -> RateLimiter:
    """Make every request ``api_client`` sends wait for ``limiter`` first (Go: the REST
    client's rate limiter), its wait reported as ``rest_client_rate_limiter_duration_seconds``
    (:mod:`client_cache.util.rest_metrics`). A client throttled already keeps its limiter,
    which is returned."""
    return set_client_limiter(api_client, limiter)
