"""index.go (index_test.go): index functions, NAMESPACE_INDEX, the key-func adapter."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod

from client_cache import (
    NAMESPACE_INDEX,
    KeyFuncError,
    MetaAccessError,
    index_func_to_key_func_adapter,
    meta_namespace_index_func,
    meta_namespace_key_func,
    new_indexer,
    new_store,
)
from client_cache.api.meta import get_annotations, get_labels
from client_cache.testing import check_indexer_consistency
from tests.fixtures import pod


def by_label_tier(obj: Any) -> list[str]:
    return [get_labels(obj).get("tier", "")]


def test_get_index_func_values() -> None:
    """Upstream TestGetIndexFuncValues."""
    indexer = new_indexer(meta_namespace_key_func, {"tiers": by_label_tier})
    indexer.add(pod("web-1", labels={"tier": "front"}))
    indexer.add(pod("web-2", labels={"tier": "front"}))
    indexer.add(pod("db-1", labels={"tier": "back"}))
    values = indexer.list_index_func_values("tiers")
    assert len(values) == 2
    assert set(values) == {"front", "back"}


def by_team(obj: Any) -> list[str]:
    teams = get_annotations(obj).get("teams", "")
    return teams.split(",") if teams else []


def test_multi_index_keys() -> None:
    """Upstream TestMultiIndexKeys, with our own names."""
    indexer = new_indexer(meta_namespace_key_func, {"by_team": by_team})
    indexer.add(pod("svc-a", annotations={"teams": "infra,data"}))
    indexer.add(pod("svc-b", annotations={"teams": "data,web"}))
    indexer.add(pod("svc-c", annotations={"teams": "infra,ops"}))

    def names(team: str) -> set[str]:
        return {o["metadata"]["name"] for o in indexer.by_index("by_team", team)}

    assert names("infra") == {"svc-a", "svc-c"}
    assert names("data") == {"svc-a", "svc-b"}
    assert names("ops") == {"svc-c"}
    assert names("web") == {"svc-b"}
    assert names("ops-unknown") == set()

    indexer.delete(pod("svc-c"))
    assert names("infra") == {"svc-a"}
    assert names("ops") == set()

    indexer.update(pod("svc-b", annotations={"teams": "web"}))
    assert names("data") == {"svc-a"}
    assert names("web") == {"svc-b"}
    check_indexer_consistency(indexer)


def test_namespace_index_over_shapes() -> None:
    indexer = new_indexer(meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func})
    indexer.add(pod("a", "alpha"))
    indexer.add(V1Pod(metadata=V1ObjectMeta(name="b", namespace="alpha")))
    indexer.add(pod("node-ish"))
    assert indexer.index_keys(NAMESPACE_INDEX, "alpha") == ["alpha/a", "alpha/b"]
    assert indexer.index_keys(NAMESPACE_INDEX, "") == ["node-ish"]
    assert NAMESPACE_INDEX == "namespace"


def test_meta_namespace_index_func_without_meta() -> None:
    with pytest.raises(MetaAccessError):
        meta_namespace_index_func({"kind": "Pod"})


def test_index_func_to_key_func_adapter() -> None:
    key_func = index_func_to_key_func_adapter(lambda obj: obj)
    assert key_func(["only"]) == "only"
    with pytest.raises(ValueError, match=r"too many keys: \['a', 'b'\]"):
        key_func(["a", "b"])
    with pytest.raises(ValueError, match="unexpected empty indexKeys"):
        key_func([])
    store = new_store(key_func)
    with pytest.raises(KeyFuncError):
        store.add(["x", "y"])
    store.add(["solo"])
    assert store.list_keys() == ["solo"]
