"""The shared informer factory (a port of client-go's ``informers`` package)."""

from client_cache.informers.factory import (
    GenericInformer,
    NewInformerFunc,
    SharedInformerFactory,
    SharedInformerFactoryOptions,
    TweakListOptionsFunc,
    new_filtered_shared_informer_factory,
    new_shared_informer_factory,
    new_shared_informer_factory_with_options,
)

__all__ = [
    "GenericInformer",
    "NewInformerFunc",
    "SharedInformerFactory",
    "SharedInformerFactoryOptions",
    "TweakListOptionsFunc",
    "new_filtered_shared_informer_factory",
    "new_shared_informer_factory",
    "new_shared_informer_factory_with_options",
]
