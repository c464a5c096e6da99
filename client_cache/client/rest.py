"""Requests as the library builds them (Go ``k8s.io/client-go/rest``, the part it needs):
a resource's URL path and a request's headers (:func:`resource_path`,
:func:`request_headers`), and JSON requests for the few writes the library makes itself
(finalizers, leases, events).

They go on the ``kubernetes`` client's own connections (its ``rest_client.pool_manager``:
its TLS, proxy and credentials), wait for the client's rate limiter
(:func:`~client_cache.util.flowcontrol.throttle_client`) or for the one given, are counted
in the ``rest_client_*`` metrics (:mod:`client_cache.util.rest_metrics`), and come back as
``(status, body)``: the decoded JSON body (None when empty or not JSON) and the HTTP
status, also for error statuses, so that callers can treat a 409 as the lost race it is
rather than as an exception.

urllib3's immediate retries are off (the ``kubernetes`` client's pool retries a failed
connection three times at once, each with a WARNING line): every caller here has a
backoff of its own (the elector's retry period, the event sink's, the reconcile's
requeue), so an outage costs one failed attempt per backoff step and one line where the
caller logs it. Transport failures raise :class:`RestError` with the cause chained (never
the body, which may quote an object).
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import quote

import urllib3

from client_cache.api.schema import GroupVersionResource
from client_cache.client.transport import Transport
from client_cache.codec import _wire as wire
from client_cache.util.chan import NEVER_STOP
from client_cache.util.errors import ClientCacheError, StopRequestedError
from client_cache.util.rest_metrics import RateLimiter, client_limiter, measure

__all__ = ["JSON_MERGE_PATCH", "RestError", "request_headers", "request_json",
           "resource_path"]

JSON_MERGE_PATCH = "application/merge-patch+json"


def resource_path(gvr: GroupVersionResource, namespace: str = "") -> str:
    """The collection URL path of ``gvr`` (``/api/v1/namespaces/ns/pods``,
    ``/apis/apps/v1/deployments``...)."""
    prefix = f"/apis/{gvr.group}/{gvr.version}" if gvr.group else f"/api/{gvr.version}"
    if namespace:
        return f"{prefix}/namespaces/{quote(namespace, safe='')}/{gvr.resource}"
    return f"{prefix}/{gvr.resource}"


def request_headers(api_client: Any) -> dict[str, str]:
    """The headers of a request as the ``kubernetes`` client sends them: JSON accepted,
    the client's default headers and its header credentials (a token; the client's
    refresh hook, if any, runs as the client runs it)."""
    headers = {"Accept": "application/json"}
    default = getattr(api_client, "default_headers", None) or {}
    headers.update(default)
    auth = api_client.configuration.auth_settings() or {}
    for setting in auth.values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    return headers


class RestError(ClientCacheError):
    """A request could not be sent or its answer read."""


def request_json(api_client: Any, method: str, path: str, body: Any = None,
                 content_type: str = "application/json",
                 timeout: float | None = None,
                 limiter: RateLimiter | None = None, *,
                 transport: Transport | None = None,
                 stop: threading.Event | None = None) -> tuple[int, Any]:
    """Send ``method`` to ``path`` (``/apis/...``) with a JSON ``body``; returns
    ``(status, decoded body or None)``. ``timeout`` bounds the whole request (seconds).
    ``limiter`` throttles it instead of the client's own limiter (the event sink has a
    bucket of its own, as controller-runtime's recorder has its own client).

    With ``transport`` (a :class:`~client_cache.client.transport.Transport` of the caller's,
    so its connections can be reached from outside) the request is abandoned at once
    when ``stop`` is set or the transport is aborted: its connection is shut down and
    :class:`~client_cache.errors.StopRequestedError` raised (Go cancels the request's
    context). Without it, the ``kubernetes`` client's pool sends it and only
    ``timeout`` ends it."""
    url = str(api_client.configuration.host).rstrip("/") + path
    headers = dict(request_headers(api_client))
    data: bytes | None = None
    if body is not None:
        headers["Content-Type"] = content_type
        data = json.dumps(body, separators=(",", ":")).encode()
    chosen = limiter if limiter is not None else client_limiter(api_client)
    if transport is not None:
        try:
            response, answer = transport.request(
                method, url, headers, timeout, stop if stop is not None else NEVER_STOP,
                body=data, limiter=chosen)
        except StopRequestedError:
            raise
        except Exception as err:
            raise RestError(f"{method} {path} failed: {type(err).__name__}") from err
        return int(response.status), _decode(answer)
    pool = api_client.rest_client.pool_manager
    try:
        response = measure(
            method, url,
            lambda: pool.request(method, url, body=data, headers=headers, retries=False,
                                 timeout=urllib3.Timeout(total=timeout)),
            request_bytes=None if data is None else len(data), limiter=chosen)
    except Exception as err:
        raise RestError(f"{method} {path} failed: {type(err).__name__}") from err
    return int(response.status), _decode(response.data)


def _decode(data: Any) -> Any:
    if not data:
        return None
    try:
        return wire.loads(data if isinstance(data, (bytes, str)) else str(data))
    except ValueError:
        return None
