"""Per-object timers (kopf's ``@kopf.timer``): a function called every ``interval``
seconds for each primary object while it exists.

``Controller(...).timer(fn, interval=60)`` calls ``fn(obj, ctx)`` with the object as the
cache holds it at the tick and a :class:`~client_cache.runtime.daemons.DaemonContext`
(``ctx.attempt`` counts the object's ticks; ``ctx.stopping`` is set when the run stops or,
following, the term ends). What it does:

* **When.** Once the controller's workers start, every cached object and every object
  added afterwards gets its first tick ``initial_delay`` seconds later; each next tick
  comes ``interval`` seconds after the previous one ended (kopf's default, not its
  ``sharp``), plus a random extra of up to ``jitter`` times ``interval``.
* **Skipped**, and counted ``skipped``, while a reconcile of the object runs (the
  reconcile sees the same object; the tick comes again an interval later), while the
  replica does not lead or, sharded, does not hold the key. One object's ticks never
  overlap each other (one work-queue item per object and timer).
* **Until** the object is marked for deletion or deleted: its ticks stop.
* **Failures**: a tick that raises is logged at ERROR with its traceback (visible with no
  logging configured; repeats of one failure are folded, one line every few minutes),
  counted, and the next tick comes as usual.
* **Threads**: the ticks wait in a delaying work queue on the controller's clock (its
  thread ``workqueue-delaying-<name>-timers``) and run on ``concurrency`` threads
  ``controller-<name>-timer-<n>``; an ``async def`` function runs on the controller's
  event loop. At the run's stop the threads end within a second of their tick returning;
  one still in a tick then is named at WARNING.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from typing import Any

from client_cache.aio.bridge import LoopCaller, is_async_callable
from client_cache.api import meta
from client_cache.runtime._worker import Tally
from client_cache.runtime.daemons import (
    DAEMON_STOP_GRACE,
    DaemonContext,
    DaemonFunction,
    ObjectScope,
)
from client_cache.runtime.metrics import ControllerMetrics
from client_cache.util._logs import FailureEpisodes, log_visibly
from client_cache.util.clock import WithTicker
from client_cache.util.wait import jitter
from client_cache.workqueue.delaying_queue import (
    DelayingQueueConfig,
    DelayingType,
    new_typed_delaying_queue_with_config,
)

__all__ = ["TimerRunner", "TimerSpec"]

_log = logging.getLogger("client_cache.runtime.controller")

_Item = tuple[str, int]  # an object's key and the timer's index


@dataclasses.dataclass(frozen=True)
class TimerSpec:
    """One ``Controller.timer`` registration (see the module documentation)."""

    fn: DaemonFunction
    name: str
    interval: float
    initial_delay: float = 0.0
    jitter: float = 0.0

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"a timer is a function fn(obj, ctx), not "
                            f"{type(self.fn).__name__}")
        if not self.interval > 0 or self.initial_delay < 0 or self.jitter < 0:
            raise ValueError("a timer needs interval > 0, initial_delay >= 0 and jitter "
                             f">= 0, not {self.interval!r}, {self.initial_delay!r}, "
                             f"{self.jitter!r}")

    def next_delay(self) -> float:
        """Seconds from the end of a tick to the next."""
        return jitter(self.interval, self.jitter) if self.jitter > 0 else self.interval


class TimerRunner:
    """The timers of one run of controller ``name``: :meth:`applied` and :meth:`deleted`
    are the primary informer's events, :meth:`enable` starts the ticks once the workers
    start, :meth:`stop` ends them."""

    def __init__(self, name: str, specs: list[TimerSpec], scope: ObjectScope, *,
                 data: Any, recorder: Any, stopping: threading.Event, tally: Tally,
                 metrics: ControllerMetrics, caller: LoopCaller | None,
                 clock: WithTicker | None, threads: int) -> None:
        self.name = name
        self._specs = specs
        self._scope = scope
        self._data = data
        self._recorder = recorder
        self._stopping = stopping
        self._tally = tally
        self._metrics = metrics
        self._caller = caller
        self._lock = threading.Lock()
        self._known: set[str] = set()  # keys whose ticks are scheduled
        self._ticks: dict[_Item, int] = {}
        self._failing = FailureEpisodes()
        self._queue: DelayingType[_Item] = new_typed_delaying_queue_with_config(
            DelayingQueueConfig[_Item](name=f"{name}-timers", clock=clock))
        self._threads = [threading.Thread(target=self._loop, daemon=True,
                                          name=f"controller-{name}-timer-{i}")
                         for i in range(threads)]

    def start(self) -> TimerRunner:
        """Start the tick threads (nothing is scheduled before :meth:`enable`)."""
        for thread in self._threads:
            thread.start()
        return self

    def enable(self) -> None:
        """The workers start: every cached object gets its first ticks."""
        self._scope.enabled = True
        for key in self._scope.informer.get_indexer().list_keys():
            self._schedule(key)

    def applied(self, obj: Any) -> None:
        """A primary object was added or updated."""
        if self._scope.enabled:
            try:
                key = self._scope.ref(obj).key()
            except Exception:  # no readable name: nothing to tick
                return
            self._schedule(key)

    def deleted(self, obj: Any) -> None:
        """A primary object was deleted: its pending ticks find it gone and end."""

    def _schedule(self, key: str) -> None:
        with self._lock:
            if key in self._known or self._scope.current(key) is None:
                return
            self._known.add(key)
        for index, spec in enumerate(self._specs):
            self._queue.add_after((key, index), spec.initial_delay)

    # -- the ticks ---------------------------------------------------------------------------
    def _loop(self) -> None:
        queue = self._queue
        while True:
            item, shutdown = queue.get()
            if shutdown or item is None:
                return
            try:
                again = self._tick(item)
            except Exception:
                _log.exception("controller %s: a timer tick failed", self.name)
                again = True
            finally:
                queue.done(item)
            if again and not self._stopping.is_set():
                queue.add_after(item, self._specs[item[1]].next_delay())

    def _tick(self, item: _Item) -> bool:
        """Run one tick; whether the object is still there to tick again."""
        key, index = item
        scope, spec = self._scope, self._specs[index]
        obj = scope.current(key)
        if obj is None or self._stopping.is_set():
            with self._lock:
                self._known.discard(key)
                self._ticks.pop(item, None)
            return False
        ref = scope.ref(obj)
        shard = scope.shard
        if not scope.leading() or self._tally.is_running(ref) or (
                shard is not None and not shard.begin(ref)):
            self._metrics.timer_ticks["skipped"].inc()
            return True
        try:
            gate = scope.gate
            stopping = self._stopping if gate is None else gate.term_stopping(self._stopping)
            with self._lock:
                count = self._ticks.get(item, 0)
                self._ticks[item] = count + 1
            ctx: DaemonContext[Any] = DaemonContext(
                ref, self._data, stopping, count, self._recorder,
                "" if shard is None else shard.identity, None,
                lambda: scope.informer.get_indexer().get_by_key(key)[0])
            self._call(item, spec, obj, ctx)
        finally:
            if shard is not None:
                shard.end(ref)
        return True

    def _call(self, item: _Item, spec: TimerSpec, obj: Any, ctx: DaemonContext[Any]) -> None:
        try:
            if is_async_callable(spec.fn) and self._caller is not None:
                self._caller.call(spec.fn(obj, ctx))  # type: ignore[arg-type]
            else:
                spec.fn(obj, ctx)
        except Exception as err:
            if self._stopping.is_set():  # cancelled or cut short by the stop: no failure
                _log.debug("controller %s: timer %s of %s ended by the stop: %s",
                           self.name, spec.name, ctx.ref, err)
                return
            self._metrics.timer_ticks["error"].inc()
            repeat = self._failing.failed(item, f"{type(err).__name__}: {err}")
            if repeat.first:
                log_visibly(_log, logging.ERROR, "controller %s: timer %s of %s failed",
                            self.name, spec.name, meta.describe(obj), exc_info=err)
            elif repeat.due:
                log_visibly(_log, logging.ERROR, "controller %s: timer %s of %s still "
                            "failing (%d more times in %.0f s): %s", self.name, spec.name,
                            meta.describe(obj), repeat.count, repeat.seconds, err)
            return
        self._failing.ended(item)
        self._metrics.timer_ticks["success"].inc()

    # -- the end -----------------------------------------------------------------------------
    def stop(self, grace: float = DAEMON_STOP_GRACE) -> None:
        """Shut the ticks down and join the threads within ``grace`` seconds; one still
        in a tick then is named at WARNING."""
        self._queue.shut_down()
        deadline = time.monotonic() + grace
        for thread in self._threads:
            if thread.ident is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [thread.name for thread in self._threads if thread.is_alive()]
        if stuck:
            log_visibly(_log, logging.WARNING, "controller %s: timer ticks still running "
                        "%.1f s after the stop, on %s", self.name, grace, ", ".join(stuck))
