"""The sharder of the label-assigned mode: it labels each object with the member the ring
gives it, and moves objects between members through a drain label.

One member of the ring runs it at a time (the runtime elects it on a Lease named
``<ring>-sharder``; :meth:`Sharder.run` takes the elector's ``holds_lease`` and acts only
while it answers True). It watches the metadata of every object of the resource
(a metadata-only informer: names, labels, owner references), and on every change of an
object or of the members it compares the object's shard label with the ring's choice
(by :func:`~client_cache.sharding._keys.shard_key`, so an object goes with its controller
owner):

* **unassigned** (no shard label; a new object): it sets the label;
* **its member is gone** (its Lease expired or was deleted: that member fenced itself
  before the sharder could see it go): it sets the new member at once;
* **its member is live but another should have it**: it sets the drain label; the member
  stops starting reconciles of it, lets the one running end, and removes both labels;
  the object is then unassigned and the sharder gives it to its new member. So no two
  members reconcile it at once, and the new one starts only after the old one let go.

Every write is a merge patch carrying the resourceVersion the sharder read, so a write
based on an outdated object fails (409) and waits for the next event. This is
timebertt/kubernetes-controller-sharding's sharder, without its admission webhook: new
objects are assigned from the watch, a moment after they are created.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import request_json, resource_path
from client_cache.client.transport import Transport
from client_cache.errors import ClientCacheError, StopRequestedError
from client_cache.listwatch import new_filtered_list_watch_from_client
from client_cache.sharding._keys import shard_key
from client_cache.sharding._membership import ShardMember
from client_cache.sharding._ring import HashRing
from client_cache.shared_informer import SharedIndexInformer, new_shared_informer
from client_cache.store import DeletedFinalStateUnknown, meta_namespace_key_func
from client_cache.workqueue import (
    default_controller_rate_limiter,
    new_typed_rate_limiting_queue,
    run_workers,
)

__all__ = ["Sharder", "release_patch"]

_log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
WORKERS = 4
"""Labelling requests in flight at once: a member joining a ring of N moves about 1/N of
the objects, each one or two PATCHes; the work queue never hands one object to two."""


def release_patch(obj_meta: dict[str, Any], shard_label: str, drain_label: str,
                  ) -> dict[str, Any]:
    """The merge patch by which a member lets an object go: both labels removed, guarded
    by the resourceVersion it last saw."""
    return {"metadata": {"resourceVersion": obj_meta.get("resourceVersion"),
                         "labels": {shard_label: None, drain_label: None}}}


class Sharder:
    """See the module documentation. ``member`` is this replica's membership (the ring
    is built over its live members); ``gvr`` and ``namespace`` ("" for all) the objects
    assigned."""

    def __init__(self, member: ShardMember, api_client: Any, gvr: GroupVersionResource,
                 namespace: str = "") -> None:
        config = member.config
        self._member = member
        self._api = api_client
        self._gvr = gvr
        self._namespace = namespace
        self._shard = config.shard_label()
        self._drain = config.drain_label()
        self._virtual_nodes = config.virtual_nodes
        lw = new_filtered_list_watch_from_client(api_client, gvr, namespace,
                                                 metadata_only=True)
        self._informer: SharedIndexInformer[Any] = new_shared_informer(lw, None, 0)
        self._queue = new_typed_rate_limiting_queue(default_controller_rate_limiter(),
                                                    item_type=str)
        self._may_act: Callable[[], bool] = lambda: False
        # the labels' writes on connections of its own: a stop abandons one in flight
        self._transport = Transport(api_client)
        self._stop = threading.Event()
        self._ring = HashRing([])  # the view every object was last reviewed against
        self._latest = self._ring  # the member's newest view, built once per view
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Sharder {self._gvr.label()} for ring {self._member.config.ring!r}>"

    def run(self, stop: threading.Event, may_act: Callable[[], bool]) -> None:
        """Assign until ``stop`` is set, writing only while ``may_act()`` is True."""
        self._may_act = may_act
        self._stop = stop
        self._informer.add_event_handler(_Enqueue(self._queue))
        self._member.add_listener(self._members_changed)
        informer = threading.Thread(target=self._informer.run, args=(stop,), daemon=True,
                                    name=f"sharder-{self._member.config.ring}-objects")
        informer.start()
        try:
            self._members_changed()
            run_workers(self._queue, self._assign, WORKERS, stop,
                        name=f"sharder-{self._member.config.ring}")
        finally:
            self._member.remove_listener(self._members_changed)
            informer.join(1.0)
            self._transport.close()

    def _current_ring(self) -> HashRing:
        """The ring of the member's current view, built once per view."""
        members = frozenset(self._member.members())
        with self._lock:
            latest = self._latest
        if latest.members != members:
            latest = HashRing(members, self._virtual_nodes)
            with self._lock:
                self._latest = latest
        return latest

    def _members_changed(self) -> None:
        ring = self._current_ring()
        with self._lock:
            if ring == self._ring:
                return
            self._ring = ring
        _log.info("sharder %s: %d members; reviewing every object", self._member.config.ring,
                  len(ring.members))
        for key in self._informer.get_indexer().list_keys():
            self._queue.add(key)

    def _assign(self, key: str) -> None:
        obj, exists = self._informer.get_indexer().get_by_key(key)
        if not exists or not self._may_act():
            return
        md = obj.get("metadata") or {}
        labels = md.get("labels") or {}
        # the member's current view, not the last reviewed one: an object arriving before
        # the listener's review goes where the new view puts it, not where the old one
        # did (to be moved again a moment later)
        ring = self._current_ring()
        desired = ring.owner(shard_key(obj))
        current = labels.get(self._shard, "")
        if not desired or current == desired:
            return
        if current and current in ring.members:  # live elsewhere: ask it to let go
            if labels.get(self._drain):
                return
            patch: dict[str, Any] = {self._drain: "true"}
        else:  # unassigned, or its member is gone
            patch = {self._shard: desired, self._drain: None}
        self._patch(md, patch)

    def _patch(self, md: dict[str, Any], labels: dict[str, Any]) -> None:
        path = f"{resource_path(self._gvr, md.get('namespace', ''))}/{md.get('name')}"
        body = {"metadata": {"resourceVersion": md.get("resourceVersion"), "labels": labels}}
        try:
            status, _ = request_json(self._api, "PATCH", path, body, MERGE_PATCH,
                                     timeout=10.0, transport=self._transport, stop=self._stop)
        except StopRequestedError:
            return  # stopping: the next sharder reviews it
        except ClientCacheError as err:
            raise RuntimeError(f"labelling {md.get('namespace')}/{md.get('name')} failed") \
                from err
        if status in (404, 409):  # gone, or changed since: its next event brings it back
            return
        if not 200 <= status < 300:
            raise RuntimeError(f"labelling {md.get('namespace')}/{md.get('name')}: HTTP "
                               f"{status}")


class _Enqueue:
    """The object informer's handler: every change puts the object's key in the queue."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue

    def _add(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            return
        self._queue.add(meta_namespace_key_func(obj))

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        self._add(obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._add(new)

    def on_delete(self, obj: Any) -> None:
        """Nothing to assign."""
