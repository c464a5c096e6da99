"""listers.go: list_all, list_all_by_namespace, GenericLister (listers_test.go scenarios)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod

from client_cache import (
    NAMESPACE_INDEX,
    ApiStatusError,
    MetaAccessError,
    list_all,
    list_all_by_namespace,
    meta_namespace_index_func,
    meta_namespace_key_func,
    new_generic_lister,
    new_indexer,
)
from client_cache.api.labels import everything, nothing, parse
from client_cache.api.schema import GroupResource
from client_cache.errors import is_not_found
from tests.fixtures import pod


def names(objs: list[Any]) -> list[str]:
    return sorted(meta_namespace_key_func(o) for o in objs)


def populated(with_namespace_index: bool) -> Any:
    indexers = {NAMESPACE_INDEX: meta_namespace_index_func} if with_namespace_index else {}
    indexer = new_indexer(meta_namespace_key_func, indexers)
    indexer.add(pod("api-1", "prod", labels={"app": "api", "track": "stable"}))
    indexer.add(pod("api-2", "prod", labels={"app": "api", "track": "canary"}))
    indexer.add(pod("web-1", "prod", labels={"app": "web"}))
    indexer.add(pod("api-1", "dev", labels={"app": "api"}))
    indexer.add(V1Pod(metadata=V1ObjectMeta(name="model", namespace="dev", labels={"app": "web"})))
    indexer.add(pod("node-a", labels={"role": "worker"}))
    return indexer


def test_list_all() -> None:
    indexer = populated(True)
    out: list[Any] = []
    list_all(indexer, parse("app=api"), out.append)
    assert names(out) == ["dev/api-1", "prod/api-1", "prod/api-2"]
    out.clear()
    list_all(indexer, everything(), out.append)
    assert len(out) == 6
    out.clear()
    list_all(indexer, nothing(), out.append)
    assert out == []
    out.clear()
    list_all(indexer, parse("app in (web),track!=canary"), out.append)
    assert names(out) == ["dev/model", "prod/web-1"]


@pytest.mark.parametrize("with_index", [True, False])
def test_list_all_by_namespace(with_index: bool, caplog: pytest.LogCaptureFixture) -> None:
    indexer = populated(with_index)
    out: list[Any] = []
    with caplog.at_level(logging.WARNING, logger="client_cache.listers"):
        list_all_by_namespace(indexer, "prod", parse("app=api"), out.append)
    assert names(out) == ["prod/api-1", "prod/api-2"]
    warned = any("can not retrieve list of objects using index" in r.message
                 for r in caplog.records)
    assert warned is not with_index
    out.clear()
    list_all_by_namespace(indexer, "dev", everything(), out.append)
    assert names(out) == ["dev/api-1", "dev/model"]
    out.clear()
    list_all_by_namespace(indexer, "", parse("app=web"), out.append)  # all namespaces
    assert names(out) == ["dev/model", "prod/web-1"]
    out.clear()
    list_all_by_namespace(indexer, "prod", nothing(), out.append)
    list_all_by_namespace(indexer, "missing-ns", everything(), out.append)
    assert out == []


def test_list_all_without_meta_raises_only_when_labels_are_read() -> None:
    indexer = new_indexer(lambda obj: "k", {})
    indexer.add({"no": "meta"})
    out: list[Any] = []
    list_all(indexer, everything(), out.append)  # labels are never read
    assert len(out) == 1
    with pytest.raises(MetaAccessError):
        list_all(indexer, parse("a=b"), out.append)


def test_generic_lister() -> None:
    indexer = populated(True)
    lister = new_generic_lister(indexer, GroupResource("", "pod"))
    assert names(lister.list(parse("track"))) == ["prod/api-1", "prod/api-2"]
    assert lister.get("node-a")["metadata"]["name"] == "node-a"
    assert lister.get("prod/web-1")["metadata"]["name"] == "web-1"
    prod = lister.by_namespace("prod")
    assert names(prod.list(parse("app=api"))) == ["prod/api-1", "prod/api-2"]
    assert prod.get("web-1")["metadata"]["namespace"] == "prod"
    with pytest.raises(ApiStatusError) as info:
        prod.get("nope")
    err = info.value
    assert str(err) == 'pod "nope" not found'
    assert (err.code, err.reason) == (404, "NotFound")
    assert err.details == {"name": "nope", "group": "", "kind": "pod"}
    assert is_not_found(err)
    with pytest.raises(ApiStatusError):
        lister.get("web-1")  # cluster-wide get uses the bare key
    # without a selector: everything, as labels.Everything() (a port addition)
    assert names(lister.list()) == names(lister.list(parse(""))) and len(lister.list()) > 4
    assert names(prod.list()) == names(prod.list(parse("")))
    assert all(name.startswith("prod/") for name in names(prod.list()))


def test_generic_lister_group_in_message() -> None:
    lister = new_generic_lister(new_indexer(meta_namespace_key_func, {}),
                                GroupResource("apps", "deployments"))
    with pytest.raises(ApiStatusError) as info:
        lister.by_namespace("ns").get("d")
    assert str(info.value) == 'deployments.apps "d" not found'
    assert info.value.details["group"] == "apps"
    assert info.value.status()["code"] == 404
