"""Shared informers (Go ``tools/cache/shared_informer.go``).

A :class:`SharedIndexInformer` keeps one indexer (the cache) up to date from one list-watch
and fans every change out to any number of event handlers. Each handler gets its own
*listener*: an unbounded, order-preserving buffer drained by its own named thread, so
notifications reach a handler one at a time and in order, and a slow handler never blocks
the informer or the other handlers.

Rules, as upstream:

* ``add_event_handler`` before ``run``: the handler sees the initial list as adds with
  ``is_in_initial_list=True``; after ``run``: it first gets a synthetic add of every cached
  object (also marked initial). A registration's ``has_synced()`` is true once the informer
  is synced *and* those initial adds were handled;
* per-handler resync periods: below 1 s they become 1 s; the informer checks at the
  smallest period requested before it started (later, smaller requests are raised to
  it); a resync reaches only the handlers that are due. An update whose old and new objects
  have the same resourceVersion is a resync notification;
* ``remove_event_handler`` is idempotent and thread-safe; ``set_watch_error_handler`` and
  ``set_transform`` raise once the informer has started; ``add_event_handler`` and
  ``add_indexers`` raise once it has stopped.

Port choices: an exception from a handler is logged with the handler's name and that one
notification is skipped (client-go v0.33+). The informer's queue is client-go v0.36's
default, an atomic :class:`~client_cache.the_real_fifo.RealFIFO`, unless its options or
the feature gates say otherwise (:class:`SharedIndexInformerOptions`). Waiting for caches to sync
(:func:`~client_cache.cache_sync.wait_for_cache_sync` and its kin) has a module of its own,
:mod:`client_cache.cache_sync`; this one re-exports it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sized
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from client_cache._processor import (
    AddNotification,
    DeleteNotification,
    ProcessorListener,
    SharedProcessor,
    UpdateNotification,
    determine_resync_period,
    handler_name,
)
from client_cache.api import meta
from client_cache.cache_sync import (
    SYNCED_POLL_PERIOD,
    DoneChecker,
    InformerSynced,
    SyncChecker,
    is_done,
    unsynced_details,
    wait_for,
    wait_for_cache_sync,
    wait_for_named_cache_sync,
)
from client_cache.codec._decoding import reuse_cached
from client_cache.controller import (
    Config,
    Controller,
    ResourceEventHandler,
    new_controller,
    process_deltas,
    process_deltas_in_batch,
)
from client_cache.delta_fifo import (
    Delta,
    DeltaFIFOOptions,
    Deltas,
    TransformFunc,
    new_delta_fifo_with_options,
)
from client_cache.errors import ClientCacheError, MetaAccessError
from client_cache.expected_type import describe_expected_type
from client_cache.fifo import Queue, QueueBase
from client_cache.identity import InformerNameAndResource
from client_cache.index import Indexer, Indexers
from client_cache.informer_metrics import InformerMetricsProvider, StoreMetrics
from client_cache.listwatch import ListerWatcher
from client_cache.mutation_detector import new_cache_mutation_detector
from client_cache.reflector import DEFAULT_MAX_BACKOFF, WatchErrorHandler, check_max_backoff
from client_cache.reflector_status import InformerHealth, ReflectorStatus
from client_cache.store import Store, deletion_handling_meta_namespace_key_func, new_indexer
from client_cache.the_real_fifo import RealFIFOOptions, new_real_fifo_with_options
from client_cache.util.clock import REAL_CLOCK, WithTicker
from client_cache.util.features import (
    ATOMIC_FIFO,
    IN_ORDER_INFORMERS,
    UNLOCK_WHILE_PROCESSING_FIFO,
    feature_gates,
)

__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "SYNCED_POLL_PERIOD",
    "DoneChecker",
    "InformerSynced",
    "ProcessorListener",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "SharedIndexInformerOptions",
    "SharedInformer",
    "SyncChecker",
    "is_done",
    "new_shared_index_informer",
    "new_shared_index_informer_with_options",
    "new_shared_informer",
    "unsynced_details",
    "wait_for",
    "wait_for_cache_sync",
    "wait_for_named_cache_sync",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_log = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0


@runtime_checkable
class ResourceEventHandlerRegistration(Protocol):
    """What ``add_event_handler`` returns (Go ``ResourceEventHandlerRegistration``)."""

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has handled the whole initial
        list (Go ``HasSynced``)."""
        ...

    def has_synced_checker(self) -> DoneChecker:
        """A :class:`~client_cache.cache_sync.DoneChecker` done when :meth:`has_synced`
        turns True, for :func:`~client_cache.cache_sync.wait_for` (Go
        ``HasSyncedChecker``, v0.36)."""
        ...


