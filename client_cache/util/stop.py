"""Stop signals that wake their waiters (Go: a closed ``stopCh`` / a cancelled context).

A ``stop`` in this library is a plain :class:`threading.Event`: ``set()`` means stop. An
``Event`` can only wake threads blocked in its own ``wait``, but the library must also wake
a thread blocked on a channel, a condition or a socket when ``stop`` is set. So anything
may register a callback with :func:`on_stop`; it runs once, inside the ``set()`` call that
sets the flag, in the setting thread. Nothing polls and no thread watches the event.

How a user's own ``Event`` learns to run callbacks: the first :func:`on_stop` on an event
wraps the ``notify_all`` of that one event's internal condition (CPython's
``Event.set`` sets its flag and calls ``self._cond.notify_all()``; the wrapper calls the
original, then the callbacks). Threads already blocked in ``event.wait()`` still wake,
and a ``set`` method captured before the registration (``threading.Timer(5, stop.set)``)
still runs the callbacks, because both go through the same condition object. Should an
event not have that shape (another Python implementation, a subclass of its own), its
instance's ``set`` is wrapped instead.

Callbacks must be quick and must not block or set the same event again (they run while
``set`` holds the event's lock): close a channel, notify a condition, shut a socket down,
set *another* event. An exception from one is logged and does not keep the others from
running.

This is how ``select_or_stop``, the controller's queue closing, the informer's handler
shutdown and the cancellation of in-flight requests in the list-watch hear about ``stop``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["on_stop", "stop_callbacks"]

_log = logging.getLogger(__name__)

Callback = Callable[[], None]

_lock = threading.Lock()
_HOOKS = "_client_cache_stop_hooks"


def _fire(event: threading.Event) -> None:
    """Run and forget every callback registered on ``event`` (called after the flag is
    set)."""
    with _lock:
        hooks: dict[int, Callback] | None = getattr(event, _HOOKS, None)
        if not hooks:
            return
        callbacks = list(hooks.values())
        hooks.clear()
    for callback in callbacks:
        try:
            callback()
        except Exception:
            _log.exception("a stop callback failed")


def _hooks_of(event: threading.Event) -> dict[int, Callback]:
    """The callback table of ``event``, teaching the event to run it the first time (call
    with ``_lock`` held; see the module documentation)."""
    hooks: dict[int, Callback] | None = getattr(event, _HOOKS, None)
    if hooks is not None:
        return hooks
    hooks = {}
    setattr(event, _HOOKS, hooks)
    cond = getattr(event, "_cond", None)
    notify_all = getattr(cond, "notify_all", None)
    if type(event) is threading.Event and isinstance(cond, threading.Condition) and callable(
            notify_all):

        def notify_all_and_fire() -> None:
            notify_all()
            _fire(event)

        cond.notify_all = notify_all_and_fire  # type: ignore[method-assign]
    else:
        original = event.set

        def set_and_fire() -> None:
            original()
            _fire(event)

        event.set = set_and_fire  # type: ignore[method-assign]
    return hooks


class _Registration:
    """What :func:`on_stop` returns: ``cancel()`` removes the callback (idempotent)."""

    __slots__ = ("_event", "_token")

    def __init__(self, event: threading.Event | None, token: int) -> None:
        self._event = event
        self._token = token

    def cancel(self) -> None:
        event, self._event = self._event, None
        if event is None:
            return
        with _lock:
            hooks: dict[int, Callback] | None = getattr(event, _HOOKS, None)
            if hooks is not None:
                hooks.pop(self._token, None)

    def __enter__(self) -> _Registration:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.cancel()


_next_token = 0


def on_stop(event: threading.Event, callback: Callback) -> _Registration:
    """Run ``callback`` once when ``event`` is set; at once (in this thread) if it is set
    already. Returns a registration whose ``cancel()`` (or ``with`` exit) removes the
    callback; cancel every registration you no longer need, or the event keeps the callback
    (and what it refers to) alive."""
    global _next_token  # noqa: PLW0603 - one counter for the whole process
    with _lock:
        if not event.is_set():
            _next_token += 1
            hooks = _hooks_of(event)
            hooks[_next_token] = callback
            # A set() that ran before this event's set was wrapped fired nothing: look
            # again now that it is (a later set() waits for the lock and finds no hook).
            if not event.is_set():
                return _Registration(event, _next_token)
            del hooks[_next_token]
    callback()
    return _Registration(None, 0)


def stop_callbacks(event: threading.Event) -> int:
    """How many callbacks wait for ``event`` (a thread blocked in ``select_or_stop`` on it
    counts one); for tests and debugging."""
    with _lock:
        return len(getattr(event, _HOOKS, None) or ())
