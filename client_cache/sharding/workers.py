"""N worker processes of one controller on this machine, supervised.

Python reconciles on one core at a time; a sharded controller (``ControllerConfig(
sharding=...)``) runs as several processes, each a member of the ring. On a cluster they
are pods; on one machine, :class:`WorkerGroup` starts them and keeps them running:

::

    def worker(index: int) -> None:          # a module-level function: it is pickled
        config = ControllerConfig(sharding=ShardingConfig(
            identity=ShardingConfig.identity_for("foos", index), ring="foos"))
        Controller(factory_for_this_process(), foos).with_config(config) \\
            .shutdown_on_signal().run(reconcile)

    run_workers(worker, 2)                   # until SIGINT/SIGTERM

Each worker is a fresh interpreter (``multiprocessing``'s *spawn* start method: nothing of
the parent's threads or connections is inherited) running ``target(index)``. On Linux a
worker asks the kernel for SIGTERM when the supervising thread ends (``PR_SET_PDEATHSIG``),
and ends at once if that thread ended before it asked: a supervisor killed with SIGKILL
leaves no worker behind, each gets the graceful stop it would have got. The supervising
thread therefore starts every worker and outlives them all. A worker that
exits while the group runs is started again with the same index, after a delay doubling
from 1 s to 30 s (reset once it has run for a minute); its identity is then the same
(:meth:`ShardingConfig.identity_for`), and since the supervisor saw the old process end,
nothing of it still reconciles. Stopping the group sends SIGTERM to every worker (the
runtime's ``shutdown_on_signal`` turns that into a graceful shutdown that hands the
worker's keys over), waits up to ``grace`` seconds, then kills what is left.
The supervisor waits on the processes' sentinels and on its stop event; it never polls.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from client_cache.util.signals import SignalRelay

__all__ = ["WorkerGroup", "run_workers"]

_log = logging.getLogger(__name__)

RESTART_DELAY = (1.0, 30.0)
"""The first and the longest delay before a worker that exited is started again."""
STEADY_AFTER = 60.0
"""A worker that ran this long (seconds) before it exited is restarted after the first
delay again."""


PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal this process gets when the thread that started it ends."""


def _worker_main(target: Callable[..., None], index: int, supervisor: int,
                 args: tuple[Any, ...]) -> None:
    """A worker's entry: on Linux, ask for SIGTERM when the supervising thread ends; when
    it ended already (this process was adopted), end; then run ``target(index, *args)``.

    When the target returns or raises, the worker's heap is frozen (:func:`gc.freeze`):
    the interpreter's teardown then runs the exit handlers and joins threads as ever, but
    does not walk every object the worker made for garbage cycles. A worker that imported
    the ``kubernetes`` client spent about 0.25 s of CPU on that walk on its way out (2 s
    beside a CPU hog, enough to miss a stop's grace); it is under 0.03 s frozen. Objects in
    cycles then get no finalizer call at exit, which CPython never promised anyway."""
    try:
        _start_worker(target, index, supervisor, args)
    finally:
        gc.freeze()


def _start_worker(target: Callable[..., None], index: int, supervisor: int,
                  args: tuple[Any, ...]) -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)  # the interpreter's own symbols: libc's
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
            _log.warning("worker %d: no parent-death signal (errno %d)", index,
                         ctypes.get_errno())
        if os.getppid() != supervisor:
            return  # the supervisor ended before the request: nothing to work for
    target(index, *args)


@dataclass
class _Slot:
    index: int
    process: Any = None  # multiprocessing's SpawnProcess
    started: float = 0.0
    delay: float = RESTART_DELAY[0]
    due: float = 0.0  # monotonic time of the next start, when not running
    restarts: int = 0


