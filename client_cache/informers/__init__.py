"""The shared informer factories: full objects (a port of client-go's ``informers``
package) and metadata only (``metadata/metadatainformer``)."""

from client_cache.informers.factory import (
    GenericInformer,
    NewInformerFunc,
    SharedInformerFactory,
    SharedInformerFactoryOptions,
    TweakListOptionsFunc,
    UnknownResourceError,
    new_filtered_shared_informer_factory,
    new_shared_informer_factory,
    new_shared_informer_factory_with_options,
)
from client_cache.informers.metadata import (
    PARTIAL_OBJECT_METADATA,
    MetadataSharedInformerFactory,
    PartialObjectMetadata,
    new_filtered_metadata_shared_informer_factory,
    new_metadata_lister,
    new_metadata_shared_informer_factory,
)

__all__ = [
    "PARTIAL_OBJECT_METADATA",
    "GenericInformer",
    "MetadataSharedInformerFactory",
    "NewInformerFunc",
    "PartialObjectMetadata",
    "SharedInformerFactory",
    "SharedInformerFactoryOptions",
    "TweakListOptionsFunc",
    "UnknownResourceError",
    "new_filtered_metadata_shared_informer_factory",
    "new_filtered_shared_informer_factory",
    "new_metadata_lister",
    "new_metadata_shared_informer_factory",
    "new_shared_informer_factory",
    "new_shared_informer_factory_with_options",
]
