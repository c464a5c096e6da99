"""No object outlives its stop (issue 16, item 2): after ``stop`` and the join, nothing of
the library keeps a stopped reflector, informer or factory reachable; a weak reference to
each (and to its store and list-watch) is dead after ``gc.collect()``."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.informers import new_shared_informer_factory
from client_cache.reflector import Reflector, ReflectorOptions
from client_cache.shared_informer import new_shared_index_informer, wait_for_cache_sync
from client_cache.store import meta_namespace_key_func, new_store
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import eventually

PODS = GroupVersionResource("", "v1", "pods")


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    server = EmbeddedApiServer(bookmark_interval=0.2).start()
    yield server
    server.stop()


def assert_collected(refs: dict[str, weakref.ref[Any]]) -> None:
    gc.collect()
    alive = sorted(name for name, ref in refs.items() if ref() is not None)
    assert alive == [], f"still reachable after stop: {alive}"


def test_stopped_reflectors_are_collected(server: EmbeddedApiServer) -> None:
    """Three reflectors, each stopped while watching (the stop travels as an exception
    through the watch loop: a shared exception instance would keep its frames)."""
    refs: dict[str, weakref.ref[Any]] = {}
    for i in range(3):
        store = new_store(meta_namespace_key_func)
        lw = ClientListerWatcher(server.api_client(), PODS)
        reflector = Reflector(lw, None, store, ReflectorOptions(name=f"r{i}"))
        stop = threading.Event()
        thread = threading.Thread(target=reflector.run, args=(stop,), name=f"reflector-{i}")
        thread.start()
        eventually(lambda r=reflector: r.last_sync_resource_version() != "")
        eventually(lambda: server.open_watch_count() >= 1)
        stop.set()
        thread.join(5)
        assert not thread.is_alive()
        refs.update({f"reflector{i}": weakref.ref(reflector), f"store{i}": weakref.ref(store),
                     f"listwatch{i}": weakref.ref(lw)})
        del reflector, store, lw, thread
    assert_collected(refs)


def synced_and_stopped(lw: ClientListerWatcher) -> Any:
    """An informer on ``lw`` with a handler, run until synced, then stopped."""
    informer = new_shared_index_informer(lw, None, 0, {})
    informer.add_event_handler_with_resync_period(_Handler(), 0)
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="informer-pods")
    thread.start()
    assert wait_for_cache_sync(stop, informer.has_synced)
    stop.set()
    thread.join(5)
    assert not thread.is_alive()
    return informer


def test_a_stopped_informer_is_collected(server: EmbeddedApiServer) -> None:
    lw = ClientListerWatcher(server.api_client(), PODS)
    informer = synced_and_stopped(lw)
    refs = {"informer": weakref.ref(informer), "indexer": weakref.ref(informer.get_indexer()),
            "listwatch": weakref.ref(lw)}
    del informer, lw
    assert_collected(refs)


def test_a_lister_watcher_kept_keeps_no_stopped_informers_cache(
        server: EmbeddedApiServer) -> None:
    """The informer lends its cache to the lister-watcher's watches (the objects events
    replace: ClientListerWatcher.set_previous_objects) and takes it back when it stops."""
    lw = ClientListerWatcher(server.api_client(), PODS)
    informer = synced_and_stopped(lw)
    refs = {"informer": weakref.ref(informer), "indexer": weakref.ref(informer.get_indexer())}
    del informer
    assert_collected(refs)
    assert lw.list(ListOptions())["items"] == []  # still usable


def test_a_stopped_factory_is_collected(server: EmbeddedApiServer) -> None:
    factory = new_shared_informer_factory(server.api_client(), 0)
    informers = [factory.core().v1().pods().informer(),
                 factory.core().v1().config_maps().informer()]
    for informer in informers:
        informer.add_event_handler(_Handler())
    stop = threading.Event()
    factory.start(stop)
    assert all(factory.wait_for_cache_sync(stop).values())
    stop.set()
    assert factory.shutdown(timeout=5) == []
    refs = {"factory": weakref.ref(factory)}
    refs.update({f"informer{i}": weakref.ref(inf) for i, inf in enumerate(informers)})
    del factory, informers, informer
    assert_collected(refs)


class _Handler:
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        pass

    def on_update(self, old: Any, new: Any) -> None:
        pass

    def on_delete(self, obj: Any) -> None:
        pass
