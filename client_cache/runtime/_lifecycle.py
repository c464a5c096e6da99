"""One run of a controller, from its setup to its teardown (kube-rs's ``Controller::run``
future and its graceful shutdown; controller-runtime's ``Controller.Start``).

:class:`Run` sets the parts up in order, each pushing its own undo on one
:class:`contextlib.ExitStack`: the client's throttling and identity, the leader or shard
gate, a label-sharded member's own informer factory, the Event broadcaster, the
scheduler, the loop for ``async def`` reconciles, the shutdown hooks and signals, the
event handlers, the informers, the sources' pumps and, once every cache is ready (and
the lease or the shard is held), the workers. It then waits for the stop. The teardown
begins by setting the stop (no new reconcile starts) and shutting the scheduler down,
then unwinds the stack: the workers get what is left of ``shutdown_timeout`` (the refs
still running after it are the summary's ``unfinished``; their coroutines are
cancelled), the gate lets go (a shard member hands its keys over only after its workers
ended), the handlers are removed, the informers stop when the run started them, queued
Events are flushed, the signal handlers are put back.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import platform
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from client_cache.aio.bridge import LoopCaller, is_async_callable
from client_cache.cache_errors import CacheSyncTimeoutError
from client_cache.cache_sync import unsynced_details
from client_cache.controller import ResourceEventHandler
from client_cache.events import EventBroadcaster as EventsV1Broadcaster
from client_cache.events import EventsV1Sink
from client_cache.index import ReadyIndexer
from client_cache.informers.factory import SharedInformerFactory
from client_cache.record import CoreV1EventSink, EventBroadcaster, EventSource
from client_cache.runtime._kind import PrimaryKind
from client_cache.runtime._leading import LeadershipGate
from client_cache.runtime._read_your_writes import Writer, WrittenVersions
from client_cache.runtime._timeouts import Watchdog
from client_cache.runtime._timers import TimerRunner, TimerSpec
from client_cache.runtime._triggers import Triggers, wake_on_stop
from client_cache.runtime._worker import Tally, Workers
from client_cache.runtime.config import ControllerConfig
from client_cache.runtime.daemons import DaemonSpec, DaemonSupervisor, ObjectScope
from client_cache.runtime.metrics import ControllerMetrics
from client_cache.runtime.reconcile import ReconcileReason, RunSummary
from client_cache.runtime.recorder import ControllerRecorder
from client_cache.runtime.scheduler import Scheduler
from client_cache.runtime.sharded import ShardGate
from client_cache.shared_informer import SharedIndexInformer
from client_cache.util._logs import FailureEpisodes, log_visibly
from client_cache.util.clock import REAL_CLOCK, WithTicker
from client_cache.util.features import ATOMIC_FIFO, feature_gates
from client_cache.util.flowcontrol import TokenBucketRateLimiter, throttle_client
from client_cache.util.rest_metrics import instrument_client
from client_cache.util.signals import SignalRelay
from client_cache.util.stop import on_stop

__all__ = ["REFRESH_WARNING", "Run", "RunState", "Watched", "identify"]

_log = logging.getLogger("client_cache.runtime.controller")

REFRESH_WARNING = 10.0
"""Seconds after which a cache whose watch a shard member's rejoin re-establishes and
that is not back yet is named at WARNING (see :meth:`Run.refresh_caches`)."""


@dataclass
class Watched:
    """An informer a controller reads and the handler it adds to it for the run."""

    informer: SharedIndexInformer[Any]
    handler: ResourceEventHandler[Any]


@dataclass
class RunState:
    """What a controller's other methods read of its current (or last) run, from any
    thread: the stop, whether the run has chosen its informers (``prepared``) and is
    between its setup and its end (``active``), whether it stands by cold
    (``standing_by``), its counts, scheduler and shard gate."""

    stopping: threading.Event = field(default_factory=threading.Event)
    prepared: threading.Event = field(default_factory=threading.Event)
    active: bool = False
    standing_by: bool = False
    """A cold standby (``warmup=False``) waiting to lead, its informers not started."""
    tally: Tally = field(default_factory=Tally)
    scheduler: Scheduler | None = None
    shard: ShardGate | None = None
    # objects whose reconciles are failing: when the last ERROR line about each was
    # written and how many failures followed it (an episode ends at a success)
    failing: FailureEpisodes = field(default_factory=FailureEpisodes)


@dataclass
class Run:
    """One run of the controller ``name`` that ``factory``, ``config``, ``primary``,
    ``triggers`` and ``watched`` (the primary informer first) describe; :meth:`run` does
    it. ``stop``: the informers run until it is set (the caller owns their lifetime);
    None: the run makes its own and sets it at its end."""

    name: str
    factory: SharedInformerFactory
    config: ControllerConfig
    primary: PrimaryKind
    triggers: Triggers
    watched: list[Watched]
    sources: list[tuple[Any, bool]]
    background: list[DaemonSpec | TimerSpec]
    shutdown_events: list[threading.Event]
    on_signal: bool
    clock: WithTicker | None
    state: RunState
    reconcile: Any
    error_policy: Any
    data: Any
    stop: threading.Event | None
    _deadline: float = field(default=0.0, init=False)
    _own_factory: SharedInformerFactory | None = field(default=None, init=False)

    def run(self) -> RunSummary:
        """Set up, wait for the stop, tear down; the summary of what the run did."""
        if self.on_signal and threading.current_thread() is not threading.main_thread():
            raise RuntimeError("shutdown_on_signal() needs run() on the main thread")
        state = self.state
        state.stopping.clear()
        state.tally = Tally()
        state.active = True
        with contextlib.ExitStack() as stack:
            try:
                self._setup(stack)
                self._wait()
            finally:
                # the teardown begins: no new reconcile; the workers' gets return
                state.stopping.set()
                state.active = False
                self._deadline = time.monotonic() + self.config.shutdown_timeout
                if state.scheduler is not None:
                    state.scheduler.shut_down()
        summary = state.tally.summary
        if summary.unfinished:
            _log.error("controller %s: reconciles still running at the shutdown deadline: %s",
                       self.name, ", ".join(map(str, summary.unfinished)))
        return summary

    def _left(self) -> float:
        """What is left of the shutdown budget, at least a second."""
        return max(1.0, self._deadline - time.monotonic())

    # -- setup -------------------------------------------------------------------------------
    def _setup(self, stack: contextlib.ExitStack) -> None:
        config, state, api_client = self.config, self.state, self.factory.api_client
        events_limiter = None
        if config.client_qps > 0:
            throttle_client(api_client,
                            TokenBucketRateLimiter(config.client_qps, config.client_burst))
            events_limiter = TokenBucketRateLimiter(config.client_qps, config.client_burst)
        instrument_client(api_client)
        identify(api_client, self.name)
        if self.on_signal:  # acted on off the handler, whichever thread takes it
            stack.callback(SignalRelay(self._signalled, name=f"controller-{self.name}",
                                       once=True).start().close)
        gate, shard = self._gates()
        self._own_informer(stack, shard)
        state.prepared.set()
        recorder, broadcaster = self._recorder(events_limiter) if config.events \
            else (None, None)
        metrics = ControllerMetrics(self.name, config.concurrency)
        scheduler = state.scheduler = Scheduler(
            self.name, config.debounce, config.rate_limiter(), clock=self.clock,
            metrics_provider=metrics.queue_provider, priorities=config.priority_queue)
        self.triggers.attach(scheduler, shard)
        caller = None
        if any(map(is_async_callable, (self.reconcile, self.error_policy,
                                       *(spec.fn for spec in self.background)))):
            caller = LoopCaller(config.loop, name=f"controller-{self.name}-loop")
            stack.callback(caller.close)
        for event in self.shutdown_events:
            stack.callback(on_stop(event, state.stopping.set).cancel)
        informer_stop = self.stop if self.stop is not None else threading.Event()
        if self.stop is not None:
            stack.callback(on_stop(self.stop, state.stopping.set).cancel)
        else:
            stack.callback(self._stop_informers, informer_stop)
        if broadcaster is not None:
            stack.callback(self._flush_events, broadcaster)
        pumps: list[threading.Thread] = []
        stack.callback(_join_each, pumps, 1.0)
        # a cold standby (warmup off) starts its informers once it leads
        warm = gate is None or config.warmup
        if self.primary.pending:
            # the informers start (they wait for the resource too, not ready); the
            # handlers are added once the kind is known, and get the cache replayed
            if warm:
                self.factory.start(informer_stop)
            self.primary.await_served(api_client, state.stopping, self.name)
        for watched in self.watched:
            registration = watched.informer.add_event_handler(watched.handler)
            stack.callback(watched.informer.remove_event_handler, registration)
        if warm:
            self.factory.start(informer_stop)
        by_range = shard is not None and shard.by_server
        if self._own_factory is not None and not by_range:
            self._own_factory.start(informer_stop)
        if gate is not None:
            gate.start()
            stack.callback(self._stop_gate, gate)
        if shard is not None:
            shard.start()
            stack.callback(self._stop_shard, shard)
        for i, (source, bulk) in enumerate(self.sources):
            if isinstance(source, queue.Queue):
                stack.callback(on_stop(state.stopping, wake_on_stop(source)).cancel)
            pumps.append(self._thread(self.triggers.pump, f"source-{i}", source, bulk,
                                      state.stopping))
        workers: list[threading.Thread] = []
        stack.callback(self._end_workers, workers, caller)
        # the daemons and timers stop first, within their grace, then the workers
        background = self._background(stack, gate, shard, recorder, metrics, caller)
        if by_range:
            self._start_range(shard, informer_stop)
        if not warm and not self._start_when_leading(gate, informer_stop):
            return
        _log.info("controller %s: waiting for %d caches to sync", self.name,
                  len(self.watched))
        if self._wait_ready() and (gate is None or gate.wait_leading(state.stopping)) \
                and (shard is None or shard.wait_ready(state.stopping)):
            if shard is not None:
                shard.synced()
            _log.info("controller %s: caches synced%s; starting %d workers", self.name,
                      "" if gate is None else " and leading", config.concurrency)
            run = Workers(self.name, scheduler, self.watched[0].informer,
                          _threaded(caller, self.reconcile),
                          _threaded(caller, self.error_policy), self.data, recorder,
                          metrics, gate, shard, state.stopping, state.tally, state.failing,
                          self._writer(api_client))
            numbers = itertools.count()
            if config.reconcile_timeout is not None:
                def replace() -> None:  # a worker whose call hung is replaced
                    workers.append(self._thread(run.loop, f"worker-{next(numbers)}"))
                run.watchdog = Watchdog(self.name, config.reconcile_timeout,
                                        config.concurrency, replace,
                                        metrics.timeouts.inc).start()
                stack.callback(run.watchdog.stop)  # before the workers are joined
            workers += [self._thread(run.loop, f"worker-{next(numbers)}")
                        for _ in range(config.concurrency)]
            for supervised in background:
                supervised.enable()

    def _background(self, stack: contextlib.ExitStack, gate: LeadershipGate | None,
                    shard: ShardGate | None, recorder: ControllerRecorder | None,
                    metrics: ControllerMetrics, caller: LoopCaller | None,
                    ) -> list[DaemonSupervisor | TimerRunner]:
        """The run's daemons and timers (:mod:`client_cache.runtime.daemons`), hearing the
        primary informer's events, the lease and the shard; enabled once the workers
        start, stopped first at the teardown."""
        daemons = [spec for spec in self.background if isinstance(spec, DaemonSpec)]
        timers = [spec for spec in self.background if isinstance(spec, TimerSpec)]
        if not daemons and not timers:
            return []
        state, config = self.state, self.config
        scope = ObjectScope(self.watched[0].informer, self.primary.kind,
                            self.primary.api_version, gate, shard)
        started: list[DaemonSupervisor | TimerRunner] = []
        if timers:
            runner = TimerRunner(self.name, timers, scope, data=self.data, recorder=recorder,
                                 stopping=state.stopping, tally=state.tally,
                                 metrics=metrics, caller=caller, clock=self.clock,
                                 threads=config.concurrency).start()
            stack.callback(runner.stop)
            started.append(runner)
        if daemons:
            supervisor = DaemonSupervisor(
                self.name, daemons, scope, data=self.data, recorder=recorder,
                max_daemons=config.max_daemons, stopping=state.stopping, metrics=metrics,
                caller=caller).start()
            stack.callback(supervisor.stop)
            if gate is not None:
                gate.add_listener(supervisor.changed)
            if shard is not None:
                shard.member.add_listener(supervisor.changed)
                stack.callback(shard.member.remove_listener, supervisor.changed)
            started.append(supervisor)
        self.triggers.observers[:] = started
        stack.callback(self.triggers.observers.clear)
        return started

    def _recorder(self, limiter: TokenBucketRateLimiter | None
                  ) -> tuple[ControllerRecorder, EventBroadcaster | EventsV1Broadcaster]:
        """``ctx.recorder`` and the broadcaster writing its Events, on the API
        ``events_api`` names; ``limiter``: the Events' own bucket (None: unthrottled)."""
        api_client = self.factory.api_client
        if self.config.events_api == "v1":
            core = EventBroadcaster()
            core.start_recording_to_sink(CoreV1EventSink(api_client, limiter=limiter))
            return ControllerRecorder(core.new_recorder(EventSource(component=self.name))), \
                core
        broadcaster = EventsV1Broadcaster(EventsV1Sink(api_client, limiter=limiter))
        broadcaster.start_recording_to_sink()
        return ControllerRecorder(broadcaster.new_recorder(self.name)), broadcaster

    def _writer(self, api_client: Any) -> Writer:
        """The contexts' writer: writes to the primary resource as the controller, read
        back unless ``read_your_writes_timeout`` is 0 or the cache cannot tell its
        resourceVersion (the ``AtomicFIFO`` gate off: one WARNING)."""
        timeout = self.config.read_your_writes_timeout
        if timeout > 0 and not feature_gates().enabled(ATOMIC_FIFO):
            log_visibly(_log, logging.WARNING, "controller %s: read-your-writes is off: "
                        "with the AtomicFIFO feature gate off the cache does not know its "
                        "resourceVersion", self.name)
            timeout = 0.0
        return Writer(api_client, self.primary.gvr, self.name,
                      WrittenVersions(self.name, timeout, self.clock or REAL_CLOCK))

    def _gates(self) -> tuple[LeadershipGate | None, ShardGate | None]:
        config, state = self.config, self.state
        gate = None if config.leader_election is None else LeadershipGate(
            config.leader_election, self.name, state.stopping.set,
            follow=config.leadership_lost == "follow")
        triggers = self.triggers
        shard = None if config.sharding is None else ShardGate(
            config.sharding, self.name, self.factory.api_client, triggers.primary_refs,
            lambda ref: triggers.trigger(ref, ReconcileReason.custom("shard handed over")),
            gvr=self.primary.gvr, namespace=self.factory.namespace,
            on_lost=state.stopping.set, refresh=self.refresh_caches,
            uid_of=triggers.primary_uid)
        state.shard = shard
        return gate, shard

    def _own_informer(self, stack: contextlib.ExitStack, shard: ShardGate | None) -> None:
        """A label- or server-sharded member lists the primary objects through an
        informer of its own, listing only its share; the factory's unfiltered one is
        dropped unless it runs already."""
        if shard is None or not (shard.by_labels or shard.by_server):
            return
        gvr = self.primary.gvr
        own = self._own_factory = self.factory.filtered(shard.tweak)
        stack.callback(own.shutdown, timeout=5.0)
        informer = own.for_resource(gvr, self.factory.object_type_of(gvr)).informer()
        self.triggers.informer = self.watched[0].informer = informer
        if shard.ranges is not None:
            shard.ranges.watch(informer)
        if not self.factory.discard(gvr):
            log_visibly(_log, logging.WARNING, "controller %s: the factory's %s informer "
                        "runs already: every object stays cached beside this member's "
                        "share", self.name, gvr.label())

    def _start_when_leading(self, gate: LeadershipGate | None,
                            informer_stop: threading.Event) -> bool:
        """A cold standby (``warmup=False``): wait to lead with no informer running
        (ready meanwhile, see :attr:`RunState.standing_by`), then start them; False when
        the run stops first."""
        assert gate is not None
        state = self.state
        _log.info("controller %s: standing by with cold caches until it leads (warmup "
                  "off)", self.name)
        state.standing_by = True
        try:
            if not gate.wait_leading(state.stopping):
                return False
        finally:
            state.standing_by = False
        _log.info("controller %s: leading; starting its informers", self.name)
        self.factory.start(informer_stop)
        return True

    def _start_range(self, shard: ShardGate | None, informer_stop: threading.Event) -> None:
        """A server-sharded member's primary informer starts once the member has read
        the ring, so that its first fill asks for its range, not the whole space; the
        server is asked once whether it applies shard selectors."""
        assert shard is not None and shard.ranges is not None
        assert self._own_factory is not None
        if not shard.wait_ready(self.state.stopping):
            return
        shard.ranges.check_filtering(self.state.stopping)
        self._own_factory.start(informer_stop)

    def _wait(self) -> None:
        self.state.stopping.wait()
        _log.info("controller %s: shutting down; waiting up to %.1f s for %d running "
                  "reconciles", self.name, self.config.shutdown_timeout,
                  self.state.tally.running())

    def _thread(self, target: Callable[..., None], role: str, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True,
                                  name=f"controller-{self.name}-{role}")
        thread.start()
        return thread

    def _signalled(self, signum: int) -> None:
        """SIGINT or SIGTERM, on the relay's thread (the handlers before are back)."""
        _log.info("controller %s: signal %d: shutting down gracefully (again to force)",
                  self.name, signum)
        self.state.stopping.set()

    def _wait_ready(self) -> bool:
        """The readiness gate: every involved cache holds its first complete list (True),
        or the run stops first (False). Past ``cache_sync_timeout``,
        :class:`~client_cache.errors.CacheSyncTimeoutError` names what did not sync."""
        stopping, timeout = self.state.stopping, self.config.cache_sync_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        for watched in self.watched:
            indexer = watched.informer.get_indexer()
            if not isinstance(indexer, ReadyIndexer):
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not indexer.wait_until_ready(timeout=left, stop=stopping):
                if stopping.is_set():
                    return False
                raise CacheSyncTimeoutError(timeout or 0.0, unsynced_details(
                    [w.informer.has_synced for w in self.watched
                     if not w.informer.has_synced()]))
        return not stopping.is_set()

    def refresh_caches(self, stop: threading.Event) -> bool:
        """Have every informer this controller reads re-establish its watch and wait
        until each has a new watch or LIST (True), or ``stop`` (False): what a shard gate
        asks after a lapse, before every key is reconciled again. One not back after
        :data:`REFRESH_WARNING` seconds is named at WARNING; the wait goes on (a key
        reconciled from a cache that missed the outage's changes is what it prevents)."""
        informers = {id(w.informer): w.informer for w in self.watched}.values()
        asked = [(informer, informer.reconnect("the shard member lapsed or was blind"))
                 for informer in informers if callable(getattr(informer, "reconnect", None))]
        for informer, since in asked:
            status = informer.status
            if status.wait_connected(since, stop, REFRESH_WARNING):
                continue
            if stop.is_set():
                return False
            log_visibly(_log, logging.WARNING, "controller %s: the %s watch is not back "
                        "%.0f s after the shard member rejoined; its keys wait for it",
                        self.name, status.resource, REFRESH_WARNING)
            if not status.wait_connected(since, stop):
                return False
        return True

    # -- teardown ----------------------------------------------------------------------------
    def _end_workers(self, workers: list[threading.Thread], caller: LoopCaller | None) -> None:
        """The workers get what is left of the shutdown timeout; then the refs still
        running are the summary's ``unfinished`` and their coroutines are cancelled."""
        for worker in workers:
            worker.join(max(0.0, self._deadline - time.monotonic()))
        self.state.tally.close()
        if caller is not None:  # coroutines, unlike threads, can be cancelled
            caller.close()
            for worker in workers:
                worker.join(1.0)

    def _stop_gate(self, gate: LeadershipGate) -> None:
        gate.stop()
        # following, a lost lease did not end the run
        self.state.tally.summary.lost_leadership = gate.lost and not gate.follows

    def _stop_shard(self, shard: ShardGate) -> None:
        # the workers are joined: leave, handing the keys over
        shard.stop(self._left())
        self.state.tally.summary.lost_shard = shard.lost

    def _flush_events(self, broadcaster: EventBroadcaster | EventsV1Broadcaster) -> None:
        # queued Events are written within what is left of the shutdown timeout (at least
        # a second), not dropped after one
        broadcaster.shutdown(self._left())

    def _stop_informers(self, informer_stop: threading.Event) -> None:
        informer_stop.set()
        self.factory.shutdown(timeout=5.0)


def _join_each(threads: list[threading.Thread], timeout: float) -> None:
    for thread in threads:
        thread.join(timeout)


def _threaded(caller: LoopCaller | None, fn: Callable[..., Any] | None) -> Any:
    """``fn`` as a plain function: an ``async def`` one runs on ``caller``'s loop."""
    if caller is None or fn is None or not is_async_callable(fn):
        return fn
    return caller.wrap(fn)


def identify(api_client: Any, name: str) -> None:
    """Give ``api_client``'s requests the controller's name as their User-Agent, in
    client-go's default shape (``<name>/<version> (<os>/<arch>) client_cache``), unless the
    application set one: the server then records ``name`` as the field manager of its
    writes (it was ``OpenAPI-Generator``, the ``kubernetes`` package's default) and its
    audit log names it."""
    current = str(getattr(api_client, "user_agent", "") or "")
    if current and not current.startswith("OpenAPI-Generator/"):
        return
    agent = re.sub(r"[^A-Za-z0-9._-]+", "-", name.replace("/", ".")).strip("-") or "controller"
    api_client.user_agent = (f"{agent}/v0.0.0 ({platform.system().lower()}/"
                             f"{platform.machine().lower()}) client_cache")

