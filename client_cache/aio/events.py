"""An informer's notifications as an asynchronous iterator (a port addition)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from client_cache.errors import ClientCacheError
from client_cache.watch import EventType

__all__ = ["EventsOverflowError", "InformerEvent", "Overflow", "events"]

Overflow = Literal["wait", "fail"]

DEFAULT_MAX_SIZE = 1000


@dataclass(frozen=True)
class InformerEvent:
    """One notification: ``type`` ADDED (``is_in_initial_list`` says whether it came
    from the initial list), MODIFIED (``old`` is the previous object; a resync delivers
    an update whose ``old`` and ``object`` are the same) or DELETED (``object`` may be a
    :class:`~client_cache.store.DeletedFinalStateUnknown`)."""

    type: EventType
    object: Any
    old: Any = None
    is_in_initial_list: bool = False


class EventsOverflowError(ClientCacheError):
    """``overflow="fail"``: the consumer fell more than ``max_size`` events behind; the
    iterator ends with this error after the events it holds. Read the current state from
    the informer's lister and start a new iterator."""


class _End:
    pass


_END = _End()


class _Bridge:
    """The informer's handler feeding one iterator: it runs on the handler's thread and
    holds at most ``max_size`` events on the loop's side."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_size: int,
                 overflow: Overflow) -> None:
        self.loop = loop
        self.items: asyncio.Queue[InformerEvent | _End | EventsOverflowError] = \
            asyncio.Queue()
        self._cond = threading.Condition(threading.Lock())
        self._free = max_size
        self._max_size = max_size
        self._overflow = overflow
        self._closed = False

    # the handler, on the informer's handler thread
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._put(InformerEvent(EventType.ADDED, obj, None, is_in_initial_list))

    def on_update(self, old_obj: Any, new_obj: Any) -> None:
        self._put(InformerEvent(EventType.MODIFIED, new_obj, old_obj))

    def on_delete(self, obj: Any) -> None:
        self._put(InformerEvent(EventType.DELETED, obj))

    def handler_stopped(self) -> None:
        """The informer stopped (or the handler was removed): the iterator ends."""
        self._end(_END)

    def _put(self, event: InformerEvent) -> None:
        with self._cond:
            if self._free == 0 and self._overflow == "fail" and not self._closed:
                self._closed = True
                self._send(EventsOverflowError(
                    f"the consumer fell more than {self._max_size} events behind"))
                return
            while self._free == 0 and not self._closed:
                self._cond.wait()
            if self._closed:
                return
            self._free -= 1
            self._send(event)

    def _send(self, item: InformerEvent | _End | EventsOverflowError) -> None:
        try:
            self.loop.call_soon_threadsafe(self.items.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody reads any more
            self._closed = True
            self._cond.notify_all()

    def _end(self, item: _End) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            self._send(item)

    # the iterator, on the loop
    def taken(self) -> None:
        with self._cond:
            self._free += 1
            self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


async def events(informer: Any, *, max_size: int = DEFAULT_MAX_SIZE,
                 overflow: Overflow = "wait") -> AsyncIterator[InformerEvent]:
    """The informer's notifications, as :class:`InformerEvent`, for ``async for``::

        async with contextlib.aclosing(events(pods)) as stream:
            async for event in stream:
                ...

    It registers a handler on ``informer`` when iteration starts (the initial list comes
    first, as ADDED with ``is_in_initial_list``, when the informer has not synced yet;
    otherwise the cached objects are replayed as ADDED, as for any handler added late) and
    removes it when the iterator is closed, breaks off with an exception, or its task is
    cancelled. The iteration ends when the informer stops.

    At most ``max_size`` events wait on the loop's side. ``overflow`` says what happens
    when the consumer falls that far behind: ``"wait"`` (default) holds the handler's
    thread, so further notifications accumulate in the informer's per-handler buffer (as
    for any slow handler; nothing is lost, memory grows); ``"fail"`` ends the iteration,
    after the events already held, with :class:`EventsOverflowError`. The loop is never
    blocked. Go has no equivalent; kube-rs's ``watcher`` streams are the model."""
    if max_size < 1:
        raise ValueError(f"max_size must be at least 1, not {max_size}")
    if overflow not in ("wait", "fail"):
        raise ValueError(f"overflow must be 'wait' or 'fail', not {overflow!r}")
    bridge = _Bridge(asyncio.get_running_loop(), max_size, overflow)
    registration = informer.add_event_handler(bridge)
    try:
        while True:
            item = await bridge.items.get()
            if isinstance(item, _End):
                return
            if isinstance(item, EventsOverflowError):
                raise item
            bridge.taken()
            yield item
    finally:
        bridge.close()
        informer.remove_event_handler(registration)
