"""Acting on a signal outside the signal handler (the port's own; Go's ``signal.Notify``
hands signals to a channel a goroutine reads).

CPython runs a Python signal handler on the main thread, between two bytecodes of
whatever that thread is doing. A handler that sets a :class:`threading.Event` takes that
event's lock, and every callback :func:`client_cache.util.stop.on_stop` registered on it
takes its own; when the main thread was holding one of those locks (inside
``event.wait()`` on its way in, inside an ``on_stop`` registration, inside a queue's
condition at start-up), the handler waits for a lock its own thread holds, forever, and
the process needs SIGKILL. The OS may also hand the signal to another thread, and then a
main thread blocked in ``Event.wait()`` does not even run the handler until something
else wakes it.

:class:`SignalRelay` does neither. Its Python handler takes no lock: it only puts back
the handlers before when asked to (``once``, so a second signal acts as it did before:
"again to force"). What acts is the C-level half every handled signal has: it writes the
signal's number to the wakeup file descriptor (:func:`signal.set_wakeup_fd`), in
whichever thread took it. The relay owns that descriptor (one end of a socket pair) and
a thread, ``signals-<name>``, reading the other end, which runs ``action(signum)``: a
normal thread, holding nothing, so ``action`` may set events, log and take locks. The
main thread may then wait in a plain ``event.wait()``. Nothing polls.

::

    stop = threading.Event()
    with SignalRelay(lambda signum: stop.set(), name="main"):
        stop.wait()             # SIGINT or SIGTERM, taken by any thread, ends it
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterable
from types import FrameType, TracebackType
from typing import Any

__all__ = ["SignalRelay"]

_log = logging.getLogger(__name__)

_END = 0
"""The byte :meth:`SignalRelay.close` sends its own thread: no signal has number 0."""


class SignalRelay:
    """Runs ``action(signum)`` on a thread of its own for each of ``signals`` this process
    gets while the relay is started (see the module documentation). :meth:`start` (or
    ``with``) on the main thread installs the handlers and takes the wakeup file
    descriptor; :meth:`close` (or the ``with`` exit, also on the main thread) puts back
    both and ends the thread within a second. With ``once``, the first signal puts back
    the handlers before (in the handler, so at once) and is the only one relayed: a
    repeat gets the previous behaviour, for SIGTERM the default's exit, for SIGINT a
    ``KeyboardInterrupt``. An exception from ``action`` is logged. ValueError when
    started off the main thread. The wakeup descriptor before (an asyncio loop's, an
    outer relay's) is put back on close; while this relay holds it, that one hears of
    no signal, so a relay does not run beside an asyncio loop's signal handlers.
    Go: ``signal.Notify`` and a goroutine reading its channel."""

    def __init__(self, action: Callable[[int], None],
                 signals: Iterable[int] = (signal.SIGINT, signal.SIGTERM), *,
                 name: str = "main", once: bool = False) -> None:
        self._action = action
        self._signals = tuple(int(s) for s in signals)
        if not self._signals or _END in self._signals:
            raise ValueError(f"no signals to relay in {self._signals!r}")
        self.name = name
        self._once = once
        self._previous: dict[int, Any] = {}
        self._restored = True
        self._relayed = False
        self._reader: socket.socket | None = None
        self._writer: socket.socket | None = None
        self._previous_fd = -1
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<SignalRelay {self.name} of {list(self._signals)}>"

    def __enter__(self) -> SignalRelay:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def start(self) -> SignalRelay:
        """Install the handlers, take the wakeup file descriptor and start the thread;
        returns self."""
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("a SignalRelay is started on the main thread")
        if self._thread is not None:
            raise RuntimeError(f"{self!r} was started already")
        reader, writer = socket.socketpair()
        writer.setblocking(False)  # the C handler must never block
        try:
            previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        except BaseException:
            reader.close()
            writer.close()
            raise
        self._reader, self._writer, self._previous_fd = reader, writer, previous_fd
        self._restored = False
        for signum in self._signals:
            self._previous[signum] = signal.signal(signum, self._handle)
        self._thread = threading.Thread(target=self._relay, daemon=True,
                                        name=f"signals-{self.name}")
        self._thread.start()
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """The Python handler, on the main thread at any bytecode: no lock, no I/O."""
        if self._once:
            self._restore()

    def _restore(self) -> None:
        if self._restored:
            return
        self._restored = True
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _relay(self) -> None:
        reader = self._reader
        assert reader is not None
        while True:
            try:
                data = reader.recv(256)
            except OSError:
                return  # closed under it
            if not data:
                return
            for signum in data:
                if signum == _END:
                    return
                if signum not in self._signals or (self._once and self._relayed):
                    continue
                self._relayed = True
                try:
                    self._action(signum)
                except Exception:
                    _log.exception("signal relay %s: the action for signal %d failed",
                                   self.name, signum)

    def close(self) -> None:
        """Put back the handlers and the wakeup descriptor, end the thread; again:
        nothing."""
        writer, thread = self._writer, self._thread
        if writer is None:
            return
        self._restore()
        signal.set_wakeup_fd(self._previous_fd)
        with contextlib.suppress(OSError):
            writer.send(bytes([_END]))
        if thread is not None:
            thread.join(1.0)
            if thread.is_alive():
                _log.warning("signal relay %s: its action did not return within a second",
                             self.name)
        for sock in (self._reader, writer):
            if sock is not None:
                sock.close()
        self._reader = self._writer = None
        self._thread = None
