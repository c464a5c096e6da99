"""Reconcile timeouts (``ControllerConfig.reconcile_timeout``; controller-runtime's
``ReconciliationTimeout``, kopf's ``timeout=``).

A thread cannot be stopped from outside, so a timeout cannot end a call. What it does,
at the deadline, from a thread of the controller's own (``controller-<name>-timeouts``):

* the reconcile's ``ctx.stopping`` is set and ``ctx.expired()`` turns true, so a
  reconcile that waits on ``ctx.stopping`` or checks it returns early;
* the call is logged once at ERROR with the stack of its thread, and
  ``controller_runtime_reconcile_timeouts_total`` counts it;
* the worker is replaced: a new worker thread takes the next requests, so a hung call
  does not stop the others (at most ``concurrency`` replacements stand at once; past
  that, no more, and the log says so);
* when the call returns, whatever it returned or raised, the attempt is a failure
  (:class:`~client_cache.runtime.reconcile.ReconcileTimeoutError`, the call's own
  exception as its cause): the error policy decides, else the key backs off; the
  replaced thread then ends.

What it does not do: interrupt the call, release what it holds, or start the same key
again while it runs (a key is in flight until its call returns, timeout or not).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable

from client_cache.runtime.objectref import ObjectRef
from client_cache.util._logs import log_visibly
from client_cache.util.stop import on_stop

__all__ = ["Attempt", "Watchdog"]

_log = logging.getLogger("client_cache.runtime.controller")


class Attempt:
    """One reconcile call under a deadline (monotonic); ``cancel`` is its
    ``ctx.stopping``: set at the deadline or when the run stops."""

    __slots__ = ("_unlink", "cancel", "deadline", "ended", "ref", "thread", "timed_out")

    def __init__(self, ref: ObjectRef, deadline: float, stopping: threading.Event) -> None:
        self.ref = ref
        self.deadline = deadline
        self.thread = threading.current_thread()
        self.cancel = threading.Event()
        self.timed_out = False
        self.ended = False
        self._unlink = on_stop(stopping, self.cancel.set)


class Watchdog:
    """The deadlines of controller ``name``'s running reconciles (see the module
    documentation): :meth:`begin` before a call, :meth:`end` after; ``replace()`` starts
    a new worker thread; ``count()`` counts a timeout."""

    def __init__(self, name: str, timeout: float, concurrency: int,
                 replace: Callable[[], None], count: Callable[[], None]) -> None:
        self.name = name
        self.timeout = timeout
        self._limit = concurrency
        self._replace = replace
        self._count = count
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Attempt]] = []
        self._seq = itertools.count()
        self._replaced: set[threading.Thread] = set()
        self._ended = 0  # entries of the heap whose call returned (dropped lazily)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"controller-{name}-timeouts")

    def start(self) -> Watchdog:
        """Start the thread that acts at the deadlines."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """No more timeouts or replacements; the thread ends within a second."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread.ident is not None:
            self._thread.join(1.0)

    def begin(self, ref: ObjectRef, stopping: threading.Event) -> Attempt:
        """A call of ``ref``'s reconcile begins on this thread."""
        attempt = Attempt(ref, time.monotonic() + self.timeout, stopping)
        with self._cond:
            first = not self._heap or attempt.deadline < self._heap[0][0]
            heapq.heappush(self._heap, (attempt.deadline, next(self._seq), attempt))
            if first:
                self._cond.notify()
        return attempt

    def end(self, attempt: Attempt) -> None:
        """The call returned. Its heap entry is dropped when it comes due, or sooner when
        ended entries are over half the heap, so the heap holds about the calls running,
        not every call of the last ``timeout`` seconds."""
        attempt._unlink.cancel()
        with self._cond:
            attempt.ended = True
            if not attempt.timed_out:  # a timed-out entry has left the heap already
                self._ended += 1
            if self._ended > 64 and self._ended * 2 > len(self._heap):
                self._heap = [entry for entry in self._heap if not entry[2].ended]
                heapq.heapify(self._heap)
                self._ended = 0

    def replaced(self) -> bool:
        """Whether this thread's worker was replaced (it ends after its call)."""
        thread = threading.current_thread()
        with self._cond:
            if thread in self._replaced:
                self._replaced.discard(thread)
                return True
        return False

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                now = time.monotonic()
                due: list[Attempt] = []
                while self._heap and self._heap[0][0] <= now:
                    attempt = heapq.heappop(self._heap)[2]
                    if attempt.ended:
                        self._ended -= 1
                    else:
                        attempt.timed_out = True
                        due.append(attempt)
                if due:
                    self._cond.release()
                    try:
                        for attempt in due:
                            self._expire(attempt)
                    finally:
                        self._cond.acquire()
                    continue
                self._cond.wait(self._heap[0][0] - now if self._heap else None)

    def _expire(self, attempt: Attempt) -> None:
        attempt.cancel.set()
        self._count()
        frame = sys._current_frames().get(attempt.thread.ident or -1)
        stack = "".join(traceback.format_stack(frame)) if frame is not None else "(ended)"
        with self._cond:
            replace = not self._stopped and len(self._replaced) < self._limit
            if replace:
                self._replaced.add(attempt.thread)
        log_visibly(_log, logging.ERROR,
                    "controller %s: reconcile of %s still running past its %.1f s timeout "
                    "(%s); %s. Its thread %s is at:\n%s", self.name, attempt.ref,
                    self.timeout, "ctx.stopping is set",
                    "a new worker takes the next requests" if replace else
                    f"no new worker: {self._limit} already replace stuck ones",
                    attempt.thread.name, stack)
        if replace:
            self._replace()

