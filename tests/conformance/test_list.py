"""LIST semantics: paging, consistent snapshots, resourceVersion rules, errors."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.client.pager import new_list_pager
from client_cache.errors import (
    ApiStatusError,
    is_expired,
    is_too_large_resource_version,
)
from tests.conformance.util import (
    Backend,
    create_configmaps,
    list_all,
    lister_watcher,
    name_of,
    rv,
)

TOTAL = 2000
PAGE = 100


def names(listed: dict[str, Any]) -> list[str]:
    return [name_of(item) for item in listed["items"]]


def test_paged_list_is_one_consistent_snapshot(api: Any, ns: str) -> None:
    expected = [f"cm-{i:04d}" for i in range(TOTAL)]
    create_configmaps(api, ns, expected)
    lw = lister_watcher(api, ns)
    core = CoreV1Api(api)
    seen: list[str] = []
    versions: set[str] = set()
    token = ""
    pages = 0
    while True:
        page = list_all(lw, limit=PAGE, continue_=token)
        pages += 1
        versions.add(page["metadata"]["resourceVersion"])
        seen.extend(names(page))
        token = page["metadata"].get("continue", "")
        remaining = page["metadata"].get("remainingItemCount")
        if token:
            assert len(page["items"]) == PAGE
            assert remaining == TOTAL - pages * PAGE
        else:
            assert remaining is None
        if pages == 1:  # writes after the first page are not part of this list
            core.create_namespaced_config_map(ns, {"metadata": {"name": "cm-9999"}})
            core.delete_namespaced_config_map("cm-1999", ns)
            core.patch_namespaced_config_map("cm-1500", ns, {"data": {"value": "changed"}})
        if not token:
            break
    assert pages == TOTAL // PAGE
    assert seen == expected  # each exactly once, in key order
    assert len(versions) == 1  # every page reports the snapshot's resourceVersion
    snapshot_rv = int(versions.pop())
    # an Exact list at the snapshot's resourceVersion gives the same snapshot
    exact = list_all(lw, resource_version=str(snapshot_rv), resource_version_match="Exact",
                     limit=500)
    assert exact["metadata"]["resourceVersion"] == str(snapshot_rv)
    assert len(exact["items"]) == 500 and exact["metadata"].get("continue")
    # a new list sees the later writes; its resourceVersion is newer than every item's
    fresh = list_all(lw)
    fresh_names = names(fresh)
    assert "cm-9999" in fresh_names and "cm-1999" not in fresh_names
    assert len(fresh_names) == TOTAL
    assert int(fresh["metadata"]["resourceVersion"]) >= max(rv(o) for o in fresh["items"])
    assert int(fresh["metadata"]["resourceVersion"]) > snapshot_rv
    changed = next(o for o in fresh["items"] if name_of(o) == "cm-1500")
    assert changed["data"] == {"value": "changed"}


def test_pager_and_not_older_than(api: Any, ns: str) -> None:
    create_configmaps(api, ns, [f"p-{i:03d}" for i in range(250)])
    lw = lister_watcher(api, ns)
    pager = new_list_pager(lw.list)
    pager.page_size = 60
    listed, paginated = pager.list(ListOptions())
    assert paginated and len(listed["items"]) == 250
    latest = int(listed["metadata"]["resourceVersion"])
    # resourceVersion "0": any state, served from the cache, never older than our writes
    # here since both servers serve it from the newest state they have
    any_state = list_all(lw, resource_version="0")
    assert len(any_state["items"]) == 250
    # NotOlderThan an older resourceVersion: the state is at least that new
    newer = list_all(lw, resource_version=str(latest - 1), resource_version_match="NotOlderThan")
    assert int(newer["metadata"]["resourceVersion"]) >= latest - 1
    assert len(newer["items"]) == 250


def test_too_large_resource_version(api: Any, ns: str) -> None:
    lw = lister_watcher(api, ns)
    current = int(list_all(lw)["metadata"]["resourceVersion"])
    future = current + 100_000
    with pytest.raises(ApiStatusError) as info:
        list_all(lw, resource_version=str(future), resource_version_match="NotOlderThan")
    err = info.value
    assert err.code == 504 and err.reason == "Timeout"
    assert is_too_large_resource_version(err)
    assert err.message.startswith(f"Timeout: Too large resource version: {future}, "
                                        "current: ")
    causes = err.details["causes"]
    assert causes == [{"reason": "ResourceVersionTooLarge",
                       "message": "Too large resource version"}]
    assert err.details["retryAfterSeconds"] == 1


def test_exact_list_of_an_expired_revision_is_410(api: Any, ns: str,
                                                   backend: Backend) -> None:
    create_configmaps(api, ns, ["a", "b"])
    lw = lister_watcher(api, ns)
    old = list_all(lw)["metadata"]["resourceVersion"]
    CoreV1Api(api).delete_namespaced_config_map("a", ns)
    create_configmaps(api, ns, ["c"])
    backend.expire_watch_cache()
    with pytest.raises(ApiStatusError) as info:
        list_all(lw, resource_version=old, resource_version_match="Exact")
    assert is_expired(info.value) and info.value.code == 410
    assert info.value.message == "The resourceVersion for the provided list is too old."


def test_continue_token_of_an_expired_snapshot_is_410(api: Any, ns: str,
                                                       backend: Backend) -> None:
    create_configmaps(api, ns, [f"t-{i:02d}" for i in range(30)])
    lw = lister_watcher(api, ns)
    first = list_all(lw, limit=10)
    token = first["metadata"]["continue"]
    create_configmaps(api, ns, ["t-99"])
    backend.expire_watch_cache()
    with pytest.raises(ApiStatusError) as info:
        list_all(lw, limit=10, continue_=token)
    assert is_expired(info.value) and info.value.code == 410
    assert info.value.message.startswith(
        "The provided continue parameter is too old to display a consistent list result.")
