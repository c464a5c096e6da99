"""Cached Get/List over a store (Go ``tools/cache/listers.go``).

:func:`list_all` and :func:`list_all_by_namespace` filter a store by label selector;
:class:`GenericLister` wraps an indexer for one resource and raises the API's NotFound
error (:class:`~client_cache.errors.ApiStatusError`, code 404) for a missing name, so code
that handles a live ``GET`` handles a cached one the same way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from client_cache.api import meta
from client_cache.api.labels import Selector, everything
from client_cache.api.schema import GroupResource
from client_cache.errors import IndexNotFoundError, new_not_found
from client_cache.field_index import list_by_field
from client_cache.index import NAMESPACE_INDEX, Indexer
from client_cache.store import Store

__all__ = [
    "NAMESPACE_ALL",
    "AppendFunc",
    "GenericLister",
    "GenericNamespaceLister",
    "list_all",
    "list_all_by_namespace",
    "new_generic_lister",
]

_log = logging.getLogger(__name__)

# Aliases so that annotations inside classes with a ``list`` method mean the builtin.
_Objects = list[Any]
_ListOf = list  # ``list`` inside the lister classes is their method
T = TypeVar("T")

AppendFunc = Callable[[Any], None]
"""Receives each selected object (Go ``AppendFunc``)."""

NAMESPACE_ALL = ""
"""The namespace value meaning "all namespaces" (Go ``metav1.NamespaceAll``)."""


def _append_matching(objects: list[Any], selector: Selector, append_fn: AppendFunc) -> None:
    if selector.empty():
        for obj in objects:
            append_fn(obj)
        return
    matches, get_labels = selector.matches, meta.get_labels
    for obj in objects:
        if matches(get_labels(obj)):
            append_fn(obj)


def list_all(store: Store, selector: Selector, append_fn: AppendFunc) -> None:
    """Call ``append_fn`` for every object in ``store`` whose labels match ``selector``.

    An empty selector (everything) appends every object without reading labels; a selector
    that matches nothing returns at once (the client-go v0.34 short cut). An object without
    metadata raises :class:`~client_cache.errors.MetaAccessError` when labels must be read.
    """
    if selector.matches_nothing():
        return
    _append_matching(store.list(), selector, append_fn)


def list_all_by_namespace(
    indexer: Indexer, namespace: str, selector: Selector, append_fn: AppendFunc
) -> None:
    """Like :func:`list_all`, restricted to ``namespace`` (``""`` means all namespaces).

    Uses the :data:`~client_cache.index.NAMESPACE_INDEX` index when the indexer has one
    (looked up by value with ``by_index``, so the index function is never run on a fake
    object); without it, logs a warning and scans every object, as client-go does.
    """
    if namespace == NAMESPACE_ALL:
        list_all(indexer, selector, append_fn)
        return
    if selector.matches_nothing():
        return
    try:
        items = indexer.by_index(NAMESPACE_INDEX, namespace)
    except IndexNotFoundError as err:
        _log.warning("can not retrieve list of objects using index : %s", err)
        items = [obj for obj in indexer.list() if meta.get_namespace(obj) == namespace]
    _append_matching(items, selector, append_fn)


@runtime_checkable
class GenericNamespaceLister(Protocol[T]):
    """Lists and gets objects of one resource in one namespace (generic in the cached
    object type, as :class:`GenericLister`)."""

    def list(self, selector: Selector | None = None) -> _ListOf[T]:
        """The cached objects of this namespace that ``selector`` matches (None: all of
        them) (Go ``List``)."""
        ...

    def get(self, name: str) -> T:
        """The cached object ``name`` of this namespace; raises the server's NotFound error
        when absent (Go ``Get``)."""
        ...

    def by_field(self, path: str, value: str) -> _ListOf[T]:
        """The cached objects of this namespace whose field ``path`` (indexed with
        :func:`~client_cache.field_index.index_field`) equals ``value``."""
        ...


@runtime_checkable
class GenericLister(Protocol[T]):
    """Lists and gets objects of one resource (Go ``GenericLister``). Generic in the
    cached object type: ``GenericLister[V1Pod]`` from a typed accessor with
    ``models=True``, ``GenericLister[WireObject]`` for wire dicts."""

    def list(self, selector: Selector | None = None) -> _ListOf[T]:
        """The cached objects that ``selector`` matches (None: all of them) (Go ``List``)."""
        ...

    def get(self, name: str) -> T:
        """The cached object named ``name`` ("namespace/name" for namespaced resources);
        raises the server's NotFound error when absent (Go ``Get``)."""
        ...

    def by_namespace(self, namespace: str) -> GenericNamespaceLister[T]:
        """A lister of one namespace (Go ``ByNamespace``)."""
        ...

    def by_field(self, path: str, value: str) -> _ListOf[T]:
        """The cached objects whose field ``path`` (indexed with
        :func:`~client_cache.field_index.index_field`) equals ``value``."""
        ...

    def wait_until_ready(self, timeout: float | None = None,
                         stop: threading.Event | None = None) -> bool:
        """Wait until the first complete list is stored (True), ``timeout`` seconds pass or
        ``stop`` is set (False)."""
        ...


