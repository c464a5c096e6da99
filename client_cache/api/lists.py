"""Request options and list helpers (apimachinery ``metav1.ListOptions``, ``meta.ListAccessor``,
``meta.ExtractList``).

A *list* is what LIST returns: a wire dict ``{"metadata": {"resourceVersion", "continue",
"remainingItemCount"}, "items": [...]}`` (the fast path), a typed model list such as
``V1PodList``, or a dynamic-client list. The helpers read all three.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from client_cache.util.errors import ClientCacheError

__all__ = [
    "INITIAL_EVENTS_ANNOTATION_KEY",
    "RESOURCE_VERSION_MATCH_EXACT",
    "RESOURCE_VERSION_MATCH_NOT_OLDER_THAN",
    "ListOptions",
    "NotAListError",
    "list_continue",
    "list_items",
    "list_remaining_item_count",
    "list_resource_version",
    "list_shard_selector",
]

INITIAL_EVENTS_ANNOTATION_KEY = "k8s.io/initial-events-end"
"""Annotation on the bookmark that ends the initial events of a watch-list stream."""

RESOURCE_VERSION_MATCH_NOT_OLDER_THAN = "NotOlderThan"
RESOURCE_VERSION_MATCH_EXACT = "Exact"


@dataclass
class ListOptions:
    """Options of a LIST or WATCH request (Go ``metav1.ListOptions``).

    ``continue_`` is Go's ``Continue`` (``continue`` is a Python keyword). ``None`` and
    empty values are not sent. ``shard_selector`` (Go ``ShardSelector``, alpha in v1.36,
    KEP-5866): only the objects of these hash ranges (:mod:`client_cache.api.sharding`);
    a server without the ``ShardedListAndWatch`` gate ignores it.
    """

    label_selector: str = ""
    field_selector: str = ""
    watch: bool = False
    allow_watch_bookmarks: bool = False
    resource_version: str = ""
    resource_version_match: str = ""
    timeout_seconds: int | None = None
    limit: int = 0
    continue_: str = ""
    send_initial_events: bool | None = None
    shard_selector: str = ""

    def copy(self) -> ListOptions:
        """A copy whose fields can be changed without touching this one."""
        return replace(self)

    def to_query(self) -> list[tuple[str, str]]:
        """Query parameters with the wire names, in a stable order."""
        query: list[tuple[str, str]] = []
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        if self.field_selector:
            query.append(("fieldSelector", self.field_selector))
        if self.watch:
            query.append(("watch", "true"))
        if self.allow_watch_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        if self.resource_version:
            query.append(("resourceVersion", self.resource_version))
        if self.resource_version_match:
            query.append(("resourceVersionMatch", self.resource_version_match))
        if self.timeout_seconds is not None:
            query.append(("timeoutSeconds", str(int(self.timeout_seconds))))
        if self.limit:
            query.append(("limit", str(int(self.limit))))
        if self.continue_:
            query.append(("continue", self.continue_))
        if self.send_initial_events is not None:
            query.append(("sendInitialEvents", "true" if self.send_initial_events else "false"))
        if self.shard_selector:
            query.append(("shardSelector", self.shard_selector))
        return query


class NotAListError(ClientCacheError, TypeError):
    """The object is not a list (Go ``"returned object must be a list"``)."""

    def __init__(self, obj: Any) -> None:
        super().__init__(f"returned object must be a list: {type(obj).__name__}")


def _list_meta(obj: Any) -> tuple[Any, bool]:
    if isinstance(obj, Mapping):
        if "items" not in obj:
            raise NotAListError(obj)
        md = obj.get("metadata") or {}
        return md, True
    if not hasattr(obj, "items"):
        raise NotAListError(obj)
    md = getattr(obj, "metadata", None)
    if md is None:
        return {}, True
    if isinstance(md, Mapping):
        return md, True
    return md, False


def _field(md: Any, is_map: bool, camel: str, *attrs: str) -> Any:
    if is_map:
        return md.get(camel)
    for attr in attrs:
        value = getattr(md, attr, None)
        if value is not None:
            return value
    return None


def list_resource_version(obj: Any) -> str:
    """``metadata.resourceVersion`` of a list."""
    md, is_map = _list_meta(obj)
    value = _field(md, is_map, "resourceVersion", "resource_version", "resourceVersion")
    return value if isinstance(value, str) else ""


def list_continue(obj: Any) -> str:
    """``metadata.continue`` of a list (``""`` when it is the last page)."""
    md, is_map = _list_meta(obj)
    value = _field(md, is_map, "continue", "var_continue", "_continue", "continue")
    return value if isinstance(value, str) else ""


def list_remaining_item_count(obj: Any) -> int | None:
    """``metadata.remainingItemCount`` of a list, if the server sent it."""
    md, is_map = _list_meta(obj)
    value = _field(md, is_map, "remainingItemCount", "remaining_item_count", "remainingItemCount")
    return value if isinstance(value, int) else None


def list_shard_selector(obj: Any) -> str:
    """``metadata.shardInfo.selector`` of a list: the shard selector the server applied
    (KEP-5866), ``""`` for a list that is the whole collection."""
    md, is_map = _list_meta(obj)
    info = _field(md, is_map, "shardInfo", "shard_info", "shardInfo")
    value = info.get("selector") if isinstance(info, Mapping) else \
        getattr(info, "selector", None)
    return value if isinstance(value, str) else ""


def list_items(obj: Any) -> list[Any]:
    """The items of a list (Go ``meta.ExtractList``); the list's own items, not copies."""
    if isinstance(obj, Mapping):
        if "items" not in obj:
            raise NotAListError(obj)
        items = obj.get("items")
    else:
        if not hasattr(obj, "items"):
            raise NotAListError(obj)
        items = obj.items
        if callable(items):  # a Mapping-like without "items" data
            raise NotAListError(obj)
    if items is None:
        return []
    if isinstance(items, list):
        return items
    return list(items)
