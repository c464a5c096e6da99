"""A delaying queue with per-item backoff (Go ``util/workqueue/rate_limiting_queue.go``).

``add_rate_limited(item)`` is ``add_after(item, limiter.when(item))``; ``forget(item)``
clears the item's failure history (it does not mark it done); ``num_requeues(item)`` asks
the limiter. The usual worker loop::

    item, shutdown = queue.get()
    if shutdown:
        return
    try:
        sync(item)
    except Exception:
        queue.add_rate_limited(item)   # retry later, with backoff
    else:
        queue.forget(item)             # success: reset the backoff
    finally:
        queue.done(item)
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

from client_cache.util.clock import WithTicker
from client_cache.workqueue.default_rate_limiters import RateLimiter
from client_cache.workqueue.delaying_queue import (
    DelayingInterface,
    DelayingQueueConfig,
    new_typed_delaying_queue_with_config,
)
from client_cache.workqueue.metrics import MetricsProvider
from client_cache.workqueue.pythonic import QueueIteration

__all__ = [
    "RateLimitingInterface",
    "RateLimitingQueueConfig",
    "RateLimitingType",
    "new_named_rate_limiting_queue",
    "new_rate_limiting_queue",
    "new_rate_limiting_queue_with_config",
    "new_rate_limiting_queue_with_delaying_interface",
    "new_typed_rate_limiting_queue",
    "new_typed_rate_limiting_queue_with_config",
]

T = TypeVar("T", bound=Hashable)


@runtime_checkable
class RateLimitingInterface(DelayingInterface[T], Protocol[T]):
    """A delaying queue that also retries items after their rate limiter's wait (Go
    ``TypedRateLimitingInterface``)."""

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the wait its rate limiter asks for (Go ``AddRateLimited``)."""
        ...

    def forget(self, item: T) -> None:
        """Stop tracking ``item``: its next failure starts over (Go ``Forget``)."""
        ...

    def num_requeues(self, item: T) -> int:
        """How many times ``item`` has been rate limited since it was last forgotten (Go
        ``NumRequeues``)."""
        ...


@dataclass
class RateLimitingQueueConfig(Generic[T]):
    """Options of :func:`new_rate_limiting_queue_with_config`; without ``delaying_queue``
    one is built with the same name, provider and clock."""

    name: str = ""
    metrics_provider: MetricsProvider | None = None
    clock: WithTicker | None = None
    delaying_queue: DelayingInterface[T] | None = None


class RateLimitingType(QueueIteration[T]):
    """The rate-limiting queue (Go ``rateLimitingType``)."""

    def __init__(self, delaying: DelayingInterface[T], rate_limiter: RateLimiter[T]) -> None:
        self.delaying = delaying
        self.rate_limiter = rate_limiter

    def add(self, item: T) -> None:
        """Queue ``item`` unless it is queued already or the queue is shutting down (Go
        ``Add``)."""
        self.delaying.add(item)

    def add_after(self, item: T, duration: float) -> None:
        """Add ``item`` once ``duration`` seconds have passed (Go ``AddAfter``)."""
        self.delaying.add_after(item, duration)

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` once the rate limiter says it may be retried."""
        self.delaying.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Clear ``item``'s failure history (it must still be marked done)."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """How many times ``item`` has been rate limited since it was last forgotten (Go
        ``NumRequeues``)."""
        return self.rate_limiter.num_requeues(item)

    def len(self) -> int:
        """How many items wait to be handed out (Go ``Len``)."""
        return self.delaying.len()

    def __len__(self) -> int:
        return self.delaying.len()

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Wait for an item: ``(item, False)``, or ``(None, True)`` once shut down and empty
        (Go ``Get``)."""
        return self.delaying.get(timeout)

    async def get_async(self) -> tuple[T | None, bool]:
        """:meth:`get` for a coroutine (see :meth:`Typed.get_async`)."""
        return await self.delaying.get_async()

    def done(self, item: T) -> None:
        """Mark ``item`` processed; queue it again if it was added meanwhile (Go ``Done``)."""
        self.delaying.done(item)

    def shut_down(self) -> None:
        """Stop accepting items; workers get what is queued, then ``shutdown`` (Go
        ``ShutDown``)."""
        self.delaying.shut_down()

    def shut_down_with_drain(self) -> None:
        """Like ``shut_down``, then wait until every handed-out item is done (Go
        ``ShutDownWithDrain``)."""
        self.delaying.shut_down_with_drain()

    def shutting_down(self) -> bool:
        """True once the queue is shutting down (Go ``ShuttingDown``)."""
        return self.delaying.shutting_down()


def new_typed_rate_limiting_queue_with_config(
    rate_limiter: RateLimiter[T], config: RateLimitingQueueConfig[T]
) -> RateLimitingType[T]:
    """A rate-limiting queue using ``rate_limiter``, set up by ``config`` (Go
    ``NewTypedRateLimitingQueueWithConfig``)."""
    delaying = config.delaying_queue
    if delaying is None:
        delaying = new_typed_delaying_queue_with_config(
            DelayingQueueConfig(
                name=config.name, metrics_provider=config.metrics_provider, clock=config.clock
            )
        )
    return RateLimitingType(delaying, rate_limiter)


def new_rate_limiting_queue_with_config(
    rate_limiter: RateLimiter[T], config: RateLimitingQueueConfig[T]
) -> RateLimitingType[T]:
    """Same as :func:`new_typed_rate_limiting_queue_with_config` (Go
    ``NewRateLimitingQueueWithConfig``)."""
    return new_typed_rate_limiting_queue_with_config(rate_limiter, config)


def new_typed_rate_limiting_queue(rate_limiter: RateLimiter[T], *,
                                  item_type: type[T] | None = None) -> RateLimitingType[T]:
    """An unnamed rate-limiting queue (Go ``NewTypedRateLimitingQueue[T]``). ``item_type``
    (``str`` for keys) tells a type checker the item type, as Go's type argument does, so
    ``queue = new_typed_rate_limiting_queue(default_controller_rate_limiter(),
    item_type=str)`` needs no annotation; it is not checked at run time."""
    return new_typed_rate_limiting_queue_with_config(rate_limiter, RateLimitingQueueConfig())


def new_rate_limiting_queue(rate_limiter: RateLimiter[T], *,
                            item_type: type[T] | None = None) -> RateLimitingType[T]:
    """An unnamed rate-limiting queue (Go ``NewRateLimitingQueue``); ``item_type`` as in
    :func:`new_typed_rate_limiting_queue`."""
    return new_typed_rate_limiting_queue(rate_limiter)


def new_named_rate_limiting_queue(rate_limiter: RateLimiter[T], name: str, *,
                                  item_type: type[T] | None = None) -> RateLimitingType[T]:
    """Deprecated in Go; use :func:`new_rate_limiting_queue_with_config`. ``item_type`` as
    in :func:`new_typed_rate_limiting_queue`."""
    return new_typed_rate_limiting_queue_with_config(
        rate_limiter, RateLimitingQueueConfig(name=name)
    )


def new_rate_limiting_queue_with_delaying_interface(
    delaying: DelayingInterface[T], rate_limiter: RateLimiter[T]
) -> RateLimitingType[T]:
    """Deprecated in Go; use :func:`new_rate_limiting_queue_with_config`."""
    return RateLimitingType(delaying, rate_limiter)
