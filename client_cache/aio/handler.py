"""An informer event handler made of coroutine functions (a port addition)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from client_cache.aio.bridge import CallCancelledError, LoopCaller
from client_cache.errors import ClientCacheError

__all__ = ["AsyncHandler"]

_log = logging.getLogger(__name__)


class AsyncHandler:
    """An event handler whose callbacks are ``async def`` functions, run on ``loop``::

        async def added(pod): ...
        informer.add_event_handler(AsyncHandler(on_add=added, on_update=changed))

    ``on_add(obj)``, ``on_update(old, new)`` and ``on_delete(obj)`` are coroutine
    functions with the arguments of :class:`~client_cache.controller.ResourceEventHandlerFuncs`;
    ``on_add_detailed(obj, is_in_initial_list)`` may replace ``on_add``. ``loop`` defaults
    to the running loop (so an ``AsyncHandler`` made outside a coroutine needs
    ``loop=``).

    Delivery is that of any handler: the informer gives each handler its own unbounded
    buffer and thread; that thread hands one notification at a time to ``loop``
    (``asyncio.run_coroutine_threadsafe``) and waits for the coroutine to finish before
    the next, so a handler sees its notifications in order and never two at once, and
    the loop is never blocked by the informer. A coroutine that raises is logged and
    counted as a failed notification, as a handler that raises. When the registration
    ends (the handler is removed, or the informer stops) the coroutine still running is
    cancelled and the rest of the buffer is dropped, as for a threaded handler. A closed
    loop makes each notification fail (logged) instead of blocking. Use one
    ``AsyncHandler`` per registration: once its registration ends it delivers nothing
    more.
    """

    def __init__(self, on_add: Callable[[Any], Awaitable[None]] | None = None,
                 on_update: Callable[[Any, Any], Awaitable[None]] | None = None,
                 on_delete: Callable[[Any], Awaitable[None]] | None = None, *,
                 on_add_detailed: Callable[[Any, bool], Awaitable[None]] | None = None,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        if on_add is not None and on_add_detailed is not None:
            raise ValueError("give on_add or on_add_detailed, not both")
        if loop is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                raise ClientCacheError(
                    "AsyncHandler made outside a coroutine needs loop=") from None
        self.on_add_func = on_add
        self.on_add_detailed_func = on_add_detailed
        self.on_update_func = on_update
        self.on_delete_func = on_delete
        self._caller = LoopCaller(loop)
        self._stopped = threading.Event()

    def __repr__(self) -> str:
        names = [getattr(f, "__qualname__", "?") for f in (
            self.on_add_func or self.on_add_detailed_func, self.on_update_func,
            self.on_delete_func) if f is not None]
        return f"<AsyncHandler {', '.join(names) or 'no callbacks'}>"

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop the callbacks run on."""
        return self._caller.loop

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        """Run ``on_add`` (or ``on_add_detailed``) for the object on the loop and wait for
        it (Go ``OnAdd``)."""
        if self.on_add_detailed_func is not None:
            self._run(self.on_add_detailed_func, obj, is_in_initial_list)
        elif self.on_add_func is not None:
            self._run(self.on_add_func, obj)

    def on_update(self, old_obj: Any, new_obj: Any) -> None:
        """Run ``on_update(old, new)`` on the loop and wait for it (Go ``OnUpdate``)."""
        if self.on_update_func is not None:
            self._run(self.on_update_func, old_obj, new_obj)

    def on_delete(self, obj: Any) -> None:
        """Run ``on_delete(obj)`` on the loop and wait for it (Go ``OnDelete``)."""
        if self.on_delete_func is not None:
            self._run(self.on_delete_func, obj)

    def handler_stopped(self) -> None:
        """Called by the informer when this handler's registration ends: cancel the
        coroutine still running and drop later notifications."""
        self._stopped.set()
        self._caller.cancel_all()

    def _run(self, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        if self._stopped.is_set():
            return
        try:
            self._caller.call(fn(*args))  # no wrapper made per notification
        except CallCancelledError:
            if not self._stopped.is_set():
                raise
            _log.debug("%r: a coroutine was cancelled as the handler stopped", self)
