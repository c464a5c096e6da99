"""Server-side apply in one call (kube-rs ``Api::patch`` with ``PatchParams::apply(manager)``
and ``Patch::Apply``; controller-runtime ``client.Patch(ctx, obj, client.Apply, ...)``).

:func:`apply` sends the object a reconcile wants (only the fields it cares about) as an
``application/apply-patch+yaml`` PATCH with the field manager, fills in ``apiVersion``
and ``kind`` (a cached LIST item, or a hand-built dict, often lacks them), and returns
what the server stored. The server merges it: the manager owns exactly the fields it
sent, fields it sent before and leaves out now are removed, and a missing object is
created.

**Conflicts, and when to force.** A field another manager set to a different value is a
conflict: the apply fails with 409 (:class:`~client_cache.errors.ApiStatusError`,
``is_conflict``) naming the manager and the field. The usual cause is a hand edit:
``kubectl edit`` or ``kubectl scale`` of ``spec.replicas`` makes ``kubectl`` its owner,
and a non-forced apply of another value gets 409 at every retry, for ever. A controller
is the authority over the fields it applies, so it should apply with ``force=True``
(kube-rs's and controller-runtime's advice for controllers): the fields move to it and
the hand edit is undone, as with a plain update. Apply without force when another actor
may legitimately own a field and a conflict should stop the write (and leave the field
out of the applied object when the controller does not care about it).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from client_cache.api.schema import GroupVersionResource
from client_cache.client.discovery import resource_kind
from client_cache.client.rest import request_json, resource_path
from client_cache.codec import to_wire
from client_cache.errors import from_status

__all__ = ["APPLY_PATCH", "apply"]

APPLY_PATCH = "application/apply-patch+yaml"
"""The content type of a server-side apply PATCH (JSON is valid YAML)."""


def apply(api_client: Any, gvr: GroupVersionResource, obj: Any, *, field_manager: str,
          force: bool = False, namespace: str | None = None, kind: str = "",
          timeout: float | None = 30.0) -> dict[str, Any]:
    """Server-side apply ``obj`` (a wire dict or a ``kubernetes`` model) to ``gvr`` as
    ``field_manager``; returns the stored object as a wire dict (see the module
    documentation for conflicts and ``force``).

    ``apiVersion`` is ``gvr``'s; ``kind`` is the object's, else the argument, else asked of
    the server (discovery, one request). The namespace is the argument, else the object's
    (none: a cluster-scoped resource). ``metadata.managedFields`` is left out (the server
    refuses it); a ``metadata.resourceVersion`` is sent, so the apply then succeeds only
    on that version. The request goes through the client's throttling and the
    ``rest_client_*`` metrics, without urllib3's retries. Raises ``ValueError`` for an
    object without a name, an empty ``field_manager`` or an unknown kind, and
    :class:`~client_cache.errors.ApiStatusError` when the server refuses (409 for a
    conflict, 422 for an invalid object)."""
    if not field_manager:
        raise ValueError("server-side apply needs a field_manager (who owns the fields)")
    body = to_wire(obj)
    if not isinstance(body, dict):
        raise TypeError(f"expected an object to apply, not {type(obj).__name__}")
    metadata = dict(body.get("metadata") or {})
    name = metadata.get("name")
    if not name:
        raise ValueError("the object to apply has no metadata.name")
    metadata.pop("managedFields", None)
    kind = body.get("kind") or kind
    if not kind:
        found = resource_kind(api_client, gvr)
        if found is None:
            raise ValueError(f"the server does not serve {gvr.label()}: give kind=")
        kind = found[0]
    namespace = namespace if namespace is not None else metadata.get("namespace", "")
    if namespace:
        metadata["namespace"] = namespace
    body = {**body, "apiVersion": gvr.group_version(), "kind": kind, "metadata": metadata}
    query = {"fieldManager": field_manager, **({"force": "true"} if force else {})}
    path = f"{resource_path(gvr, namespace)}/{quote(name, safe='')}?{urlencode(query)}"
    status, stored = request_json(api_client, "PATCH", path, body, APPLY_PATCH, timeout)
    if 200 <= status < 300 and isinstance(stored, dict):
        return stored
    raise from_status(stored if isinstance(stored, dict) else {
        "code": status, "message": f"apply of {kind} {name} failed"})
