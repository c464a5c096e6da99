"""A reflector reads its watch stream in its own thread (StreamWatcher.take_bursts;
tests/cache/test_reflector_inline.py checks the loop itself), on both servers, after a LIST
and after a watch-list's initial events (read the same way, the watch going on from
the bookmark that ends them): the changes reach its store in order with no reader
thread, and a stop while the watch is open and quiet ends it at once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.reflector import Reflector, ReflectorOptions
from tests.conformance.util import configmap, lister_watcher
from tests.fixtures import RecordingStore


def described(writes: list[tuple[str, Any]]) -> list[tuple[str, str, str]]:
    """Each write as (operation, name, data value); a replace as its item count."""
    return [(op, "", str(len(obj))) if op == "replace" else
            (op, obj["metadata"]["name"], (obj.get("data") or {}).get("value", ""))
            for op, obj in writes]


@pytest.mark.parametrize("sync", ["list", "watch-list"])
def test_a_reflectors_watch_is_read_by_its_own_thread(api: Any, ns: str, sync: str) -> None:
    core = CoreV1Api(api)
    core.create_namespaced_config_map(ns, configmap("before"))
    store = RecordingStore()
    reflector = Reflector(lister_watcher(api, ns), None, store,
                          ReflectorOptions(name="inline-conformance"))
    reflector.use_watch_list = sync == "watch-list"
    stop = threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,),
                              name="reflector-inline-conformance", daemon=True)
    thread.start()
    try:
        assert described(store.wait_for(1)) == [("replace", "", "1")]
        core.create_namespaced_config_map(ns, configmap("a"))
        core.patch_namespaced_config_map("a", ns, {"data": {"value": "1"}})
        core.delete_namespaced_config_map("before", ns)
        assert described(store.wait_for(4))[1:] == [("add", "a", "0"), ("update", "a", "1"),
                                          ("delete", "before", "0")]
        assert sorted(store.store.list_keys()) == [f"{ns}/a"]
        readers = [t.name for t in threading.enumerate() if t.name.startswith("watch-")]
        assert readers == [], readers
    finally:
        stop.set()  # the watch is open and quiet: the stop interrupts its read
        thread.join(1)
    assert not thread.is_alive(), "the reflector outlived its stop by a second"
