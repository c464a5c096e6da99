"""Waiting on the main thread for what a signal handler does (the port's own; Go's
``signal.Notify`` hands signals to a channel any goroutine can wait on).

CPython runs a Python signal handler only on the main thread, between bytecodes. The OS
may hand a process's signal to any of its threads that does not block it; when that is
not the main thread, a main thread blocked in ``Event.wait()`` or ``Lock.acquire()`` is
not woken, and the handler waits with it until something else wakes it. What always
happens is the C-level handler: it writes the signal's number to the wakeup file
descriptor (:func:`signal.set_wakeup_fd`), in whichever thread took the signal.

:class:`SignalWaker` gives that descriptor one end of a socket pair and waits on the
other with a selector: a signal taken by any thread wakes the main thread at once, which
then runs the Python handler. It also wakes when the event it waits for is set some other
way (:func:`client_cache.util.stop.on_stop` writes a byte). Nothing polls.
"""

from __future__ import annotations

import contextlib
import selectors
import signal
import socket
import threading
from types import TracebackType

from client_cache.util.stop import on_stop

__all__ = ["SignalWaker"]


class SignalWaker:
    """The main thread's wait for an event a signal handler sets (see the module
    documentation). :meth:`start` (or ``with``) on the main thread, while the handlers
    are installed, takes the wakeup file descriptor; :meth:`close` (or the ``with``
    exit) puts back the one before (as an asyncio loop does, which it must not run
    beside). :meth:`wait` returns once the event is set. ValueError when started off
    the main thread."""

    def __init__(self) -> None:
        self._reader: socket.socket | None = None
        self._writer: socket.socket | None = None
        self._previous = -1

    def __enter__(self) -> SignalWaker:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> SignalWaker:
        """Take the wakeup file descriptor; returns self."""
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("a SignalWaker waits on the main thread")
        reader, writer = socket.socketpair()
        reader.setblocking(False)
        writer.setblocking(False)
        try:
            self._previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except BaseException:
            reader.close()
            writer.close()
            raise
        self._reader, self._writer = reader, writer
        return self

    def close(self) -> None:
        """Put back the wakeup file descriptor taken by :meth:`start`; again: nothing."""
        if self._writer is None:
            return
        signal.set_wakeup_fd(self._previous)
        for sock in (self._reader, self._writer):
            if sock is not None:
                sock.close()
        self._reader = self._writer = None

    def _poke(self) -> None:
        writer = self._writer
        if writer is not None:
            # full (a wake-up is pending anyway) or closed: nothing to do
            with contextlib.suppress(OSError):
                writer.send(b"\0")

    def wait(self, event: threading.Event) -> None:
        """Block until ``event`` is set: by a signal handler this wait lets run, or by
        any thread."""
        reader = self._reader
        if reader is None:
            raise ValueError("SignalWaker.wait outside its with block")
        # a selector, not select.select: that refuses descriptors above FD_SETSIZE (1024),
        # which a controller with many connections may well hand out
        with selectors.DefaultSelector() as selector:
            selector.register(reader, selectors.EVENT_READ)
            registration = on_stop(event, self._poke)
            try:
                while not event.is_set():
                    selector.select()
                    # the interpreter runs a pending handler on the way back from the
                    # select or at the latest on the next pass; if it sets the event,
                    # the poke wakes that pass
                    with contextlib.suppress(BlockingIOError, InterruptedError):
                        while reader.recv(4096):
                            pass
            finally:
                registration.cancel()
