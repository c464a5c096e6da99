"""Per-object daemons (kopf's ``@kopf.daemon``): a function that runs for as long as its
object exists, on a thread of its own, supervised by the controller.

``Controller(...).daemon(fn)`` runs ``fn(obj, ctx)`` once for every primary object, with
``obj`` as the cache holds it when the attempt starts and ``ctx`` a
:class:`DaemonContext`: ``ctx.latest()`` reads the object's current state, ``ctx.stopping``
is set when the daemon is to end, and ``ctx.wait(seconds)`` sleeps until then (True when
stopped). What this runtime does, and what it chose where kopf leaves a choice:

* **When.** A daemon starts once the controller's workers start (every cache synced, the
  lease held, the shard ready), for every cached object, and for every object added
  afterwards; ``initial_delay`` seconds later when one is given.
* **Until.** Its ``ctx.stopping`` is set, with the reason in ``ctx.stop_reason``, when its
  object is marked for deletion (a deletionTimestamp: a finalizer waits for the daemon,
  as kopf's) or is deleted (``"deleted"``), when the run stops (``"shutdown"``), when a
  leader-elected replica's term ends (``"lost lease"``; in follow mode it starts again
  when the replica leads again), and when a sharded replica no longer holds the key
  (``"shard moved"``: the ring changed, or its Lease lapsed; the key is handed over only
  once the daemon has returned, so two replicas never run one object's daemon at once).
  Each daemon has ``1`` s (:data:`DAEMON_STOP_GRACE`) to return; one still running then
  is named at WARNING (a thread cannot be killed; an ``async def`` daemon is cancelled).
* **Restarts.** A daemon that raises is logged at ERROR with its traceback (visible with
  no logging configured), counted, and started again after ``backoff`` seconds, doubling
  with each failure in a row up to ``max_backoff``; an attempt that ran at least
  :data:`BACKOFF_RESET` seconds starts the count again. ``ctx.attempt`` counts the
  restarts. A daemon that returns is done for that object (kopf's choice): it is not
  started again while the object exists, unless the object is deleted and created again
  (a new uid).
* **Bounds.** At most ``ControllerConfig.max_daemons`` daemons run at once per controller
  (threads ``controller-<name>-daemon-<n>``); the others wait in line, first come first
  served, and start as slots free. The gauges ``client_cache_controller_daemons_running``
  and ``..._daemons_waiting`` and the counter ``..._daemon_failures_total`` report them
  (:mod:`client_cache.runtime.metrics`).
* **Async.** An ``async def`` daemon runs as a task on the controller's event loop (its
  slot is counted, no thread is held); ``await ctx.sleep(seconds)`` is its ``wait``, and
  at the end of its grace it is cancelled.

:class:`DaemonSupervisor` does it, on one thread of its own (``controller-<name>-daemons``)
that the primary informer's events, the lease and the shard wake; timers are
:mod:`client_cache.runtime._timers`.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import itertools
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from client_cache.aio.bridge import LoopCaller, is_async_callable
from client_cache.api import meta
from client_cache.runtime._leading import LeadershipGate
from client_cache.runtime.metrics import ControllerMetrics
from client_cache.runtime.objectref import ObjectRef, object_ref
from client_cache.runtime.sharded import ShardGate
from client_cache.shared_informer import SharedIndexInformer
from client_cache.util._logs import log_visibly
from client_cache.util.stop import on_stop

__all__ = ["BACKOFF_RESET", "DAEMON_STOP_GRACE", "DaemonContext", "DaemonFunction",
           "DaemonSpec", "DaemonSupervisor", "ObjectScope"]

_log = logging.getLogger("client_cache.runtime.controller")

D = TypeVar("D")

DAEMON_STOP_GRACE = 1.0
"""Seconds a daemon has to return once its ``ctx.stopping`` is set."""
BACKOFF_RESET = 60.0
"""An attempt that ran this many seconds before it raised restarts at ``backoff`` again."""

DaemonFunction = Callable[[Any, "DaemonContext[Any]"], "Awaitable[None] | None"]
"""``fn(obj, ctx)``, plain or ``async def``: a daemon or a timer's function."""