class WorkerGroup:
    """``replicas`` processes each running ``target(index, *args)``; see the module
    documentation. :meth:`start`, :meth:`stop`; :attr:`restarts` counts restarts per
    index; :meth:`pids` the running processes."""

    def __init__(self, target: Callable[..., None], replicas: int, *,
                 args: tuple[Any, ...] = (), restart: bool = True, grace: float = 30.0,
                 name: str = "workers") -> None:
        if replicas < 1:
            raise ValueError(f"replicas must be at least 1, not {replicas}")
        self._target = target
        self._args = args
        self._restart = restart
        self._grace = grace
        self.name = name
        self._ctx = multiprocessing.get_context("spawn")
        self._slots = [_Slot(i) for i in range(replicas)]
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._spawned = threading.Event()  # the first workers are started
        self._failure: BaseException | None = None  # why they could not be
        self._stop_grace = grace
        self._codes: dict[int, int | None] = {slot.index: None for slot in self._slots}

    def __repr__(self) -> str:
        return f"<WorkerGroup {self.name} of {len(self._slots)}>"

    @property
    def restarts(self) -> dict[int, int]:
        """How many times each worker was started again."""
        with self._lock:
            return {slot.index: slot.restarts for slot in self._slots}

    def pids(self) -> dict[int, int]:
        """The pid of each running worker, by index."""
        with self._lock:
            return {slot.index: slot.process.pid for slot in self._slots
                    if slot.process is not None and slot.process.is_alive()}

    def start(self) -> WorkerGroup:
        """Start the supervising thread (``workers-<name>``); it starts every worker
        before this returns."""
        if self._thread is not None:
            raise RuntimeError(f"{self!r} was started already")
        self._thread = threading.Thread(target=self._supervise, daemon=True,
                                        name=f"workers-{self.name}")
        self._thread.start()
        self._spawned.wait()
        if self._failure is not None:
            self.stop()
            raise self._failure
        return self

    def _spawn(self, slot: _Slot) -> None:
        process = self._ctx.Process(target=_worker_main,
                                    args=(self._target, slot.index, os.getpid(), self._args),
                                    name=f"{self.name}-{slot.index}", daemon=False)
        process.start()
        slot.process, slot.started = process, time.monotonic()
        _log.info("workers %s: started worker %d (pid %s)", self.name, slot.index, process.pid)

    def _supervise(self) -> None:
        try:
            try:
                with self._lock:
                    for slot in self._slots:
                        self._spawn(slot)
            except BaseException as err:  # start() raises it (a target that cannot be
                self._failure = err       # pickled, no processes left)
                return
            finally:
                self._spawned.set()
            self._watch()
        except Exception:
            _log.exception("workers %s: supervising failed; stopping the workers", self.name)
        finally:
            self._end_workers()

    def _watch(self) -> None:
        """Restart workers that exit, until the group stops."""
        while not self._stop.is_set():
            with self._lock:
                sentinels = {slot.process.sentinel: slot for slot in self._slots
                             if slot.process is not None}
                waiting = [slot.due for slot in self._slots if slot.process is None]
            timeout = None if not waiting else max(0.0, min(waiting) - time.monotonic())
            ready = multiprocessing.connection.wait([*sentinels, self._wake_r], timeout)
            if self._stop.is_set():
                return
            now = time.monotonic()
            with self._lock:
                for sentinel in ready:
                    slot = sentinels.get(sentinel)
                    if slot is None:
                        continue
                    code = slot.process.exitcode
                    slot.process.join(0)
                    slot.process = None
                    if not self._restart:
                        _log.warning("workers %s: worker %d exited (code %s)", self.name,
                                     slot.index, code)
                        continue
                    if now - slot.started >= STEADY_AFTER:
                        slot.delay = RESTART_DELAY[0]
                    slot.due = now + slot.delay
                    _log.warning("workers %s: worker %d exited (code %s); starting it again "
                                 "in %.0f s", self.name, slot.index, code, slot.delay)
                    slot.delay = min(slot.delay * 2, RESTART_DELAY[1])
                for slot in self._slots:
                    if slot.process is None and self._restart and slot.due <= now:
                        slot.restarts += 1
                        self._spawn(slot)

    def _end_workers(self) -> None:
        """On the supervising thread, whose end would signal the workers: SIGTERM to
        each, up to the grace period for them to end, SIGKILL for the rest; their exit
        codes are kept for :meth:`stop`."""
        deadline = time.monotonic() + self._stop_grace
        with self._lock:
            running = [slot for slot in self._slots if slot.process is not None]
        for slot in running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(slot.process.pid, signal.SIGTERM)
        for slot in running:
            slot.process.join(max(0.0, deadline - time.monotonic()))
            if slot.process.is_alive():
                _log.warning("workers %s: worker %d did not stop in time; killing it",
                             self.name, slot.index)
                slot.process.kill()
                slot.process.join(1.0)
            self._codes[slot.index] = slot.process.exitcode

    def stop(self, grace: float | None = None) -> dict[int, int | None]:
        """Stop the group: SIGTERM to each worker, up to ``grace`` seconds (default: the
        group's) for them to end, SIGKILL for the rest. Returns each worker's exit
        code (None: none was running)."""
        if grace is not None:
            self._stop_grace = grace
        self._stop.set()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            # the supervising thread ends the workers: within the grace period, then
            # a kill and its reaping (a second each at most)
            self._thread.join(self._stop_grace + 2 * len(self._slots) + 1.0)
            if self._thread.is_alive():
                _log.warning("workers %s: the supervisor did not end", self.name)
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)
        return dict(self._codes)


def run_workers(target: Callable[..., None], replicas: int, *, args: tuple[Any, ...] = (),
                stop: threading.Event | None = None, grace: float = 30.0,
                name: str = "workers") -> dict[int, int | None]:
    """Run ``replicas`` workers of ``target`` (a module-level function taking the worker's
    index, then ``args``) until SIGINT or SIGTERM reaches this process (on the main
    thread) or ``stop`` is set; then stop them as :meth:`WorkerGroup.stop` does and
    return their exit codes."""
    group = WorkerGroup(target, replicas, args=args, grace=grace, name=name)
    done = stop if stop is not None else threading.Event()
    relay: SignalRelay | None = None
    if threading.current_thread() is threading.main_thread():
        relay = SignalRelay(lambda _: done.set(), name=f"workers-{name}").start()
    try:
        group.start()
        done.wait()
    finally:
        codes = group.stop(grace)
        if relay is not None:
            relay.close()
    return codes