@runtime_checkable
class SharedInformer(Protocol[T_co]):
    """An informer that shares one cache and one watch among many handlers (Go
    ``SharedInformer``)."""

    def add_event_handler(
        self, handler: ResourceEventHandler[T_co]
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``: it gets every cached object as an add, then every change;
        returns its registration (Go ``AddEventHandler``)."""
        ...

    def add_event_handler_with_resync_period(
        self, handler: ResourceEventHandler[T_co], resync_period: float
    ) -> ResourceEventHandlerRegistration:
        """Like ``add_event_handler``, with its own resync period in seconds (Go
        ``AddEventHandlerWithResyncPeriod``)."""
        ...

    def remove_event_handler(self, handle: ResourceEventHandlerRegistration) -> None:
        """Stop delivering to the handler of ``handle`` (Go ``RemoveEventHandler``)."""
        ...

    def get_store(self) -> Store:
        """The cache (Go ``GetStore``)."""
        ...

    def get_controller(self) -> Controller:
        """The controller that runs the reflector (Go ``GetController``)."""
        ...

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set: list, watch, fill the cache and deliver to the
        handlers (Go ``Run``)."""
        ...

    def has_synced(self) -> bool:
        """True once the initial list is in the cache (Go ``HasSynced``)."""
        ...

    def has_synced_checker(self) -> DoneChecker:
        """A :class:`~client_cache.cache_sync.DoneChecker` done when :meth:`has_synced`
        turns True (Go ``HasSyncedChecker``, v0.36)."""
        ...

    def last_sync_resource_version(self) -> str:
        """The resourceVersion the cache last synced to (Go ``LastSyncResourceVersion``)."""
        ...

    def set_watch_error_handler(self, handler: WatchErrorHandler) -> None:
        """Call ``handler`` with each list or watch error, before ``run`` (Go
        ``SetWatchErrorHandler``)."""
        ...

    def set_transform(self, transform: TransformFunc | None) -> None:
        """Apply ``transform`` to every object before it is cached, before ``run`` (Go
        ``SetTransform``)."""
        ...

    def health(self) -> InformerHealth:
        """A snapshot of how the informer is doing (see
        :class:`~client_cache.reflector_status.InformerHealth`)."""
        ...

    def is_stopped(self) -> bool:
        """True once the informer has stopped (Go ``IsStopped``)."""
        ...


@dataclass
class SharedIndexInformerOptions:
    """Go ``SharedIndexInformerOptions``; ``clock``, ``use_real_fifo``,
    ``watch_idle_timeout``, ``atomic_relist``, ``use_watch_list`` and ``max_backoff`` are
    port additions (a fake clock for tests; how long a silent watch is trusted, see
    :class:`~client_cache.controller.Config`).

    The queue, as client-go v0.36 chooses it from its feature gates
    (:mod:`client_cache.util.features`): ``use_real_fifo`` None follows
    ``InOrderInformers`` (on: a :class:`~client_cache.the_real_fifo.RealFIFO`, every event
    in order), ``atomic_relist`` None follows ``AtomicFIFO`` (on: a relist, the first LIST
    or watch-list, one after a 410, a forced relist, is applied to the indexer in one step
    when it is complete, listers answering from the previous complete state until then,
    and a resync is one ``SyncAll``; handlers still get one notification per object, after
    the swap; the queue is then unlocked while an item is processed when
    ``UnlockWhileProcessingFIFO`` is on, and passes bookmarks to the indexer). All on by
    default. ``use_real_fifo=False`` (or ``KUBE_FEATURE_InOrderInformers=false``) is the
    v0.32 informer: a :class:`~client_cache.delta_fifo.DeltaFIFO`, which groups a key's
    changes; ``atomic_relist=True`` implies the RealFIFO (``ValueError`` beside
    ``use_real_fifo=False``).

    ``use_watch_list``: True fills the cache from a watch-list stream (one small event per
    object), False from a LIST (one response); None follows the ``WatchListClient`` gate
    (on by default since client-go v0.35), falling back to LIST where the server or the
    lister-watcher does not support the stream.

    ``max_backoff``: the reflector's longest unjittered wait between failed rounds, 30 s
    as client-go's unless lowered (see :class:`~client_cache.reflector.ReflectorOptions`);
    the informer refuses one that is not positive with ``ValueError`` when it is built.

    ``identifier`` (Go ``Identifier``, v0.36): the informer's name and resource
    (:meth:`InformerName.with_resource <client_cache.identity.InformerName.with_resource>`);
    when it is reserved, client-go's informer metrics are published for it through
    ``informer_metrics_provider`` or the process's provider
    (:mod:`client_cache.informer_metrics`), and its queue's slow-processing line names
    it. A factory with an ``informer_name`` gives each of its informers one."""

    resync_period: float = 0.0
    indexers: Indexers | None = None
    object_description: str = ""
    clock: WithTicker | None = None
    use_real_fifo: bool | None = None
    watch_idle_timeout: float | None = None
    atomic_relist: bool | None = None
    use_watch_list: bool | None = None
    max_backoff: float = DEFAULT_MAX_BACKOFF
    identifier: InformerNameAndResource | None = None
    informer_metrics_provider: InformerMetricsProvider | None = None


def _queue_mode(use_real_fifo: bool | None,
                        atomic_relist: bool | None) -> tuple[bool, bool]:
    """``(real_fifo, atomic)`` for an informer's options, the gates deciding what is None
    (see :class:`SharedIndexInformerOptions`)."""
    gates = feature_gates()
    if atomic_relist and use_real_fifo is False:
        raise ValueError("atomic_relist needs the RealFIFO: it cannot go with "
                         "use_real_fifo=False")
    real = (use_real_fifo if use_real_fifo is not None
            else bool(atomic_relist) or gates.enabled(IN_ORDER_INFORMERS))
    atomic = atomic_relist if atomic_relist is not None else (
        real and gates.enabled(ATOMIC_FIFO))
    return real or atomic, atomic


class _InformerController:
    """What ``get_controller`` hands out (Go ``dummyController``): ``run`` does nothing."""

    def __init__(self, informer: SharedIndexInformer[Any]) -> None:
        self._informer = informer

    def run(self, stop: threading.Event) -> None:
        pass

    def has_synced(self) -> bool:
        return self._informer.has_synced()

    def has_synced_checker(self) -> DoneChecker:
        return self._informer.has_synced_checker()

    def last_sync_resource_version(self) -> str:
        return self._informer.last_sync_resource_version()


class SharedIndexInformer(Generic[T]):
    """See the module documentation. Build with :func:`new_shared_index_informer`."""

    def __init__(
        self, lister_watcher: ListerWatcher, example_object: Any,
        options: SharedIndexInformerOptions,
    ) -> None:
        self.indexer = new_indexer(deletion_handling_meta_namespace_key_func,
                                   dict(options.indexers or {}))
        self.identifier = options.identifier
        """The informer's identity (Go ``Identifier``), or None."""
        self._metrics_provider = options.informer_metrics_provider
        if options.identifier is not None:
            self.indexer.set_metrics(StoreMetrics(options.identifier,
                                                  options.informer_metrics_provider))
        self.clock: WithTicker = options.clock or REAL_CLOCK
        self.processor = SharedProcessor(self.clock)
        self.stuck_handlers: list[threading.Thread] = []
        """The handler threads still running a second after the informer stopped (blocked
        in user code), for :meth:`SharedInformerFactory.shutdown
        <client_cache.informers.SharedInformerFactory.shutdown>` to name; a port addition."""
        self.lister_watcher = lister_watcher
        self.object_type = example_object
        description, _, _ = describe_expected_type(example_object)
        self.object_description = options.object_description or description
        self.resync_check_period = options.resync_period
        self.default_event_handler_resync_period = options.resync_period
        self.use_real_fifo, self.atomic_relist = _queue_mode(
            options.use_real_fifo, options.atomic_relist)
        self.watch_idle_timeout = options.watch_idle_timeout
        self.use_watch_list = options.use_watch_list
        self.max_backoff = check_max_backoff(options.max_backoff)  # refused here, not on
        # the reflector's thread once the informer runs
        self.cache_mutation_detector = new_cache_mutation_detector(description)
        self._started = False
        self._stopped = False
        self._started_lock = threading.Lock()
        self._block_deltas = threading.Lock()
        self._controller: Controller | None = None
        self._watch_error_handler: WatchErrorHandler | None = None
        self._transform: TransformFunc | None = None
        self._queue: Queue | None = None
        self._synced_checker: SyncChecker | None = None
        self.status = ReflectorStatus(self.object_description, self.clock)
        """What the informer's reflector has been doing (see :meth:`health`)."""
        # an index function that fails on an object leaves it out of that index only: the
        # object is cached and delivered, and health, a metric and a log line say so
        self.indexer.set_index_error_handler(self.status.index_failed)

    def __repr__(self) -> str:
        return f"<SharedIndexInformer {self.object_description}>"

    # -- configuration --------------------------------------------------------------------
    def set_watch_error_handler(self, handler: WatchErrorHandler) -> None:
        """Call ``handler`` with each list or watch error, before ``run`` (Go
        ``SetWatchErrorHandler``)."""
        with self._started_lock:
            if self._started:
                raise ClientCacheError("informer has already started")
            self._watch_error_handler = handler

    def set_transform(self, transform: TransformFunc | None) -> None:
        """Apply ``transform`` to every object before it is cached, before ``run`` (Go
        ``SetTransform``)."""
        with self._started_lock:
            if self._started:
                raise ClientCacheError("informer has already started")
            self._transform = transform

    def add_indexers(self, indexers: Indexers) -> None:
        """Add index functions to the cache; allowed before ``run`` (Go ``AddIndexers``)."""
        with self._started_lock:
            if self._stopped:
                raise ClientCacheError("indexer was not added because it has stopped already")
            self.indexer.add_indexers(indexers)

    # -- run ------------------------------------------------------------------------------------
    def _new_queue(self) -> Queue:
        queue: QueueBase
        if self.atomic_relist:
            queue = new_real_fifo_with_options(RealFIFOOptions(
                transformer=self._transform, atomic_events=True,
                unlock_while_processing=feature_gates().enabled(UNLOCK_WHILE_PROCESSING_FIFO),
                emit_delta_type_bookmark=True, identifier=self.identifier,
                metrics_provider=self._metrics_provider))
        elif self.use_real_fifo:
            queue = new_real_fifo_with_options(RealFIFOOptions(
                known_objects=self.indexer, transformer=self._transform,
                identifier=self.identifier, metrics_provider=self._metrics_provider))
        else:
            queue = new_delta_fifo_with_options(DeltaFIFOOptions(
                known_objects=self.indexer, emit_delta_type_replaced=True,
                transformer=self._transform))
        # The indexer is ready (wait_until_ready) once the first complete list is in it.
        queue.on_synced(self.indexer.mark_ready)
        return queue  # type: ignore[return-value]

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set; handlers are stopped after the controller returns.
        While it runs, a lister-watcher that can (``set_previous_objects``) reads watch
        events beside the cached objects they replace, sharing what is unchanged
        (:func:`client_cache.codec._decoding.reuse_cached`; a port addition, not with a
        transform)."""
        with self._started_lock:
            if self._started:
                _log.warning("The sharedIndexInformer has started, run more than once is not "
                             "allowed")
                return
            self._queue = self._new_queue()
            config = Config(
                queue=self._queue,
                lister_watcher=self.lister_watcher,
                process=self.handle_deltas,
                object_type=self.object_type,
                object_description=self.object_description,
                full_resync_period=self.resync_check_period,
                should_resync=self.processor.should_resync,
                watch_error_handler=self._watch_error_handler,
                clock=self.clock,
                watch_idle_timeout=self.watch_idle_timeout,
                reflector_status=self.status,
                use_watch_list=self.use_watch_list,
                max_backoff=self.max_backoff,
                process_batch=self.handle_batch_deltas,
            )
            self._controller = new_controller(config)
            # a transform changes new objects in place: none may share parts with old ones
            reuse_cached(self.lister_watcher, self.indexer if self._transform is None else None)
            self._started = True
        # No thread waits for stop: the listeners start here and are stopped when the
        # controller returns; the mutation detector gets a thread only when enabled.
        self.processor.start()
        detector_stop = threading.Event()
        detector: threading.Thread | None = None
        if self.cache_mutation_detector.enabled:
            detector = threading.Thread(
                target=self.cache_mutation_detector.run, args=(detector_stop,),
                name=f"informer-mutation-detector-{self.object_description}", daemon=True)
            detector.start()
        try:
            self._controller.run(stop)
        finally:
            with self._started_lock:
                self._stopped = True
                checker = self._synced_checker
            if checker is not None:
                checker.close()  # a stopped informer syncs no more
            reuse_cached(self.lister_watcher, None)
            detector_stop.set()
            self.indexer.close_subscriptions()
            self.stuck_handlers = self.processor.stop()
            if detector is not None:
                detector.join(1.0)

    def handle_deltas(self, obj: Any, is_in_initial_list: bool) -> None:
        """The controller's process function (Go ``HandleDeltas``)."""
        with self._block_deltas:
            if not isinstance(obj, Deltas):
                raise TypeError("object given as Process argument is not Deltas")
            process_deltas(self, self.indexer, obj, is_in_initial_list)

    def handle_batch_deltas(self, deltas: list[Delta], is_in_initial_list: bool) -> None:
        """The controller's batch process function (Go ``HandleBatchDeltas``): a batch
        popped from a RealFIFO applied to the indexer in one transaction, then handed to
        the handlers (:func:`~client_cache.controller.process_deltas_in_batch`)."""
        with self._block_deltas:
            process_deltas_in_batch(self, self.indexer, deltas, is_in_initial_list)

    # ResourceEventHandler side: called under _block_deltas by process_deltas.
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        """Apply an added object to the handlers (the informer's own handler; Go ``OnAdd``)."""
        if self.cache_mutation_detector.enabled:  # not a call on every change when off
            self.cache_mutation_detector.add_object(obj)
        self.processor.distribute(AddNotification(obj, is_in_initial_list), False)

    def on_update(self, old: Any, new: Any) -> None:
        """Apply an updated object to the handlers (Go ``OnUpdate``)."""
        try:
            is_sync = meta.same_resource_version(old, new)
        except MetaAccessError:
            is_sync = False
        if self.cache_mutation_detector.enabled:
            self.cache_mutation_detector.add_object(new)
        self.processor.distribute(UpdateNotification(old, new), is_sync)

    def on_delete(self, old: Any) -> None:
        """Apply a deleted object to the handlers (Go ``OnDelete``)."""
        self.processor.distribute(DeleteNotification(old), False)

    # -- handlers -------------------------------------------------------------------------------
    def add_event_handler(
            self, handler: ResourceEventHandler[T]) -> ResourceEventHandlerRegistration:
        """Register ``handler``: it gets every cached object as an add, then every change;
        returns its registration (Go ``AddEventHandler``)."""
        return self.add_event_handler_with_resync_period(
            handler, self.default_event_handler_resync_period)

    def add_event_handler_with_resync_period(
        self, handler: ResourceEventHandler[T], resync_period: float
    ) -> ResourceEventHandlerRegistration:
        """Register ``handler``; see the module documentation for resync periods."""
        with self._started_lock:
            if self._stopped:
                raise ClientCacheError(
                    f"handler {handler_name(handler)} was not added to shared informer "
                    "because it has stopped already")
            if resync_period > 0:
                if resync_period < MINIMUM_RESYNC_PERIOD:
                    _log.warning("resyncPeriod %s is too small. Changing it to the minimum "
                                 "allowed value of %s", resync_period, MINIMUM_RESYNC_PERIOD)
                    resync_period = MINIMUM_RESYNC_PERIOD
                if resync_period < self.resync_check_period:
                    if self._started:
                        _log.warning("resyncPeriod %s is smaller than resyncCheckPeriod %s and "
                                     "the informer has already started. Changing it to %s",
                                     resync_period, self.resync_check_period,
                                     self.resync_check_period)
                        resync_period = self.resync_check_period
                    else:
                        self.resync_check_period = resync_period
                        self.processor.resync_check_period_changed(resync_period)
            listener = ProcessorListener(
                handler, resync_period,
                determine_resync_period(resync_period, self.resync_check_period),
                self.clock.monotonic(), self.has_synced, self.object_description)
            if not self._started:
                self.processor.add_listener(listener)
                return listener
            with self._block_deltas:
                self.processor.add_listener(listener)
                for obj in self.indexer.list():
                    listener.add(AddNotification(obj, True))
            return listener

    def remove_event_handler(self, handle: ResourceEventHandlerRegistration) -> None:
        """Remove a registration (idempotent; also on a stopped informer). Returns once
        the handler's delivery thread has ended (at most 1 s; at once when a handler
        removes its own registration), so nothing of the handler outlives the call."""
        with self._started_lock, self._block_deltas:
            thread = self.processor.remove_listener(handle)
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)

    # -- reads ------------------------------------------------------------------------------------
    def get_store(self) -> Store:
        """The cache (Go ``GetStore``)."""
        return self.indexer

    def get_indexer(self) -> Indexer:
        """The indexed cache (Go ``GetIndexer``)."""
        return self.indexer

    def get_controller(self) -> Controller:
        """The controller that runs the reflector (Go ``GetController``)."""
        return _InformerController(self)

    def has_synced(self) -> bool:
        """True once the initial list is in the cache (Go ``HasSynced``). It takes no
        lock (the controller is set once, by ``run``), so an event loop asking never waits
        for a thread adding a handler."""
        controller = self._controller
        return controller is not None and controller.has_synced()

    def has_synced_checker(self) -> DoneChecker:
        """A :class:`~client_cache.cache_sync.DoneChecker` done once the initial list is
        in the cache (Go ``HasSyncedChecker``, v0.36): its event is set by the sync
        itself, so :func:`~client_cache.cache_sync.wait_for` needs no polling. One per
        informer."""
        with self._started_lock:
            if self._synced_checker is None:
                self._synced_checker = SyncChecker(f"informer {self.object_description}",
                                                   self.has_synced)
                if self._stopped:
                    self._synced_checker.close()
            return self._synced_checker

    def last_sync_resource_version(self) -> str:
        """The resourceVersion the cache last synced to (Go ``LastSyncResourceVersion``)."""
        with self._started_lock:
            controller = self._controller
        return "" if controller is None else controller.last_sync_resource_version()

    def reconnect(self, reason: str, *, relist: bool = False) -> float:
        """Re-establish the informer's watch now, from the cache's resourceVersion
        (:meth:`~client_cache.reflector.Reflector.reconnect`; a port addition: for a
        caller that distrusts the watch's connection, such as a sharded member after a
        lapse or a half-dead Lease watch); with ``relist``, fill the cache again with
        the list options as they are now (a server-sharded member whose range moved).
        Returns the moment asked (monotonic, on the informer's clock), for
        ``status.wait_connected``; nothing happens before ``run``."""
        asked = self.status.clock.monotonic()
        with self._started_lock:
            controller = self._controller
        reconnect = getattr(controller, "reconnect", None)
        if callable(reconnect):
            reconnect(reason, relist=relist)
        return asked

    def health(self) -> InformerHealth:
        """A snapshot of how the informer is doing (port addition): synced, the last
        LIST and watch activity, consecutive failures and the last error (never a
        credential or an object), relists, watch restarts, the queue depth, each handler's
        buffer, notifications handled and handler errors, and whether it is healthy (see
        :mod:`client_cache.reflector_status` for the rule)."""
        listeners = self.processor.listener_list()
        handled, errors = self.processor.delivered()
        with self._started_lock:
            started, queue = self._started and not self._stopped, self._queue
        return self.status.health(
            started=started, synced=self.has_synced(),
            queue_depth=len(queue) if isinstance(queue, Sized) else 0,
            handler_buffers={f"{i}:{listener.name}": listener.pending()
                             for i, listener in enumerate(listeners)},
            handled=handled, handler_errors=errors)

    @contextmanager
    def running(self, timeout: float | None = 60.0, *,
                stop: threading.Event | None = None) -> Iterator[threading.Event]:
        """Run on a thread of its own (``informer-<resource>``), wait until synced and
        hand out the stop event; at the end of the block set it and join the thread (a
        port addition). A sync slower than ``timeout`` (None: no limit) raises
        :class:`~client_cache.errors.CacheSyncTimeoutError` naming the resource and its
        last error."""
        stop = stop if stop is not None else threading.Event()
        thread = threading.Thread(target=self.run, args=(stop,), daemon=True,
                                  name=f"informer-{self.object_description}")
        thread.start()
        try:
            wait_for_cache_sync(stop, self.has_synced, timeout=timeout)
            yield stop
        finally:
            stop.set()
            thread.join(5.0)
            if thread.is_alive():
                _log.error("informer %s still running 5 s after its stop",
                           self.object_description)

    def is_stopped(self) -> bool:
        """True once the informer has stopped (Go ``IsStopped``)."""
        with self._started_lock:
            return self._stopped


def new_shared_index_informer_with_options(
    lister_watcher: ListerWatcher, example_object: Any, options: SharedIndexInformerOptions
) -> SharedIndexInformer[Any]:
    """A shared informer on ``lister_watcher`` holding objects like ``example_object``, set
    up by ``options`` (Go ``NewSharedIndexInformerWithOptions``)."""
    return SharedIndexInformer(lister_watcher, example_object, options)


def new_shared_index_informer(
    lister_watcher: ListerWatcher, example_object: Any,
    default_event_handler_resync_period: float, indexers: Indexers,
) -> SharedIndexInformer[Any]:
    """A shared informer with ``indexers`` and a default handler resync period in seconds
    (Go ``NewSharedIndexInformer``)."""
    return SharedIndexInformer(lister_watcher, example_object, SharedIndexInformerOptions(
        resync_period=default_event_handler_resync_period, indexers=indexers))


def new_shared_informer(
    lister_watcher: ListerWatcher, example_object: Any,
    default_event_handler_resync_period: float,
) -> SharedIndexInformer[Any]:
    """A shared informer without indexes (Go ``NewSharedInformer``)."""
    return new_shared_index_informer(lister_watcher, example_object,
                                     default_event_handler_resync_period, {})
