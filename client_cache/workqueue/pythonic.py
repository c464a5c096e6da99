"""The Python way to drive a work queue, on top of the Go one (port additions):

::

    for key in queue:                    # get() until the queue shuts down
        with queue.processing(key):      # done() always; forget() on success,
            reconcile(key)               # add_rate_limited() on an exception

``for item in queue`` ends when the queue is shut down and empty (``get`` answered
``shutdown``); every item it yields must be given back with ``done`` (which
``processing`` does). ``processing(item)``: on success, ``forget(item)`` (a rate-limiting
queue: no more backoff for it); on an exception, ``add_rate_limited(item)`` (a
rate-limiting queue: retried after its backoff; a plain queue: not requeued), the error is
reported through :func:`~client_cache.util.runtime.handle_error` with its traceback and
swallowed, so that a ``for`` loop worker carries on, as Go's ``processNextWorkItem`` does;
``reraise=True`` lets it propagate instead. ``done(item)`` is called in every case.

In a coroutine, ``async for key in queue`` does the same with ``get_async`` (the event
loop is never blocked while it waits); ``processing`` is used the same way there.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, cast

from client_cache.util.runtime import handle_error

__all__ = ["QueueIteration"]

T = TypeVar("T", bound=Hashable)


class QueueIteration(Generic[T]):
    """Mixed into the queue classes: :meth:`__iter__` and :meth:`processing`."""

    def get(self, timeout: float | None = None) -> tuple[T | None, bool]:
        """Wait for an item: ``(item, False)``, or ``(None, True)`` once shut down and empty
        (Go ``Get``)."""
        raise NotImplementedError

    async def get_async(self) -> tuple[T | None, bool]:
        """``get`` for a coroutine, without blocking the event loop."""
        raise NotImplementedError

    def done(self, item: T) -> None:
        """Mark ``item`` processed; queue it again if it was added meanwhile (Go ``Done``)."""
        raise NotImplementedError

    def __iter__(self) -> Iterator[T]:
        """Each item from :meth:`get` until the queue is shut down and empty."""
        while True:
            item, shutdown = self.get()
            if shutdown:
                return
            yield cast(T, item)

    async def __aiter__(self) -> AsyncIterator[T]:
        """Each item from :meth:`get_async` until the queue is shut down and empty."""
        while True:
            item, shutdown = await self.get_async()
            if shutdown:
                return
            yield cast(T, item)

    @contextmanager
    def processing(self, item: T, *, reraise: bool = False) -> Iterator[T]:
        """See the module documentation."""
        try:
            yield item
        except Exception as err:
            requeue: Any = getattr(self, "add_rate_limited", None)
            if callable(requeue):
                requeue(item)
            handle_error(err)
            if reraise:
                raise
        else:
            forget: Any = getattr(self, "forget", None)
            if callable(forget):
                forget(item)
        finally:
            self.done(item)
