"""A shared informer's relist reads each LIST item, or each ADDED event of a watch-list,
beside the object cached under its key (ClientListerWatcher.set_previous_objects,
sharing.decoder's ``whole`` and ``added``): an object that did not change is the cached
one; not with a transform set, nor with ``CLIENT_CACHE_REUSE_UNCHANGED=0``. On the
embedded server, whose watch is ended by a 410 so that the reflector lists again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _sharing as sharing
from client_cache.codec._decoding import reuse_cached
from client_cache.shared_informer import (
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
    wait_for_cache_sync,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import UpdateQueue, eventually, running

pytestmark = [pytest.mark.c_path, pytest.mark.needs_native]

PODS = GroupVersionResource("", "v1", "pods")



def name_of(obj: Any) -> str:
    return str(obj["metadata"]["name"])


@pytest.fixture
def synced_informer(server: EmbeddedApiServer, request: pytest.FixtureRequest,
                    ) -> Iterator[tuple[Any, UpdateQueue]]:
    """Three pods, and a pods informer synced on them, its handler's updates on a queue.
    The test's parameter, if any, is the informer's transform, or ``"watch-list"`` for an
    informer that lists by watch-list."""
    core = CoreV1Api(server.api_client())
    for i in range(3):
        core.create_namespaced_pod("ns", {
            "metadata": {"name": f"web-{i}", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "registry.example.com/web:1",
                                     "resources": {"limits": {"cpu": "1"}}}]}})
    param = getattr(request, "param", None)
    informer = new_shared_index_informer_with_options(
        ClientListerWatcher(server.api_client(), PODS), None,
        SharedIndexInformerOptions(use_watch_list=param == "watch-list"))
    if callable(param):
        informer.set_transform(param)
    handler = UpdateQueue()
    informer.add_event_handler(handler)
    with running(informer, "informer-pods") as stop:
        assert wait_for_cache_sync(stop, informer.has_synced)
        eventually(lambda: server.open_watch_count() >= 1, 5, "the informer never watched")
        yield informer, handler


def relisted(server: EmbeddedApiServer, informer: Any, handler: UpdateQueue,
             ) -> tuple[dict[str, Any], dict[str, tuple[Any, Any]]]:
    """The cached pods by name, then the update the relist that a 410 starts gives for
    each."""
    before = {name_of(obj): obj for obj in informer.get_indexer().list()}
    server.send_watch_error(410)
    updates: dict[str, tuple[Any, Any]] = {}
    while len(updates) < 3:
        old, new = handler.updates.get(timeout=30)
        updates[name_of(new)] = (old, new)
    return before, updates


@pytest.mark.parametrize("synced_informer", ["list", "watch-list"], indirect=True)
def test_a_relist_keeps_the_cached_objects_that_did_not_change(
        server: EmbeddedApiServer, synced_informer: tuple[Any, UpdateQueue]) -> None:
    informer, handler = synced_informer
    before, updates = relisted(server, informer, handler)
    for name, (old, new) in updates.items():
        assert old is before[name]
        assert new is old  # the LIST item or ADDED event read beside it, equal all through
    after = {name_of(obj): obj for obj in informer.get_indexer().list()}
    assert all(after[name] is before[name] for name in before)


def without_managed_fields(obj: Any) -> Any:
    obj["metadata"].pop("managedFields", None)
    return obj


@pytest.mark.parametrize("synced_informer", [without_managed_fields], indirect=True)
def test_with_a_transform_a_relist_gives_objects_of_their_own(
        server: EmbeddedApiServer, synced_informer: tuple[Any, UpdateQueue]) -> None:
    informer, handler = synced_informer
    before, updates = relisted(server, informer, handler)
    for name, (old, new) in updates.items():
        assert old is before[name] and new == old
        assert new is not old and new["spec"] is not old["spec"]


def test_the_environment_turns_it_off(server: EmbeddedApiServer,
                                      monkeypatch: pytest.MonkeyPatch,
                                      request: pytest.FixtureRequest) -> None:
    monkeypatch.setenv(sharing.REUSE_UNCHANGED_ENV, "0")
    informer, handler = request.getfixturevalue("synced_informer")
    before, updates = relisted(server, informer, handler)
    for name, (old, new) in updates.items():
        assert old is before[name] and new == old
        assert new is not old and new["spec"] is not old["spec"]


class CountingStore:
    """The two things an informer's lister-watcher asks of its store
    (decoding.reuse_cached), counting the look-ups."""

    def __init__(self) -> None:
        self.objects: dict[str, Any] = {}
        self.asked: list[str] = []

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        self.asked.append(key)
        return self.objects.get(key), key in self.objects

    def __len__(self) -> int:
        return len(self.objects)


def test_a_list_made_while_the_cache_is_empty_looks_nothing_up(
        server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    for name in ("web-0", "web-1"):
        core.create_namespaced_pod("ns", {"metadata": {"name": name}, "spec": {
            "containers": [{"name": "c", "image": "i"}]}})
    lw = ClientListerWatcher(server.api_client(), PODS)
    store = CountingStore()
    reuse_cached(lw, store)
    first = lw.list(ListOptions())["items"]
    assert store.asked == []  # an initial sync: nothing to find
    store.objects = {f"ns/{name_of(pod)}": pod for pod in first}
    again = lw.list(ListOptions())["items"]
    assert sorted(store.asked) == ["ns/web-0", "ns/web-1"]
    assert all(a is b for a, b in zip(again, first, strict=True))
