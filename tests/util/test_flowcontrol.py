"""util/flowcontrol.py: client-side throttling (client-go util/flowcontrol)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.util.clock import FakeClock
from client_cache.util.flowcontrol import TokenBucketRateLimiter, throttle_client


def test_token_bucket_burst_then_rate() -> None:
    """Burst 3 at 2 qps: three requests pass at once, then one every 0.5 s (the fake
    clock's sleep steps it, so the waits add up exactly)."""
    clock = FakeClock(100.0)
    limiter = TokenBucketRateLimiter(2.0, 3, clock)
    for _ in range(3):
        limiter.accept()
    assert clock.monotonic() == 100.0
    assert not limiter.try_accept()
    limiter.accept()
    assert clock.monotonic() == pytest.approx(100.5)
    limiter.accept()
    assert clock.monotonic() == pytest.approx(101.0)
    clock.step(10.0)  # refills up to the burst, not beyond
    assert [limiter.try_accept() for _ in range(4)] == [True, True, True, False]
    assert limiter.qps() == 2.0


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="qps"):
        TokenBucketRateLimiter(0, 1)
    with pytest.raises(ValueError, match="burst"):
        TokenBucketRateLimiter(1, 0)


def test_throttle_client_delays_every_request() -> None:
    clock = FakeClock(0.0)
    with EmbeddedApiServer() as server:
        client: Any = server.api_client()
        limiter = throttle_client(client, TokenBucketRateLimiter(10.0, 2, clock))
        assert throttle_client(client, TokenBucketRateLimiter(1.0, 1)) is limiter  # kept
        core = CoreV1Api(client)
        for i in range(5):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"c{i}"}})
        # 2 at once, then 3 more 0.1 s apart
        assert clock.monotonic() == pytest.approx(0.3)
        assert server.requests >= 5
