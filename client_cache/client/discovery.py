"""What a server serves, by discovery (Go ``k8s.io/client-go/discovery``, the part the
library needs): the resources of one group version, a resource's kind and scope.

A request goes on the ``kubernetes`` client's own connections; given a ``stop`` event it
goes through a :class:`~client_cache.client.transport.Transport` of its own, which a stop
abandons at once by shutting its connection down.
"""

from __future__ import annotations

import threading
from typing import Any

from client_cache.api.errors import from_status
from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import request_headers
from client_cache.client.transport import Transport
from client_cache.codec import _wire as wire
from client_cache.util.rest_metrics import measure

__all__ = ["DISCOVERY_TIMEOUT", "discover", "resource_kind", "served_resources"]

DISCOVERY_TIMEOUT = 30.0
"""How long one discovery request may take by default (seconds)."""


def discover(api_client: Any, group: str, version: str, *,
             timeout: float = DISCOVERY_TIMEOUT,
             stop: threading.Event | None = None) -> list[dict[str, Any]]:
    """The ``resources`` of the server's discovery document for ``group``/``version``
    (``GET /api/v1`` or ``/apis/<group>/<version>``); empty when the server does not
    serve that group version (404). Other failures raise (an
    :class:`~client_cache.errors.ApiStatusError`, or urllib3's network errors).
    ``timeout`` bounds the request; ``stop`` (a runtime's stop) abandons it at once by
    shutting its connection down (:class:`~client_cache.errors.StopRequestedError`)."""
    host = str(api_client.configuration.host).rstrip("/")
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    if stop is not None:
        transport = Transport(api_client)
        try:
            response, data = transport.get(host + path, request_headers(api_client),
                                           timeout, stop, read_body=True)
        finally:
            transport.close()
    else:
        pool = api_client.rest_client.pool_manager
        response = measure("GET", host + path, lambda: pool.request(
            "GET", host + path, headers=request_headers(api_client), timeout=timeout,
            retries=False))
        data = response.data
    if response.status == 404:
        return []
    if not 200 <= response.status < 300:
        raise from_status({"code": response.status, "message": f"discovery of {path} failed"})
    body = wire.loads(data)
    return [r for r in body.get("resources") or [] if isinstance(r, dict)]


def served_resources(api_client: Any, group: str, version: str) -> set[str]:
    """The resources (plural names, subresources left out) the server serves in
    ``group``/``version``, by discovery (:func:`discover`)."""
    return {r["name"] for r in discover(api_client, group, version)
            if "/" not in r.get("name", "/")}


def resource_kind(api_client: Any, gvr: GroupVersionResource) -> tuple[str, bool] | None:
    """``(kind, namespaced)`` of ``gvr`` by discovery (Go: a RESTMapper lookup); None
    when the server does not serve it."""
    for r in discover(api_client, gvr.group, gvr.version):
        if r.get("name") == gvr.resource:
            return str(r.get("kind", "")), bool(r.get("namespaced", True))
    return None
