"""The controller runtime: kube-rs's ``Controller``, threaded, on shared informers.

::

    factory = new_shared_informer_factory(api_client, 0)
    foos = GroupVersionResource("samplecontroller.k8s.io", "v1alpha1", "foos")
    deployments = GroupVersionResource("apps", "v1", "deployments")

    def reconcile(foo, ctx):            # foo: the cached object, read only
        ...                              # ctx.data, ctx.reason, ctx.stopping
        return Action.await_change()     # or Action.requeue(300)

    summary = (Controller(factory, foos)
               .owns(deployments)
               .with_config(ControllerConfig(debounce=0.5, concurrency=2))
               .shutdown_on_signal()
               .run(reconcile, error_policy=None, data=my_clients))

What it does, as kube-rs:

* **Triggers.** Every applied primary object (added, updated, listed again) requests its
  own reconcile (``ObjectUpdated``); deletions do not (an object with a finalizer is
  updated with a deletionTimestamp first, which does). ``owns(child)``: a child's add,
  update or delete requests the reconcile of each owner in its ``ownerReferences`` whose
  apiVersion and kind are the primary's (on an update, the old object's owners too, as
  controller-runtime, so an owner that lost a child hears of it). ``watches(related,
  mapper)``: the mapper turns a related object into refs to reconcile. ``reconcile_on``
  and ``reconcile_all_on`` take external sources.
* **Scheduling** (:class:`~client_cache.runtime.scheduler.Scheduler`): one pending request
  per object, the earliest kept; ``debounce``; an object being reconciled is held and runs
  once more afterwards if triggered meanwhile.
* **Running.** No reconcile starts before every involved cache holds its first complete
  list (the readiness gate, ``wait_until_ready``). At most ``concurrency`` reconciles run
  at once, each on its own worker thread. The default is 1 (controller-runtime's
  ``MaxConcurrentReconciles``): kube-rs's unlimited default suits tasks, not threads, and
  one worker keeps a controller's writes ordered; raise it for slow, independent
  reconciles.
* **Results.** ``Action.requeue(s)`` schedules the object again; ``Action.await_change()``
  waits for a trigger; ``Action.requeue_with_backoff()`` schedules it after its backoff
  delay (controller-runtime's ``Requeue: true``). An exception goes to
  ``error_policy(obj, error, ctx) -> Action``; without one, the retry follows the
  controller's rate limiter (:mod:`client_cache.runtime.retry`: by default per-object
  exponential, 5 ms doubling to 1000 s; ``ControllerConfig.rate_limiter``), reset by the
  next success. A
  :class:`~client_cache.runtime.reconcile.TerminalError` is logged and counted but not
  retried. How each outcome is counted: :mod:`client_cache.runtime.metrics`.
* **Shutdown.** ``shutdown_on_signal()`` (SIGINT/SIGTERM; ``run`` must then be called on the
  main thread; a second signal gets the previous handler, so a second Ctrl-C interrupts),
  ``graceful_shutdown_on(event)``, :meth:`Controller.shutdown`, or the ``stop`` given to
  ``run`` being set: no new reconcile starts, the ones running get ``shutdown_timeout``
  seconds to finish (the refs still running then are reported in the summary; a thread
  cannot be killed), then the informers stop if the controller started them.
* **Async.** ``reconcile`` and ``error_policy`` may be ``async def`` functions: each
  worker thread runs its reconcile on ``ControllerConfig.loop`` (or on a loop the
  controller owns) and waits for it, so concurrency and holding are unchanged and the
  loop is never blocked. At the shutdown deadline the coroutines still running are
  cancelled (a thread could not be).
* **Daemons and timers** (kopf's): ``daemon(fn)`` runs ``fn(obj, ctx)`` on a thread of
  its own per primary object while it exists, stopped on its deletion, at shutdown, at
  a lost lease or key (:mod:`client_cache.runtime.daemons`); ``timer(fn, interval=)``
  calls it per object every ``interval`` seconds, skipped while the object's reconcile
  runs (:mod:`client_cache.runtime._timers`).
* **Informers.** The controller asks ``factory`` for its informers, so controllers on one
  factory share watches. ``run(stop=...)``: the informers run until that event is set (the
  caller owns their lifetime, e.g. to run several controllers); without it, ``run`` makes
  one and sets it at the end.
* **Before the CRD.** The primary resource's kind and scope come from discovery unless
  given. A resource the server does not serve yet (a CRD installed after the controller
  started) is not an error: ``run`` logs one WARNING and waits for it with backoff while
  the informers wait too (not ready meanwhile), then reconciles as soon as it is served,
  as a kube-rs controller retries its watch.
* **Writes.** ``ControllerConfig.client_qps``/``client_burst`` (off by default, as
  controller-runtime's since v0.21; 20/30 was its earlier default) throttle every request
  the factory's API client sends (:func:`~client_cache.util.flowcontrol.throttle_client`);
  Events have a bucket of their own of the same size. Every request on that client is counted in the
  ``rest_client_*`` metrics (:mod:`client_cache.util.rest_metrics`).
* **Events.** ``ctx.recorder`` posts events.k8s.io/v1 Events as the controller
  (repeats folded into series; flushed at shutdown), or core/v1 Events with
  ``ControllerConfig(events_api="v1")`` (client-go's correlator and spam filter); one
  call shape for both (:mod:`~client_cache.runtime.recorder`);
  ``ControllerConfig(events=False)`` leaves it None.
* **Replicas.** ``ControllerConfig(leader_election=LeaderElectionConfig(lock=LeaseLock(...)))``:
  every replica keeps its caches warm (``warmup=False``: a standby starts its informers
  once it leads, as controller-runtime's default), only the leader reconciles; a replica
  that stops leading stops starting reconciles at once and its run ends
  (``RunSummary.lost_leadership``), as controller-runtime's manager exits; with
  ``leadership_lost="follow"`` it follows instead, with warm caches, and leads again
  when it wins the lease (KEP-5366).
  ``ControllerConfig(sharding=ShardingConfig(...))``: every replica caches every object
  and reconciles its share of the keys, or with ``mode="labels"`` caches only the objects
  a sharder labelled for it (:mod:`client_cache.runtime.sharded`: the factory's own
  informer of the primary resource is then dropped if not started, so do not read that
  resource through the factory's lister); ``ctx.shard`` names the replica's shard.

This module is the builder and the controller's face; the rest is in its own modules:
:mod:`~client_cache.runtime._kind` (the primary kind and scope, waiting for a CRD),
:mod:`~client_cache.runtime._triggers` (events and sources to requests),
:mod:`~client_cache.runtime.scheduler`, :mod:`~client_cache.runtime._worker` (take, gate,
reconcile, the outcome, failures), :mod:`~client_cache.runtime.retry` and
:mod:`~client_cache.runtime._lifecycle` (one run's setup and teardown).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, overload

from client_cache.api.schema import GroupVersionResource
from client_cache.codec import WireObject
from client_cache.controller import ResourceEventHandler
from client_cache.index import Indexer
from client_cache.informers.factory import GenericInformer, SharedInformerFactory
from client_cache.reflector_status import InformerHealth
from client_cache.runtime._kind import PrimaryKind
from client_cache.runtime._lifecycle import Run, RunState, Watched
from client_cache.runtime._timers import TimerSpec
from client_cache.runtime._triggers import Mapper, Triggers
from client_cache.runtime.config import ControllerConfig
from client_cache.runtime.daemons import DaemonContext, DaemonSpec
from client_cache.runtime.objectref import controller_owner_ref
from client_cache.runtime.predicates import Predicate
from client_cache.runtime.reconcile import Action, Context, RunSummary
from client_cache.sharding import ShardMember
from client_cache.shared_informer import SharedIndexInformer, wait_for_cache_sync
from client_cache.util.clock import WithTicker
from client_cache.util.stop import on_stop

__all__ = ["Controller", "ControllerConfig", "ErrorPolicy", "Mapper", "Reconciler"]

K = TypeVar("K")
"""The type of the reconciled objects: ``WireObject`` for a ``GroupVersionResource``, the
accessor's type for a typed accessor (``V1Pod`` models, a struct class)."""
D = TypeVar("D")
"""The type of the user's data handed to ``run`` (``ctx.data``)."""
Reconciler = Callable[[K, Context[D]], "Action | Awaitable[Action]"]
"""``reconcile(obj, ctx) -> Action``, a plain or an ``async def`` function:
``Reconciler[V1Pod, MyData]``."""
ErrorPolicy = Callable[[K, BaseException, Context[D]], "Action | Awaitable[Action]"]
"""``error_policy(obj, error, ctx) -> Action``, a plain or an ``async def`` function:
``ErrorPolicy[V1Pod, MyData]``."""



