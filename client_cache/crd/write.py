"""Typed writes of custom resources declared with :mod:`client_cache.crd`: the status
subresource patched from a status instance, and conversions to and from wire dicts."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from client_cache.client.rest import JSON_MERGE_PATCH, request_json, resource_path
from client_cache.codec import to_wire
from client_cache.crd.resource import resource_info
from client_cache.errors import from_status

__all__ = ["from_wire", "patch_status"]

R = TypeVar("R")


def from_wire(cls: type[R], data: Any) -> R:
    """``data`` (a wire dict of the resource, as the server sends it) as an instance of
    the custom resource class ``cls``; the inverse of :func:`client_cache.codec.to_wire`.
    Raises ``msgspec.ValidationError`` naming the member that does not fit."""
    return msgspec.convert(data, cls)


def patch_status(api_client: Any, obj: R, status: Any, *,
                 timeout: float | None = 30.0) -> R:
    """Write ``status`` (an instance of the class's status type) to the status
    subresource of the cached object ``obj`` (a JSON merge patch of ``status`` alone,
    guarded by ``obj``'s resourceVersion, so a write from a stale cache is refused with
    409 Conflict as client-go's ``UpdateStatus`` is) and return the stored object as an
    instance of ``obj``'s class. The class must have a status subresource (a ``status``
    field). Raises :class:`~client_cache.errors.ApiStatusError` when the server refuses."""
    cls = type(obj)
    info = resource_info(cls)
    if not info.status:
        raise ValueError(f"{info.kind} has no status subresource (no status field)")
    metadata = getattr(obj, "metadata", None)
    name = getattr(metadata, "name", None)
    if not name:
        raise ValueError("the object has no metadata.name")
    namespace = getattr(metadata, "namespace", None) or ""
    body: dict[str, Any] = {"status": to_wire(status)}
    version = getattr(metadata, "resource_version", None)
    if version:
        body["metadata"] = {"resourceVersion": version}
    path = f"{resource_path(info.gvr, namespace if info.namespaced else '')}/{name}/status"
    code, stored = request_json(api_client, "PATCH", path, body, JSON_MERGE_PATCH, timeout)
    if 200 <= code < 300 and isinstance(stored, dict):
        return from_wire(cls, stored)
    raise from_status(stored if isinstance(stored, dict) else {
        "code": code, "message": f"status write of {info.kind} {name} failed"})
