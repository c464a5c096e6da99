"""The listeners that carry an informer's notifications to its event handlers (Go
``processorListener`` and ``sharedProcessor`` in ``tools/cache/shared_informer.go``).

Each handler gets a :class:`ProcessorListener`: an unbounded, order-preserving buffer
drained by its own named thread, so a handler sees one notification at a time, in order,
and a slow handler never blocks the informer or the other handlers. The informer's
:class:`SharedProcessor` hands every notification to the listeners.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from client_cache._synctrack import SingleFileTracker
from client_cache.api import meta
from client_cache.api.errors import describe_error, find_api_error
from client_cache.cache_sync import SyncChecker
from client_cache.controller import ResourceEventHandler
from client_cache.store import DeletedFinalStateUnknown
from client_cache.util._logs import FailureEpisodes, log_visibly
from client_cache.util._parking import Parker
from client_cache.util.clock import PassiveClock
from client_cache.util.runtime import handle_error

__all__ = [
    "AddNotification",
    "DeleteNotification",
    "ProcessorListener",
    "SharedProcessor",
    "UpdateNotification",
    "determine_resync_period",
    "handler_name",
]

_log = logging.getLogger(__name__)

SLOW_HANDLER_SECONDS = 0.1
"""A handler call longer than this is logged (client-go v0.36's handler trace bound)."""

SLOW_HANDLER_REPEAT_SECONDS = 10.0
"""After a slow call is logged, the handler's next slow calls wait this long for the next
line, which counts them."""

# The three notifications are built once per event on the informer's thread and read only
# by the listeners: plain slotted classes, not frozen ones (a frozen dataclass's __init__
# costs 0.2 us more), compared by value.


@dataclass(slots=True)
class AddNotification:
    """An object was added (or listed: ``is_in_initial_list``) (Go ``addNotification``)."""

    obj: Any
    is_in_initial_list: bool


@dataclass(slots=True)
class UpdateNotification:
    """An object changed from ``old`` to ``new`` (Go ``updateNotification``)."""

    old: Any
    new: Any


@dataclass(slots=True)
class DeleteNotification:
    """An object was deleted (Go ``deleteNotification``)."""

    old: Any


def handler_name(handler: Any) -> str:
    """How logs name a handler: its functions' qualified names, or its class."""
    funcs = [getattr(handler, f, None) for f in ("add_func", "update_func", "delete_func")]
    named = [getattr(f, "__qualname__", repr(f)) for f in funcs if f is not None]
    if named:
        return "+".join(named)
    return f"{type(handler).__module__}.{type(handler).__qualname__}"


def determine_resync_period(desired: float, check: float) -> float:
    """The period a handler really gets (Go ``determineResyncPeriod``)."""
    if desired == 0:
        return 0.0
    if check == 0:
        _log.warning("The specified resyncPeriod %s is invalid because this shared informer "
                     "doesn't support resyncing", desired)
        return 0.0
    if desired < check:
        _log.warning("The specified resyncPeriod %s is being increased to the minimum "
                     "resyncCheckPeriod %s", desired, check)
        return check
    return desired


_monotonic = time.monotonic


def _describe(notification: Any) -> str:
    """``update of Pod ns/name (resourceVersion 5)``: the notification's kind and object,
    named as log lines name objects (never their contents)."""
    kind = type(notification)
    obj = notification.new if kind is UpdateNotification else (
        notification.obj if kind is AddNotification else getattr(notification, "old", None))
    if isinstance(obj, DeletedFinalStateUnknown):
        obj = obj.obj
    return f"{kind.__name__.removesuffix('Notification').lower()} of {meta.describe(obj)}"


class ProcessorListener:
    """One handler's buffer and delivery thread (Go ``processorListener``); it is also the
    handler's registration."""

    def __init__(
        self,
        handler: ResourceEventHandler[Any],
        requested_resync_period: float,
        resync_period: float,
        now: float,
        upstream_has_synced: Callable[[], bool],
        informer_name: str,
    ) -> None:
        self.handler = handler
        self.name = handler_name(handler)
        self.requested_resync_period = requested_resync_period
        self._resync_lock = threading.Lock()
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        self.sync_tracker = SingleFileTracker(upstream_has_synced,
                                              f"{informer_name} + event handler {self.name}")
        # The buffer is a deque that the informer's thread appends to and the delivery
        # thread pops from, without a lock (each call is atomic). A delivery thread with
        # nothing to do announces it in _waiting and parks; the informer's thread unparks
        # it without waiting for anything (a Condition cost the informer a lock round and
        # a Python-level notify per notification and handler: with 10 handlers, about 15 %
        # of all the interpreter-lock time of a replayed watch stream).
        self._pending: deque[Any] = deque()
        self._parker = Parker()
        self._waiting = False
        self._closed = False
        self._lock = threading.Lock()  # guards starting and stopping the thread
        self._thread: threading.Thread | None = None
        self._informer_name = informer_name
        self.handled = 0
        """Notifications delivered to the handler."""
        self.errors = 0
        """Notifications whose handler raised."""
        self._failures = FailureEpisodes()
        self._synced_checker: SyncChecker | None = None
        self._slow_logged_at: float | None = None
        self._slow_since = 0  # slow calls not logged since the last line

    def __repr__(self) -> str:
        return f"<ProcessorListener {self.name}>"

    def add(self, notification: Any) -> None:
        """Queue a notification (never blocks; the buffer is unbounded)."""
        if type(notification) is AddNotification and notification.is_in_initial_list:
            self.sync_tracker.start()
        self._pending.append(notification)
        if self._closed:  # stopped, before or during this call: a stopped one holds nothing
            self._pending.clear()
        elif self._waiting:
            self._waiting = False
            self._parker.unpark()

    def pending(self) -> int:
        """Notifications waiting in the buffer."""
        return len(self._pending)

    def start(self) -> None:
        """Start the handler's delivery thread (once)."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(
                target=self._run, name=f"informer-handler-{self._informer_name}", daemon=True)
            self._thread.start()

    def stop(self) -> threading.Thread | None:
        """Stop delivering (pending notifications are dropped); returns the thread to join.

        A handler with a ``handler_stopped()`` method has it called here (a port
        addition: a handler that waits on something else, such as
        :class:`~client_cache.aio.AsyncHandler` on an event loop, gives up the wait, so
        its thread ends with the informer)."""
        with self._lock:
            self._closed = True
            self._pending.clear()
            self._waiting = False
            self._parker.unpark()
            thread = self._thread
            checker = self._synced_checker
        if checker is not None:
            checker.close()  # a stopped handler finishes its initial list no more
        stopped = getattr(self.handler, "handler_stopped", None)
        if callable(stopped):
            try:
                stopped()
            except Exception as err:
                handle_error(err)
        return thread

    def _run(self) -> None:
        # One notification at a time off the shared buffer; stopping drops the rest. Before
        # sleeping the thread announces it (_waiting) and looks once more, so a notification
        # added in between is either seen here or wakes it.
        pending = self._pending
        popleft, dispatch = pending.popleft, self._dispatch
        while True:
            while pending and not self._closed:
                dispatch(popleft())
            if self._closed:
                return
            self._waiting = True
            if pending or self._closed:
                self._waiting = False
                continue
            self._parker.park()

    def _dispatch(self, notification: Any) -> None:
        # the notifications are this module's own classes, never subclassed: their exact
        # type is checked, updates (most of them) first
        kind = type(notification)
        start = _monotonic()
        try:
            if kind is UpdateNotification:
                self.handler.on_update(notification.old, notification.new)
            elif kind is AddNotification:
                self.handler.on_add(notification.obj, notification.is_in_initial_list)
            elif kind is DeleteNotification:
                self.handler.on_delete(notification.old)
            else:
                handle_error(f"unrecognized notification: {kind.__name__}")
        except Exception as err:
            self.errors += 1
            self._report_failure(notification, err)
        finally:
            self.handled += 1
            if kind is AddNotification and notification.is_in_initial_list:
                self.sync_tracker.finished()
            elapsed = _monotonic() - start
            if elapsed > SLOW_HANDLER_SECONDS:
                self._slow_call(notification, elapsed)

    def _slow_call(self, notification: Any, elapsed: float) -> None:
        """Log a handler call over :data:`SLOW_HANDLER_SECONDS` at INFO, with the handler,
        the resource, the duration, the object and how many notifications wait (client-go
        v0.36 traces a call so, only while over 1,024 wait; here every slow call counts,
        one line per :data:`SLOW_HANDLER_REPEAT_SECONDS` at most, with the count of those
        not logged)."""
        now = _monotonic()
        last = self._slow_logged_at
        if last is not None and now - last < SLOW_HANDLER_REPEAT_SECONDS:
            self._slow_since += 1
            return
        more, self._slow_since = self._slow_since, 0
        self._slow_logged_at = now
        _log.info("event handler %s of %s took %.3f s on the %s (%d notifications "
                  "waiting%s)", self.name, self._informer_name, elapsed,
                  _describe(notification), len(self._pending),
                  f"; {more} more slow calls since the last line" if more else "",
                  extra={"resource": self._informer_name, "handler": self.name,
                         "duration": elapsed})

    def _report_failure(self, notification: Any, err: Exception) -> None:
        """The handler raised on ``notification``, which is skipped (client-go v0.33+
        logs a handler's panic and goes on when asked not to crash; its default crashes
        the process). The first failure of an episode (this handler, one reason) is an
        ERROR with the traceback and the object's kind and namespace/name, visible with
        no logging configured; while it goes on failing so, one ERROR every
        :data:`~client_cache.util._logs.FAILURE_REPEAT_SECONDS` with the count, DEBUG for
        the rest (:class:`~client_cache.util._logs.FailureEpisodes`). An API error is
        summarised without its traceback (its text may quote a response body)."""
        text = describe_error(err)
        repeat = self._failures.failed(None, text)
        what = _describe(notification)
        extra = {"resource": self._informer_name, "handler": self.name}
        if repeat.first:
            log_visibly(_log, logging.ERROR, "event handler %s of %s failed, skipping the "
                        "notification (the %s): %s", self.name, self._informer_name,
                        what, text, exc_info=None if find_api_error(err) is not None else err,
                        extra=extra)
        elif repeat.due:
            log_visibly(_log, logging.ERROR, "event handler %s of %s still failing (%d more "
                        "times in %.0f s; the last on the %s): %s", self.name,
                        self._informer_name, repeat.count, repeat.seconds, what, text,
                        extra=extra)
        else:
            _log.debug("event handler %s of %s failed again on the %s: %s", self.name,
                       self._informer_name, what, text)

    def has_synced(self) -> bool:
        """The informer is synced and this handler has handled the initial list."""
        return self.sync_tracker.has_synced()

    def has_synced_checker(self) -> SyncChecker:
        """A :class:`~client_cache.cache_sync.DoneChecker` done when :meth:`has_synced`
        turns True (Go ``HasSyncedChecker``, v0.36)."""
        with self._lock:
            if self._synced_checker is None:
                self._synced_checker = SyncChecker(self.sync_tracker.name, self.has_synced)
                if self._closed:
                    self._synced_checker.close()
            return self._synced_checker

    def should_resync(self, now: float) -> bool:
        """True when this handler's resync is due at ``now``."""
        with self._resync_lock:
            return self.resync_period != 0 and now >= self.next_resync

    def determine_next_resync(self, now: float) -> None:
        """Schedule this handler's next resync one period after ``now``."""
        with self._resync_lock:
            self.next_resync = now + self.resync_period

    def set_resync_period(self, period: float) -> None:
        """Change this handler's resync period (seconds)."""
        with self._resync_lock:
            self.resync_period = period


class SharedProcessor:
    """An informer's listeners: hands each notification to every listener (or, for a
    resync, to those due) (Go ``sharedProcessor``)."""

    def __init__(self, clock: PassiveClock) -> None:
        self.clock = clock
        self._lock = threading.RLock()
        self._retired = (0, 0)
        self.listeners: dict[ProcessorListener, bool] = {}
        self.started = False

    def listener_list(self) -> list[ProcessorListener]:
        """The current listeners, in the order they were added."""
        with self._lock:
            return list(self.listeners)

    def delivered(self) -> tuple[int, int]:
        """Notifications handled and handler errors, over every listener this processor
        ever had (removed and stopped ones included)."""
        with self._lock:
            return (self._retired[0] + sum(x.handled for x in self.listeners),
                    self._retired[1] + sum(x.errors for x in self.listeners))

    def _retire(self, listener: ProcessorListener) -> None:
        self._retired = (self._retired[0] + listener.handled,
                         self._retired[1] + listener.errors)

    def add_listener(self, listener: ProcessorListener) -> None:
        """Add a listener; it starts at once when the processor runs (Go ``addListener``)."""
        with self._lock:
            self.listeners[listener] = True
            if self.started:
                listener.start()

    def remove_listener(self, handle: Any) -> threading.Thread | None:
        """Stop and drop the listener ``handle``; an unknown one is ignored, another type
        raises ``TypeError`` (Go ``removeListener``). Returns the listener's thread, for
        the caller to join once it holds no lock the handler might need (a port
        addition: until that thread ends it keeps the handler alive)."""
        if not isinstance(handle, ProcessorListener):
            raise TypeError(f"invalid key type {type(handle).__name__}")
        with self._lock:
            if handle not in self.listeners:
                return None
            del self.listeners[handle]
            self._retire(handle)
            return handle.stop() if self.started else None

    def distribute(self, notification: Any, sync: bool) -> None:
        """Hand ``notification`` to every listener, or with ``sync`` only to those whose
        resync is due (Go ``distribute``)."""
        with self._lock:
            for listener, due in self.listeners.items():
                if not sync or due:
                    listener.add(notification)

    def start(self) -> None:
        """Start every listener's delivery thread (Go ``sharedProcessor.run``, first
        half); listeners added later start as they are added."""
        with self._lock:
            for listener in self.listeners:
                listener.start()
            self.started = True

    def stop(self) -> list[threading.Thread]:
        """Stop and join every listener (pending notifications are dropped; Go
        ``sharedProcessor.run``, second half), each for at most a second; returns the
        handler threads still running then (blocked in a handler: a port addition, so
        that whoever stops the informer can name them)."""
        with self._lock:
            threads = [t for t in (listener.stop() for listener in self.listeners) if t]
            for listener in self.listeners:
                self._retire(listener)
            self.listeners = {}
            self.started = False
        deadline = time.monotonic() + 1.0
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        return [t for t in threads if t.is_alive() and t is not threading.current_thread()]

    def should_resync(self) -> bool:
        """Mark which listeners are due for a resync now; True when any is (Go
        ``shouldResync``)."""
        with self._lock:
            now = self.clock.monotonic()
            needed = False
            for listener in list(self.listeners):
                due = listener.should_resync(now)
                self.listeners[listener] = due
                if due:
                    needed = True
                    listener.determine_next_resync(now)
            return needed

    def resync_check_period_changed(self, period: float) -> None:
        """Recompute every listener's resync period after the informer's check period
        changed to ``period`` (Go ``resyncCheckPeriodChanged``)."""
        with self._lock:
            for listener in self.listeners:
                listener.set_resync_period(
                    determine_resync_period(listener.requested_resync_period, period))


# --- the informer --------------------------------------------------------------------------
