"""testing/fake_controller_source.go (fake_controller_source_test.go)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1ObjectMeta, V1PersistentVolume

from client_cache.api.lists import ListOptions, list_items, list_resource_version
from client_cache.api.watch import EventType, Watch
from client_cache.errors import is_expired
from client_cache.testing.fake_controller_source import (
    FakeControllerSource,
    new_fake_pv_controller_source,
)
from client_cache.util.chan import CLOSED
from tests.fixtures import pod


def rvs(w: Watch, n: int | None = None) -> list[str]:
    """Resource versions delivered by ``w`` until it closes (or ``n`` of them)."""
    out = []
    while n is None or len(out) < n:
        event, ok = w.result_chan().recv(5)
        if not ok:
            assert event is CLOSED
            break
        out.append(event.object["metadata"]["resourceVersion"])
    return out


def test_rc_number() -> None:
    """TestRCNumber."""
    source = FakeControllerSource()
    obj = pod("foo", "ns")
    source.add(obj)
    source.modify(obj)
    source.modify(obj)
    assert obj["metadata"]["resourceVersion"] == "3"  # the passed object is versioned
    w1 = source.watch(ListOptions(resource_version="1"))
    w2 = source.watch(ListOptions(resource_version="2"))
    w3 = source.watch(ListOptions(resource_version="3"))
    listed = source.list()
    assert list_resource_version(listed) == "3"
    assert [o["metadata"]["name"] for o in list_items(listed)] == ["foo"]
    listed["items"][0]["metadata"]["name"] = "changed"  # lists are deep copies
    assert source.list()["items"][0]["metadata"]["name"] == "foo"
    source.shutdown()
    assert rvs(w1) == ["2", "3"]
    assert rvs(w2) == ["3"]
    assert rvs(w3) == []


def test_reset_watch() -> None:
    """TestResetWatch."""
    source = FakeControllerSource()
    obj = pod("foo", "ns")
    source.add(obj)
    source.modify(obj)
    source.modify(obj)
    source.reset_watch()
    with pytest.raises(Exception) as info:
        source.watch(ListOptions(resource_version="1"))
    assert is_expired(info.value)
    w = source.watch(ListOptions(resource_version="3"))
    source.modify(obj)
    assert rvs(w, 1) == ["4"]
    source.shutdown()


def test_watch_errors_and_drop_watch() -> None:
    source = FakeControllerSource()
    with pytest.raises(ValueError):
        source.watch(ListOptions(resource_version=""))
    with pytest.raises(ValueError, match="future"):
        source.watch(ListOptions(resource_version="5"))
    w = source.watch(ListOptions(resource_version="0"))
    a, b = pod("a", "ns"), pod("b", "ns")
    source.add_drop_watch(a)  # recorded, not sent
    source.add(b)
    source.delete_drop_watch(a)
    event, _ = w.result_chan().recv(5)
    assert (event.type, event.object["metadata"]["name"]) == (EventType.ADDED, "b")
    assert [o["metadata"]["name"] for o in source.list()["items"]] == ["b"]
    with pytest.raises(Exception) as info:
        source.watch(ListOptions(resource_version="0"))  # older than the whole history
    assert is_expired(info.value)
    replay = source.watch(ListOptions(resource_version="1"))
    source.shutdown()
    assert rvs(replay) == ["2", "3"]  # the dropped delete is still in the history
    source2 = FakeControllerSource()
    source2.list_error = RuntimeError("Access Denied")
    with pytest.raises(RuntimeError, match="Access Denied"):
        source2.list()


def test_pv_source_lists_models() -> None:
    source = new_fake_pv_controller_source()
    pv: Any = V1PersistentVolume(metadata=V1ObjectMeta(name="pv-1"))
    source.add(pv)
    listed = source.list()
    assert type(listed).__name__ == "V1PersistentVolumeList"
    assert listed.metadata.resource_version == "1"
    assert list_items(listed)[0].metadata.name == "pv-1"
    source.shutdown()
