"""A token bucket with the reservation semantics of Go's ``golang.org/x/time/rate``
``Limiter``, which client-go's work queue (``BucketRateLimiter``) and its client-side
throttling (``util/flowcontrol``) are both built on: :class:`TokenBucket`.
"""

from __future__ import annotations

import math
import threading

from client_cache.util.clock import REAL_CLOCK, PassiveClock

__all__ = ["TokenBucket"]


class TokenBucket:
    """A token bucket with ``golang.org/x/time/rate`` reservation semantics.

    ``limit`` tokens are added per second up to ``burst``; the bucket starts full.
    :meth:`reserve` always takes one token, letting the count go negative, and returns how
    long the caller must wait for it, so consecutive reservations past the burst are spaced
    ``1/limit`` apart. ``limit`` of ``math.inf`` never delays.
    """

    def __init__(self, limit: float, burst: int, clock: PassiveClock = REAL_CLOCK) -> None:
        self.limit = limit
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.monotonic()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token; return the delay until it may be used (0 if available now)."""
        with self._lock:
            now = self._clock.monotonic()
            if math.isinf(self.limit):
                return 0.0
            if self.burst < 1:
                return math.inf  # Go: the reservation is not ok, Delay() is InfDuration
            last = min(self._last, now)
            tokens = min(self._tokens + (now - last) * self.limit, float(self.burst))
            tokens -= 1.0
            wait = -tokens / self.limit if tokens < 0 else 0.0
            self._last = now
            self._tokens = tokens
            return wait

    def try_reserve(self) -> bool:
        """Take a token only if one is available now (Go ``rate.Limiter.Allow``)."""
        with self._lock:
            if math.isinf(self.limit):
                return True
            now = self._clock.monotonic()
            tokens = min(self._tokens + (now - min(self._last, now)) * self.limit,
                         float(self.burst))
            if tokens < 1.0:
                return False
            self._last = now
            self._tokens = tokens - 1.0
            return True
