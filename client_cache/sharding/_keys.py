"""The key an object is sharded by."""

from __future__ import annotations

from typing import Any

from client_cache.api import meta

__all__ = ["shard_key"]


def shard_key(obj: Any) -> str:
    """``namespace/name`` of the object's controller owner (the owner reference with
    ``controller: true``) when it has one, else of the object itself (``name`` alone for a
    cluster-scoped object): an object and the children it controls hash to one member,
    as controller-sharding's sharder assigns "controlled" objects with their owner. The
    controller runtime shards by the key of the primary object a reconcile is for, which
    is the same thing for the children that trigger it."""
    md = meta.accessor(obj)
    name = md.name
    for ref in md.owner_references:
        if getattr(ref, "controller", False):
            name = ref.name
            break
    return f"{md.namespace}/{name}" if md.namespace else name
