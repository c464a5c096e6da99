"""An informer with its lister, for one resource (Go ``GenericInformer``): what the
factory's accessors hand out."""

from __future__ import annotations

from client_cache.listers import GenericLister, new_generic_lister
from client_cache.schema import GroupResource, GroupVersionResource
from client_cache.shared_informer import SharedIndexInformer

__all__ = ["GenericInformer"]


class GenericInformer:
    """An informer and a lister for one resource (Go ``GenericInformer``)."""

    def __init__(self, informer: SharedIndexInformer, resource: GroupVersionResource,
                 lister_resource: GroupResource | None = None) -> None:
        self._informer = informer
        self.resource = resource
        self._lister_resource = lister_resource or resource.group_resource()

    def informer(self) -> SharedIndexInformer:
        """The shared informer of this resource (made on first use; Go ``Informer``)."""
        return self._informer

    def lister(self) -> GenericLister:
        """Cached get/list; a missing object raises the API's NotFound error."""
        return new_generic_lister(self._informer.get_indexer(), self._lister_resource)
