"""Install a CustomResourceDefinition and wait until it is served (what ``kubectl apply -f
crd.yaml && kubectl wait --for condition=established`` does; kube-rs users write it by
hand around ``Api::<CustomResourceDefinition>``)."""

from __future__ import annotations

import threading
import time
from typing import Any

from client_cache.client.rest import request_json
from client_cache.crd.resource import crd
from client_cache.errors import ClientCacheError, from_status

__all__ = ["CRDNotEstablishedError", "install_crd"]

_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class CRDNotEstablishedError(ClientCacheError, TimeoutError):
    """The CRD was written but not Established within the timeout (its conditions are in
    the message, e.g. a name conflict)."""


def install_crd(api_client: Any, definition: Any, *, timeout: float = 60.0,
                stop: threading.Event | None = None) -> dict[str, Any]:
    """Create the CRD of ``definition`` (a class declared with
    :func:`~client_cache.crd.custom_resource`, or a CRD wire dict), or update it when it
    exists (keeping the server's resourceVersion), then wait until its ``Established``
    condition is true; returns the CRD as stored. Raises
    :class:`~client_cache.errors.ApiStatusError` when the server refuses it (422 for an
    invalid schema) and :class:`CRDNotEstablishedError` after ``timeout`` seconds (woken
    early by ``stop``)."""
    body = definition if isinstance(definition, dict) else crd(definition)
    name = body["metadata"]["name"]
    status, stored = request_json(api_client, "POST", _PATH, body)
    if status == 409:
        status, current = request_json(api_client, "GET", f"{_PATH}/{name}")
        if status == 200 and isinstance(current, dict):
            updated = {**body, "metadata": {**body["metadata"], "resourceVersion":
                                            current["metadata"]["resourceVersion"]}}
            status, stored = request_json(api_client, "PUT", f"{_PATH}/{name}", updated)
    if not 200 <= status < 300:
        raise from_status(stored if isinstance(stored, dict) else {
            "code": status, "message": f"writing CustomResourceDefinition {name} failed"})
    deadline = time.monotonic() + timeout
    waiter = stop if stop is not None else threading.Event()
    delay = 0.05
    while True:
        conditions = {c.get("type"): c for c in (stored.get("status") or {}).get(
            "conditions") or []}
        if (conditions.get("Established") or {}).get("status") == "True":
            return dict(stored)
        left = deadline - time.monotonic()
        if left <= 0 or waiter.is_set():
            raise CRDNotEstablishedError(
                f"CustomResourceDefinition {name} not Established after {timeout:.0f} s: "
                + "; ".join(f"{t}={c.get('status')} ({c.get('reason', '')})"
                            for t, c in conditions.items()))
        waiter.wait(min(delay, left))  # the condition is not watched: polled with backoff
        delay = min(delay * 2, 1.0)
        status, fresh = request_json(api_client, "GET", f"{_PATH}/{name}")
        if status == 200 and isinstance(fresh, dict):
            stored = fresh
