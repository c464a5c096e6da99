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
notification is skipped (client-go v0.33+); the informer can run on RealFIFO (in-order
informers) with ``use_real_fifo``; :func:`wait_for_cache_sync` wakes as soon as a queue or
handler turns synced instead of polling every 100 ms (it still re-checks every 100 ms for
arbitrary ``synced`` functions).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sized
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from client_cache import meta
from client_cache.controller import (
    Config,
    Controller,
    ResourceEventHandler,
    new_controller,
    process_deltas,
)
from client_cache.delta_fifo import (
    DeltaFIFOOptions,
    Deltas,
    TransformFunc,
    new_delta_fifo_with_options,
)
from client_cache.errors import CacheSyncTimeoutError, ClientCacheError, MetaAccessError
from client_cache.fifo import Queue, QueueBase
from client_cache.health.status import InformerHealth, ReflectorStatus
from client_cache.index import Indexer, Indexers
from client_cache.listwatch import ListerWatcher
from client_cache.mutation_detector import new_cache_mutation_detector
from client_cache.reflector import WatchErrorHandler, describe_expected_type
from client_cache.store import Store, deletion_handling_meta_namespace_key_func, new_indexer
from client_cache.synctrack import SingleFileTracker, sync_generation, wait_sync_changed
from client_cache.the_real_fifo import RealFIFOOptions, new_real_fifo_with_options
from client_cache.util.clock import REAL_CLOCK, PassiveClock, WithTicker
from client_cache.util.runtime import handle_error

if TYPE_CHECKING:
    from client_cache.aio.events import InformerEvent

