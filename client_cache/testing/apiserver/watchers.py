"""Watches on the embedded API server: one open watch (its filters and the queue the
HTTP layer reads), a change in the store's history, and the encoding of a stream line.

A watcher decides, per change, which event it sends, as the real server's watch cache
does for selectors: an object that stops matching comes as DELETED, one that starts
matching as ADDED.
"""

from __future__ import annotations

import json
import queue
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from client_cache.api import fields as fieldsel
from client_cache.api import labels as labelsel
from client_cache.api.sharding import ShardSelector
from client_cache.testing.apiserver.resources import ResourceType

__all__ = ["Change", "Watcher", "encode_event", "field_set"]


@dataclass
class Change:
    """One write in the store's history: its revision, event type, resource, key, the
    object after it and the object before it (None for a create)."""


    rv: int
    type: str  # ADDED / MODIFIED / DELETED
    resource: tuple[str, str]
    key: tuple[str, str]
    obj: dict[str, Any]
    prev: dict[str, Any] | None


@dataclass(eq=False)
class Watcher:
    """One open watch: the HTTP layer reads encoded lines (``bytes``) from ``queue``;
    ``None`` means "end the stream cleanly" and control strings trigger faults."""

    resource: ResourceType
    namespace: str
    label_selector: labelsel.Selector
    field_selector: fieldsel.Selector
    queue: queue.Queue[Any] = field(default_factory=queue.Queue)
    ending: bool = False
    #: Only changes after this revision are sent (the watch's resourceVersion, or the
    #: revision of its initial state); bookmarks must be newer too, as on the real server.
    start_rv: int = 0
    #: The watch's shard selector (``ShardedListAndWatch``), None for all objects. An
    #: object's uid and namespace never change, so it never moves in or out of a shard.
    shard_selector: ShardSelector | None = None
    #: The server's own watch (its lease coordinator's): not a client's, so not among the
    #: watches faults end or counts count.
    internal: bool = False

    def event_for(self, change_type: str, obj: dict[str, Any],
                  prev: dict[str, Any] | None) -> tuple[str, dict[str, Any]] | None:
        """The event this watcher gets for a change, or None. Like the watch cache, an
        object that stops matching the selectors comes as DELETED with its *previous*
        content (carrying the change's resourceVersion); one that starts matching as
        ADDED."""
        before = self.matches(prev)
        if change_type == "DELETED":
            return ("DELETED", obj) if before or self.matches(obj) else None
        now = self.matches(obj)
        if now:
            return ("MODIFIED" if before else "ADDED"), obj
        if before and prev is not None:
            gone = dict(prev)
            gone["metadata"] = dict(prev.get("metadata") or {},
                                    resourceVersion=obj["metadata"]["resourceVersion"])
            return "DELETED", gone
        return None

    def matches(self, obj: Mapping[str, Any] | None) -> bool:
        """True when ``obj`` is in this watch's namespace and matches its selectors."""
        if obj is None:
            return False
        md = obj.get("metadata") or {}
        if self.namespace and md.get("namespace") != self.namespace:
            return False
        if not self.label_selector.empty() and not self.label_selector.matches(
            md.get("labels") or {}
        ):
            return False
        if self.shard_selector is not None and not self.shard_selector.matches(obj):
            return False
        return self.field_selector.empty() or self.field_selector.matches(field_set(obj))


def field_set(obj: Mapping[str, Any]) -> dict[str, str]:
    """The fields a field selector may name on any object here, as the real server's
    field label conversions offer them for pods (name, namespace, node, phase)."""
    md = obj.get("metadata") or {}
    out = {"metadata.name": md.get("name", ""), "metadata.namespace": md.get("namespace", "")}
    spec = obj.get("spec")
    if isinstance(spec, Mapping) and isinstance(spec.get("nodeName"), str):
        out["spec.nodeName"] = spec["nodeName"]
    status = obj.get("status")
    if isinstance(status, Mapping) and isinstance(status.get("phase"), str):
        out["status.phase"] = status["phase"]
    return out


def encode_event(event_type: str, obj: Any) -> bytes:
    """One watch stream line."""
    return json.dumps({"type": event_type, "object": obj}, separators=(",", ":")).encode() + b"\n"
