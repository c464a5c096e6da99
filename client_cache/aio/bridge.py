"""Running coroutines on an event loop from the library's threads, and waiting for them.

:class:`LoopCaller` is what every part of :mod:`client_cache.aio` stands on: a library
thread (an informer's handler thread, a controller worker) hands a coroutine to the loop
with ``asyncio.run_coroutine_threadsafe`` and waits, in that thread, for its result; the
loop itself is never blocked. Waits can be given up: :meth:`LoopCaller.cancel_all`
cancels the coroutines still running and wakes their threads, which is how an informer's
stop or a controller's shutdown deadline ends a thread waiting on a slow (or a stopped)
loop.

Without a loop, a :class:`LoopCaller` owns one: a new event loop on a thread of its own
(named, daemon) that :meth:`LoopCaller.close` stops, cancelling what still runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from client_cache.errors import ClientCacheError

__all__ = ["CallCancelledError", "LoopCaller", "is_async_callable"]

R = TypeVar("R")

_CLOSE_SECONDS = 1.0
"""How long an owned loop's thread is given to cancel its tasks and end."""


class CallCancelledError(ClientCacheError):
    """A coroutine run through :meth:`LoopCaller.call` was cancelled before it finished
    (the caller was cancelled or closed, or the task was cancelled on its loop)."""


def is_async_callable(fn: object) -> bool:
    """``fn`` is an ``async def`` function (or a callable object whose ``__call__`` is)."""
    return asyncio.iscoroutinefunction(fn) or asyncio.iscoroutinefunction(
        getattr(fn, "__call__", None))  # noqa: B004 - the method, not callability


class LoopCaller:
    """Runs coroutines on ``loop`` for callers in other threads (see the module
    documentation). ``loop=None``: the caller starts and owns a loop on a thread named
    ``name``."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None, *,
                 name: str = "client-cache-loop") -> None:
        self._lock = threading.Lock()
        self._waiting: dict[concurrent.futures.Future[Any], threading.Event] = {}
        self._closed = False
        # counts cancel_all calls: a call submitted before one and registered in _waiting
        # after it (cancel_all could not see it) cancels itself
        self._cancels = 0
        self._thread: threading.Thread | None = None
        if loop is None:
            loop = asyncio.new_event_loop()
            started = threading.Event()
            self._thread = threading.Thread(target=self._run_owned, args=(loop, started),
                                            name=name, daemon=True)
            self._thread.start()
            started.wait()
        self.loop = loop

    def __repr__(self) -> str:
        owned = "owned" if self._thread is not None else "given"
        return f"<LoopCaller {owned} loop, {len(self._waiting)} waiting>"

    @property
    def owns_loop(self) -> bool:
        """The loop was started by this caller (and :meth:`close` ends it)."""
        return self._thread is not None

    def call(self, coro: Awaitable[R]) -> R:
        """Run ``coro`` (a coroutine, or any awaitable) on the loop and wait, in this
        thread, for its result; its
        exception is raised here. :class:`CallCancelledError` when it was cancelled
        (:meth:`cancel_all`, :meth:`close`, or on the loop); :class:`ClientCacheError`
        when the caller is closed or the loop is closed. Never call it on the loop's own
        thread (it would wait for itself)."""
        routine: Coroutine[Any, Any, R] = coro if asyncio.iscoroutine(coro) \
            else _as_coroutine(coro)
        with self._lock:
            closed = self._closed
            cancels = self._cancels
        if closed or self.loop.is_closed():
            routine.close()
            raise ClientCacheError("the event loop is closed; the coroutine was not run")
        try:
            future: concurrent.futures.Future[R] = asyncio.run_coroutine_threadsafe(
                routine, self.loop)
        except RuntimeError as err:  # closed between the check and the call
            routine.close()
            raise ClientCacheError("the event loop is closed; the coroutine was not run") \
                from err
        finished = threading.Event()
        future.add_done_callback(lambda _: finished.set())
        with self._lock:
            if self._closed or self._cancels != cancels:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    future.cancel()
                finished.set()
            self._waiting[future] = finished
        try:
            finished.wait()
        finally:
            with self._lock:
                self._waiting.pop(future, None)
        if not future.done() or future.cancelled():
            raise CallCancelledError("the coroutine was cancelled before it finished")
        try:
            return future.result()
        except concurrent.futures.CancelledError as err:  # cancelled on the loop
            raise CallCancelledError("the coroutine was cancelled on its loop") from err

    def wrap(self, fn: Callable[..., Awaitable[R]]) -> Callable[..., R]:
        """A plain function that runs ``fn(*args)`` through :meth:`call`."""
        def call(*args: Any) -> R:
            return self.call(fn(*args))
        call.__name__ = getattr(fn, "__name__", "coroutine")
        call.__qualname__ = getattr(fn, "__qualname__", call.__name__)
        return call

    def running(self) -> int:
        """How many calls wait for their coroutine now."""
        with self._lock:
            return len(self._waiting)

    def cancel_all(self) -> None:
        """Cancel every coroutine still running through :meth:`call` and wake its thread
        (which gets :class:`CallCancelledError`). The task on the loop is cancelled when
        the loop runs; a waiting thread is released at once even if the loop never runs
        again."""
        with self._lock:
            self._cancels += 1
            waiting = list(self._waiting.items())
        loop_alive = not self.loop.is_closed()
        for future, finished in waiting:
            if loop_alive:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    future.cancel()
            finished.set()

    def close(self) -> None:
        """Refuse further calls, cancel the running ones (:meth:`cancel_all`) and, when
        the loop is this caller's own, stop it (its tasks are cancelled) and join its
        thread. Idempotent."""
        with self._lock:
            self._closed = True
        self.cancel_all()
        thread = self._thread
        if thread is None or not thread.is_alive():
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.loop.stop)
        if thread is not threading.current_thread():
            thread.join(_CLOSE_SECONDS + 0.5)

    @staticmethod
    def _run_owned(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        try:
            loop.run_forever()
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            if tasks:
                loop.run_until_complete(asyncio.wait(tasks, timeout=_CLOSE_SECONDS))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


async def _as_coroutine(awaitable: Awaitable[R]) -> R:
    return await awaitable
