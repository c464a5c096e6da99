"""JSON requests through a ``kubernetes`` client's REST client, for the few writes the
library makes itself (finalizers, leases, events).

They go through ``api_client.rest_client.request``, so they carry the client's
authentication headers and its throttling
(:func:`~client_cache.util.flowcontrol.throttle_client`), and come back as
``(status, body)``: the decoded JSON body (None when empty or not JSON) and the HTTP
status, also for error statuses, so that callers can treat a 409 as the lost race it is
rather than as an exception. Transport failures raise :class:`RestError` with the cause
chained (never the body, which may quote an object).
"""

from __future__ import annotations

from typing import Any

from client_cache.codec import wire
from client_cache.errors import ClientCacheError
from client_cache.listwatch import request_headers

__all__ = ["JSON_MERGE_PATCH", "RestError", "request_json"]

JSON_MERGE_PATCH = "application/merge-patch+json"


class RestError(ClientCacheError):
    """A request could not be sent or its answer read."""


def request_json(api_client: Any, method: str, path: str, body: Any = None,
                 content_type: str = "application/json",
                 timeout: float | None = None) -> tuple[int, Any]:
    """Send ``method`` to ``path`` (``/apis/...``) with a JSON ``body``; returns
    ``(status, decoded body or None)``. ``timeout`` bounds the whole request (seconds)."""
    url = str(api_client.configuration.host).rstrip("/") + path
    headers = dict(request_headers(api_client))
    if body is not None:
        headers["Content-Type"] = content_type
    try:
        response = api_client.rest_client.request(method, url, headers=headers, body=body,
                                                  _request_timeout=timeout)
    except Exception as err:  # the client raises ApiException for non-2xx answers
        status = getattr(err, "status", None)
        if isinstance(status, int) and status > 0:
            return status, _decode(getattr(err, "body", None))
        raise RestError(f"{method} {path} failed: {type(err).__name__}") from err
    data = response.data
    if data is None:  # newer clients read the body on demand
        data = response.read()
    return int(response.status), _decode(data)


def _decode(data: Any) -> Any:
    if not data:
        return None
    try:
        return wire.loads(data if isinstance(data, (bytes, str)) else str(data))
    except ValueError:
        return None
