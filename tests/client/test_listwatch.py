"""listwatch.go and the list helpers (apis.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1ListMeta, V1ObjectMeta, V1Pod, V1PodList

from client_cache.api.lists import (
    ListOptions,
    NotAListError,
    list_continue,
    list_items,
    list_remaining_item_count,
    list_resource_version,
)
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import new_empty_watch
from client_cache.client.rest import resource_path
from client_cache.listwatch import ListWatch

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("native_impl")


def test_list_watch_calls_its_functions() -> None:
    seen: list[ListOptions] = []

    def list_func(options: ListOptions) -> Any:
        seen.append(options)
        return {"metadata": {"resourceVersion": "9"}, "items": []}

    lw = ListWatch(list_func, lambda options: new_empty_watch(), disable_chunking=True)
    options = ListOptions(limit=5)
    assert list_resource_version(lw.list(options)) == "9"
    assert seen == [options]
    lw.watch(ListOptions()).stop()


def test_list_options_query() -> None:
    options = ListOptions(
        label_selector="a=b", field_selector="metadata.name=x", watch=True,
        allow_watch_bookmarks=True, resource_version="5", resource_version_match="NotOlderThan",
        timeout_seconds=300, limit=500, continue_="tok", send_initial_events=True,
    )
    assert options.to_query() == [
        ("labelSelector", "a=b"), ("fieldSelector", "metadata.name=x"), ("watch", "true"),
        ("allowWatchBookmarks", "true"), ("resourceVersion", "5"),
        ("resourceVersionMatch", "NotOlderThan"), ("timeoutSeconds", "300"),
        ("limit", "500"), ("continue", "tok"), ("sendInitialEvents", "true"),
    ]
    assert ListOptions().to_query() == []
    copy = options.copy()
    copy.limit = 1
    assert options.limit == 500


def test_resource_paths() -> None:
    pods = GroupVersionResource("", "v1", "pods")
    assert resource_path(pods, "ns") == "/api/v1/namespaces/ns/pods"
    assert resource_path(GroupVersionResource("", "v1", "nodes")) == "/api/v1/nodes"
    assert (resource_path(GroupVersionResource("apps", "v1", "deployments"), "a b")
            == "/apis/apps/v1/namespaces/a%20b/deployments")


def test_list_helpers_on_dicts_and_models() -> None:
    wire = {"metadata": {"resourceVersion": "7", "continue": "c", "remainingItemCount": 3},
            "items": [{"metadata": {"name": "a"}}]}
    assert (list_resource_version(wire), list_continue(wire)) == ("7", "c")
    assert list_remaining_item_count(wire) == 3 and len(list_items(wire)) == 1
    model = V1PodList(items=[V1Pod(metadata=V1ObjectMeta(name="m"))],
                      metadata=V1ListMeta(resource_version="8", _continue="next"))
    assert (list_resource_version(model), list_continue(model)) == ("8", "next")
    assert list_items(model)[0].metadata.name == "m"
    assert list_items({"items": None}) == [] and list_resource_version({"items": []}) == ""
    for bad in ({"metadata": {}}, object(), "text"):
        with pytest.raises(NotAListError):
            list_items(bad)