@dataclasses.dataclass
class DaemonContext(Generic[D]):
    """The second argument of a daemon or timer function (kopf's ``stopped``, ``retry``
    and ``memo`` keyword arguments in one object): ``ref`` names the object, ``data`` is
    what ``run`` was given, ``stopping`` is set when the daemon is to end (a timer's: when
    the run stops or the replica no longer leads), ``stop_reason`` says why (None until
    then), ``attempt`` counts a daemon's restarts (a timer's ticks), ``recorder`` and
    ``shard`` are the reconcile context's."""

    ref: ObjectRef
    data: D
    stopping: threading.Event
    attempt: int = 0
    recorder: Any = None
    shard: str = ""
    stop_reason: str | None = None
    _latest: Callable[[], Any] = dataclasses.field(default=lambda: None, repr=False)

    def latest(self) -> Any:
        """The object as the cache holds it now, None once it is gone."""
        return self._latest()

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` or until stopped; True when stopped (kopf
        ``stopped.wait``)."""
        return self.stopping.wait(seconds)

    async def sleep(self, seconds: float) -> bool:
        """The ``async def`` twin of :meth:`wait`: True when stopped."""
        if self.stopping.is_set():
            return True
        loop = asyncio.get_running_loop()
        woken = loop.create_future()

        def wake() -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(_resolve, woken)

        hook = on_stop(self.stopping, wake)
        try:
            await asyncio.wait((woken,), timeout=seconds)
        finally:
            hook.cancel()
            woken.cancel()
        return self.stopping.is_set()


def _resolve(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(None)


@dataclasses.dataclass(frozen=True)
class DaemonSpec:
    """One ``Controller.daemon`` registration (see the module documentation)."""

    fn: DaemonFunction
    name: str
    initial_delay: float = 0.0
    backoff: float = 1.0
    max_backoff: float = 300.0

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"a daemon is a function fn(obj, ctx), not "
                            f"{type(self.fn).__name__}")
        if self.initial_delay < 0 or not self.backoff > 0 or self.max_backoff < self.backoff:
            raise ValueError("a daemon needs initial_delay >= 0 and 0 < backoff <= "
                             f"max_backoff, not {self.initial_delay!r}, {self.backoff!r}, "
                             f"{self.max_backoff!r}")


class ObjectScope:
    """Which primary objects a run's daemons and timers may act on now: those the cache
    holds, not marked for deletion, while the run is enabled (its workers started), the
    replica leads (``gate``) and, for something begun, still holds the key (``shard``)."""

    def __init__(self, informer: SharedIndexInformer[Any], kind: str, api_version: str,
                 gate: LeadershipGate | None, shard: ShardGate | None) -> None:
        self.informer = informer
        self.kind = kind
        self.api_version = api_version
        self.gate = gate
        self.shard = shard
        self.enabled = False

    def current(self, key: str) -> Any:
        """The cached object of ``key``, None when it is gone or being deleted."""
        obj, exists = self.informer.get_indexer().get_by_key(key)
        if not exists:
            return None
        try:
            if meta.accessor(obj).deletion_timestamp is not None:
                return None
        except Exception:  # unreadable metadata: not an object to act on
            return None
        return obj

    def ref(self, obj: Any) -> ObjectRef:
        """``obj``'s ref, with the primary kind."""
        return object_ref(obj, self.kind, self.api_version)

    def leading(self) -> bool:
        """Whether this replica may act as leader now (always, without election)."""
        return self.gate is None or self.gate.holds_lease()


@dataclasses.dataclass(eq=False)
class _Life:
    """One daemon of one object, from its place in line to its end."""

    spec: DaemonSpec
    index: int
    ref: ObjectRef
    uid: str
    stopping: threading.Event = dataclasses.field(default_factory=threading.Event)
    reason: str | None = None
    epoch: int = -1  # the shard's lapse count when it began; -1: not begun
    thread: threading.Thread | None = None
    future: concurrent.futures.Future[None] | None = None
    finished: bool = False  # returned normally
    ended: threading.Event = dataclasses.field(default_factory=threading.Event)
    context: DaemonContext[Any] | None = None

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            if self.context is not None:
                self.context.stop_reason = reason
        self.stopping.set()


class DaemonSupervisor:
    """The daemons of one run of controller ``name`` (see the module documentation):
    :meth:`applied` and :meth:`deleted` are the primary informer's events, :meth:`enable`
    starts them once the workers start, :meth:`changed` asks every object again (a lease
    or shard change), :meth:`stop` ends them all."""

    def __init__(self, name: str, specs: list[DaemonSpec], scope: ObjectScope, *,
                 data: Any, recorder: Any, max_daemons: int, stopping: threading.Event,
                 metrics: ControllerMetrics, caller: LoopCaller | None) -> None:
        self.name = name
        self._specs = specs
        self._scope = scope
        self._data = data
        self._recorder = recorder
        self._max = max_daemons
        self._stopping = stopping
        self._metrics = metrics
        self._caller = caller
        self._cond = threading.Condition()
        self._dirty: set[str] = set()
        self._rescan = False
        self._lives: dict[tuple[str, int], _Life] = {}
        self._line: collections.deque[_Life] = collections.deque()
        self._active = 0  # lives holding a slot
        self._done: dict[tuple[str, int], str] = {}  # returned normally: key -> uid
        self._numbers = itertools.count()
        self._closed = False
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"controller-{name}-daemons")
        self._unhook = on_stop(stopping, self._wake_all)

    # -- what happens ------------------------------------------------------------------------
    def start(self) -> DaemonSupervisor:
        """Start the supervising thread (nothing runs before :meth:`enable`)."""
        self._thread.start()
        return self

    def enable(self) -> None:
        """The workers start: so do the daemons, for every cached object."""
        self._scope.enabled = True
        self.changed()

    def applied(self, obj: Any) -> None:
        """A primary object was added or updated."""
        self._mark(obj)

    def deleted(self, obj: Any) -> None:
        """A primary object was deleted."""
        self._mark(obj)

    def changed(self) -> None:
        """The lease or the shard changed: ask every object again."""
        with self._cond:
            self._rescan = True
            self._cond.notify_all()

    def _mark(self, obj: Any) -> None:
        if not self._scope.enabled:
            return
        try:
            key = self._scope.ref(obj).key()
        except Exception:  # no readable name: nothing to supervise
            return
        with self._cond:
            self._dirty.add(key)
            self._cond.notify_all()

    def _wake_all(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # -- the supervising thread --------------------------------------------------------------
    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not (self._dirty or self._rescan or self._stopping.is_set()):
                        self._cond.wait()
                    if self._stopping.is_set():
                        return
                    keys, self._dirty = self._dirty, set()
                    if self._rescan:
                        self._rescan = False
                        keys |= {key for key, _ in self._lives}
                        keys |= set(self._scope.informer.get_indexer().list_keys())
                for key in keys:
                    self._settle(key)
        except Exception as err:
            log_visibly(_log, logging.ERROR, "controller %s: the daemon supervisor failed; "
                        "no daemon starts or stops any more", self.name, exc_info=err)

    def _settle(self, key: str) -> None:
        """Start or stop ``key``'s daemons to match what may run now."""
        scope = self._scope
        obj = scope.current(key)
        leading = scope.leading()
        uid = "" if obj is None else meta.accessor(obj).uid
        for index, spec in enumerate(self._specs):
            slot = (key, index)
            with self._cond:
                life = self._lives.get(slot)
                if life is not None:
                    reason = self._stop_reason(life, obj, uid, leading)
                    if reason is not None:
                        self._end_locked(life, reason)
                    continue
                if obj is None or not leading or self._done.get(slot) == uid:
                    if obj is None:
                        self._done.pop(slot, None)
                    continue
                life = _Life(spec, index, scope.ref(obj), uid)
                self._lives[slot] = life
                self._line.append(life)
                self._fill_locked()

    def _stop_reason(self, life: _Life, obj: Any, uid: str, leading: bool) -> str | None:
        """Why ``life`` is to stop now, None when it may go on."""
        if obj is None or uid != life.uid:
            return "deleted"
        if not leading:
            return "lost lease"
        shard = self._scope.shard
        if shard is not None and life.epoch >= 0 and not shard.keeps(life.ref, life.epoch):
            return "shard moved"
        return None

    def _end_locked(self, life: _Life, reason: str) -> None:
        if life.thread is None and life.future is None:  # still in line
            self._line.remove(life)
            self._forget_locked(life)
            return
        life.stop(reason)

    def _forget_locked(self, life: _Life) -> None:
        slot = (life.ref.key(), life.index)
        if self._lives.get(slot) is life:
            del self._lives[slot]
        self._gauges_locked()

    def _fill_locked(self) -> None:
        """Start lives from the line while slots are free."""
        shard = self._scope.shard
        while self._line and self._active < self._max and not self._stopping.is_set():
            life = self._line.popleft()
            if shard is not None:
                if not shard.begin(life.ref):  # not this replica's now: a change re-asks
                    self._forget_locked(life)
                    continue
                life.epoch = shard.epoch()
            self._active += 1
            self._launch_locked(life)
        self._gauges_locked()

    def _gauges_locked(self) -> None:
        self._metrics.daemons_running.set(self._active)
        self._metrics.daemons_waiting.set(len(self._line))

    def _launch_locked(self, life: _Life) -> None:
        stop_hook = on_stop(self._stopping, lambda: life.stop("shutdown"))
        if is_async_callable(life.spec.fn) and self._caller is not None:
            routine = self._live_async(life)
            try:
                future = asyncio.run_coroutine_threadsafe(routine, self._caller.loop)
            except RuntimeError:  # the loop closed: the run is ending
                routine.close()
                stop_hook.cancel()
                self._active -= 1
                self._forget_locked(life)
                return
            life.future = future
            future.add_done_callback(lambda _: self._ended(life, stop_hook.cancel))
            return
        life.thread = threading.Thread(target=self._live, args=(life, stop_hook.cancel),
                                       daemon=True,
                                       name=f"controller-{self.name}-daemon-"
                                            f"{next(self._numbers)}")
        life.thread.start()

    # -- one daemon --------------------------------------------------------------------------
    def _context(self, life: _Life, attempt: int) -> DaemonContext[Any]:
        shard = self._scope.shard
        key = life.ref.key()
        ctx: DaemonContext[Any] = DaemonContext(
            life.ref, self._data, life.stopping, attempt, self._recorder,
            "" if shard is None else shard.identity, life.reason,
            lambda: self._scope.informer.get_indexer().get_by_key(key)[0])
        life.context = ctx
        return ctx

    def _live(self, life: _Life, unhook: Callable[[], None]) -> None:
        try:
            spec, delays = life.spec, _Delays(life.spec)
            if spec.initial_delay and life.stopping.wait(spec.initial_delay):
                return
            while not life.stopping.is_set():
                obj = self._scope.current(life.ref.key())
                if obj is None:
                    return
                started = time.monotonic()
                try:
                    spec.fn(obj, self._context(life, delays.attempt))
                except Exception as err:
                    if life.stopping.wait(self._failed(life, err, delays, started)):
                        return
                    continue
                life.finished = True
                return
        finally:
            self._ended(life, unhook)

    async def _live_async(self, life: _Life) -> None:
        spec, delays = life.spec, _Delays(life.spec)
        ctx = self._context(life, 0)
        if spec.initial_delay and await ctx.sleep(spec.initial_delay):
            return
        while not life.stopping.is_set():
            obj = self._scope.current(life.ref.key())
            if obj is None:
                return
            started = time.monotonic()
            try:
                await spec.fn(obj, self._context(life, delays.attempt))  # type: ignore[misc]
            except Exception as err:
                if await ctx.sleep(self._failed(life, err, delays, started)):
                    return
                continue
            life.finished = True
            return

    def _failed(self, life: _Life, err: Exception, delays: _Delays, started: float) -> float:
        """Log and count a daemon that raised; the seconds until it starts again."""
        self._metrics.daemon_failures.inc()
        delay = delays.failed(time.monotonic() - started)
        if life.stopping.is_set():
            _log.debug("controller %s: daemon %s of %s raised while stopping: %s",
                       self.name, life.spec.name, life.ref, err)
        else:
            log_visibly(_log, logging.ERROR, "controller %s: daemon %s of %s failed; "
                        "starting it again in %g s", self.name, life.spec.name, life.ref,
                        delay, exc_info=err)
        return delay

    def _ended(self, life: _Life, unhook: Callable[[], None]) -> None:
        unhook()
        shard = self._scope.shard
        if shard is not None and life.epoch >= 0:
            shard.end(life.ref)  # a handover waiting for it may go on
        key = life.ref.key()
        with self._cond:
            self._active -= 1
            if life.finished and life.reason is None:
                self._done[(key, life.index)] = life.uid
            self._forget_locked(life)
            if not self._closed:
                self._dirty.add(key)  # it may start again (a new uid, a new term)
                self._fill_locked()
            self._cond.notify_all()
        life.ended.set()

    # -- the end -----------------------------------------------------------------------------
    def stop(self, grace: float = DAEMON_STOP_GRACE) -> list[ObjectRef]:
        """Stop every daemon (the run's stop is set: their ``ctx.stopping`` is too) and
        wait up to ``grace`` seconds for them to return; those still running are named at
        WARNING (an ``async def`` one is cancelled) and returned."""
        self._unhook.cancel()
        with self._cond:
            self._closed = True
            self._line.clear()
            lives = list(self._lives.values())
            self._cond.notify_all()
        for life in lives:
            life.stop("shutdown")
        deadline = time.monotonic() + grace
        for life in lives:
            life.ended.wait(max(0.0, deadline - time.monotonic()))
        stubborn = [life for life in lives if not life.ended.is_set()]
        for life in stubborn:
            if life.future is not None:
                life.future.cancel()
        if stubborn:
            log_visibly(_log, logging.WARNING, "controller %s: daemons still running %.1f s "
                        "after their stop: %s", self.name, grace,
                        ", ".join(f"{life.spec.name} of {life.ref}" for life in stubborn))
        if self._thread.ident is not None:
            self._thread.join(grace)
        with self._cond:
            self._gauges_locked()
        return [life.ref for life in stubborn]


class _Delays:
    """A daemon's restart delays: ``backoff`` doubling to ``max_backoff`` with each
    failure in a row; an attempt that ran :data:`BACKOFF_RESET` seconds resets it."""

    def __init__(self, spec: DaemonSpec) -> None:
        self._spec = spec
        self._next = spec.backoff
        self.attempt = 0

    def failed(self, ran: float) -> float:
        """The attempt failed after ``ran`` seconds: the delay before the next."""
        if ran >= BACKOFF_RESET:
            self._next = self._spec.backoff
        delay = self._next
        self._next = min(self._next * 2, self._spec.max_backoff)
        self.attempt += 1
        return delay
