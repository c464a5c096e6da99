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
  per-object exponential backoff of client-go's default controller rate limiter (5 ms
  doubling to 1000 s), reset by the next success. A
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
* **Events.** ``ctx.recorder`` posts core/v1 Events as the controller (client-go's
  correlator and spam filter; flushed at shutdown); ``ControllerConfig(events=False)``
  leaves it None.
* **Replicas.** ``ControllerConfig(leader_election=LeaderElectionConfig(lock=LeaseLock(...)))``:
  every replica keeps its caches warm, only the leader reconciles; a replica that stops
  leading stops starting reconciles at once and its run ends
  (``RunSummary.lost_leadership``), as controller-runtime's manager exits.
  ``ControllerConfig(sharding=ShardingConfig(...))``: every replica caches every object
  and reconciles its share of the keys, or with ``mode="labels"`` caches only the objects
  a sharder labelled for it (:mod:`client_cache.runtime.sharded`: the factory's own
  informer of the primary resource is then dropped if not started, so do not read that
  resource through the factory's lister); ``ctx.shard`` names the replica's shard.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import platform
import queue
import re
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any, Generic, TypeVar, overload

from client_cache.aio.bridge import LoopCaller, is_async_callable
from client_cache.api import meta
from client_cache.api.schema import GroupVersionResource
from client_cache.client.discovery import DISCOVERY_TIMEOUT, discover
from client_cache.codec import WireObject
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.errors import StopRequestedError, describe_error, find_api_error
from client_cache.index import ReadyIndexer
from client_cache.informers.accessors import builtin_group, builtin_kind
from client_cache.informers.factory import (
    GenericInformer,
    SharedInformerFactory,
    UnknownResourceError,
)
from client_cache.record import CoreV1EventSink, EventBroadcaster, EventRecorder, EventSource
from client_cache.reflector_status import InformerHealth
from client_cache.runtime.config import ControllerConfig
from client_cache.runtime.leading import LeadershipGate
from client_cache.runtime.metrics import ControllerMetrics
from client_cache.runtime.objectref import ObjectRef, controller_owner_ref, object_ref
from client_cache.runtime.reconcile import (
    Action,
    Context,
    ReconcileReason,
    ReconcileRequest,
    RunSummary,
    TerminalError,
    is_panic,
)
from client_cache.runtime.scheduler import Scheduler
from client_cache.runtime.sharded import ShardGate
from client_cache.sharding import ShardMember
from client_cache.shared_informer import (
    ResourceEventHandlerRegistration,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from client_cache.store import DeletedFinalStateUnknown
from client_cache.util.clock import WithTicker
from client_cache.util.flowcontrol import TokenBucketRateLimiter, throttle_client
from client_cache.util.logs import FailureEpisodes, log_visibly
from client_cache.util.rest_metrics import instrument_client
from client_cache.util.signals import SignalWaker
from client_cache.util.stop import on_stop

__all__ = ["Controller", "ControllerConfig", "ErrorPolicy", "Mapper", "Reconciler"]

_log = logging.getLogger(__name__)

REFRESH_WARNING = 10.0
"""Seconds after which a cache whose watch a shard member's rejoin re-establishes and
that is not back yet is named at WARNING (see ``Controller._refresh_caches``)."""

K = TypeVar("K")
"""The type of the reconciled objects: ``WireObject`` for a ``GroupVersionResource``, the
accessor's type for a typed accessor (``V1Pod`` models, a struct class)."""
D = TypeVar("D")
"""The type of the user's data handed to ``run`` (``ctx.data``)."""
Mapper = Callable[[Any], "ObjectRef | Iterable[ObjectRef] | None"]
"""``watches``' function: a related object -> the refs to reconcile (or None)."""
Reconciler = Callable[[K, Context[D]], "Action | Awaitable[Action]"]
"""``reconcile(obj, ctx) -> Action``, a plain or an ``async def`` function:
``Reconciler[V1Pod, MyData]``."""
ErrorPolicy = Callable[[K, BaseException, Context[D]], "Action | Awaitable[Action]"]
"""``error_policy(obj, error, ctx) -> Action``, a plain or an ``async def`` function:
``ErrorPolicy[V1Pod, MyData]``."""


@dataclass
class _Watched:
    informer: SharedIndexInformer[Any]
    handler: ResourceEventHandlerFuncs[Any]


def _unwrap(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


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
        self._gvr, self._informer = self._informer_of(for_)
        self.api_version = self._gvr.group_version()
        self._given = (kind, namespaced)
        self.kind = kind
        self.namespaced = True if namespaced is None else namespaced
        # the kind and scope of a built-in resource come from the generated tables; any
        # other's from discovery when run() starts (building never asks the server),
        # waiting there for a resource not served yet (its CRD installed later)
        self._kind_pending = not kind or namespaced is None
        if self._kind_pending:
            known = builtin_kind(self._gvr.group, self._gvr.version, self._gvr.resource)
            if known is not None:
                self._set_kind(known)
        self._clock = clock
        self._config = config or ControllerConfig()
        self._watched: list[_Watched] = []
        self._sources: list[tuple[Any, bool]] = []
        self._shutdown_events: list[threading.Event] = []
        self._on_signal = False
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._summary = RunSummary()
        # objects whose reconciles are failing: when the last ERROR line about each was
        # written and how many failures followed it (an episode ends at a success)
        self._failing = FailureEpisodes()
        self._running: set[ObjectRef] = set()
        self._scheduler: Scheduler | None = None
        self._shard: ShardGate | None = None
        self._run_active = False  # run() between its setup and its end
        self._prepared = threading.Event()  # run() has chosen its informers
        self._watch(self._informer, ResourceEventHandlerFuncs(
            add_func=self._primary_applied,
            update_func=lambda old, new: self._primary_applied(new),
            delete_func=self._primary_deleted))

    def _resolve_kind(self) -> bool:
        """Read the primary resource's kind and scope by discovery (those given to the
        constructor win), bounded by
        :data:`~client_cache.client.discovery.DISCOVERY_TIMEOUT` and abandoned at once by a
        shutdown; False when the server does not serve it (yet). A plural that a served
        built-in group version does not have (``configmap`` for ``configmaps``) raises
        :class:`~client_cache.informers.factory.UnknownResourceError` naming the ones it
        does serve: no CustomResourceDefinition can add it, so waiting would be forever."""
        gvr = self._gvr
        resources = discover(self._factory.api_client, gvr.group, gvr.version,
                             timeout=DISCOVERY_TIMEOUT, stop=self._stopping)
        for r in resources:
            if r.get("name") == gvr.resource:
                self._set_kind((str(r.get("kind", "")), bool(r.get("namespaced", True))))
                return True
        if resources and builtin_group(gvr.group):
            raise UnknownResourceError(gvr, [str(r.get("name")) for r in resources
                                             if "/" not in str(r.get("name", "/"))])
        return False

    def _set_kind(self, found: tuple[str, bool]) -> None:
        kind, namespaced = self._given
        self.kind = kind or found[0]
        self.namespaced = found[1] if namespaced is None else namespaced
        self._kind_pending = False

    def _await_served(self) -> None:
        """Wait, with backoff (0.2 s doubling to 5 s, woken by a shutdown), until the
        server serves the primary resource, as kube-rs's controller retries a watch whose
        resource is missing; one WARNING when it starts waiting, one INFO when it ends.
        The informers run meanwhile (and are not ready), so the first reconciles start as
        soon as the resource is served and listed."""
        delay, waited = 0.2, False
        while not self._stopping.is_set():
            try:
                if self._resolve_kind():
                    if waited:
                        _log.info("controller %s: %s is served now", self.name,
                                  self._gvr.label())
                    return
                reason = "not served"
            except UnknownResourceError:
                raise
            except StopRequestedError:
                return
            except Exception as err:  # unreachable: waited for in the same way
                reason = describe_error(err)
            if not waited:
                log_visibly(_log, logging.WARNING, "controller %s: waiting for the server to "
                            "serve %s (%s; is its CustomResourceDefinition installed?); not "
                            "ready meanwhile", self.name, self._gvr.label(), reason)
                waited = True
            self._stopping.wait(delay)
            delay = min(delay * 2, 5.0)

    # -- building ---------------------------------------------------------------------------
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
               handler: ResourceEventHandlerFuncs[Any]) -> None:
        self._watched.append(_Watched(informer, handler))

    @property
    def name(self) -> str:
        """The controller's name in thread names, logs and metrics."""
        return self._config.name or self._gvr.label()

    def with_config(self, config: ControllerConfig) -> Controller[K]:
        """Use ``config`` (kube-rs ``with_config``)."""
        self._config = config
        return self

    def owns(self, child: GroupVersionResource | GenericInformer[Any]) -> Controller[K]:
        """Reconcile the owners of changed ``child`` objects (kube-rs ``owns``)."""
        _, informer = self._informer_of(child)

        def changed(*objs: Any) -> None:
            owners: dict[ObjectRef, ObjectRef] = {}
            for changed_obj in objs:
                obj = _unwrap(changed_obj)
                try:
                    md = meta.accessor(obj)
                    refs = md.owner_references
                except Exception:  # an unreadable child owns nothing
                    continue
                for ref in refs:
                    if ref.kind == self.kind and ref.api_version == self.api_version:
                        owner = ObjectRef(ref.name, md.namespace if self.namespaced else "",
                                          self.kind, self.api_version, ref.uid)
                        owners[owner] = object_ref(obj)
            for owner, related in owners.items():
                self._trigger(owner, ReconcileReason.related_object_updated(related))

        self._watch(informer, ResourceEventHandlerFuncs(
            add_func=changed, update_func=changed, delete_func=changed))
        return self

    def watches(self, related: GroupVersionResource | GenericInformer[Any],
                mapper: Mapper) -> Controller[K]:
        """Reconcile the refs ``mapper`` returns for each changed ``related`` object (kube-rs
        ``watches``); a ref without kind means the primary kind."""
        _, informer = self._informer_of(related)

        def changed(obj: Any) -> None:
            obj = _unwrap(obj)
            try:
                refs = mapper(obj)
            except Exception:
                _log.exception("controller %s: the mapper failed on %s", self.name,
                               meta.describe(obj))
                return
            if refs is None:
                return
            reason = ReconcileReason.related_object_updated(object_ref(obj))
            for ref in [refs] if isinstance(refs, ObjectRef) else refs:
                self._trigger(ref, reason)

        self._watch(informer, ResourceEventHandlerFuncs(
            add_func=changed, update_func=lambda old, new: changed(new),
            delete_func=changed))
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

    def shutdown_on_signal(self) -> Controller[K]:
        """Shut down gracefully on SIGINT or SIGTERM (kube-rs ``shutdown_on_signal``).
        ``run`` then waits on the main thread through the interpreter's signal wakeup
        file descriptor (:class:`client_cache.util.signals.SignalWaker`), so a signal the
        OS hands to any thread wakes it; the descriptor before is put back when ``run``
        returns."""
        self._on_signal = True
        return self

    def graceful_shutdown_on(self, event: threading.Event) -> Controller[K]:
        """Shut down gracefully when ``event`` is set (kube-rs ``graceful_shutdown_on``)."""
        self._shutdown_events.append(event)
        return self

    def shutdown(self) -> None:
        """Begin a graceful shutdown now (from any thread)."""
        self._stopping.set()

    def pending(self) -> int:
        """Requests scheduled and not yet started (due or not), held ones included."""
        scheduler = self._scheduler
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

    def _informers(self) -> list[Any]:
        """Every informer this controller reads, the primary one first, each once (a
        watched resource may share the primary's informer)."""
        return list({id(i): i for i in
                     [self._informer, *(w.informer for w in self._watched)]}.values())

    def ready(self) -> str | None:
        """None when this controller is ready to serve (a readiness probe's check:
        :func:`client_cache.health.serve` takes ``controller=``), else why not: not
        running; an informer it reads not started or not synced; a sharded member whose
        membership is not ready (its Lease not held, the ring not read since its last
        change, its view of the ring not live). A leader-elected replica that does not
        lead is ready once its caches are synced, as controller-runtime's standby
        replicas are (a Deployment's rollout waits on readiness: requiring the lease
        would leave every standby unready); the leader's own lease is the elector's
        liveness check."""
        if not self._run_active or self._stopping.is_set():
            return "not running"
        waiting = [h.resource for h in self.health().values() if not h.synced]
        if waiting:
            return f"caches not synced: {', '.join(waiting)}"
        shard = self._shard
        if shard is not None and not shard.member.ready():
            return f"shard member {shard.member.identity} not ready (its Lease not held or " \
                   "the ring not read yet)"
        return None

    @property
    def shard_member(self) -> ShardMember | None:
        """The ring membership of the current (or last) run of a sharded controller
        (:class:`~client_cache.sharding.ShardMember`: its members, health ``check``),
        None before ``run`` or without ``ControllerConfig.sharding``."""
        shard = self._shard
        return None if shard is None else shard.member

    def summary(self) -> RunSummary:
        """A copy of the counts of the current (or last) run so far."""
        with self._lock:
            return dataclasses.replace(self._summary,
                                       unfinished=list(self._summary.unfinished))

    # -- triggers ---------------------------------------------------------------------------
    def _primary_applied(self, obj: Any, is_in_initial_list: bool = False) -> None:
        shard = self._shard
        if shard is not None and shard.by_labels and shard.observe(obj):
            return  # asked to drain: let go, not reconciled here any more
        self._trigger(object_ref(obj, self.kind, self.api_version),
                      ReconcileReason.object_updated())

    def _trigger(self, ref: ObjectRef, reason: ReconcileReason) -> None:
        if not ref.kind:
            ref = ObjectRef(ref.name, ref.namespace, self.kind, self.api_version, ref.uid)
        elif ref.kind != self.kind or (ref.api_version or self.api_version) != self.api_version:
            _log.warning("controller %s: ignoring a request for %s, not a %s", self.name,
                         ref, self.kind)
            return
        elif not ref.api_version:
            ref = ObjectRef(ref.name, ref.namespace, ref.kind, self.api_version, ref.uid)
        scheduler = self._scheduler
        if scheduler is not None:
            scheduler.schedule(ref, reason)

    def _primary_deleted(self, obj: Any) -> None:
        shard = self._shard
        if shard is not None and shard.by_labels:
            shard.forget(obj)

    def _primary_refs(self) -> list[ObjectRef]:
        return [object_ref(obj, self.kind, self.api_version)
                for obj in self._informer.get_indexer().list()]

    def _trigger_all(self) -> None:
        for obj in self._informer.get_indexer().list():
            self._trigger(object_ref(obj, self.kind, self.api_version),
                          ReconcileReason.bulk_reconcile())

    def _pump(self, source: Any, bulk: bool) -> None:
        def handle(item: Any) -> None:
            if bulk:
                self._trigger_all()
            elif isinstance(item, ReconcileRequest):
                self._trigger(item.obj_ref, item.reason)
            elif isinstance(item, ObjectRef):
                self._trigger(item, ReconcileReason.unknown())
            else:
                _log.error("controller %s: a reconcile_on source yielded a %s, not an "
                           "ObjectRef or ReconcileRequest", self.name, type(item).__name__)

        if isinstance(source, queue.Queue):
            while not self._stopping.is_set():
                item = source.get()
                if item is _WAKE or self._stopping.is_set():
                    return
                handle(item)
            return
        for item in source:
            if self._stopping.is_set():
                return
            handle(item)

    @contextmanager
    def running(self, reconcile: Reconciler[K, D],
                error_policy: ErrorPolicy[K, D] | None = None,
                data: D = None,  # type: ignore[assignment]
                *, timeout: float | None = 60.0) -> Iterator[Controller[K]]:
        """:meth:`run` on a thread of its own (``controller-<name>``) for the length of a
        with-block, which starts once every informer the controller reads has synced;
        at its end, a graceful :meth:`shutdown` and a join (a port addition; the counts
        are in :meth:`summary`). A sync slower than ``timeout`` (None: no limit) raises
        :class:`~client_cache.errors.CacheSyncTimeoutError` naming what did not sync."""
        def run() -> None:
            try:
                self.run(reconcile, error_policy, data)
            finally:
                self._prepared.set()  # a run that failed early must not leave us waiting

        thread = threading.Thread(target=run, name=f"controller-{self.name}", daemon=True)
        self._prepared.clear()
        thread.start()
        try:
            # run() settles which informer serves the primary objects (a label-sharded
            # controller lists them through one of its own) before anything syncs
            wake = on_stop(self._stopping, self._prepared.set)
            try:
                self._prepared.wait()
            finally:
                wake.cancel()
            wait_for_cache_sync(self._stopping, *(i.has_synced for i in self._informers()),
                                timeout=timeout)
            yield self
        finally:
            self.shutdown()
            thread.join(self._config.shutdown_timeout + 5.0)

    # -- running ----------------------------------------------------------------------------
    def run(self, reconcile: Reconciler[K, D],
            error_policy: ErrorPolicy[K, D] | None = None,
            data: D = None,  # type: ignore[assignment]
            *, stop: threading.Event | None = None) -> RunSummary:
        """Run until shut down (see the module documentation); returns what it did."""
        if self._on_signal and threading.current_thread() is not threading.main_thread():
            raise RuntimeError("shutdown_on_signal() needs run() on the main thread")
        config = self._config
        events_limiter = None
        if config.client_qps > 0:
            throttle_client(self._factory.api_client,
                            TokenBucketRateLimiter(config.client_qps, config.client_burst))
            events_limiter = TokenBucketRateLimiter(config.client_qps, config.client_burst)
        instrument_client(self._factory.api_client)
        identify(self._factory.api_client, self.name)
        self._stopping.clear()
        self._run_active = True
        self._summary = RunSummary()
        gate = None if config.leader_election is None else LeadershipGate(
            config.leader_election, self.name, self._stopping.set)
        shard = None if config.sharding is None else ShardGate(
            config.sharding, self.name, self._factory.api_client, self._primary_refs,
            lambda ref: self._trigger(ref, ReconcileReason.custom("shard handed over")),
            gvr=self._gvr, namespace=self._factory.namespace, on_lost=self._stopping.set,
            refresh=self._refresh_caches)
        self._shard = shard
        own_factory = None
        if shard is not None and shard.by_labels:
            # the primary objects come from an informer listing only this member's; the
            # factory's unfiltered one is dropped unless it already runs
            own_factory = self._factory.filtered(shard.tweak)
            self._informer = own_factory.for_resource(
                self._gvr, self._factory.object_type_of(self._gvr)).informer()
            self._watched[0].informer = self._informer
            if not self._factory.discard(self._gvr):
                log_visibly(_log, logging.WARNING, "controller %s: the factory's %s informer "
                            "runs already: every object stays cached beside this member's "
                            "share", self.name, self._gvr.label())
        self._prepared.set()
        broadcaster = recorder = None
        if config.events:
            broadcaster = EventBroadcaster()
            broadcaster.start_recording_to_sink(
                CoreV1EventSink(self._factory.api_client, limiter=events_limiter))
            recorder = broadcaster.new_recorder(EventSource(component=self.name))
        metrics = ControllerMetrics(self.name, config.concurrency)
        self._scheduler = Scheduler(self.name, config.debounce, clock=self._clock,
                                    metrics_provider=metrics.queue_provider)
        caller = None
        if is_async_callable(reconcile) or is_async_callable(error_policy):
            caller = LoopCaller(config.loop, name=f"controller-{self.name}-loop")
        sync_reconcile, sync_policy = _threaded(caller, reconcile), _threaded(caller, error_policy)
        registrations: list[tuple[SharedIndexInformer[Any], ResourceEventHandlerRegistration]] = []
        hooks = [on_stop(event, self._stopping.set) for event in self._shutdown_events]
        informer_stop = stop if stop is not None else threading.Event()
        if stop is not None:
            hooks.append(on_stop(stop, self._stopping.set))
        previous = self._install_signals() if self._on_signal else {}
        waker: SignalWaker | None = None
        workers: list[threading.Thread] = []
        pumps: list[threading.Thread] = []
        try:
            if self._on_signal:  # woken whichever thread the OS hands a signal to
                waker = SignalWaker().start()
            if self._kind_pending:
                # the informers start (they wait for the resource too, not ready); the
                # handlers are added once the kind is known, and get the cache replayed
                self._factory.start(informer_stop)
                self._await_served()
            for watched in self._watched:
                registrations.append((watched.informer,
                                      watched.informer.add_event_handler(watched.handler)))
            self._factory.start(informer_stop)
            if own_factory is not None:
                own_factory.start(informer_stop)
            if gate is not None:
                gate.start()
            if shard is not None:
                shard.start()
            for i, (source, bulk) in enumerate(self._sources):
                if isinstance(source, queue.Queue):
                    hooks.append(on_stop(self._stopping, _waker(source)))
                pumps.append(self._thread(self._pump, f"source-{i}", source, bulk))
            _log.info("controller %s: waiting for %d caches to sync", self.name,
                      len(self._watched))
            if self._wait_ready() and (gate is None or gate.wait_leading(self._stopping)) \
                    and (shard is None or shard.wait_ready(self._stopping)):
                if shard is not None:
                    shard.synced()
                _log.info("controller %s: caches synced%s; starting %d workers", self.name,
                          "" if gate is None else " and leading", config.concurrency)
                workers = [self._thread(self._work, f"worker-{i}", sync_reconcile,
                                        sync_policy, data, recorder, metrics, gate, shard)
                           for i in range(config.concurrency)]
            if waker is not None:
                waker.wait(self._stopping)
            else:
                self._stopping.wait()
            _log.info("controller %s: shutting down; waiting up to %.1f s for %d running "
                      "reconciles", self.name, config.shutdown_timeout, len(self._running))
        finally:
            self._stopping.set()
            self._run_active = False
            self._scheduler.shut_down()
            deadline = time.monotonic() + config.shutdown_timeout
            for worker in workers:
                worker.join(max(0.0, deadline - time.monotonic()))
            with self._lock:
                self._summary.unfinished = sorted(self._running, key=str)
            if caller is not None:  # coroutines, unlike threads, can be cancelled
                caller.close()
                for worker in workers:
                    worker.join(1.0)
            if gate is not None:
                gate.stop()
                self._summary.lost_leadership = gate.lost
            if shard is not None:  # the workers are joined: leave, handing the keys over
                shard.stop(max(1.0, deadline - time.monotonic()))
                self._summary.lost_shard = shard.lost
            if broadcaster is not None:
                # queued Events are written within what is left of the shutdown timeout
                # (at least a second), not dropped after one
                broadcaster.shutdown(max(1.0, deadline - time.monotonic()))
            for informer, registration in registrations:
                informer.remove_event_handler(registration)
            for hook in hooks:
                hook.cancel()
            for pump in pumps:
                pump.join(1.0)
            if stop is None:
                informer_stop.set()
                self._factory.shutdown(timeout=5.0)
            if own_factory is not None:
                own_factory.shutdown(timeout=5.0)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            if waker is not None:
                waker.close()
        if self._summary.unfinished:
            _log.error("controller %s: reconciles still running at the shutdown deadline: %s",
                       self.name, ", ".join(map(str, self._summary.unfinished)))
        return self._summary

    def _thread(self, target: Callable[..., None], role: str, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, daemon=True,
                                  name=f"controller-{self.name}-{role}")
        thread.start()
        return thread

    def _refresh_caches(self, stop: threading.Event) -> bool:
        """Have every informer this controller reads re-establish its watch and wait
        until each has a new watch or LIST (True), or ``stop`` (False): what a shard gate
        asks after a lapse, before every key is reconciled again. One not back after
        :data:`REFRESH_WARNING` seconds is named at WARNING; the wait goes on (a key
        reconciled from a cache that missed the outage's changes is what it prevents)."""
        asked = [(informer, informer.reconnect("the shard member lapsed or was blind"))
                 for informer in self._informers()
                 if callable(getattr(informer, "reconnect", None))]
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

    def _wait_ready(self) -> bool:
        """The readiness gate: every involved cache holds its first complete list."""
        for watched in self._watched:
            indexer = watched.informer.get_indexer()
            if isinstance(indexer, ReadyIndexer) and not indexer.wait_until_ready(
                    stop=self._stopping):
                return False
        return not self._stopping.is_set()

    def _install_signals(self) -> dict[int, Any]:
        previous: dict[int, Any] = {}

        def handle(signum: int, frame: FrameType | None) -> None:
            _log.info("controller %s: signal %d: shutting down gracefully (again to "
                      "force)", self.name, signum)
            for number, handler in previous.items():
                signal.signal(number, handler)
            self._stopping.set()

        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, handle)
        return previous

    def _work(self, reconcile: Callable[[Any, Context[Any]], Action],
              error_policy: Callable[[Any, BaseException, Context[Any]], Action] | None,
              data: Any, recorder: EventRecorder | None, metrics: ControllerMetrics,
              gate: LeadershipGate | None, shard: ShardGate | None) -> None:
        scheduler = self._scheduler
        assert scheduler is not None
        identity = "" if shard is None else shard.identity
        while True:
            request = scheduler.get()
            if request is None:
                return
            ref = request.obj_ref
            try:
                if self._stopping.is_set():
                    return
                if gate is not None and not gate.holds_lease():  # lost, maybe by a pause
                    return
                if shard is not None and not shard.begin(ref):  # another replica's key
                    scheduler.forget(ref)
                    continue
                with self._lock:
                    self._running.add(ref)
                try:
                    self._reconcile_one(scheduler, request, reconcile, error_policy,
                                        Context(data, request, self._stopping, recorder,
                                                identity), metrics)
                finally:
                    if shard is not None:
                        shard.end(ref)
            finally:
                with self._lock:
                    self._running.discard(ref)
                scheduler.done(ref)

    def _reconcile_one(self, scheduler: Scheduler, request: ReconcileRequest,
                       reconcile: Callable[[Any, Context[Any]], Action],
                       error_policy: Callable[[Any, BaseException, Context[Any]], Action] | None,
                       ctx: Context[Any], metrics: ControllerMetrics) -> None:
        ref = request.obj_ref
        obj, exists = self._informer.get_indexer().get_by_key(ref.key())
        if not exists:
            _log.debug("controller %s: %s is no longer cached; not reconciled", self.name, ref)
            with self._lock:
                self._summary.not_found += 1
            self._failing.ended(ref)
            return
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("controller %s: reconciling %s (%s)", self.name, meta.describe(obj),
                       request.reason)
        started = time.monotonic()
        metrics.active.inc()
        try:
            action = reconcile(obj, ctx)
            if not isinstance(action, Action):
                raise TypeError(
                    f"{_name_of(reconcile)} returned {type(action).__name__}, not an Action "
                    "(return Action.await_change() to wait for the next change, or "
                    "Action.requeue(seconds))")
        except Exception as err:
            terminal = isinstance(err, TerminalError)
            metrics.observe(started, "error", terminal=terminal, panic=is_panic(err))
            with self._lock:
                self._summary.reconciles += 1
                self._summary.errors += 1
            self._report_failure(ref, obj, err)
            if terminal:  # not retried: the next change of the object reconciles it
                scheduler.forget(ref)
            else:
                self._after_error(scheduler, obj, err, ctx, error_policy)
            return
        finally:
            metrics.active.dec()
        with self._lock:
            self._summary.reconciles += 1
        self._failing.ended(ref)  # the episode of failures, if any, is over
        if action.backoff:
            metrics.observe(started, "requeue")
            with self._lock:
                self._summary.requeues += 1
            scheduler.backoff(ref, ReconcileReason.reconciler_requested_retry())
            return
        scheduler.forget(ref)
        if action.requeue_after is None:
            metrics.observe(started, "success")
            return
        metrics.observe(started, "requeue_after")
        with self._lock:
            self._summary.requeues += 1
        scheduler.schedule(ref, ReconcileReason.reconciler_requested_retry(),
                           action.requeue_after)

    def _report_failure(self, ref: ObjectRef, obj: Any, err: Exception) -> None:
        """Log a failed reconcile: the first of an episode (failures of one object, for
        one reason, until it reconciles again or fails for another reason) at ERROR with
        its traceback (an API error without: see below), then, while it goes on failing
        the same way, one ERROR line every
        :data:`~client_cache.util.logs.FAILURE_REPEAT_SECONDS` with the count
        (DEBUG for the others). A failure for another reason than the last one logged
        starts a new episode: it is logged at ERROR at once. The object is named by kind,
        namespace/name and resourceVersion, an API error by its status, reason and
        message; the ERROR lines reach stderr when the application configured no logging
        (:func:`client_cache.util.logs.log_visibly`)."""
        text = describe_error(err)
        repeat = self._failing.failed(ref, text)
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

    def _after_error(self, scheduler: Scheduler, obj: Any, err: Exception, ctx: Context[Any],
                     error_policy: Callable[[Any, BaseException, Context[Any]], Action] | None,
                     ) -> None:
        reason = ReconcileReason.error_policy_requested_retry()
        action: Action | None = None
        if error_policy is not None:
            try:
                action = error_policy(obj, err, ctx)
            except Exception:
                _log.exception("controller %s: error_policy failed; backing off", self.name)
        if isinstance(action, Action):
            if action.requeue_after is None:
                return
            scheduler.schedule(ctx.obj_ref, reason, action.requeue_after)
        else:
            scheduler.backoff(ctx.obj_ref, reason)
        with self._lock:
            self._summary.requeues += 1


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


def _name_of(fn: Any) -> str:
    """A function's qualified name, for an error about what it did."""
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or fn)


class _Wake:
    """The marker put in a ``reconcile_on`` queue to wake its reader at shutdown."""


_WAKE = _Wake()


def _threaded(caller: LoopCaller | None, fn: Callable[..., Any] | None) -> Any:
    """``fn`` as a plain function: an ``async def`` one runs on ``caller``'s loop."""
    if caller is None or fn is None or not is_async_callable(fn):
        return fn
    return caller.wrap(fn)


def _waker(source: queue.Queue[Any]) -> Callable[[], None]:
    def wake() -> None:
        # a full queue: its reader is not blocked, and sees the stop at its next item
        with contextlib.suppress(queue.Full):
            source.put_nowait(_WAKE)
    return wake
