"""The shared informer factories: full objects (a port of client-go's ``informers``
package) and metadata only (``metadata/metadatainformer``)."""

from client_cache.informers import factory as _factory
from client_cache.informers import metadata as _metadata
from client_cache.informers.factory import *  # noqa: F403
from client_cache.informers.metadata import *  # noqa: F403

__all__ = list(_factory.__all__) + list(_metadata.__all__)
