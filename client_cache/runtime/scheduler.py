"""The reconcile scheduler (kube-rs ``debounced_scheduler`` with the runner's
``hold_unless``), on the work queue's delaying queue.

Rules, as kube-rs's:

* **collapse**: one pending request per object. A request for an object that already has
  one pending is dropped when it would run later, and replaces it when it would run
  earlier (its reason then wins).
* **debounce**: every request runs ``debounce`` seconds after it was made (on top of any
  requeue delay), so triggers that arrive within the window collapse into the one already
  pending: with debounce 1 s, triggers at t=0 and t=0.3 run once at t=1; a trigger at 1.2
  runs at 2.2.
* **hold**: an object being reconciled is not handed out again until :meth:`done`; a
  request for it meanwhile runs once after that, never concurrently. This is the work
  queue's own processing rule.
* **backoff**: :meth:`backoff` schedules a retry after the rate limiter's per-object
  delay (default: :func:`~client_cache.runtime.retry.default_rate_limiter`, client-go's
  per-item exponential 5 ms .. 1000 s); :meth:`forget` resets it after a success.

* **priority** (controller-runtime's priority queue, its default since v0.23): among the
  due requests the highest priority runs first, then the one due first. A request for an
  object already pending raises the pending one's priority when it is higher (the run
  time and the reason follow the collapse rule), so a collapse never lowers a priority.
  The runtime's triggers ask :data:`~client_cache.workqueue.priority.LOW_PRIORITY` for
  what they did not see change (an initial list, an unchanged resync, a bulk reconcile)
  and :data:`~client_cache.workqueue.priority.DEFAULT_PRIORITY` for a change; a retry
  keeps the priority of the request it retries. With ``priorities=False`` (controller-
  runtime's ``UsePriorityQueue: false``) every request is equal and due requests run
  first come, first served, on the plain work queue.

Timers are the delaying queue's (one mechanism, the monotonic clock of ``clock``). The
delaying queue keeps an earlier timer when a later one is added but cannot cancel a timer,
so the scheduler keeps the authoritative run time of each pending request beside it and
ignores a timer that fires for a request already served or moved later.
"""

from __future__ import annotations

import threading
import time

from client_cache.runtime.objectref import ObjectRef
from client_cache.runtime.reconcile import ReconcileReason, ReconcileRequest
from client_cache.runtime.retry import default_rate_limiter
from client_cache.util.clock import REAL_CLOCK, WithTicker
from client_cache.workqueue.default_rate_limiters import RateLimiter
from client_cache.workqueue.delaying_queue import (
    DelayingQueueConfig,
    new_typed_delaying_queue_with_config,
)
from client_cache.workqueue.metrics import MetricsProvider
from client_cache.workqueue.priority import DEFAULT_PRIORITY, PriorityQueue
from client_cache.workqueue.queue import QueueConfig

__all__ = ["Scheduler"]

_EARLY = 0.0005  # a timer this close to its run time counts as due


