"""A controller's workers: each takes the next due request, passes the gates, reconciles
the cached object and acts on the outcome (kube-rs's ``Runner`` with its reconcile and
error-policy calls; controller-runtime's ``processNextWorkItem`` and
``reconcileHandler``).

* **Take**: :meth:`Scheduler.get` blocks until a request is due (held objects wait until
  their reconcile ends), returning None at shutdown.
* **Gates**: none starts once the controller is stopping; a leader-elected one that no
  longer holds its lease ends its worker; a sharded one skips a key its replica does not
  own now (:meth:`~client_cache.runtime.sharded.ShardGate.begin`).
* **Reconcile** the object as the primary cache holds it; an object no longer cached is
  not reconciled (counted ``not_found``).
* **Outcome**: ``Action.await_change()`` forgets the object's backoff;
  ``Action.requeue(s)`` schedules it again after ``s``; ``Action.requeue_with_backoff()``
  and an error without an error policy retry after the scheduler's per-object backoff
  (:mod:`client_cache.runtime.retry`); a
  :class:`~client_cache.runtime.reconcile.TerminalError` is not retried; an error policy's
  Action decides otherwise.
* **Failures** are logged by episode (:meth:`Workers.report_failure`).
* **Timeouts** (``ControllerConfig.reconcile_timeout``): a call past its deadline fails
  with :class:`~client_cache.runtime.reconcile.ReconcileTimeoutError` when it returns,
  and its worker, replaced meanwhile, then ends (:mod:`client_cache.runtime._timeouts`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from client_cache.api import meta
from client_cache.errors import describe_error, find_api_error
from client_cache.runtime._leading import LeadershipGate
from client_cache.runtime._read_your_writes import Writer
from client_cache.runtime._timeouts import Attempt, Watchdog
from client_cache.runtime.metrics import ControllerMetrics
from client_cache.runtime.objectref import ObjectRef
from client_cache.runtime.reconcile import (
    Action,
    Context,
    ReconcileReason,
    ReconcileRequest,
    ReconcileTimeoutError,
    RunSummary,
    TerminalError,
    is_panic,
)
from client_cache.runtime.recorder import ControllerRecorder
from client_cache.runtime.scheduler import Scheduler
from client_cache.runtime.sharded import ShardGate
from client_cache.shared_informer import SharedIndexInformer
from client_cache.util._logs import FailureEpisodes, log_visibly

__all__ = ["PlainErrorPolicy", "PlainReconciler", "Tally", "Workers"]

_log = logging.getLogger("client_cache.runtime.controller")

PlainReconciler = Callable[[Any, Context[Any]], Action]
"""A reconcile as the workers call it: a plain function (an ``async def`` one is wrapped
to run on its loop first)."""
PlainErrorPolicy = Callable[[Any, BaseException, Context[Any]], Action]
"""An error policy as the workers call it."""


class Tally:
    """What one run did so far (its :class:`RunSummary`) and which refs are being
    reconciled, shared by its workers and read from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.summary = RunSummary()
        self._running: set[ObjectRef] = set()

    def count(self, **counts: int) -> None:
        """Add ``counts`` to the summary's fields of those names."""
        with self._lock:
            for field, n in counts.items():
                setattr(self.summary, field, getattr(self.summary, field) + n)

    def started(self, ref: ObjectRef) -> None:
        """``ref``'s reconcile begins."""
        with self._lock:
            self._running.add(ref)

    def ended(self, ref: ObjectRef) -> None:
        """``ref``'s reconcile is over."""
        with self._lock:
            self._running.discard(ref)

    def is_running(self, ref: ObjectRef) -> bool:
        """Whether a reconcile of ``ref`` runs now."""
        with self._lock:
            return ref in self._running

    def running(self) -> int:
        """How many reconciles run now."""
        with self._lock:
            return len(self._running)

    def close(self) -> RunSummary:
        """The summary, with the refs still running now as its ``unfinished``."""
        with self._lock:
            self.summary.unfinished = sorted(self._running, key=str)
            return self.summary

    def snapshot(self) -> RunSummary:
        """A copy of the summary so far."""
        with self._lock:
            return dataclasses.replace(self.summary, unfinished=list(self.summary.unfinished))