def _predicates(predicates: Iterable[Predicate]) -> tuple[Predicate, ...]:
    """``predicates`` as a tuple, TypeError for anything not a :class:`Predicate`."""
    chosen = tuple(predicates)
    for predicate in chosen:
        if not isinstance(predicate, Predicate):
            raise TypeError(f"expected client_cache.runtime.predicates.Predicate, not "
                            f"{type(predicate).__name__} (build one with changed() or when())")
    return chosen

def _short_name(fn: Any) -> str:
    """A daemon or timer's default name: its function's own name."""
    return str(getattr(fn, "__name__", None) or type(fn).__name__)


class Controller(Generic[K]):
    """See the module documentation (kube-rs ``Controller<K>``). Generic in the type of
    the objects it reconciles: ``Controller(factory, factory.core().v1().pods(models=True))``
    is a ``Controller[V1Pod]``, whose ``run`` takes a ``reconcile(obj: V1Pod, ctx)`` (a
    reconcile written for another type is a type error), ``Controller(factory, Foo)`` of a
    custom resource class (:mod:`client_cache.crd`) a ``Controller[Foo]``, and
    ``Controller(factory, gvr)`` a ``Controller[WireObject]``. The user's data type comes
    from what ``run`` is given (``ctx: Context[MyData]``)."""

    @overload
    def __init__(self: Controller[WireObject], factory: SharedInformerFactory,
                 for_: GroupVersionResource, *, kind: str = "",
                 namespaced: bool | None = None, config: ControllerConfig | None = None,
                 clock: WithTicker | None = None) -> None: ...

    @overload
    def __init__(self, factory: SharedInformerFactory, for_: GenericInformer[K], *,
                 kind: str = "", namespaced: bool | None = None,
                 config: ControllerConfig | None = None,
                 clock: WithTicker | None = None) -> None: ...

    @overload
    def __init__(self, factory: SharedInformerFactory, for_: type[K], *,
                 kind: str = "", namespaced: bool | None = None,
                 config: ControllerConfig | None = None,
                 clock: WithTicker | None = None) -> None: ...

    def __init__(self, factory: SharedInformerFactory,
                 for_: GroupVersionResource | GenericInformer[Any] | type[Any], *,
                 kind: str = "", namespaced: bool | None = None,
                 config: ControllerConfig | None = None,
                 clock: WithTicker | None = None) -> None:
        declared = getattr(for_, "__custom_resource__", None)
        if declared is not None:  # a class of client_cache.crd: its kind and scope given
            kind = kind or declared.kind
            namespaced = declared.namespaced if namespaced is None else namespaced
        self._factory = factory
        gvr, informer = self._informer_of(for_)
        self._primary = PrimaryKind(gvr, kind, namespaced)
        self._clock = clock
        self._config = config or ControllerConfig()
        self._triggers = Triggers(lambda: self.name, self._primary)
        self._triggers.informer = informer
        self._watched = [Watched(informer, self._triggers.primary_handler())]
        self._sources: list[tuple[Any, bool]] = []
        self._background: list[DaemonSpec | TimerSpec] = []
        self._shutdown_events: list[threading.Event] = []
        self._on_signal = False
        self._state = RunState()

    # -- what it reconciles ------------------------------------------------------------------
    @property
    def kind(self) -> str:
        """The primary resource's kind ("" until discovery settles it)."""
        return self._primary.kind

    @property
    def namespaced(self) -> bool:
        """Whether the primary resource is namespaced."""
        return self._primary.namespaced

    @property
    def api_version(self) -> str:
        """The primary resource's apiVersion (``group/version``, or ``v1``)."""
        return self._primary.api_version

    @property
    def name(self) -> str:
        """The controller's name in thread names, logs and metrics."""
        return self._config.name or self._primary.gvr.label()

    # -- building ----------------------------------------------------------------------------
    def _informer_of(self, what: GroupVersionResource | GenericInformer[Any] | type[Any],
                     ) -> tuple[GroupVersionResource, SharedIndexInformer[Any]]:
        if isinstance(what, type):  # a custom resource class (client_cache.crd)
            what = self._factory.for_resource(what)
        if isinstance(what, GenericInformer):
            return what.resource, what.informer()
        if isinstance(what, GroupVersionResource):
            return what, self._factory.for_resource(what).informer()
        raise TypeError(f"expected a GroupVersionResource or a typed accessor's informer, "
                        f"not {type(what).__name__}")

    def _watch(self, informer: SharedIndexInformer[Any],
               handler: ResourceEventHandler[Any]) -> None:
        self._watched.append(Watched(informer, handler))

    def with_config(self, config: ControllerConfig) -> Controller[K]:
        """Use ``config`` (kube-rs ``with_config``)."""
        self._config = config
        return self

    def owns(self, child: GroupVersionResource | GenericInformer[Any], *,
             predicates: Iterable[Predicate] = ()) -> Controller[K]:
        """Reconcile the owners of changed ``child`` objects (kube-rs ``owns``), for the
        events that pass every one of ``predicates`` (controller-runtime
        ``Owns(..., WithPredicates(...))``)."""
        chosen = _predicates(predicates)
        _, informer = self._informer_of(child)
        self._watch(informer, self._triggers.owner_handler(chosen))
        return self

    def watches(self, related: GroupVersionResource | GenericInformer[Any],
                mapper: Mapper, *, predicates: Iterable[Predicate] = ()) -> Controller[K]:
        """Reconcile the refs ``mapper`` returns for each changed ``related`` object (kube-rs
        ``watches``) that passes every one of ``predicates``; a ref without kind means the
        primary kind."""
        chosen = _predicates(predicates)
        _, informer = self._informer_of(related)
        self._watch(informer, self._triggers.mapper_handler(mapper, chosen))
        return self

    def filter(self, *predicates: Predicate) -> Controller[K]:
        """Request a primary object's reconcile only for the events that pass every one of
        ``predicates`` (:mod:`client_cache.runtime.predicates`; kube-rs
        ``predicate_filter``, controller-runtime ``For(..., WithPredicates(...))``).
        ``Controller(...).filter(predicates.generation)`` ignores status writes."""
        self._triggers.primary_predicates.extend(_predicates(predicates))
        return self

    def event_filter(self, *predicates: Predicate) -> Controller[K]:
        """Filter the events of every informer of the controller, the primary one and
        those of ``owns`` and ``watches``, through ``predicates`` (controller-runtime
        ``WithEventFilter``)."""
        self._triggers.event_filters.extend(_predicates(predicates))
        return self

    def reconcile_on(self, source: queue.Queue[Any] | Iterable[Any]) -> Controller[K]:
        """Reconcile each :class:`ObjectRef` (reason ``UNKNOWN``) or
        :class:`ReconcileRequest` that ``source`` yields (kube-rs ``reconcile_on``). A
        ``queue.Queue`` is read until shutdown (the controller puts a wake-up marker in it
        then); another iterable until it ends, so a blocking one should be a Queue."""
        self._sources.append((source, False))
        return self

    def reconcile_all_on(self, source: queue.Queue[Any] | Iterable[Any]) -> Controller[K]:
        """Reconcile every cached primary object each time ``source`` yields (kube-rs
        ``reconcile_all_on``; reason ``BULK_RECONCILE``)."""
        self._sources.append((source, True))
        return self

    def daemon(self, fn: Callable[[K, DaemonContext[Any]], Awaitable[None] | None], *,
               name: str = "", initial_delay: float = 0.0, backoff: float = 1.0,
               max_backoff: float = 300.0) -> Controller[K]:
        """Run ``fn(obj, ctx)`` for every primary object while it exists, on a thread of
        its own (kopf ``@kopf.daemon``): started once the workers start, after
        ``initial_delay`` seconds; ``ctx.stopping`` set when the object is marked for
        deletion or deleted, the run stops, the lease or the shard's key is lost; started
        again after ``backoff`` seconds (doubling to ``max_backoff``) when it raises, not
        when it returns. ``async def`` functions run on the controller's loop. ``name``
        (default: the function's) names it in logs. See
        :mod:`client_cache.runtime.daemons`."""
        self._background.append(DaemonSpec(fn, name or _short_name(fn), initial_delay,
                                           backoff, max_backoff))
        return self

    def timer(self, fn: Callable[[K, DaemonContext[Any]], Awaitable[None] | None], *,
              interval: float, name: str = "", initial_delay: float = 0.0,
              jitter: float = 0.0) -> Controller[K]:
        """Call ``fn(obj, ctx)`` for every primary object every ``interval`` seconds
        while it exists (kopf ``@kopf.timer``): the first ``initial_delay`` seconds after
        the workers start or the object is added, each next one ``interval`` (plus up to
        ``jitter`` times it, at random) after the last ended; skipped while a reconcile
        of the object runs. See :mod:`client_cache.runtime._timers`."""
        self._background.append(TimerSpec(fn, name or _short_name(fn), interval,
                                          initial_delay, jitter))
        return self

    def shutdown_on_signal(self) -> Controller[K]:
        """Shut down gracefully on the first SIGINT or SIGTERM (kube-rs
        ``shutdown_on_signal``). ``run`` must then be called on the main thread: it
        relays the signal through the interpreter's wakeup file descriptor to a thread of
        its own (:class:`client_cache.util.signals.SignalRelay`), so a signal the OS hands
        to any thread is seen, and the handler itself takes no lock. The handlers and the
        descriptor before are put back when ``run`` returns."""
        self._on_signal = True
        return self

    def graceful_shutdown_on(self, event: threading.Event) -> Controller[K]:
        """Shut down gracefully when ``event`` is set (kube-rs ``graceful_shutdown_on``)."""
        self._shutdown_events.append(event)
        return self

    # -- while it runs -----------------------------------------------------------------------
    def shutdown(self) -> None:
        """Begin a graceful shutdown now (from any thread)."""
        self._state.stopping.set()

    def pending(self) -> int:
        """Requests scheduled and not yet started (due or not), held ones included."""
        scheduler = self._state.scheduler
        return 0 if scheduler is None else len(scheduler)

    def owner_ref(self, owner: Any, *,
                  block_owner_deletion: bool | None = True) -> dict[str, Any]:
        """The controller owner reference that makes ``owner`` (an object this controller
        reconciles, as its cache holds it: a LIST item without kind or apiVersion) the
        controller of a child, with this controller's kind and apiVersion filled in
        (:func:`~client_cache.runtime.objectref.controller_owner_ref` says which shape
        ``block_owner_deletion`` gives and what permission ``True`` needs; kube-rs
        ``Resource::controller_owner_ref``)."""
        return controller_owner_ref(owner, self.kind, self.api_version, block_owner_deletion)

    def health(self) -> dict[str, InformerHealth]:
        """The health of every informer the controller reads (the primary resource first,
        then those of ``owns``/``watches``), by resource as people write it (see
        :meth:`~client_cache.shared_informer.SharedIndexInformer.health`); for a probe,
        :func:`client_cache.health.informers_check` takes anything with ``health()``."""
        out: dict[str, InformerHealth] = {}
        for informer in self._informers():
            health = informer.health()
            out.setdefault(health.resource, health)
        return out

    def store(self) -> Indexer:
        """The cache of primary objects the reconciles read (kube-rs
        ``Controller::store``): the factory's informer's, or, in a label- or
        server-sharded run (once it has begun), the member's own, holding its share."""
        return self._watched[0].informer.get_indexer()

    def _informers(self) -> list[Any]:
        """Every informer this controller reads, the primary one first, each once (a
        watched resource may share the primary's informer)."""
        return list({id(w.informer): w.informer for w in self._watched}.values())

    def ready(self) -> str | None:
        """None when this controller is ready to serve (a readiness probe's check:
        :func:`client_cache.health.serve` takes ``controller=``), else why not: not
        running; an informer it reads not started or not synced; a sharded member whose
        membership is not ready (its Lease not held, the ring not read since its last
        change, its view of the ring not live). A leader-elected replica that does not
        lead is ready once its caches are synced, as controller-runtime's standby
        replicas are (a Deployment's rollout waits on readiness: requiring the lease
        would leave every standby unready); the leader's own lease is the elector's
        liveness check. A cold standby (``ControllerConfig(warmup=False)``), whose
        informers start when it leads, is ready while it stands by."""
        state = self._state
        if not state.active or state.stopping.is_set():
            return "not running"
        if state.standing_by:
            return None
        waiting = [h.resource for h in self.health().values() if not h.synced]
        if waiting:
            return f"caches not synced: {', '.join(waiting)}"
        shard = state.shard
        if shard is not None and not shard.member.ready():
            return f"shard member {shard.member.identity} not ready (its Lease not held or " \
                   "the ring not read yet)"
        return None

    @property
    def shard_member(self) -> ShardMember | None:
        """The ring membership of the current (or last) run of a sharded controller
        (:class:`~client_cache.sharding.ShardMember`: its members, health ``check``),
        None before ``run`` or without ``ControllerConfig.sharding``."""
        shard = self._state.shard
        return None if shard is None else shard.member

    def summary(self) -> RunSummary:
        """A copy of the counts of the current (or last) run so far."""
        return self._state.tally.snapshot()

    # -- running -----------------------------------------------------------------------------
    @contextmanager
    def running(self, reconcile: Reconciler[K, D],
                error_policy: ErrorPolicy[K, D] | None = None,
                data: D = None,  # type: ignore[assignment]
                *, timeout: float | None = 60.0) -> Iterator[Controller[K]]:
        """:meth:`run` on a thread of its own (``controller-<name>``) for the length of a
        with-block, which starts once every informer the controller reads has synced;
        at its end, a graceful :meth:`shutdown` and a join (a port addition; the counts
        are in :meth:`summary`). A sync slower than ``timeout`` (None: no limit) raises
        :class:`~client_cache.errors.CacheSyncTimeoutError` naming what did not sync. When
        the run itself fails (its own ``cache_sync_timeout``, a resource the server does
        not serve), its exception is raised here: at once when it fails before the block
        starts, at the block's end when it fails during it."""
        state = self._state
        failed: list[BaseException] = []
        ended = threading.Event()

        def run() -> None:
            try:
                self.run(reconcile, error_policy, data)
            except BaseException as err:  # raised in the caller's thread instead
                failed.append(err)
            finally:
                ended.set()
                state.prepared.set()  # a run that failed early must not leave us waiting

        thread = threading.Thread(target=run, name=f"controller-{self.name}", daemon=True)
        state.prepared.clear()
        thread.start()
        try:
            # run() settles which informer serves the primary objects (a label-sharded
            # controller lists them through one of its own) before anything syncs
            wake = on_stop(state.stopping, state.prepared.set)
            try:
                state.prepared.wait()
            finally:
                wake.cancel()
            if not wait_for_cache_sync(state.stopping,
                                       *(i.has_synced for i in self._informers()),
                                       timeout=timeout):
                # stopped before the caches synced: a failing run sets the stop in its
                # teardown, and its exception follows when it has ended
                ended.wait(self._config.shutdown_timeout + 5.0)
                if failed:
                    raise failed[0]
            yield self
        finally:
            self.shutdown()
            thread.join(self._config.shutdown_timeout + 5.0)
        if failed:
            raise failed[0]

    def run(self, reconcile: Reconciler[K, D],
            error_policy: ErrorPolicy[K, D] | None = None,
            data: D = None,  # type: ignore[assignment]
            *, stop: threading.Event | None = None) -> RunSummary:
        """Run until shut down (see the module documentation); returns what it did
        (:class:`~client_cache.runtime._lifecycle.Run` does it)."""
        return Run(self.name, self._factory, self._config, self._primary, self._triggers,
                   self._watched, self._sources, self._background, self._shutdown_events,
                   self._on_signal,
                   self._clock, self._state, reconcile, error_policy, data, stop).run()
