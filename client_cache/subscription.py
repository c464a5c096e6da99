"""Subscriptions to a store's changes (kube-rs ``Store::subscribe`` of a shared reflector
store; no client-go counterpart).

A :class:`Subscription` is an iterator of :class:`~client_cache.api.watch.Event`\\ s (``ADDED``,
``MODIFIED``, ``DELETED`` with the stored object) that a store feeds *after* it has changed,
while still holding its lock: a subscriber that reads the store on receiving an event sees
at least that version of the object, and events arrive in the order the store applied
them. Every subscriber has its own bounded buffer, so a slow one never blocks the store or
the other subscribers.

Overflow policy: when a subscriber's buffer is full, the oldest buffered event is dropped
to make room (the store is never made to wait). The next read then raises
:class:`SubscriberLaggedError` once, saying how many events were lost; the subscription
stays usable. The store itself is always complete, so a lagged subscriber catches up by
reading it (``store.list()``) and iterating again, as a tokio broadcast receiver does after
``Lagged``.

Iteration ends when the subscription is closed: by :meth:`Subscription.close`, by leaving
its ``with`` block, or by its store's owner (an informer closes the subscriptions of its
indexer when it stops). Events buffered before the close are still delivered.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from types import TracebackType

from client_cache.api.watch import Event
from client_cache.errors import ClientCacheError
from client_cache.util.stop import on_stop

__all__ = ["DEFAULT_SUBSCRIBER_BUFFER", "SubscriberLaggedError", "Subscription"]

DEFAULT_SUBSCRIBER_BUFFER = 1024
"""Events a subscriber may have unread before the oldest are dropped."""


class SubscriberLaggedError(ClientCacheError):
    """Raised once by a read after ``missed`` events were dropped from a full buffer; read
    the store to catch up, then go on reading the subscription."""

    def __init__(self, missed: int) -> None:
        self.missed = missed
        super().__init__(f"subscriber fell behind: {missed} store events were dropped; "
                         "read the store to catch up")


class Subscription:
    """One subscriber's buffered view of a store's changes; see the module documentation.
    Built by a store's ``subscribe(buffer)``."""

    def __init__(self, buffer: int = DEFAULT_SUBSCRIBER_BUFFER,
                 on_close: Callable[[Subscription], None] | None = None) -> None:
        if buffer < 1:
            raise ValueError(f"subscriber buffer must be at least 1, not {buffer}")
        self._cond = threading.Condition(threading.Lock())
        self._events: deque[Event] = deque()
        self._buffer = buffer
        self._missed_unreported = 0
        self._missed_total = 0
        self._closed = False
        self._on_close = on_close

    def __repr__(self) -> str:
        with self._cond:
            return (f"<Subscription buffered={len(self._events)}/{self._buffer} "
                    f"missed={self._missed_total}{' closed' if self._closed else ''}>")

    @property
    def missed(self) -> int:
        """Events dropped from this subscriber's full buffer so far."""
        with self._cond:
            return self._missed_total

    @property
    def closed(self) -> bool:
        """True once the subscription has ended."""
        with self._cond:
            return self._closed

    def push(self, event: Event) -> None:
        """Buffer ``event`` for the subscriber (the store's side; never blocks)."""
        with self._cond:
            if self._closed:
                return
            if len(self._events) >= self._buffer:
                self._events.popleft()
                self._missed_unreported += 1
                self._missed_total += 1
            self._events.append(event)
            self._cond.notify()

    def get(self, timeout: float | None = None,
            stop: threading.Event | None = None) -> Event | None:
        """The next event; ``None`` when the subscription is closed and drained, when
        ``timeout`` passes or when ``stop`` is set first. Raises
        :class:`SubscriberLaggedError` once after events were dropped."""
        registration = None if stop is None else on_stop(stop, self._wake)
        try:
            with self._cond:
                while True:
                    if self._missed_unreported:
                        missed, self._missed_unreported = self._missed_unreported, 0
                        raise SubscriberLaggedError(missed)
                    if self._events:
                        return self._events.popleft()
                    if self._closed or (stop is not None and stop.is_set()):
                        return None
                    if not self._cond.wait(timeout):
                        return None
        finally:
            if registration is not None:
                registration.cancel()

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        event = self.get()
        if event is None:
            raise StopIteration
        return event

    def close(self) -> None:
        """Stop receiving events and end iteration once the buffer is drained
        (idempotent)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        if self._on_close is not None:
            self._on_close(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
