"""The Kubernetes API's own vocabulary, as the cache and the client use it (Go's
``k8s.io/apimachinery``): object metadata (:mod:`~client_cache.api.meta`), group, version,
resource and kind (:mod:`~client_cache.api.schema`), label and field selectors
(:mod:`~client_cache.api.labels`, :mod:`~client_cache.api.fields`), list options and list
objects (:mod:`~client_cache.api.lists`), watch events and watch helpers
(:mod:`~client_cache.api.watch`), and the errors shaped like a ``Status``
(:mod:`~client_cache.api.errors`).

Nothing here talks to a server or caches anything; it imports :mod:`client_cache.util`
only. The names below are the ones a controller's code reaches for most.
"""

from client_cache.api.errors import ApiStatusError
from client_cache.api.labels import SelectorParseError
from client_cache.api.lists import ListOptions
from client_cache.api.meta import MetaAccessError, OwnerReference
from client_cache.api.schema import GroupResource, GroupVersionKind, GroupVersionResource
from client_cache.api.watch import Event, EventType, Watch

__all__ = [
    "ApiStatusError",
    "Event",
    "EventType",
    "GroupResource",
    "GroupVersionKind",
    "GroupVersionResource",
    "ListOptions",
    "MetaAccessError",
    "OwnerReference",
    "SelectorParseError",
    "Watch",
]
