"""The low-level controller and the plain informers (Go ``tools/cache/controller.go``).

A controller runs a :class:`~client_cache.reflector.Reflector` that fills a queue (a
DeltaFIFO) and a loop that pops the queue and calls ``Config.process`` on each item.
:func:`new_informer` and friends wire that up with a store and a
:class:`ResourceEventHandler`: every popped :class:`~client_cache.delta_fifo.Deltas` is
applied to the store, oldest first, and turned into handler calls
(:func:`process_deltas`):

* ``Sync``, ``Replaced``, ``Added``, ``Updated``: if the store has the object it is updated
  and ``on_update(old, new)`` is called, otherwise it is added and ``on_add(obj,
  is_in_initial_list)``; so an ``Added`` for a known object is an update and a relisted
  unknown object an add;
* ``Deleted``: deleted from the store, then ``on_delete(obj)``, where ``obj`` may be a
  :class:`~client_cache.store.DeletedFinalStateUnknown` tombstone.

A queue that pops batches (a :class:`~client_cache.the_real_fifo.RealFIFO`) is popped a batch
at a time into ``Config.process_batch`` when it is set and the feature gate
``KUBE_FEATURE_InOrderInformersBatchProcess`` is not set false, as client-go v0.35+ does;
:func:`process_deltas_in_batch` applies each batch to the store as one transaction.

An exception from ``process`` is logged (Go ignores it) and, with ``retry_on_error``, the
item is queued again. ``run(stop)`` returns after ``stop`` is set and the reflector thread
has ended.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from client_cache.delta_fifo import (
    BookmarkInfo,
    Delta,
    DeltaFIFOOptions,
    Deltas,
    DeltaType,
    ReplacedAllInfo,
    SyncAllInfo,
    TransformFunc,
    new_delta_fifo_with_options,
)
from client_cache.errors import ClientCacheError, FIFOClosedError, RequeueError
from client_cache.fifo import Queue
from client_cache.index import Indexer, Indexers
from client_cache.listwatch import ListerWatcher
from client_cache.reflector import (
    DEFAULT_MAX_BACKOFF,
    Reflector,
    ReflectorOptions,
    WatchErrorHandler,
)
from client_cache.reflector_status import ReflectorStatus
from client_cache.store import (
    DeletedFinalStateUnknown,
    Store,
    deletion_handling_meta_namespace_key_func,
    new_indexer,
    new_store,
)
from client_cache.the_real_fifo import ProcessBatchFunc
from client_cache.transaction import Transaction, TransactionError, TransactionType
from client_cache.util.clock import REAL_CLOCK, WithTicker
from client_cache.util.features import IN_ORDER_INFORMERS_BATCH_PROCESS, feature_gates
from client_cache.util.runtime import handle_error
from client_cache.util.stop import on_stop

__all__ = [
    "BATCH_PROCESS_GATE",
    "Config",
    "Controller",
    "FilteringResourceEventHandler",
    "InformerOptions",
    "ProcessFunc",
    "ResourceEventHandler",
    "ResourceEventHandlerDetailedFuncs",
    "ResourceEventHandlerFuncs",
    "ShouldResyncFunc",
    "new_controller",
    "new_indexer_informer",
    "new_informer",
    "new_informer_with_options",
    "new_transforming_indexer_informer",
    "new_transforming_informer",
    "process_deltas",
    "process_deltas_in_batch",
    "replace_all",
]


ProcessFunc = Callable[[Any, bool], None]
"""``process(obj, is_in_initial_list)`` (Go ``ProcessFunc``)."""

ShouldResyncFunc = Callable[[], bool]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)

BATCH_PROCESS_GATE = "KUBE_FEATURE_InOrderInformersBatchProcess"
"""The environment variable of client-go's ``InOrderInformersBatchProcess`` feature gate:
batch processing is on unless it is set to something other than a true spelling."""


@runtime_checkable
class ResourceEventHandler(Protocol[T_contra]):
    """Receives notifications (Go ``ResourceEventHandler``). Handlers must not mutate the
    objects they get; ``on_delete`` may receive a ``DeletedFinalStateUnknown``.

    Generic in the object type: ``ResourceEventHandler[V1Pod]`` for an informer of models,
    ``ResourceEventHandler[WireObject]`` for wire dicts, so that ``mypy`` checks a
    handler against the informer it is added to."""

    def on_add(self, obj: T_contra, is_in_initial_list: bool) -> None:
        """Called with each added object; ``is_in_initial_list`` says whether it came from
        the initial list (Go ``OnAdd``)."""
        ...

    def on_update(self, old_obj: T_contra, new_obj: T_contra) -> None:
        """Called with the previous and the new version of a changed object; a resync passes
        the same object twice (Go ``OnUpdate``)."""
        ...

    def on_delete(self, obj: T_contra | DeletedFinalStateUnknown) -> None:
        """Called with a deleted object, or a ``DeletedFinalStateUnknown`` when the deletion
        was missed (Go ``OnDelete``)."""
        ...


class _UpdateDeleteFuncs(Generic[T]):
    """``on_update``/``on_delete`` for the function-backed handlers: call the function
    when it is set, do nothing otherwise."""

    update_func: Callable[[T, T], None] | None
    delete_func: Callable[[T | DeletedFinalStateUnknown], None] | None

    def on_update(self, old_obj: T, new_obj: T) -> None:
        """Call ``update_func(old, new)`` when it is set (Go ``OnUpdate``)."""
        if self.update_func is not None:
            self.update_func(old_obj, new_obj)

    def on_delete(self, obj: T | DeletedFinalStateUnknown) -> None:
        """Call ``delete_func(obj)`` when it is set (Go ``OnDelete``)."""
        if self.delete_func is not None:
            self.delete_func(obj)


@dataclass
class ResourceEventHandlerFuncs(_UpdateDeleteFuncs[T]):
    """A handler from up to three functions; ``add_func`` does not receive
    ``is_in_initial_list`` (Go ``ResourceEventHandlerFuncs``). The object type is taken
    from the functions (``delete_func`` must accept a ``DeletedFinalStateUnknown`` too)."""

    add_func: Callable[[T], None] | None = None
    update_func: Callable[[T, T], None] | None = None
    delete_func: Callable[[T | DeletedFinalStateUnknown], None] | None = None

    def on_add(self, obj: T, is_in_initial_list: bool) -> None:
        """Call ``add_func(obj)`` when it is set (Go ``OnAdd``)."""
        if self.add_func is not None:
            self.add_func(obj)


@dataclass
class ResourceEventHandlerDetailedFuncs(_UpdateDeleteFuncs[T]):
    """Like :class:`ResourceEventHandlerFuncs`, with ``is_in_initial_list`` for adds."""

    add_func: Callable[[T, bool], None] | None = None
    update_func: Callable[[T, T], None] | None = None
    delete_func: Callable[[T | DeletedFinalStateUnknown], None] | None = None

    def on_add(self, obj: T, is_in_initial_list: bool) -> None:
        """Call ``add_func(obj, is_in_initial_list)`` when it is set (Go ``OnAdd``)."""
        if self.add_func is not None:
            self.add_func(obj, is_in_initial_list)


@dataclass
class FilteringResourceEventHandler(Generic[T]):
    """Passes on only objects that satisfy ``filter_func`` (Go
    ``FilteringResourceEventHandler``). An update whose new object starts passing the
    filter becomes an add (``is_in_initial_list`` False); one that stops passing becomes a
    delete of the old object."""

    filter_func: Callable[[Any], bool]
    handler: ResourceEventHandler[T]

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        """Pass the object on as an add when it passes the filter (Go ``OnAdd``)."""
        if self.filter_func(obj):
            self.handler.on_add(obj, is_in_initial_list)

    def on_update(self, old_obj: Any, new_obj: Any) -> None:
        """Pass on an update, an add or a delete, depending on whether the old and the new
        object pass the filter (Go ``OnUpdate``)."""
        new_passes = self.filter_func(new_obj)
        old_passes = self.filter_func(old_obj)
        if new_passes and old_passes:
            self.handler.on_update(old_obj, new_obj)
        elif new_passes:
            self.handler.on_add(new_obj, False)
        elif old_passes:
            self.handler.on_delete(old_obj)

    def on_delete(self, obj: Any) -> None:
        """Pass the deletion on when the object passes the filter (Go ``OnDelete``)."""
        if self.filter_func(obj):
            self.handler.on_delete(obj)


@dataclass
class Config:
    """What a controller needs (Go ``Config``)."""

    queue: Queue
    lister_watcher: ListerWatcher
    process: ProcessFunc
    object_type: Any = None
    object_description: str = ""
    full_resync_period: float = 0.0
    min_watch_timeout: float = 0.0
    should_resync: ShouldResyncFunc | None = None
    retry_on_error: bool = False
    watch_error_handler: WatchErrorHandler | None = None
    watch_list_page_size: int = 0
    clock: WithTicker = field(default_factory=lambda: REAL_CLOCK)
    #: Port addition: seconds without any watch event or bookmark after which the
    #: reflector abandons the watch and watches again from its resourceVersion (None: the
    #: reflector's default, the watch's server timeout plus one minute).
    watch_idle_timeout: float | None = None
    #: Port addition: where the reflector reports (health, logs); its own when None.
    reflector_status: ReflectorStatus | None = None
    #: Port addition: the reflector's longest unjittered wait between failed rounds
    #: (:class:`~client_cache.reflector.ReflectorOptions`; client-go's is 30 s).
    max_backoff: float = DEFAULT_MAX_BACKOFF
    #: Port addition: True syncs with a watch-list stream, False with a LIST; None leaves
    #: it to the feature-gate environment variables, as client-go's ``WatchListClient``.
    use_watch_list: bool | None = None
    #: Applies a batch of deltas (Go ``ProcessBatch``, v0.35): used instead of ``process``
    #: when the queue can pop batches (a RealFIFO's ``pop_batch``) and the feature gate
    #: ``KUBE_FEATURE_InOrderInformersBatchProcess`` is not set false (on by default, as in
    #: client-go v0.35+).
    process_batch: ProcessBatchFunc | None = None


@runtime_checkable
class Controller(Protocol):
    """What runs a reflector into a queue and pops it into a process function: ``run``,
    ``has_synced`` and ``last_sync_resource_version`` (Go ``Controller``)."""

    def run(self, stop: threading.Event) -> None:
        """Run until ``stop`` is set: the reflector fills the queue, objects are popped and
        processed (Go ``Run``)."""
        ...

    def has_synced(self) -> bool:
        """True once the initial list has been popped from the queue (Go ``HasSynced``)."""
        ...

    def last_sync_resource_version(self) -> str:
        """The resourceVersion the reflector last synced to; "" before the first list (Go
        ``LastSyncResourceVersion``)."""
        ...


class _Controller:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.clock = config.clock
        self._reflector: Reflector | None = None
        self._lock = threading.Lock()

    def run(self, stop: threading.Event) -> None:
        """Run the reflector in a thread and the process loop here until ``stop``."""
        cfg = self.config
        reflector = Reflector(
            cfg.lister_watcher, cfg.object_type, cfg.queue,
            ReflectorOptions(
                name=cfg.object_description or "controller",
                type_description=cfg.object_description,
                resync_period=cfg.full_resync_period,
                min_watch_timeout=cfg.min_watch_timeout,
                clock=self.clock,
                idle_timeout=cfg.watch_idle_timeout,
                status=cfg.reflector_status,
                max_backoff=cfg.max_backoff,
            ),
        )
        reflector.should_resync = cfg.should_resync
        reflector.watch_list_page_size = cfg.watch_list_page_size
        if cfg.use_watch_list is not None:
            reflector.use_watch_list = cfg.use_watch_list
        if cfg.watch_error_handler is not None:
            reflector.watch_error_handler = cfg.watch_error_handler
        with self._lock:
            self._reflector = reflector
        description = cfg.object_description or reflector.type_description
        # stop closes the queue, which wakes the process loop blocked in pop
        closing = on_stop(stop, cfg.queue.close)
        reflector_thread = threading.Thread(target=reflector.run, args=(stop,),
                                            name=f"reflector-{description}", daemon=True)
        reflector_thread.start()
        try:
            self._process_loop(stop)
        finally:
            reflector_thread.join()
            closing.cancel()

    def _process_loop(self, stop: threading.Event) -> None:
        cfg = self.config

        def requeuing(obj: Any, is_in_initial_list: bool) -> None:
            try:
                cfg.process(obj, is_in_initial_list)
            except Exception as err:  # the queue puts the item back (Go AddIfNotPresent)
                raise RequeueError(err) from err

        # without retries an error goes up as it is: the process function itself, a call
        # less on every item
        process = requeuing if cfg.retry_on_error else cfg.process

        pop_batch = getattr(cfg.queue, "pop_batch", None)
        if (cfg.process_batch is not None and callable(pop_batch)
                and feature_gates().enabled(IN_ORDER_INFORMERS_BATCH_PROCESS)):
            step, what = functools.partial(pop_batch, cfg.process_batch), "a batch"
        else:
            step, what = functools.partial(cfg.queue.pop, process), "an item"
        while not stop.is_set():
            try:
                step()
            except FIFOClosedError:
                return
            except Exception as err:
                handle_error(f"error processing {what} from the queue: {err}")

    def has_synced(self) -> bool:
        return self.config.queue.has_synced()

    def last_sync_resource_version(self) -> str:
        with self._lock:
            return "" if self._reflector is None else self._reflector.last_sync_resource_version()

    def reconnect(self, reason: str, *, relist: bool = False) -> None:
        """Ask the running reflector to re-establish its watch, or with ``relist`` to
        fill the cache again (:meth:`~client_cache.reflector.Reflector.reconnect`);
        nothing before ``run``."""
        with self._lock:
            reflector = self._reflector
        if reflector is not None:
            reflector.reconnect(reason, relist=relist)


def new_controller(config: Config) -> Controller:
    """A controller for ``config`` (Go ``cache.New``)."""
    return _Controller(config)


def _never_held(client_state: Store, tombstone: DeletedFinalStateUnknown) -> bool:
    """Whether the store does not hold the tombstone's key: the deletion of an object it
    never cached (one that did not fit the informer's class, whose DELETED the reflector
    passes on as a tombstone). A port choice: such a delete reaches no handler, with a
    RealFIFO as with a DeltaFIFO, which drops it for want of a known key; Go's RealFIFO
    consumer calls ``OnDelete`` all the same."""
    _, exists = client_state.get_by_key(tombstone.key)
    return not exists


_ALONE = frozenset({DeltaType.REPLACED_ALL, DeltaType.SYNC_ALL, DeltaType.BOOKMARK})
"""The delta types a RealFIFO pops alone, which a batch hands to :func:`process_deltas`."""


def process_deltas(
    handler: ResourceEventHandler[Any], client_state: Store, deltas: Deltas,
    is_in_initial_list: bool,
) -> None:
    """Apply ``deltas`` (oldest first) to ``client_state`` and notify ``handler`` (Go
    ``processDeltas``); a store error stops at that delta and propagates. A store with a
    ``swap`` method (the stores of :func:`~client_cache.store.new_store` and
    :func:`~client_cache.store.new_indexer`, so an informer's indexer) has
    each added or updated object stored and the one it replaces returned in one call;
    any other is read with ``get`` and written with ``add`` or ``update``, as in Go."""
    swap = getattr(client_state, "swap", None)
    for d in deltas:
        obj = d.object
        if d.type is DeltaType.REPLACED_ALL:
            replace_all(handler, client_state, obj, is_in_initial_list)
            continue
        if d.type is DeltaType.SYNC_ALL:  # a resync: every stored object, as an update
            if not isinstance(obj, SyncAllInfo):
                raise ClientCacheError(f"SyncAll did not contain SyncAllInfo: "
                                       f"{type(obj).__name__}")
            for stored in client_state.list():
                handler.on_update(stored, stored)
            continue
        if d.type is DeltaType.BOOKMARK:
            if not isinstance(obj, BookmarkInfo):
                raise ClientCacheError(f"bookmark delta did not contain BookmarkInfo: "
                                       f"{type(obj).__name__}")
            bookmark = getattr(client_state, "bookmark", None)
            if bookmark is not None:
                bookmark(obj.resource_version)
            continue
        if d.type is DeltaType.DELETED:
            if type(obj) is DeletedFinalStateUnknown and _never_held(client_state, obj):
                continue
            client_state.delete(obj)
            handler.on_delete(obj)
            continue
        if swap is not None:
            old, exists = swap(obj)
        else:
            old, exists = client_state.get(obj)
            if exists:
                client_state.update(obj)
            else:
                client_state.add(obj)
        if exists:
            handler.on_update(old, obj)
        else:
            handler.on_add(obj, is_in_initial_list)


def process_deltas_in_batch(
    handler: ResourceEventHandler[Any], client_state: Store, deltas: list[Delta],
    is_in_initial_list: bool,
) -> None:
    """Apply a batch of deltas with distinct keys (oldest first, as
    :meth:`~client_cache.the_real_fifo.RealFIFO.pop_batch` pops them) to ``client_state``
    and notify ``handler`` (Go ``processDeltasInBatch``).

    A :class:`~client_cache.transaction.TransactionStore` (a store with a ``transaction``
    method; an informer's indexer is one) gets the whole batch as one transaction, and
    the handler is called afterwards, in order, for each write that was applied; when some
    failed, the error names them (``ClientCacheError``, from the store's
    ``TransactionError``). Any other store gets each delta through :func:`process_deltas`,
    every failure collected into one error.
    A batch may hold Added, Updated, Replaced, Sync and Deleted deltas (a ``ReplacedAll``,
    ``SyncAll`` or ``Bookmark``, always popped alone, goes to :func:`process_deltas`, as
    Go's ``processSingle``); another type raises before anything is applied."""
    if len(deltas) == 1 and deltas[0].type in _ALONE:
        process_deltas(handler, client_state, Deltas(deltas), is_in_initial_list)
        return
    # what isinstance(client_state, TransactionStore) checks, at 0.07 us against 4.3 us: a
    # RealFIFO informer pays it per batch, which is per event when events come one by one
    transaction = getattr(client_state, "transaction", None)
    if not callable(transaction):
        errors: list[str] = []
        for d in deltas:
            try:
                process_deltas(handler, client_state, Deltas((d,)), is_in_initial_list)
            except Exception as err:
                errors.append(str(err))
        if errors:
            raise ClientCacheError(f"unexpected error when handling deltas: {errors}")
        return
    swap = getattr(client_state, "swap_transaction", None)
    if not callable(swap):  # a TransactionStore of the caller's own
        swap = _reads_then_transaction(client_state, transaction)
    _apply_batch(swap, handler, deltas, is_in_initial_list,
                 lambda obj: _never_held(client_state, obj))


def _reads_then_transaction(
        client_state: Store, transaction: Callable[..., None],
) -> Callable[..., tuple[list[tuple[Any, bool]], TransactionError | None]]:
    """A ``swap_transaction`` for a store that has only ``transaction`` (Go's
    ``TransactionStore``): each written object's current one read first, then the
    transaction, each write an Add or an Update as the read found it, as Go's
    ``processDeltasInBatch`` does."""
    def swap(*txns: Transaction) -> tuple[list[tuple[Any, bool]], TransactionError | None]:
        previous: list[tuple[Any, bool]] = []
        typed: list[Transaction] = []
        for txn in txns:
            if txn.type is TransactionType.DELETE:
                previous.append((None, False))
                typed.append(txn)
                continue
            try:
                old, exists = client_state.get(txn.object)
            except Exception:  # the transaction reports the key error for this object
                old, exists = None, False
            previous.append((old, exists))
            typed.append(Transaction(txn.object, TransactionType.UPDATE if exists
                                     else TransactionType.ADD))
        try:
            transaction(*typed)
        except TransactionError as err:
            return previous, err
        return previous, None
    return swap


_BATCH_WRITES = frozenset({DeltaType.ADDED, DeltaType.UPDATED, DeltaType.REPLACED,
                           DeltaType.SYNC})


def _apply_batch(swap: Callable[..., tuple[list[tuple[Any, bool]], TransactionError | None]],
                 handler: ResourceEventHandler[Any], deltas: list[Delta],
                 is_in_initial_list: bool, never_held: Callable[[Any], bool]) -> None:
    """:func:`process_deltas_in_batch` through ``swap`` (a store's ``swap_transaction``:
    the writes and the reads of what they replace in one step): the transaction, then
    the notifications, in order, of those applied (an update when the key held an
    object, else an add)."""
    txns: list[Transaction] = []
    for d in deltas:
        obj = d.object
        if d.type is DeltaType.DELETED:
            if type(obj) is DeletedFinalStateUnknown and never_held(obj):
                continue
            txns.append(Transaction(obj, TransactionType.DELETE))
        elif d.type in _BATCH_WRITES:
            txns.append(Transaction(obj, TransactionType.UPDATE))
        else:
            raise ClientCacheError(f"Delta type {d.type.value} is not supported in batch "
                                   "processing")
    previous, error = swap(*txns)
    applied = range(len(txns)) if error is None else error.successful_indices
    for i in applied:
        txn, (old, existed) = txns[i], previous[i]
        obj = txn.object
        if txn.type is TransactionType.DELETE:
            handler.on_delete(obj)
        elif existed:
            handler.on_update(old, obj)
        else:
            handler.on_add(obj, is_in_initial_list)
    if error is not None:
        raise ClientCacheError(
            f"not all items in the batch successfully processed: {error}") from error


def replace_all(handler: ResourceEventHandler[Any], client_state: Store, info: ReplacedAllInfo,
                is_in_initial_list: bool) -> None:
    """Apply a whole relist (a ``ReplacedAll`` delta): swap ``client_state`` to the listed
    objects in one step, then notify ``handler`` as the per-object deltas would have: a
    deletion (with a :class:`~client_cache.store.DeletedFinalStateUnknown`) for each object
    gone, then an update or an add for each listed one (Go ``processReplacedAllInfo``)."""
    old: dict[str, Any] = {}
    for key in client_state.list_keys():
        obj, exists = client_state.get_by_key(key)
        if exists:
            old[key] = obj
    client_state.replace(info.objects, info.resource_version)
    listed = set(info.keys)
    for key, gone in old.items():
        if key not in listed:
            handler.on_delete(DeletedFinalStateUnknown(key, gone))
    for key, obj in zip(info.keys, info.objects, strict=True):
        previous = old.get(key)
        if previous is not None:
            handler.on_update(previous, obj)
        else:
            handler.on_add(obj, is_in_initial_list)


@dataclass
class InformerOptions:
    """Options of :func:`new_informer_with_options` (Go ``InformerOptions``)."""

    lister_watcher: ListerWatcher
    handler: ResourceEventHandler[Any]
    object_type: Any = None
    resync_period: float = 0.0
    min_watch_timeout: float = 0.0
    indexers: Indexers | None = None
    transform: TransformFunc | None = None


def _new_informer(client_state: Store, options: InformerOptions) -> Controller:
    fifo = new_delta_fifo_with_options(DeltaFIFOOptions(
        known_objects=client_state,
        emit_delta_type_replaced=True,
        transformer=options.transform,
    ))

    def process(obj: Any, is_in_initial_list: bool) -> None:
        if not isinstance(obj, Deltas):
            raise TypeError("object given as Process argument is not Deltas")
        process_deltas(options.handler, client_state, obj, is_in_initial_list)

    return new_controller(Config(
        queue=fifo,
        lister_watcher=options.lister_watcher,
        process=process,
        object_type=options.object_type,
        full_resync_period=options.resync_period,
        min_watch_timeout=options.min_watch_timeout,
    ))


def new_informer_with_options(options: InformerOptions) -> tuple[Store, Controller]:
    """A store (an indexer when ``options.indexers`` is given) kept up to date by a
    controller that also notifies ``options.handler`` (Go ``NewInformerWithOptions``)."""
    client_state: Store
    if options.indexers is None:
        client_state = new_store(deletion_handling_meta_namespace_key_func)
    else:
        client_state = new_indexer(deletion_handling_meta_namespace_key_func, options.indexers)
    return client_state, _new_informer(client_state, options)


def new_informer(
    lister_watcher: ListerWatcher, object_type: Any, resync_period: float,
    handler: ResourceEventHandler[Any],
) -> tuple[Store, Controller]:
    """A store and a controller that fills it from ``lister_watcher`` and calls ``handler``
    on every change; run the controller to start (Go ``NewInformer``)."""
    return new_informer_with_options(InformerOptions(
        lister_watcher, handler, object_type, resync_period))


def new_indexer_informer(
    lister_watcher: ListerWatcher, object_type: Any, resync_period: float,
    handler: ResourceEventHandler[Any], indexers: Indexers,
) -> tuple[Indexer, Controller]:
    """Like :func:`new_informer`, with an indexer built from ``indexers`` instead of a plain
    store (Go ``NewIndexerInformer``)."""
    store, controller = new_informer_with_options(InformerOptions(
        lister_watcher, handler, object_type, resync_period, indexers=indexers))
    return store, controller  # type: ignore[return-value]


def new_transforming_informer(
    lister_watcher: ListerWatcher, object_type: Any, resync_period: float,
    handler: ResourceEventHandler[Any], transformer: TransformFunc | None,
) -> tuple[Store, Controller]:
    """Like :func:`new_informer`, with ``transformer`` applied to every object before it is
    stored (Go ``NewTransformingInformer``)."""
    return new_informer_with_options(InformerOptions(
        lister_watcher, handler, object_type, resync_period, transform=transformer))


def new_transforming_indexer_informer(
    lister_watcher: ListerWatcher, object_type: Any, resync_period: float,
    handler: ResourceEventHandler[Any], indexers: Indexers, transformer: TransformFunc | None,
) -> tuple[Indexer, Controller]:
    """Like :func:`new_indexer_informer`, with ``transformer`` applied to every object
    before it is stored (Go ``NewTransformingIndexerInformer``)."""
    store, controller = new_informer_with_options(InformerOptions(
        lister_watcher, handler, object_type, resync_period, indexers=indexers,
        transform=transformer))
    return store, controller  # type: ignore[return-value]
