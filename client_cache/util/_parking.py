"""A one-sleeper wake-up that the waking side never waits for (a port addition; Go
parks goroutines on channels).

A :class:`Parker` is a lock held from the start. The one thread that sleeps on it calls
:meth:`Parker.park`; any thread wakes it with :meth:`Parker.unpark`, which only releases
the lock, never blocks and never waits for the interpreter lock's holder to run (a
``threading.Condition`` makes the waker take the condition's lock and run a Python-level
``notify``). A wake-up given while nobody sleeps is kept: the next ``park`` returns at
once, so the sleeper must look at its state again after every ``park``, as after a
spurious wake-up of a condition. To not miss a wake-up, a sleeper announces that it is
about to sleep (a flag of the caller's), looks at its state once more, and only then
parks; the waker sets the state first and unparks when the flag is up. A Parker that
the waker takes off a list before unparking (as the work queue's sleeping getters are)
needs no flag.
"""

from __future__ import annotations

import threading

__all__ = ["Parker"]


class Parker:
    """See the module documentation."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()

    def park(self, timeout: float = -1) -> bool:
        """Sleep until :meth:`unpark` (or return at once if one is pending); ``timeout``
        seconds at most (-1: no limit). False if the time ran out."""
        return self._lock.acquire(True, timeout)

    def unpark(self) -> None:
        """Wake the sleeper, or make its next :meth:`park` return at once."""
        if self._lock.locked():
            # not contextlib.suppress: on the hot path of every listener notification and
            # work-queue add it cost 390 ns a call against 115 ns for try/except
            try:  # noqa: SIM105
                self._lock.release()
            except RuntimeError:  # released by another thread just now
                pass
