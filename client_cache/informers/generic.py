"""An informer with its lister, for one resource (Go ``GenericInformer``): what the
factory's accessors hand out."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from client_cache.api.schema import GroupResource, GroupVersionResource
from client_cache.listers import GenericLister, new_generic_lister
from client_cache.shared_informer import SharedIndexInformer

__all__ = ["GenericInformer"]

T = TypeVar("T")


class GenericInformer(Generic[T]):
    """An informer and a lister for one resource (Go ``GenericInformer``).

    Generic in the cached object type: the typed accessors hand out
    ``GenericInformer[V1Pod]`` with ``models=True`` and ``GenericInformer[WireObject]``
    (wire dicts) otherwise, so ``lister().get(...)`` and the handlers added to
    ``informer()`` are checked by ``mypy``."""

    def __init__(self, informer: SharedIndexInformer[Any], resource: GroupVersionResource,
                 lister_resource: GroupResource | None = None) -> None:
        self._informer = informer
        self.resource = resource
        self._lister_resource = lister_resource or resource.group_resource()

    def informer(self) -> SharedIndexInformer[T]:
        """The shared informer of this resource (made on first use; Go ``Informer``)."""
        return self._informer

    def lister(self) -> GenericLister[T]:
        """Cached get/list; a missing object raises the API's NotFound error."""
        return new_generic_lister(self._informer.get_indexer(), self._lister_resource)