@dataclasses.dataclass
class Workers:
    """The workers of one run of controller ``name``: call :meth:`loop` on each worker
    thread."""

    name: str
    scheduler: Scheduler
    informer: SharedIndexInformer[Any]
    reconcile: PlainReconciler
    error_policy: PlainErrorPolicy | None
    data: Any
    recorder: ControllerRecorder | None
    metrics: ControllerMetrics
    gate: LeadershipGate | None
    shard: ShardGate | None
    stopping: threading.Event
    tally: Tally
    failing: FailureEpisodes
    writer: Writer | None = None
    watchdog: Watchdog | None = None

    def loop(self) -> None:
        """Take, gate and reconcile requests until the scheduler shuts down, the run
        stops or this replica stops leading."""
        scheduler, shard, gate, watchdog = self.scheduler, self.shard, self.gate, self.watchdog
        identity = "" if shard is None else shard.identity
        while True:
            if gate is not None and not gate.wait_to_lead(self.stopping):
                return  # stopping while following
            request = scheduler.get()
            if request is None:
                return
            ref = request.obj_ref
            try:
                if self.stopping.is_set():
                    return
                if gate is not None and not gate.holds_lease():  # lost, maybe by a pause
                    if not gate.follows:
                        return
                    scheduler.schedule(ref, request.reason, 0.0, request.priority)  # once leading
                    continue
                if self.writer is not None and self._defer(request):
                    continue
                if shard is not None and not shard.begin(ref):  # another replica's key
                    scheduler.forget(ref)
                    continue
                self.tally.started(ref)
                attempt: Attempt | None = None
                try:
                    stopping = self.stopping if gate is None \
                        else gate.term_stopping(self.stopping)
                    if watchdog is not None:
                        attempt = watchdog.begin(ref, stopping)
                        stopping = attempt.cancel
                    self._reconcile_one(request, Context(
                        self.data, request, stopping, self.recorder, identity, self.writer,
                        None if attempt is None else attempt.deadline), attempt)
                finally:
                    if watchdog is not None and attempt is not None:
                        watchdog.end(attempt)
                    if shard is not None:
                        shard.end(ref)
            finally:
                self.tally.ended(ref)
                scheduler.done(ref)
            if watchdog is not None and watchdog.replaced():
                return  # another worker took this one's place while its call hung

    def _defer(self, request: ReconcileRequest) -> bool:
        """Whether ``request`` waits for the primary cache to hold the object's last
        write (rescheduled at the deadline; the write's own event triggers it earlier):
        :mod:`client_cache.runtime._read_your_writes`."""
        assert self.writer is not None
        ref = request.obj_ref
        cache_rv = self.informer.indexer.last_store_sync_resource_version()
        wait = self.writer.versions.wait_for(ref, cache_rv)
        if wait is None:
            return False
        _log.debug("controller %s: %s waits up to %.1f s for the cache (at %s) to hold "
                   "its last write", self.name, ref, wait, cache_rv)
        self.metrics.deferrals.inc()
        self.scheduler.schedule(ref, request.reason, wait, request.priority)
        return True

    def _reconcile_one(self, request: ReconcileRequest, ctx: Context[Any],
                       attempt: Attempt | None = None) -> None:
        ref, scheduler, metrics = request.obj_ref, self.scheduler, self.metrics
        obj, exists = self.informer.get_indexer().get_by_key(ref.key())
        if not exists:
            _log.debug("controller %s: %s is no longer cached; not reconciled", self.name, ref)
            self.tally.count(not_found=1)
            self.failing.ended(ref)
            return
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("controller %s: reconciling %s (%s)", self.name, meta.describe(obj),
                       request.reason)
        started = time.monotonic()
        metrics.active.inc()
        try:
            try:
                action = self.reconcile(obj, ctx)
            except Exception as err:
                if attempt is not None and attempt.timed_out:
                    raise self._timed_out(attempt) from err
                raise
            if attempt is not None and attempt.timed_out:
                raise self._timed_out(attempt)
            if not isinstance(action, Action):
                raise TypeError(
                    f"{_name_of(self.reconcile)} returned {type(action).__name__}, not an "
                    "Action (return Action.await_change() to wait for the next change, or "
                    "Action.requeue(seconds))")
        except Exception as err:
            terminal = isinstance(err, TerminalError)
            metrics.observe(started, "error", terminal=terminal, panic=is_panic(err))
            self.tally.count(reconciles=1, errors=1)
            self.report_failure(ref, obj, err)
            if terminal:  # not retried: the next change of the object reconciles it
                scheduler.forget(ref)
            else:
                self._after_error(obj, err, ctx)
            return
        finally:
            metrics.active.dec()
        self.tally.count(reconciles=1)
        self.failing.ended(ref)  # the episode of failures, if any, is over
        priority = request.priority if action.priority is None else action.priority
        if action.backoff:
            metrics.observe(started, "requeue")
            self.tally.count(requeues=1)
            scheduler.backoff(ref, ReconcileReason.reconciler_requested_retry(), priority)
            return
        scheduler.forget(ref)
        if action.requeue_after is None:
            metrics.observe(started, "success")
            return
        metrics.observe(started, "requeue_after")
        self.tally.count(requeues=1)
        scheduler.schedule(ref, ReconcileReason.reconciler_requested_retry(),
                           action.requeue_after, priority)

    def _timed_out(self, attempt: Attempt) -> ReconcileTimeoutError:
        """The failure of a call that ran past its deadline (whatever it returned)."""
        assert self.watchdog is not None
        timeout = self.watchdog.timeout
        ran = time.monotonic() - (attempt.deadline - timeout)
        return ReconcileTimeoutError(f"the reconcile of {attempt.ref} ran {ran:.1f} s, past "
                                     f"its {timeout:g} s timeout")

    def report_failure(self, ref: ObjectRef, obj: Any, err: Exception) -> None:
        """Log a failed reconcile: the first of an episode (failures of one object, for
        one reason, until it reconciles again or fails for another reason) at ERROR with
        its traceback (an API error without: see below), then, while it goes on failing
        the same way, one ERROR line every
        :data:`~client_cache.util._logs.FAILURE_REPEAT_SECONDS` with the count
        (DEBUG for the others). A failure for another reason than the last one logged
        starts a new episode: it is logged at ERROR at once. The object is named by kind,
        namespace/name and resourceVersion, an API error by its status, reason and
        message; the ERROR lines reach stderr when the application configured no logging
        (:func:`client_cache.util._logs.log_visibly`)."""
        text = describe_error(err)
        repeat = self.failing.failed(ref, text)
        if repeat.first:
            # an API error is summarised (its status, reason and message): its text and
            # traceback would print the response's headers and body, which may quote the
            # object; any other error comes with its traceback
            log_visibly(_log, logging.ERROR, "controller %s: reconcile of %s failed: %s",
                        self.name, meta.describe(obj), text,
                        exc_info=None if find_api_error(err) is not None else err)
        elif repeat.due:
            log_visibly(_log, logging.ERROR, "controller %s: reconcile of %s still failing "
                        "(%d more times in %.0f s): %s", self.name, meta.describe(obj),
                        repeat.count, repeat.seconds, text)
        else:
            _log.debug("controller %s: reconcile of %s failed again: %s", self.name,
                       meta.describe(obj), text)

    def _after_error(self, obj: Any, err: Exception, ctx: Context[Any]) -> None:
        reason = ReconcileReason.error_policy_requested_retry()
        action: Action | None = None
        if self.error_policy is not None:
            try:
                action = self.error_policy(obj, err, ctx)
            except Exception:
                _log.exception("controller %s: error_policy failed; backing off", self.name)
        priority = ctx.request.priority  # a retry keeps the request's priority
        if isinstance(action, Action):
            if action.requeue_after is None:
                return
            self.scheduler.schedule(ctx.obj_ref, reason, action.requeue_after,
                                    priority if action.priority is None else action.priority)
        else:
            self.scheduler.backoff(ctx.obj_ref, reason, priority)
        self.tally.count(requeues=1)


def _name_of(fn: Any) -> str:
    """A function's qualified name, for an error about what it did."""
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or fn)