class _GenericLister:
    __slots__ = ("_indexer", "_resource")

    def __init__(self, indexer: Indexer, resource: GroupResource) -> None:
        self._indexer = indexer
        self._resource = resource

    def list(self, selector: Selector | None = None) -> _Objects:
        """Every cached object matching ``selector`` (None: every object; Go requires a
        selector, ``labels.Everything()``), in all namespaces."""
        out: list[Any] = []
        list_all(self._indexer, everything() if selector is None else selector, out.append)
        return out

    def get(self, name: str) -> Any:
        """The cached object stored under key ``name`` (a cluster-scoped object, or a full
        ``ns/name`` key); raises the NotFound :class:`~client_cache.errors.ApiStatusError`."""
        obj, exists = self._indexer.get_by_key(name)
        if not exists:
            raise new_not_found(self._resource.group, self._resource.resource, name)
        return obj

    def by_namespace(self, namespace: str) -> GenericNamespaceLister[Any]:
        """A lister restricted to ``namespace``."""
        return _GenericNamespaceLister(self._indexer, self._resource, namespace)

    def by_field(self, path: str, value: str) -> _Objects:
        """The cached objects whose field ``path`` holds ``value``, in all namespaces
        (controller-runtime ``MatchingFields``; the field must be indexed with
        :func:`~client_cache.field_index.index_field`)."""
        return list_by_field(self._indexer, path, value)

    def wait_until_ready(self, timeout: float | None = None,
                         stop: threading.Event | None = None) -> bool:
        """Block until the cache behind this lister holds its first complete list (True),
        or ``timeout`` passes or ``stop`` is set (False); kube-rs
        ``Store::wait_until_ready``. An indexer that cannot tell (a custom one without
        ``wait_until_ready``) raises ``TypeError``."""
        wait = getattr(self._indexer, "wait_until_ready", None)
        if wait is None:
            raise TypeError(f"{type(self._indexer).__name__} cannot tell when it is ready")
        return bool(wait(timeout, stop))


class _GenericNamespaceLister:
    __slots__ = ("_indexer", "_namespace", "_resource")

    def __init__(self, indexer: Indexer, resource: GroupResource, namespace: str) -> None:
        self._indexer = indexer
        self._resource = resource
        self._namespace = namespace

    def list(self, selector: Selector | None = None) -> _Objects:
        """Every cached object in the namespace matching ``selector`` (None: all)."""
        out: list[Any] = []
        list_all_by_namespace(self._indexer, self._namespace,
                              everything() if selector is None else selector, out.append)
        return out

    def by_field(self, path: str, value: str) -> _Objects:
        """The cached objects of the namespace whose field ``path`` holds ``value`` (see
        :meth:`_GenericLister.by_field`)."""
        return list_by_field(self._indexer, path, value, self._namespace)

    def get(self, name: str) -> Any:
        """The cached object ``namespace/name``; raises NotFound when absent."""
        obj, exists = self._indexer.get_by_key(f"{self._namespace}/{name}")
        if not exists:
            raise new_not_found(self._resource.group, self._resource.resource, name)
        return obj


def new_generic_lister(indexer: Indexer, resource: GroupResource) -> GenericLister[Any]:
    """A :class:`GenericLister` over ``indexer`` for ``resource`` (Go ``NewGenericLister``).

    ``resource`` names the resource in NotFound errors, e.g. ``GroupResource("", "pod")``
    gives ``pod "x" not found``.
    """
    return _GenericLister(indexer, resource)
