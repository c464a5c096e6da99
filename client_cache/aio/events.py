"""An informer's notifications as an asynchronous iterator (a port addition)."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from client_cache.api.watch import EventType
from client_cache.errors import ClientCacheError
from client_cache.util._parking import Parker

__all__ = ["EventsOverflowError", "InformerEvent", "Overflow", "events"]

Overflow = Literal["wait", "fail"]

DEFAULT_MAX_SIZE = 1000

#: How long (seconds) the iterator hands out queued events without giving the loop a turn.
YIELD_AFTER = 0.001


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
    holds at most ``max_size`` events on the loop's side.

    The loop never waits for a lock a thread holds (a thread holding one may be waiting
    for the interpreter lock, which would stall the loop for several switch intervals):
    the room left is ``max_size - (sent - taken)``, each count written by one side only,
    and a producer out of room parks (:class:`~client_cache.util._parking.Parker`),
    which anyone may wake without waiting. A spurious wake-up only makes the producer
    look again. A sleeping producer is woken once at most half of ``max_size`` is held,
    not at every take: woken at every take, it and the loop would trade the interpreter
    lock once per event for as long as the consumer is behind.

    Events go into a deque (safe to append and pop from two threads) and the loop is
    signalled once per batch, not once per event: a signal already scheduled and not yet
    run will find what was appended meanwhile."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_size: int,
                 overflow: Overflow) -> None:
        self.loop = loop
        self._items: deque[InformerEvent | _End | EventsOverflowError] = deque()
        self._signalled = False  # a _signal is scheduled on the loop and has not run
        self._reader: asyncio.Future[None] | None = None  # the iterator waits on it
        self._producer = threading.Lock()  # serialises the informer's calls; never the loop
        self._parker = Parker()  # a producer out of room sleeps on it
        self._sent = 0  # written by the producer only
        self._taken = 0  # written by the loop only
        self._max_size = max_size
        self._resume_at = max_size // 2  # a waiting producer is woken at this many held
        self._overflow = overflow
        self._closed = False
        self._waiting = False  # the producer sleeps on _parker

    # the handler, on the informer's handler thread
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._put(InformerEvent(EventType.ADDED, obj, None, is_in_initial_list))

    def on_update(self, old_obj: Any, new_obj: Any) -> None:
        self._put(InformerEvent(EventType.MODIFIED, new_obj, old_obj))

    def on_delete(self, obj: Any) -> None:
        self._put(InformerEvent(EventType.DELETED, obj))

    def handler_stopped(self) -> None:
        """The informer stopped (or the handler was removed): the iterator ends. Called
        from the informer's stopping thread, possibly while the handler's thread waits
        for room in ``_put``: that wait ends too."""
        if self._closed:
            return
        self._closed = True
        self._nudge()
        self._send(_END)

    def _full(self) -> bool:
        return self._sent - self._taken >= self._max_size

    def _put(self, event: InformerEvent) -> None:
        with self._producer:
            if self._closed:
                return
            if self._full() and self._overflow == "fail":
                self._closed = True
                self._send(EventsOverflowError(
                    f"the consumer fell more than {self._max_size} events behind"))
                return
            if self._wait_for_room():
                self._sent += 1
                self._send(event)

    def _wait_for_room(self) -> bool:
        """Wait until the loop has room for one more event: True, or False if closed."""
        while self._full() and not self._closed:
            self._waiting = True
            # a take down to the mark after this look wakes us
            if self._sent - self._taken > self._resume_at and not self._closed:
                self._parker.park()
            self._waiting = False
        return not self._closed

    def _send(self, item: InformerEvent | _End | EventsOverflowError) -> None:
        self._items.append(item)
        if self._signalled:
            return
        self._signalled = True
        try:
            self.loop.call_soon_threadsafe(self._signal)
        except RuntimeError:  # the loop is closed: nobody reads any more
            self._closed = True

    def _nudge(self) -> None:
        """Wake a producer waiting for room (or make its next wait return at once)."""
        self._parker.unpark()

    # the iterator, on the loop
    def _signal(self) -> None:
        self._signalled = False
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)

    def pending(self) -> bool:
        """Events are waiting to be taken."""
        return bool(self._items)

    async def next(self) -> InformerEvent | _End | EventsOverflowError:
        """The next item, waiting for one if there is none."""
        while not self._items:
            self._reader = self.loop.create_future()
            try:
                await self._reader
            finally:
                self._reader = None
        return self._items.popleft()

    def taken(self) -> None:
        self._taken += 1
        if self._waiting and self._sent - self._taken <= self._resume_at:
            self._nudge()

    def close(self) -> None:
        self._closed = True
        self._nudge()


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
    blocked: the iterator never waits for a lock an informer thread holds, and while it
    drains a backlog it gives the loop a turn every ``YIELD_AFTER`` seconds (1 ms). Go has
    no equivalent; kube-rs's ``watcher`` streams are the model."""
    if max_size < 1:
        raise ValueError(f"max_size must be at least 1, not {max_size}")
    if overflow not in ("wait", "fail"):
        raise ValueError(f"overflow must be 'wait' or 'fail', not {overflow!r}")
    loop = asyncio.get_running_loop()
    bridge = _Bridge(loop, max_size, overflow)
    registration = informer.add_event_handler(bridge)
    try:
        turn_began = loop.time()
        while True:
            if not bridge.pending():
                item = await bridge.next()  # suspends: a new turn
                turn_began = loop.time()
            else:
                if loop.time() - turn_began > YIELD_AFTER:
                    await asyncio.sleep(0)  # draining a backlog: give the loop a turn
                    turn_began = loop.time()
                item = await bridge.next()
            if isinstance(item, _End):
                return
            if isinstance(item, EventsOverflowError):
                raise item
            bridge.taken()
            yield item
    finally:
        bridge.close()
        informer.remove_event_handler(registration)