__all__ = [
    "MINIMUM_RESYNC_PERIOD",
    "SYNCED_POLL_PERIOD",
    "InformerSynced",
    "ProcessorListener",
    "ResourceEventHandlerRegistration",
    "SharedIndexInformer",
    "SharedIndexInformerOptions",
    "SharedInformer",
    "new_shared_index_informer",
    "new_shared_index_informer_with_options",
    "new_shared_informer",
    "unsynced_details",
    "wait_for_cache_sync",
    "wait_for_named_cache_sync",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

_log = logging.getLogger(__name__)

MINIMUM_RESYNC_PERIOD = 1.0
SYNCED_POLL_PERIOD = 0.1

InformerSynced = Callable[[], bool]


@runtime_checkable
class ResourceEventHandlerRegistration(Protocol):
    """What ``add_event_handler`` returns (Go ``ResourceEventHandlerRegistration``)."""

    def has_synced(self) -> bool:
        """True once the informer has synced and this handler has handled the whole initial
        list (Go ``HasSynced``)."""
        ...


# --- notifications and listeners -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Add:
    obj: Any
    is_in_initial_list: bool


@dataclass(frozen=True, slots=True)
class _Update:
    old: Any
    new: Any


@dataclass(frozen=True, slots=True)
class _Delete:
    old: Any


def _handler_name(handler: Any) -> str:
    funcs = [getattr(handler, f, None) for f in ("add_func", "update_func", "delete_func")]
    named = [getattr(f, "__qualname__", repr(f)) for f in funcs if f is not None]
    if named:
        return "+".join(named)
    return f"{type(handler).__module__}.{type(handler).__qualname__}"


def determine_resync_period(desired: float, check: float) -> float:
    """The period a handler really gets (Go ``determineResyncPeriod``)."""
    if desired == 0:
        return 0.0
    if check == 0:
        _log.warning("The specified resyncPeriod %s is invalid because this shared informer "
                     "doesn't support resyncing", desired)
        return 0.0
    if desired < check:
        _log.warning("The specified resyncPeriod %s is being increased to the minimum "
                     "resyncCheckPeriod %s", desired, check)
        return check
    return desired


class ProcessorListener:
    """One handler's buffer and delivery thread (Go ``processorListener``); it is also the
    handler's registration."""

    def __init__(
        self,
        handler: ResourceEventHandler[Any],
        requested_resync_period: float,
        resync_period: float,
        now: float,
        upstream_has_synced: Callable[[], bool],
        informer_name: str,
    ) -> None:
        self.handler = handler
        self.name = _handler_name(handler)
        self.requested_resync_period = requested_resync_period
        self._resync_lock = threading.Lock()
        self.resync_period = resync_period
        self.next_resync = now + resync_period
        self.sync_tracker = SingleFileTracker(upstream_has_synced,
                                              f"{informer_name} + event handler {self.name}")
        self._pending: deque[Any] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._closed = False
        self._thread: threading.Thread | None = None
        self._informer_name = informer_name
        self.handled = 0
        """Notifications delivered to the handler."""
        self.errors = 0
        """Notifications whose handler raised."""

    def __repr__(self) -> str:
        return f"<ProcessorListener {self.name}>"

    def add(self, notification: Any) -> None:
        """Queue a notification (never blocks; the buffer is unbounded)."""
        if isinstance(notification, _Add) and notification.is_in_initial_list:
            self.sync_tracker.start()
        with self._cond:
            if self._closed:
                return
            self._pending.append(notification)
            self._cond.notify()

    def pending(self) -> int:
        """Notifications waiting in the buffer."""
        with self._cond:
            return len(self._pending)

    def start(self) -> None:
        """Start the handler's delivery thread (once)."""
        with self._cond:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(
                target=self._run, name=f"informer-handler-{self._informer_name}", daemon=True)
            self._thread.start()

    def stop(self) -> threading.Thread | None:
        """Stop delivering (pending notifications are dropped); returns the thread to join.

        A handler with a ``handler_stopped()`` method has it called here (a port
        addition: a handler that waits on something else, such as
        :class:`~client_cache.aio.AsyncHandler` on an event loop, gives up the wait, so
        its thread ends with the informer)."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
            thread = self._thread
        stopped = getattr(self.handler, "handler_stopped", None)
        if callable(stopped):
            try:
                stopped()
            except Exception as err:
                handle_error(err)
        return thread

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                notification = self._pending.popleft()
            self._dispatch(notification)

    def _dispatch(self, notification: Any) -> None:
        try:
            if isinstance(notification, _Update):
                self.handler.on_update(notification.old, notification.new)
            elif isinstance(notification, _Add):
                self.handler.on_add(notification.obj, notification.is_in_initial_list)
            elif isinstance(notification, _Delete):
                self.handler.on_delete(notification.old)
            else:
                handle_error(f"unrecognized notification: {type(notification).__name__}")
        except Exception as err:
            self.errors += 1
            _log.error("event handler %s of %s failed, skipping the notification: %r",
                       self.name, self._informer_name, err, exc_info=True,
                       extra={"resource": self._informer_name, "handler": self.name})
        finally:
            self.handled += 1
            if isinstance(notification, _Add) and notification.is_in_initial_list:
                self.sync_tracker.finished()

    def has_synced(self) -> bool:
        """The informer is synced and this handler has handled the initial list."""
        return self.sync_tracker.has_synced()

    def should_resync(self, now: float) -> bool:
        """True when this handler's resync is due at ``now``."""
        with self._resync_lock:
            return self.resync_period != 0 and now >= self.next_resync

    def determine_next_resync(self, now: float) -> None:
        """Schedule this handler's next resync one period after ``now``."""
        with self._resync_lock:
            self.next_resync = now + self.resync_period

    def set_resync_period(self, period: float) -> None:
        """Change this handler's resync period (seconds)."""
        with self._resync_lock:
            self.resync_period = period


class _SharedProcessor:
    def __init__(self, clock: PassiveClock) -> None:
        self.clock = clock
        self._lock = threading.RLock()
        self._retired = (0, 0)
        self.listeners: dict[ProcessorListener, bool] = {}
        self.started = False

    def listener_list(self) -> list[ProcessorListener]:
        """The current listeners, in the order they were added."""
        with self._lock:
            return list(self.listeners)

    def delivered(self) -> tuple[int, int]:
        """Notifications handled and handler errors, over every listener this processor
        ever had (removed and stopped ones included)."""
        with self._lock:
            return (self._retired[0] + sum(x.handled for x in self.listeners),
                    self._retired[1] + sum(x.errors for x in self.listeners))

    def _retire(self, listener: ProcessorListener) -> None:
        self._retired = (self._retired[0] + listener.handled,
                         self._retired[1] + listener.errors)

    def add_listener(self, listener: ProcessorListener) -> None:
        with self._lock:
            self.listeners[listener] = True
            if self.started:
                listener.start()

    def remove_listener(self, handle: Any) -> None:
        if not isinstance(handle, ProcessorListener):
            raise TypeError(f"invalid key type {type(handle).__name__}")
        with self._lock:
            if handle not in self.listeners:
                return
            del self.listeners[handle]
            self._retire(handle)
            if self.started:
                handle.stop()

    def distribute(self, notification: Any, sync: bool) -> None:
        with self._lock:
            for listener, due in self.listeners.items():
                if not sync or due:
                    listener.add(notification)

    def start(self) -> None:
        """Start every listener's delivery thread (Go ``sharedProcessor.run``, first
        half); listeners added later start as they are added."""
        with self._lock:
            for listener in self.listeners:
                listener.start()
            self.started = True

    def stop(self) -> None:
        """Stop and join every listener (pending notifications are dropped; Go
        ``sharedProcessor.run``, second half)."""
        with self._lock:
            threads = [t for t in (listener.stop() for listener in self.listeners) if t]
            for listener in self.listeners:
                self._retire(listener)
            self.listeners = {}
            self.started = False
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(1.0)

    def should_resync(self) -> bool:
        with self._lock:
            now = self.clock.monotonic()
            needed = False
            for listener in list(self.listeners):
                due = listener.should_resync(now)
                self.listeners[listener] = due
                if due:
                    needed = True
                    listener.determine_next_resync(now)
            return needed

    def resync_check_period_changed(self, period: float) -> None:
        with self._lock:
            for listener in self.listeners:
                listener.set_resync_period(
                    determine_resync_period(listener.requested_resync_period, period))


# --- the informer --------------------------------------------------------------------------


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
        :class:`~client_cache.health.status.InformerHealth`)."""
        ...

    def is_stopped(self) -> bool:
        """True once the informer has stopped (Go ``IsStopped``)."""
        ...


@dataclass
class SharedIndexInformerOptions:
    """Go ``SharedIndexInformerOptions``; ``clock``, ``use_real_fifo``,
    ``watch_idle_timeout`` and ``atomic_relist`` are port additions (a fake clock for tests;
    client-go's in-order informers; how long a silent watch is trusted, see
    :class:`~client_cache.controller.Config`).

    ``atomic_relist`` (kube-rs's store swap, client-go's ``AtomicFIFO``): a relist (the
    first LIST, a LIST or watch-list after a 410, a forced relist) is applied to the indexer
    in one step when it is complete; until then listers keep answering from the previous
    complete state. Handlers still get one notification per object, after the swap. It uses
    a :class:`~client_cache.the_real_fifo.RealFIFO` (so implies ``use_real_fifo``). Off by
    default: the default queue stays the DeltaFIFO that client-go users know."""

    resync_period: float = 0.0
    indexers: Indexers | None = None
    object_description: str = ""
    clock: WithTicker | None = None
    use_real_fifo: bool = False
    watch_idle_timeout: float | None = None
    atomic_relist: bool = False


class _InformerController:
    """What ``get_controller`` hands out (Go ``dummyController``): ``run`` does nothing."""

    def __init__(self, informer: SharedIndexInformer[Any]) -> None:
        self._informer = informer

    def run(self, stop: threading.Event) -> None:
        pass

    def has_synced(self) -> bool:
        return self._informer.has_synced()

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
        self.clock: WithTicker = options.clock or REAL_CLOCK
        self.processor = _SharedProcessor(self.clock)
        self.lister_watcher = lister_watcher
        self.object_type = example_object
        description, _, _ = describe_expected_type(example_object)
        self.object_description = options.object_description or description
        self.resync_check_period = options.resync_period
        self.default_event_handler_resync_period = options.resync_period
        self.use_real_fifo = options.use_real_fifo or options.atomic_relist
        self.atomic_relist = options.atomic_relist
        self.watch_idle_timeout = options.watch_idle_timeout
        self.cache_mutation_detector = new_cache_mutation_detector(description)
        self._started = False
        self._stopped = False
        self._started_lock = threading.Lock()
        self._block_deltas = threading.Lock()
        self._controller: Controller | None = None
        self._watch_error_handler: WatchErrorHandler | None = None
        self._transform: TransformFunc | None = None
        self._queue: Queue | None = None
        self.status = ReflectorStatus(self.object_description, self.clock)
        """What the informer's reflector has been doing (see :meth:`health`)."""

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
        if self.use_real_fifo:
            queue = new_real_fifo_with_options(RealFIFOOptions(
                known_objects=self.indexer, transformer=self._transform,
                atomic_replace=self.atomic_relist))
        else:
            queue = new_delta_fifo_with_options(DeltaFIFOOptions(
                known_objects=self.indexer, emit_delta_type_replaced=True,
                transformer=self._transform))
        # The indexer is ready (wait_until_ready) once the first complete list is in it.
        queue.on_synced(self.indexer.mark_ready)
        return queue  # type: ignore[return-value]

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set; handlers are stopped after the controller returns."""
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
            )
            self._controller = new_controller(config)
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
            detector_stop.set()
            self.indexer.close_subscriptions()
            self.processor.stop()
            if detector is not None:
                detector.join(1.0)

    def handle_deltas(self, obj: Any, is_in_initial_list: bool) -> None:
        """The controller's process function (Go ``HandleDeltas``)."""
        with self._block_deltas:
            if not isinstance(obj, Deltas):
                raise TypeError("object given as Process argument is not Deltas")
            process_deltas(self, self.indexer, obj, is_in_initial_list)

    # ResourceEventHandler side: called under _block_deltas by process_deltas.
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        """Apply an added object to the handlers (the informer's own handler; Go ``OnAdd``)."""
        self.cache_mutation_detector.add_object(obj)
        self.processor.distribute(_Add(obj, is_in_initial_list), False)

    def on_update(self, old: Any, new: Any) -> None:
        """Apply an updated object to the handlers (Go ``OnUpdate``)."""
        try:
            is_sync = meta.get_resource_version(old) == meta.get_resource_version(new)
        except MetaAccessError:
            is_sync = False
        self.cache_mutation_detector.add_object(new)
        self.processor.distribute(_Update(old, new), is_sync)

    def on_delete(self, old: Any) -> None:
        """Apply a deleted object to the handlers (Go ``OnDelete``)."""
        self.processor.distribute(_Delete(old), False)

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
                    f"handler {_handler_name(handler)} was not added to shared informer "
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
                    listener.add(_Add(obj, True))
            return listener

    def remove_event_handler(self, handle: ResourceEventHandlerRegistration) -> None:
        """Remove a registration (idempotent; also on a stopped informer)."""
        with self._started_lock, self._block_deltas:
            self.processor.remove_listener(handle)

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
        """True once the initial list is in the cache (Go ``HasSynced``)."""
        with self._started_lock:
            controller = self._controller
        return controller is not None and controller.has_synced()

    def last_sync_resource_version(self) -> str:
        """The resourceVersion the cache last synced to (Go ``LastSyncResourceVersion``)."""
        with self._started_lock:
            controller = self._controller
        return "" if controller is None else controller.last_sync_resource_version()

    def health(self) -> InformerHealth:
        """A snapshot of how the informer is doing (port addition): synced, the last
        LIST and watch activity, consecutive failures and the last error (never a
        credential or an object), relists, watch restarts, the queue depth, each handler's
        buffer, notifications handled and handler errors, and whether it is healthy (see
        :mod:`client_cache.health.status` for the rule)."""
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

    async def wait_for_cache_sync_async(self, timeout: float | None = None) -> None:
        """Wait in a coroutine until synced, without blocking the loop (see
        :func:`client_cache.aio.wait_for_cache_sync_async`; a port addition)."""
        from client_cache.aio import wait_for_cache_sync_async  # noqa: PLC0415 - cycle
        await wait_for_cache_sync_async(self, timeout=timeout)

    def events(self, *, max_size: int = 1000,
               overflow: Literal["wait", "fail"] = "wait") -> AsyncIterator[InformerEvent]:
        """This informer's notifications for ``async for`` (see
        :func:`client_cache.aio.events`; a port addition)."""
        from client_cache.aio import events  # noqa: PLC0415 - cycle
        return events(self, max_size=max_size, overflow=overflow)

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


