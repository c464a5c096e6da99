"""Run cleanup before an object goes away (kube-rs ``kube::runtime::finalizer``).

Call :func:`finalizer` from a reconcile::

    def reconcile(foo, ctx):
        return finalizer(api_client, FOOS, "example.com/cleanup", foo,
                         apply=lambda obj: ensure_children(obj),
                         cleanup=lambda obj: release_external_things(obj))

* an object that is not being deleted and lacks the finalizer gets it (a patch; the update
  it causes triggers the next reconcile, so this one returns ``Action.await_change()``);
* an object that is not being deleted and has it: ``apply(obj)`` runs and its Action is
  returned;
* an object being deleted (deletionTimestamp set) that has it: ``cleanup(obj)`` runs; when
  it returns, the finalizer is removed (the server then deletes the object) and its
  Action is returned; when it raises, the finalizer stays and the exception goes to the
  controller's error policy, so the cleanup is retried;
* an object being deleted without it: nothing to do.

``cleanup`` can run more than once for one deletion: a reconcile queued while it ran may
read the object from the cache before the finalizer's removal has reached it, and then
cleans up again (its removal patch finds the object gone). Make it idempotent, as kube-rs
asks of its cleanup.

Both patches are JSON merge patches of ``metadata.finalizers`` conditional on the
object's resourceVersion; on a conflict (409) the object is read again and the patch
recomputed, up to ``conflict_retries`` times, so other finalizers added or removed
meanwhile are kept. The writes go through the client's ``rest_client`` (and so through
its throttling, :func:`~client_cache.util.flowcontrol.throttle_client`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from client_cache.api import meta
from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import JSON_MERGE_PATCH, RestError, request_json, resource_path
from client_cache.errors import ClientCacheError
from client_cache.runtime.reconcile import Action, Context

__all__ = ["FinalizerError", "finalizer", "finalizers_of"]


class FinalizerError(ClientCacheError):
    """Adding or removing a finalizer failed (kube-rs ``finalizer::Error``); the cause is
    chained."""


def finalizers_of(obj: Any) -> list[str]:
    """``metadata.finalizers`` of a wire dict, a model or a dynamic object."""
    md = obj.get("metadata") if isinstance(obj, Mapping) else getattr(obj, "metadata", None)
    if md is None:
        return []
    values = md.get("finalizers") if isinstance(md, Mapping) else getattr(md, "finalizers", None)
    return list(values or [])


def finalizer(api_client: Any, gvr: GroupVersionResource, name: str, obj: Any,
              apply: Callable[[Any], Action], cleanup: Callable[[Any], Action],
              conflict_retries: int = 5, *, ctx: Context[Any] | None = None) -> Action:
    """See the module documentation. Given the reconcile's ``ctx``, the finalizer's
    writes are read back: the next reconcile waits for the cache to hold them
    (:meth:`Context.record_write <client_cache.runtime.reconcile.Context.record_write>`)."""
    present = name in finalizers_of(obj)
    if meta.accessor(obj).deletion_timestamp is None:
        if not present:
            stored = _patch(api_client, gvr, obj, name, add=True, retries=conflict_retries)
            if ctx is not None and stored is not None:
                ctx.record_write(stored)
            return Action.await_change()
        return apply(obj)
    if not present:
        return Action.await_change()
    action = cleanup(obj)
    stored = _patch(api_client, gvr, obj, name, add=False, retries=conflict_retries)
    if ctx is not None and stored is not None:
        ctx.record_write(stored)
    return action


def _path(gvr: GroupVersionResource, obj: Any) -> str:
    md = meta.accessor(obj)
    return f"{resource_path(gvr, md.namespace)}/{md.name}"


def _patch(api_client: Any, gvr: GroupVersionResource, obj: Any, name: str, *, add: bool,
           retries: int) -> Any:
    """Add or remove the finalizer, reading the object again after a conflict; returns
    what the server stored (None: nothing was written, or the object is gone)."""
    path = _path(gvr, obj)
    what = "add" if add else "remove"
    for _ in range(retries + 1):
        current = finalizers_of(obj)
        wanted = ([*current, name] if name not in current else current) if add \
            else [f for f in current if f != name]
        if wanted == current:
            return None
        body = {"metadata": {"finalizers": wanted,
                             "resourceVersion": meta.get_resource_version(obj)}}
        try:
            status, stored = request_json(api_client, "PATCH", path, body, JSON_MERGE_PATCH)
            if 200 <= status < 300:
                return stored
            if status == 404 and not add:
                return None  # gone already: nothing left to hold
            if status != 409:
                raise FinalizerError(f"could not {what} finalizer {name} on "
                                     f"{meta.describe(obj)}: HTTP {status}")
            status, fresh = request_json(api_client, "GET", path)
        except RestError as err:
            raise FinalizerError(f"could not {what} finalizer {name} on "
                                 f"{meta.describe(obj)}") from err
        if status == 404 and not add:
            return None
        if not 200 <= status < 300 or fresh is None:
            raise FinalizerError(f"could not read {meta.describe(obj)} again after a "
                                 f"conflict: HTTP {status}")
        obj = fresh
    raise FinalizerError(f"could not {what} finalizer {name} on {meta.describe(obj)}: "
                         f"{retries + 1} conflicts in a row")
