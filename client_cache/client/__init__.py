"""Talking to an API server (Go's ``k8s.io/client-go`` ``rest``, ``discovery``,
``tools/pager`` and ``rest/watch``), on the official ``kubernetes`` client's configuration
and connections: a transport whose requests a stop abandons
(:mod:`~client_cache.client.transport`), URL paths, headers and JSON writes
(:mod:`~client_cache.client.rest`), discovery (:mod:`~client_cache.client.discovery`), the
list pager (:mod:`~client_cache.client.pager`), the watch stream
(:mod:`~client_cache.client.stream_watcher`) and the HTTP lister-watcher an informer runs
on (:mod:`~client_cache.client.lister_watcher`).

It imports :mod:`client_cache.util`, :mod:`client_cache.codec` and :mod:`client_cache.api`
only; the cache (:mod:`client_cache`) builds on it.
"""

from client_cache.client.discovery import discover, resource_kind, served_resources
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.client.rest import RestError, request_json, resource_path
from client_cache.client.transport import Transport

__all__ = [
    "ClientListerWatcher",
    "RestError",
    "Transport",
    "discover",
    "request_json",
    "resource_kind",
    "resource_path",
    "served_resources",
]
