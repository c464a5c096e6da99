"""An indexer with a namespace index and a custom index, read through a lister.

Mirrors how client-go code uses ``cache.NewIndexer`` and a lister: objects are stored by
``namespace/name``, looked up by index value, and listed by label selector.
Run: ``python examples/indexer_and_lister.py``.
"""

from __future__ import annotations

from typing import Any

from client_cache import (
    NAMESPACE_INDEX,
    ApiStatusError,
    meta_namespace_index_func,
    meta_namespace_key_func,
    new_generic_lister,
    new_indexer,
)
from client_cache.api.labels import parse
from client_cache.api.schema import GroupResource


def by_node(obj: Any) -> list[str]:
    node = obj.get("spec", {}).get("nodeName")
    return [node] if node else []


def main() -> None:
    pods = new_indexer(
        meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func, "node": by_node}
    )
    for i in range(6):
        pods.add(
            {
                "metadata": {
                    "name": f"web-{i}",
                    "namespace": "shop" if i % 2 else "blog",
                    "labels": {"app": "web", "track": "canary" if i == 3 else "stable"},
                },
                "spec": {"nodeName": f"node-{i % 3}"},
            }
        )
    print("on node-0:", pods.index_keys("node", "node-0"))
    lister = new_generic_lister(pods, GroupResource("", "pod"))
    shop = lister.by_namespace("shop")
    print("shop stable:", sorted(p["metadata"]["name"] for p in shop.list(parse("track=stable"))))
    try:
        shop.get("db-0")
    except ApiStatusError as err:
        print("lookup failed:", err.code, err)


if __name__ == "__main__":
    main()
