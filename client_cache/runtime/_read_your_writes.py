"""Read-your-writes for reconciles (KEP-5647, "stale controller" handling; kopf does the
same for its own patches).

A reconcile that writes its object (a status, a finalizer, an apply) is often triggered
again before the primary cache holds that write: by another watched object, a requeue, a
``reconcile_on`` source. It would then act on the state it has just replaced. So the
controller remembers the resourceVersion of each write made through it
(:meth:`Context.apply <client_cache.runtime.reconcile.Context.apply>`,
:meth:`~client_cache.runtime.reconcile.Context.patch_status`, the finalizer helper given
``ctx``, and :meth:`~client_cache.runtime.reconcile.Context.record_write` for the
reconcile's own writes), and does not start the next reconcile of that object until the
primary cache's resourceVersion (``last_store_sync_resource_version``, client-go v0.36)
is that version or newer, comparing resourceVersions as KEP-5504 orders them.

A deferred reconcile is not polled for: the write's own watch event reaches the cache in
order and triggers the object, and a timer set at the deadline
(``ControllerConfig.read_your_writes_timeout``, 10 s by default) runs it anyway, with a
WARNING, should that event never come (the write was later undone by a compaction, the
object left the informer's selector). Each deferral counts in
``client_cache_controller_stale_cache_deferrals_total``.

What it does not cover, as the KEP: writes made with another client are not known (call
``record_write`` with what the server returned); with the ``AtomicFIFO`` gate off the
cache cannot tell its resourceVersion and nothing is deferred (one WARNING at start); a
server whose resourceVersions are not comparable integers turns it off for that object.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from client_cache.api import meta
from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import JSON_MERGE_PATCH, request_json, resource_path
from client_cache.errors import from_status
from client_cache.runtime.apply import apply
from client_cache.runtime.objectref import ObjectRef
from client_cache.util._logs import log_visibly
from client_cache.util.clock import PassiveClock

__all__ = ["Writer", "WrittenVersions"]

_log = logging.getLogger("client_cache.runtime.controller")


class WrittenVersions:
    """The newest resourceVersion each object was written at through the controller, and
    when waiting for the cache to hold it gives up."""

    def __init__(self, controller: str, timeout: float, clock: PassiveClock) -> None:
        self.controller = controller
        self.timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        # cache key -> (resourceVersion, monotonic time to give up at)
        self._written: dict[str, tuple[str, float]] = {}

    def record(self, ref: ObjectRef, written: Any) -> None:
        """Remember ``written`` (the object the server returned, or its resourceVersion)
        as ``ref``'s newest write; an older or unreadable version changes nothing."""
        if self.timeout <= 0:
            return
        rv = written if isinstance(written, str) else _resource_version(written)
        if not rv:
            return
        deadline = self._clock.monotonic() + self.timeout
        with self._lock:
            current = self._written.get(ref.key())
            if current is not None and _order(current[0], rv) >= 0:
                return
            self._written[ref.key()] = (rv, deadline)

    def wait_for(self, ref: ObjectRef, cache_rv: str) -> float | None:
        """Seconds to defer ``ref``'s reconcile for (the cache at ``cache_rv`` is older
        than its newest write), or None to run it now: nothing is pending, the cache
        caught up, or the deadline passed (a WARNING says the reconcile runs on a cache
        older than its write)."""
        with self._lock:
            pending = self._written.get(ref.key())
            if pending is None:
                return None
            rv, deadline = pending
            if cache_rv and _order(cache_rv, rv) >= 0:
                del self._written[ref.key()]
                return None
            left = deadline - self._clock.monotonic()
            if left > 0 and cache_rv:
                return left
            del self._written[ref.key()]
        if cache_rv:
            log_visibly(_log, logging.WARNING, "controller %s: the cache did not reach "
                        "resourceVersion %s of the last write to %s within %.1f s (it is "
                        "at %s); reconciling on it anyway", self.controller, rv, ref,
                        self.timeout, cache_rv)
        return None

    def forget(self, ref: ObjectRef) -> None:
        """Drop what is pending for ``ref`` (it was deleted)."""
        with self._lock:
            self._written.pop(ref.key(), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._written)


def _resource_version(obj: Any) -> str:
    try:
        return meta.get_resource_version(obj)
    except meta.MetaAccessError:
        return ""


def _order(a: str, b: str) -> int:
    """:func:`~client_cache.api.meta.compare_resource_versions`, with versions that do not
    compare counted as caught up (nothing is deferred on them)."""
    try:
        return meta.compare_resource_versions(a, b)
    except ValueError:
        return 0


class Writer:
    """The writes a reconcile makes through its context, recorded in ``versions``: to the
    controller's primary resource ``gvr``, through ``api_client``, as ``field_manager``."""

    def __init__(self, api_client: Any, gvr: GroupVersionResource, field_manager: str,
                 versions: WrittenVersions) -> None:
        self.api_client = api_client
        self.gvr = gvr
        self.field_manager = field_manager
        self.versions = versions

    def apply(self, ref: ObjectRef, obj: Any, *, force: bool,
              field_manager: str | None) -> dict[str, Any]:
        """Server-side apply ``obj`` to the primary resource; the write is recorded when
        ``obj`` is the reconciled object."""
        stored = apply(self.api_client, self.gvr, obj, field_manager=field_manager or
                       self.field_manager, force=force, namespace=ref.namespace or None)
        if meta.namespace_and_name(stored) == (ref.namespace, ref.name):
            self.versions.record(ref, stored)
        return stored

    def patch_status(self, ref: ObjectRef, patch: Mapping[str, Any]) -> dict[str, Any]:
        """Merge-patch ``patch`` (``{"status": {...}}``, or the status fields themselves)
        into the reconciled object's status subresource; the write is recorded."""
        body = dict(patch) if "status" in patch else {"status": dict(patch)}
        path = f"{resource_path(self.gvr, ref.namespace)}/{quote(ref.name, safe='')}/status"
        status, stored = request_json(self.api_client, "PATCH", path, body,
                                      JSON_MERGE_PATCH, 30.0)
        if not (200 <= status < 300 and isinstance(stored, dict)):
            raise from_status(stored if isinstance(stored, dict) else {
                "code": status, "message": f"status patch of {ref} failed"})
        self.versions.record(ref, stored)
        return stored