class Scheduler:
    """See the module documentation. ``name`` names the work queue (its metrics carry it);
    ``priorities`` orders due requests by priority (the default)."""

    def __init__(self, name: str = "", debounce: float = 0.0,
                 rate_limiter: RateLimiter[ObjectRef] | None = None,
                 clock: WithTicker | None = None,
                 metrics_provider: MetricsProvider | None = None,
                 priorities: bool = True) -> None:
        if debounce < 0:
            raise ValueError(f"debounce must not be negative, not {debounce}")
        self.debounce = debounce
        self._clock = clock or REAL_CLOCK
        self._rate_limiter: RateLimiter[ObjectRef] = rate_limiter or default_rate_limiter()
        self._line: PriorityQueue[ObjectRef] | None = None
        if priorities:
            self._line = PriorityQueue(QueueConfig[ObjectRef](
                name=name, clock=self._clock, metrics_provider=metrics_provider))
        self._queue = new_typed_delaying_queue_with_config(DelayingQueueConfig[ObjectRef](
            name=name, clock=self._clock, metrics_provider=metrics_provider,
            queue=self._line))
        self._lock = threading.Lock()
        # ref -> (run time, reason, priority) of its one pending request
        self._pending: dict[ObjectRef, tuple[float, ReconcileReason, int]] = {}

    @property
    def priorities(self) -> bool:
        """Whether due requests run in order of priority."""
        return self._line is not None

    def __len__(self) -> int:
        """Requests pending (due or not)."""
        with self._lock:
            return len(self._pending)

    def schedule(self, ref: ObjectRef, reason: ReconcileReason, delay: float = 0.0,
                 priority: int = DEFAULT_PRIORITY) -> None:
        """Request a reconcile of ``ref`` in ``delay`` seconds (plus the debounce), at
        ``priority`` (ignored without priorities)."""
        delay = max(0.0, delay) + self.debounce
        run_at = self._clock.monotonic() + delay
        line = self._line
        with self._lock:
            current = self._pending.get(ref)
            if current is not None and current[0] <= run_at:
                # the earlier request stands; a higher priority raises it
                if line is not None and priority > current[2]:
                    self._pending[ref] = (current[0], current[1], priority)
                    line.prioritize(ref, priority)
                return
            if current is not None:
                priority = max(priority, current[2])
            self._pending[ref] = (run_at, reason, priority)
            if line is not None:  # under the lock: in step with _pending
                line.prioritize(ref, priority)
        if delay > 0:
            self._queue.add_after(ref, delay)
        else:
            self._queue.add(ref)  # add_after would count a retry

    def backoff(self, ref: ObjectRef, reason: ReconcileReason,
                priority: int = DEFAULT_PRIORITY) -> float:
        """Schedule a retry after the rate limiter's next delay for ``ref`` (at
        ``priority``); returns the delay."""
        delay = self._rate_limiter.when(ref)
        self.schedule(ref, reason, delay, priority)
        return delay

    def forget(self, ref: ObjectRef) -> None:
        """Reset ``ref``'s backoff (after a successful reconcile)."""
        self._rate_limiter.forget(ref)

    def num_requeues(self, ref: ObjectRef) -> int:
        """Failures counted for ``ref`` since it was last forgotten."""
        return self._rate_limiter.num_requeues(ref)

    def get(self, timeout: float | None = None) -> ReconcileRequest | None:
        """Block until a request is due and its object is not being reconciled; the caller
        must call :meth:`done` with its ref afterwards. None once shut down; ``TimeoutError``
        when ``timeout`` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ref, shutdown = self._queue.get(left)
            if shutdown or ref is None:
                return None
            with self._lock:
                entry = self._pending.get(ref)
                if entry is not None:
                    remaining = entry[0] - self._clock.monotonic()
                    if remaining <= _EARLY:
                        del self._pending[ref]
                        return ReconcileRequest(ref, entry[1], entry[2])
                    if self._line is not None:  # its timer comes into line at it
                        self._line.prioritize(ref, entry[2])
            # a stale timer (served already) or one for a request moved later
            self._queue.done(ref)
            if entry is not None:
                self._queue.add_after(ref, remaining)

    def wait_for_idle_loop(self, min_passes: int = 0) -> int:
        """Tests: wait until the timer loop has handled everything added so far and return
        its pass count (the delaying queue's method of that name)."""
        return self._queue.wait_for_idle_loop(min_passes)

    def done(self, ref: ObjectRef) -> None:
        """The reconcile of ``ref`` ended: a request that came meanwhile may now run."""
        self._queue.done(ref)

    def shut_down(self) -> None:
        """Wake every :meth:`get` (they return None); pending requests are dropped."""
        self._queue.shut_down()
        with self._lock:
            self._pending.clear()

    def shutting_down(self) -> bool:
        """True once ``shut_down`` was called."""
        return self._queue.shutting_down()
