"""List and watch functions for the Reflector (Go ``tools/cache/listwatch.go``).

:class:`ListWatch` pairs a list function and a watch function; :class:`ListerWatcher` and
its relatives are the shapes a Reflector takes. The constructors
:func:`new_list_watch_from_client` and :func:`new_filtered_list_watch_from_client` build the
HTTP lister-watcher (:class:`~client_cache.client.lister_watcher.ClientListerWatcher`) on a
``kubernetes.client.ApiClient``: any group/version/resource, built-in or custom,
namespaced or cluster-scoped.

The HTTP half, discovery and the URL helpers this module once also held live in
:mod:`client_cache.client`; their old names here still resolve, with a
``DeprecationWarning``, until the next minor release.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from client_cache.api.fields import Selector as FieldSelector
from client_cache.api.fields import everything as everything_fields
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import Watch
from client_cache.client.lister_watcher import DEFAULT_REQUEST_TIMEOUT, ClientListerWatcher
from client_cache.codec.skip_paths import SkipPath

__all__ = [
    "ListFunc",
    "ListWatch",
    "Lister",
    "ListerWatcher",
    "ListerWatcherWithContext",
    "WatchFunc",
    "Watcher",
    "new_filtered_list_watch_from_client",
    "new_list_watch_from_client",
    "to_lister_watcher_with_context",
]

_MOVED = {
    **dict.fromkeys(("DEFAULT_REQUEST_TIMEOUT", "METADATA_LIST_ACCEPT", "METADATA_WATCH_ACCEPT",
                     "PROTOBUF_ACCEPT", "WATCH_HEADER_TIMEOUT", "ClientListerWatcher"),
                    "client_cache.client.lister_watcher"),
    **dict.fromkeys(("KEEPALIVE_IDLE", "KEEPALIVE_INTERVAL", "KEEPALIVE_PROBES", "keep_alive"),
                    "client_cache.client.transport"),
    **dict.fromkeys(("discover", "resource_kind", "served_resources"),
                    "client_cache.client.discovery"),
    **dict.fromkeys(("request_headers", "resource_path"), "client_cache.client.rest"),
    "LIST_READ_SIZE": "client_cache.codec._list_body",
    "model_decoder": "client_cache.codec._decoding",
}
"""The names this module exported before :mod:`client_cache.client` took them, and where
each lives now."""


def __getattr__(name: str) -> Any:
    """An old name of this module: the object it names now, with a ``DeprecationWarning``
    naming its new module."""
    where = _MOVED.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"client_cache.listwatch.{name} moved to {where}.{name}",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(where), name)



ListFunc = Callable[[ListOptions], Any]
WatchFunc = Callable[[ListOptions], Watch]


@runtime_checkable
class Lister(Protocol):
    """Lists objects (Go ``Lister``); returns a list object (see :mod:`client_cache.api.lists`)."""

    def list(self, options: ListOptions) -> Any:
        """List the resource with ``options``; returns the list object (Go ``List``)."""
        ...


@runtime_checkable
class Watcher(Protocol):
    """Starts watches (Go ``Watcher``)."""

    def watch(self, options: ListOptions) -> Watch:
        """Watch the resource with ``options`` (Go ``Watch``)."""
        ...


@runtime_checkable
class ListerWatcher(Lister, Watcher, Protocol):
    """Both (Go ``ListerWatcher``)."""


@runtime_checkable
class ListerWatcherWithContext(Protocol):
    """A lister-watcher whose requests ``stop`` interrupts (Go
    ``ListerWatcherWithContext``, the stop event playing the context): once ``stop`` is
    set, a request in flight ends at once with
    :class:`~client_cache.errors.StopRequestedError`."""

    def list_with_context(self, stop: threading.Event, options: ListOptions) -> Any:
        """List as ``list`` does; setting ``stop`` interrupts the request (Go
        ``ListWithContext``)."""
        ...

    def watch_with_context(self, stop: threading.Event, options: ListOptions) -> Watch:
        """Watch as ``watch`` does; setting ``stop`` interrupts opening it (Go
        ``WatchWithContext``)."""
        ...


class _IgnoringContext:
    """A plain :class:`ListerWatcher` seen as a :class:`ListerWatcherWithContext`: its
    requests cannot be interrupted, so ``stop`` is only checked before each (Go
    ``listerWatcherWrapper``)."""

    def __init__(self, lister_watcher: ListerWatcher) -> None:
        self.lister_watcher = lister_watcher

    def list_with_context(self, stop: threading.Event, options: ListOptions) -> Any:
        return self.lister_watcher.list(options)

    def watch_with_context(self, stop: threading.Event, options: ListOptions) -> Watch:
        return self.lister_watcher.watch(options)


def to_lister_watcher_with_context(lister_watcher: Any) -> ListerWatcherWithContext:
    """``lister_watcher`` itself when its requests take a stop event, else a wrapper that
    calls its plain ``list``/``watch`` (Go ``ToListerWatcherWithContext``)."""
    if isinstance(lister_watcher, ListerWatcherWithContext):
        return lister_watcher
    return _IgnoringContext(lister_watcher)


@dataclass
class ListWatch:
    """A :class:`ListerWatcher` made of two functions (Go ``ListWatch``).

    ``disable_chunking`` is kept for parity; as in client-go v0.32 nothing reads it (the
    Reflector decides about paging).
    """

    list_func: ListFunc
    watch_func: WatchFunc
    disable_chunking: bool = False
    unsupported_watch_list_semantics: bool = False
    """True when ``watch_func`` ignores ``send_initial_events`` (a fake's watch): a
    reflector then lists even with the ``WatchListClient`` gate on (Go wraps a
    ``ListWatch`` with ``ToListWatcherWithWatchListSemantics`` for that)."""

    def is_watch_list_semantics_unsupported(self) -> bool:
        """``unsupported_watch_list_semantics`` (Go ``IsWatchListSemanticsUnSupported``)."""
        return self.unsupported_watch_list_semantics

    def list(self, options: ListOptions) -> Any:
        """Call ``list_func`` with ``options`` (Go ``List``)."""
        return self.list_func(options)

    def watch(self, options: ListOptions) -> Watch:
        """Call ``watch_func`` with ``options`` (Go ``Watch``)."""
        return self.watch_func(options)



def new_filtered_list_watch_from_client(
    api_client: Any,
    gvr: GroupVersionResource,
    namespace: str = "",
    options_modifier: Callable[[ListOptions], None] | None = None,
    *,
    object_type: Any = None,
    idle_timeout: float | None = None,
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
    metadata_only: bool = False,
    protobuf: bool = False,
    skip_paths: Iterable[SkipPath] | None = None,
) -> ClientListerWatcher:
    """A ListerWatcher for ``gvr`` in ``namespace`` (``""``: all namespaces, or a
    cluster-scoped resource); ``options_modifier`` edits the options of every request (Go
    ``NewFilteredListWatchFromClient``). See :class:`ClientListerWatcher` for the timeouts,
    ``metadata_only``, ``protobuf`` and ``skip_paths``."""
    return ClientListerWatcher(
        api_client,
        gvr,
        namespace,
        options_modifier,
        object_type=object_type,
        idle_timeout=idle_timeout,
        request_timeout=request_timeout,
        metadata_only=metadata_only,
        protobuf=protobuf,
        skip_paths=skip_paths,
    )


def new_list_watch_from_client(
    api_client: Any,
    gvr: GroupVersionResource,
    namespace: str = "",
    field_selector: FieldSelector | None = None,
    *,
    object_type: Any = None,
    idle_timeout: float | None = None,
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
    protobuf: bool = False,
) -> ClientListerWatcher:
    """A ListerWatcher for ``gvr`` filtered by ``field_selector`` (Go
    ``NewListWatchFromClient``); ``protobuf`` as :class:`ClientListerWatcher` takes it."""
    selector = field_selector if field_selector is not None else everything_fields()

    def modifier(options: ListOptions) -> None:
        options.field_selector = str(selector)

    return new_filtered_list_watch_from_client(
        api_client, gvr, namespace, modifier, object_type=object_type,
        idle_timeout=idle_timeout, request_timeout=request_timeout, protobuf=protobuf,
    )
