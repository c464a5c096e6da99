"""A factory that shares one informer per resource (Go ``informers/factory.go``).

Every part of a process that asks the factory for, say, pods gets the same
:class:`~client_cache.shared_informer.SharedIndexInformer`, so the cluster is listed and
watched once. Informers are keyed by group/version/resource (Go keys them by Go type).

::

    factory = new_shared_informer_factory(api_client, 30.0)
    pods = factory.core().v1().pods()          # dicts; pods(object_type=V1Pod) for models
    pods.informer().add_event_handler(handler)
    factory.start(stop)
    factory.wait_for_cache_sync(stop)          # {GroupVersionResource: synced}
    pods.lister().by_namespace("default").get("web-0")

Options, as upstream: a namespace, a function that edits every request's
:class:`~client_cache.api.lists.ListOptions` (``tweak_list_options``), per-resource resync
periods and a transform applied by every informer. Every informer gets a namespace index.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.discovery import served_resources
from client_cache.client.lister_watcher import DEFAULT_REQUEST_TIMEOUT
from client_cache.codec.skip_paths import SkipPath, skip_tree
from client_cache.codec.structs import is_struct_type
from client_cache.delta_fifo import TransformFunc
from client_cache.errors import CacheSyncTimeoutError, ClientCacheError
from client_cache.identity import InformerName
from client_cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from client_cache.informers.generic import GenericInformer
from client_cache.informers.typed import TypedGroups
from client_cache.listwatch import ListerWatcher, new_filtered_list_watch_from_client
from client_cache.reflector_status import InformerHealth, display_resource
from client_cache.shared_informer import (
    SharedIndexInformer,
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
    unsynced_details,
    wait_for_cache_sync,
)
from client_cache.util.rest_metrics import instrument_client

__all__ = [
    "GenericInformer",
    "NewInformerFunc",
    "SharedInformerFactory",
    "SharedInformerFactoryOptions",
    "TweakListOptionsFunc",
    "UnknownResourceError",
    "new_filtered_shared_informer_factory",
    "new_shared_informer_factory",
    "new_shared_informer_factory_with_options",
]

_log = logging.getLogger(__name__)

_R = TypeVar("_R")

TweakListOptionsFunc = Callable[[ListOptions], None]
NewInformerFunc = Callable[[Any, float], SharedIndexInformer[Any]]
"""``new_func(api_client, resync_period)`` builds an informer (Go ``NewInformerFunc``)."""


@dataclass
class SharedInformerFactoryOptions:
    """Go's ``SharedInformerOption``\\ s as one dataclass, plus ``watch_idle_timeout`` (a
    port addition): seconds of silence (no event, no bookmark) after which an informer's
    watch is abandoned and re-established from its resourceVersion, without a relist
    (None: the watch's server timeout plus one minute); ``request_timeout`` (a port
    addition): how long a LIST waits for data and a WATCH for its headers (Go's client
    timeout; default 60 s, the server's own request timeout); ``use_real_fifo`` and
    ``atomic_relist`` (port additions): every informer's queue, None following client-go
    v0.36's gates (an atomic in-order queue by default; ``use_real_fifo=False`` is the
    v0.32 DeltaFIFO; see :class:`~client_cache.shared_informer.SharedIndexInformerOptions`);
    ``use_watch_list`` (a port addition): every informer's initial-sync path, watch-list
    (True) or LIST (False), None following the ``WatchListClient`` gate as client-go does;
    ``protobuf``: ask the server for protobuf, as client-go's typed clients do
    (``rest.Config.ContentType``), for the built-in kinds (decoded into the same objects
    as their JSON: :mod:`client_cache.codec.protobuf`; custom resources and struct mode stay
    JSON). False by default: the ``kubernetes`` package's clients speak JSON, and so does
    this one unless told otherwise. ``skip_paths`` (a port addition): members left out of
    every dict and model object while decoding it (:mod:`client_cache.codec.skip_paths`, e.g.
    ``("metadata.managedFields",)``: what a transform dropping them would give, without
    ever building them); struct informers leave out what their class leaves out
    (:func:`client_cache.codec.structs.struct_type`'s ``skip``) and are not given these.
    ``informer_name`` (Go ``WithInformerName``, v0.36): a name from
    :func:`~client_cache.identity.new_informer_name`; each informer the factory builds
    gets the identity ``informer_name.with_resource(gvr)`` (client-go's informer metrics
    and log fields), and :meth:`SharedInformerFactory.shutdown` releases the name.
    ``shard_selector`` (KEP-5866, alpha in v1.36: the server needs the
    ``ShardedListAndWatch`` gate): every informer lists and watches only the objects of
    these hash ranges (:mod:`client_cache.api.sharding`), set after
    ``tweak_list_options``; a server without the gate ignores it and sends everything."""

    namespace: str = ""
    tweak_list_options: TweakListOptionsFunc | None = None
    custom_resync: dict[GroupVersionResource, float] = field(default_factory=dict)
    transform: TransformFunc | None = None
    watch_idle_timeout: float | None = None
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT
    atomic_relist: bool | None = None
    use_watch_list: bool | None = None
    use_real_fifo: bool | None = None
    protobuf: bool = False
    skip_paths: tuple[SkipPath, ...] = ()
    informer_name: InformerName | None = None
    shard_selector: str = ""


def _with_shard_selector(tweak: TweakListOptionsFunc | None,
                         selector: str) -> TweakListOptionsFunc | None:
    """``tweak``, then the shard selector set (``tweak`` itself without one)."""
    if not selector:
        return tweak

    def sharded(options: ListOptions) -> None:
        if tweak is not None:
            tweak(options)
        options.shard_selector = selector
    return sharded


class UnknownResourceError(ClientCacheError, LookupError):
    """:meth:`SharedInformerFactory.for_resource` was asked for a resource the server does
    not serve (Go: ``no informer found for ...``)."""

    def __init__(self, gvr: GroupVersionResource, served: list[str] | None = None) -> None:
        self.gvr = gvr
        self.served = served
        """The resources the server serves in the group version, when it serves it."""
        text = f"no informer found for {gvr.label()}: the server does not serve it"
        if served:
            text += f" (it serves {gvr.group_version()}: {', '.join(sorted(served))})"
        super().__init__(text)


class SharedInformerFactory(TypedGroups):
    """See the module documentation. Build with :func:`new_shared_informer_factory`."""

    #: Ask the server for metadata-only objects (the metadata factory's setting).
    metadata_only = False

    def __init__(self, api_client: Any, default_resync: float,
                 options: SharedInformerFactoryOptions) -> None:
        self.api_client = api_client
        instrument_client(api_client)  # the application's calls on it count in rest_client_*
        self.default_resync = default_resync
        self.namespace = options.namespace
        self.tweak_list_options = _with_shard_selector(options.tweak_list_options,
                                                       options.shard_selector)
        self.custom_resync = dict(options.custom_resync)
        self.transform = options.transform
        self.watch_idle_timeout = options.watch_idle_timeout
        self.request_timeout = options.request_timeout
        self.atomic_relist = options.atomic_relist
        self.use_watch_list = options.use_watch_list
        self.use_real_fifo = options.use_real_fifo
        self.protobuf = options.protobuf
        self.skip_paths = tuple(options.skip_paths)
        self.informer_name = options.informer_name
        """The factory's :class:`~client_cache.identity.InformerName`, or None (Go
        ``InformerName()``)."""
        skip_tree(self.skip_paths)  # a path that is not one is refused here, not at start
        self._lock = threading.Lock()
        self._informers: dict[GroupVersionResource, SharedIndexInformer[Any]] = {}
        self._object_types: dict[GroupVersionResource, Any] = {}
        self._started: set[GroupVersionResource] = set()
        self._threads: list[threading.Thread] = []
        self._shutting_down = False

    def default_informer(self, gvr: GroupVersionResource, object_type: Any,
                         expected_type: Any) -> NewInformerFunc:
        """How the factory builds ``gvr``'s informer when the caller gives no ``new_func``:
        a list-watch from the client with the factory's options, a namespace index (the
        hook a subclass overrides, as the metadata factory does)."""
        def build(api_client: Any, resync: float) -> SharedIndexInformer[Any]:
            lw: ListerWatcher = new_filtered_list_watch_from_client(
                api_client, gvr, self.namespace, self.tweak_list_options,
                object_type=object_type, request_timeout=self.request_timeout,
                metadata_only=self.metadata_only, protobuf=self.protobuf,
                skip_paths=None if is_struct_type(object_type) else self.skip_paths)
            return new_shared_index_informer_with_options(
                lw, expected_type, SharedIndexInformerOptions(
                    resync_period=resync,
                    indexers={NAMESPACE_INDEX: meta_namespace_index_func},
                    object_description=gvr.label(),
                    watch_idle_timeout=self.watch_idle_timeout,
                    atomic_relist=self.atomic_relist,
                    use_watch_list=self.use_watch_list,
                    use_real_fifo=self.use_real_fifo,
                    identifier=None if self.informer_name is None
                    else self.informer_name.with_resource(gvr)))
        return build

    def filtered(self, tweak: TweakListOptionsFunc) -> SharedInformerFactory:
        """A new factory on the same client with the same options whose informers' list
        and watch options are also edited by ``tweak`` (after this factory's own tweak):
        e.g. a label selector for one resource's informer, leaving this factory's
        informers unfiltered (a port addition; the sharded runtime's label-assigned mode
        lists its primary objects so)."""
        first = self.tweak_list_options

        def both(options: ListOptions) -> None:
            if first is not None:
                first(options)
            tweak(options)

        factory = SharedInformerFactory(self.api_client, self.default_resync,
                                        SharedInformerFactoryOptions(
                                            namespace=self.namespace, tweak_list_options=both,
                                            custom_resync=dict(self.custom_resync),
                                            transform=self.transform,
                                            watch_idle_timeout=self.watch_idle_timeout,
                                            request_timeout=self.request_timeout,
                                            atomic_relist=self.atomic_relist,
                                            use_watch_list=self.use_watch_list,
                                            use_real_fifo=self.use_real_fifo,
                                            protobuf=self.protobuf,
                                            skip_paths=self.skip_paths,
                                            informer_name=self.informer_name))
        factory.metadata_only = self.metadata_only
        return factory

    def discard(self, gvr: GroupVersionResource) -> bool:
        """Forget the informer of ``gvr`` if it was never started, so :meth:`start` does
        not start it; True when it was discarded, False when there is none or it runs
        (a port addition: the sharded runtime's label mode lists its primary objects
        through a filtered informer of its own, and drops the unfiltered one)."""
        with self._lock:
            if gvr in self._started or gvr not in self._informers:
                return False
            del self._informers[gvr]
            self._object_types.pop(gvr, None)
            return True

    def object_type_of(self, gvr: GroupVersionResource) -> Any:
        """The model class or struct type the informer for ``gvr`` builds objects as
        (None: wire dicts, or no informer yet)."""
        with self._lock:
            return self._object_types.get(gvr)

    def informer_for(
        self, gvr: GroupVersionResource, new_func: NewInformerFunc | None = None,
        object_type: Any = None, expected_type: Any = None,
    ) -> SharedIndexInformer[Any]:
        """The informer for ``gvr``, created on first request (Go ``InformerFor``); a later
        request gets the same informer whatever ``new_func`` it gives.

        ``object_type`` is the model class objects are built as (None: wire dicts);
        ``expected_type`` is what its reflector checks watch objects against (a class, or
        an example dict carrying ``apiVersion`` and ``kind``; default ``object_type``).
        A factory holds one informer per resource (Go: per object type, so Go never
        meets this): asking again with another ``object_type`` (models where the
        informer has wire dicts, or the reverse) raises :class:`ClientCacheError`
        instead of silently handing out objects of the first kind; use a second
        factory for the other mode."""
        with self._lock:
            informer = self._informers.get(gvr)
            if informer is not None:
                first = self._object_types.get(gvr)
                if new_func is None and object_type is not first:
                    raise ClientCacheError(
                        f"the factory's {gvr.label()} informer gives "
                        f"{_describe_type(first)}, not {_describe_type(object_type)}: a "
                        "factory has one informer per resource; use a second factory for "
                        "the other object mode")
                return informer
            resync = self.custom_resync.get(gvr, self.default_resync)
            build = new_func or self.default_informer(
                gvr, object_type, object_type if expected_type is None else expected_type)
            informer = build(self.api_client, resync)
            informer.set_transform(self.transform)
            self._informers[gvr] = informer
            self._object_types[gvr] = object_type
            return informer

    @overload
    def for_resource(self, gvr: type[_R]) -> GenericInformer[_R]: ...

    @overload
    def for_resource(self, gvr: GroupVersionResource,
                     object_type: Any = None) -> GenericInformer[Any]: ...

    def for_resource(self, gvr: GroupVersionResource | type[Any],
                     object_type: Any = None) -> GenericInformer[Any]:
        """A :class:`GenericInformer` for any resource, built-in or custom (Go
        ``ForResource``). Given a custom resource class declared with
        :func:`client_cache.crd.custom_resource` instead of a ``GroupVersionResource``, the
        informer is of that resource, its objects instances of the class decoded straight
        from the server's JSON (struct mode), and typed as such.

        Nothing is asked of the server here (building never blocks on it, as Go's
        factory does not). A resource the server does not serve (yet: a CRD installed
        after the controller started, as kube-rs allows) gets its informer all the same:
        once started, its LIST answers 404, which is logged at WARNING (visible with no
        logging configured) naming the resource and asking whether its
        CustomResourceDefinition is installed; it waits with the reflector's backoff,
        is not synced, so not ready, meanwhile, and fills its cache as soon as the
        resource is served. Call :meth:`check_served` to fail at once instead (Go's typed
        factory returns an error for a resource it has no informer for); a runtime
        ``Controller`` refuses a misspelt built-in resource when it runs."""
        resource = gvr
        if isinstance(gvr, type):
            declared = getattr(gvr, "__custom_resource__", None)
            if declared is None:
                raise TypeError(f"{gvr.__name__} is not a custom resource class (declare it "
                                "with client_cache.crd.custom_resource)")
            resource, object_type = declared.gvr, gvr
        assert isinstance(resource, GroupVersionResource)
        return GenericInformer(self.informer_for(resource, object_type=object_type), resource)

    def check_served(self, gvr: GroupVersionResource) -> None:
        """Raise :class:`UnknownResourceError` when the server does not serve ``gvr`` now
        (asked by discovery); when the server cannot be asked, log a warning and return."""
        try:
            served = served_resources(self.api_client, gvr.group, gvr.version)
        except Exception as err:
            _log.warning("could not check that the server serves %s (%s); returning its "
                         "informer anyway", gvr.label(), type(err).__name__)
            return
        if gvr.resource not in served:
            raise UnknownResourceError(gvr, sorted(served))

    def start(self, stop: threading.Event | None = None) -> threading.Event:
        """Start every informer requested so far and not started yet (non-blocking);
        they run until ``stop`` is set. Without ``stop`` (a port addition) the factory
        makes one; either way it is returned."""
        stop = stop if stop is not None else threading.Event()
        with self._lock:
            if self._shutting_down:
                return stop
            for gvr, informer in self._informers.items():
                if gvr in self._started:
                    continue
                thread = threading.Thread(target=informer.run, args=(stop,),
                                          name=f"informer-{gvr.label()}", daemon=True)
                thread.start()
                self._threads.append(thread)
                self._started.add(gvr)
        return stop

    @contextmanager
    def running(self, timeout: float | None = 60.0, *, stop: threading.Event | None = None,
                shutdown_timeout: float = 5.0) -> Iterator[threading.Event]:
        """Start the informers requested so far, wait until they have synced and hand out
        their stop event; at the end of the block set it and wait for every informer to
        end (a port addition)::

            pods = factory.core().v1().pods()
            with factory.running(timeout=30) as stop:
                ...                      # listers answer from synced caches

        A sync that takes longer than ``timeout`` seconds (None: no limit) raises
        :class:`~client_cache.errors.CacheSyncTimeoutError` naming what did not sync (the
        informers are stopped first). Informers still alive ``shutdown_timeout`` seconds
        after the block are logged at ERROR (see :meth:`shutdown`). Informers requested
        inside the block start with a further :meth:`start`. The factory is shut down
        afterwards (Go: no restart after ``Shutdown``)."""
        stop = self.start(stop)
        try:
            self.wait_for_cache_sync(stop, timeout=timeout)
            yield stop
        finally:
            stop.set()
            self.shutdown(shutdown_timeout)

    def shutdown(self, timeout: float | None = None) -> list[str]:
        """Refuse further starts and wait for every started informer to end (their stop
        events must be set by the caller; Go ``Shutdown``). Idempotent.

        All informers are waited for together: ``timeout`` bounds the whole call, not each
        informer. Returns the names of the threads still alive when it gave up (an empty
        list when everything ended): informer threads, and the handler threads of stopped
        informers still blocked in a handler (each informer waits a second for those);
        logs them in one WARNING. Go's ``Shutdown`` blocks without a limit, which is
        ``timeout=None`` here. The factory's ``informer_name`` is released, as Go's."""
        with self._lock:
            self._shutting_down = True
            threads = list(self._threads)
            informers = [self._informers[gvr] for gvr in self._started]
        if self.informer_name is not None:
            self.informer_name.release()
        deadline = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())
        for thread in threads:
            thread.join(left())
        handlers = [t for informer in informers for t in informer.stuck_handlers]
        for thread in handlers:
            thread.join(left())
        alive = [t.name for t in (*threads, *handlers) if t.is_alive()]
        if alive:
            _log.warning("still running %s s after shutdown began (a handler blocked in "
                         "user code keeps its thread): %s",
                         "?" if timeout is None else f"{timeout:.1f}", ", ".join(alive))
        return alive

    def wait_for_cache_sync(self, stop: threading.Event, timeout: float | None = None,
                            ) -> dict[GroupVersionResource, bool]:
        """Wait for every started informer; returns whether each synced before ``stop``.
        ``timeout`` (seconds, for all of them together; a port addition): past it,
        :class:`~client_cache.errors.CacheSyncTimeoutError` names every resource not
        synced, with its last list/watch error."""
        with self._lock:
            started = {gvr: self._informers[gvr] for gvr in self._started}
        deadline = None if timeout is None else time.monotonic() + timeout
        synced: dict[GroupVersionResource, bool] = {}
        for gvr, informer in started.items():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                synced[gvr] = wait_for_cache_sync(stop, informer.has_synced, timeout=left)
            except CacheSyncTimeoutError:
                late = [i.has_synced for i in started.values() if not i.has_synced()]
                raise CacheSyncTimeoutError(timeout or 0.0, unsynced_details(late)) from None
        return synced

    def started_informers(self) -> list[SharedIndexInformer[Any]]:
        """The informers :meth:`start` has started, in the order they were started (a port
        addition: what :func:`client_cache.aio.wait_for_cache_sync_async` waits for when
        it is given the factory)."""
        with self._lock:
            return [self._informers[gvr] for gvr in self._started]

    def not_ready(self) -> list[str]:
        """The resources (as people write them) of every informer requested from this
        factory that has not started or has not synced yet: a readiness probe passes
        only when this is empty (a port addition)."""
        with self._lock:
            informers = dict(self._informers)
            started = set(self._started)
        waiting = []
        for gvr, informer in informers.items():
            if gvr not in started:
                waiting.append(f"{display_resource(gvr.label())} (not started)")
            elif not informer.has_synced():
                waiting.append(display_resource(gvr.label()))
        return waiting

    def health(self) -> dict[GroupVersionResource, InformerHealth]:
        """Each started informer's :meth:`~SharedIndexInformer.health` (port addition)."""
        with self._lock:
            started = {gvr: self._informers[gvr] for gvr in self._started}
        return {gvr: informer.health() for gvr, informer in started.items()}


def _describe_type(object_type: Any) -> str:
    return "wire dicts" if object_type is None else getattr(object_type, "__name__",
                                                              repr(object_type))


def new_shared_informer_factory_with_options(
    api_client: Any, default_resync: float, options: SharedInformerFactoryOptions | None = None
) -> SharedInformerFactory:
    """A factory of shared informers on ``api_client`` with ``options`` (namespace, list
    tweaks, transform, custom resyncs); ``default_resync`` seconds between resyncs, 0 for
    none (Go ``NewSharedInformerFactoryWithOptions``)."""
    return SharedInformerFactory(api_client, default_resync,
                                 options or SharedInformerFactoryOptions())


def new_shared_informer_factory(api_client: Any, default_resync: float) -> SharedInformerFactory:
    """Go ``NewSharedInformerFactory``: all namespaces, no tweaks."""
    return new_shared_informer_factory_with_options(api_client, default_resync)


def new_filtered_shared_informer_factory(
    api_client: Any, default_resync: float, namespace: str,
    tweak_list_options: TweakListOptionsFunc | None,
) -> SharedInformerFactory:
    """Go ``NewFilteredSharedInformerFactory`` (deprecated there)."""
    return new_shared_informer_factory_with_options(
        api_client, default_resync,
        SharedInformerFactoryOptions(namespace=namespace, tweak_list_options=tweak_list_options))