def wait_for_cache_sync(stop: threading.Event, *cache_syncs: InformerSynced,
                        timeout: float | None = None) -> bool:
    """Wait until every ``cache_syncs`` function returns True (True) or ``stop`` is set
    (False). Checks at once, then whenever a queue or handler turns synced, and at least
    every 100 ms.

    ``timeout`` (seconds; a port addition) bounds the wait: past it,
    :class:`~client_cache.errors.CacheSyncTimeoutError` names what did not sync, with the
    last list/watch error of each (functions that are an informer's ``has_synced`` are
    named by its resource; others by their qualified name)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        generation = sync_generation()
        if all(synced() for synced in cache_syncs):
            return True
        if stop.is_set():
            return False
        left = SYNCED_POLL_PERIOD if deadline is None else deadline - time.monotonic()
        if left <= 0:
            raise CacheSyncTimeoutError(timeout or 0.0, unsynced_details(
                [synced for synced in cache_syncs if not synced()]))
        wait_sync_changed(generation, min(left, SYNCED_POLL_PERIOD))


def unsynced_details(cache_syncs: list[InformerSynced]) -> dict[str, str]:
    """For each function: the informer's resource and last list/watch error, when it is
    an informer's ``has_synced``; its qualified name and "" otherwise."""
    details: dict[str, str] = {}
    for synced in cache_syncs:
        owner = getattr(synced, "__self__", None)
        status = getattr(owner, "status", None)
        if isinstance(status, ReflectorStatus):
            health = status.health(started=True, synced=False)
            details[health.resource] = health.last_error
        else:
            details[getattr(synced, "__qualname__", repr(synced))] = ""
    return details


def wait_for_named_cache_sync(
    controller_name: str, stop: threading.Event, *cache_syncs: InformerSynced
) -> bool:
    """:func:`wait_for_cache_sync` with the upstream log lines."""
    _log.info("Waiting for caches to sync for %s", controller_name)
    if not wait_for_cache_sync(stop, *cache_syncs):
        handle_error(f"unable to sync caches for {controller_name}")
        return False
    _log.info("Caches are synced for %s", controller_name)
    return True
