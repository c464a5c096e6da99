"""A reflector reads its watch stream in its own thread (StreamWatcher.take_bursts;
tests/test_reflector_inline.py checks the loop itself), on both servers: the changes
reach its store in order with no reader thread, and a stop while the watch is open and
quiet ends it at once."""

from __future__ import annotations

import threading
from typing import Any

from kubernetes.client import CoreV1Api

from client_cache import meta_namespace_key_func, new_store
from client_cache.reflector import Reflector, ReflectorOptions
from tests.conformance.util import configmap, lister_watcher


class Recorded:
    """A store that records each write's (operation, name, value), so a test can wait
    for the n-th."""

    def __init__(self) -> None:
        self.store = new_store(meta_namespace_key_func)
        self.cond = threading.Condition()
        self.writes: list[tuple[str, str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _write(self, op: str, obj: Any) -> None:
        getattr(self.store, op)(obj)
        with self.cond:
            data = obj.get("data") or {}
            self.writes.append((op, obj["metadata"]["name"], data.get("value", "")))
            self.cond.notify_all()

    def add(self, obj: Any) -> None:
        self._write("add", obj)

    def update(self, obj: Any) -> None:
        self._write("update", obj)

    def delete(self, obj: Any) -> None:
        self._write("delete", obj)

    def replace(self, items: list[Any], resource_version: str) -> None:
        self.store.replace(items, resource_version)
        with self.cond:
            self.writes.append(("replace", "", str(len(items))))
            self.cond.notify_all()

    def wait_for(self, count: int) -> list[tuple[str, str, str]]:
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.writes) >= count, timeout=30), \
                self.writes
            return list(self.writes)


def test_a_reflectors_watch_is_read_by_its_own_thread(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    core.create_namespaced_config_map(ns, configmap("before"))
    store = Recorded()
    reflector = Reflector(lister_watcher(api, ns), None, store,
                          ReflectorOptions(name="inline-conformance"))
    stop = threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,),
                              name="reflector-inline-conformance", daemon=True)
    thread.start()
    try:
        assert store.wait_for(1) == [("replace", "", "1")]
        core.create_namespaced_config_map(ns, configmap("a"))
        core.patch_namespaced_config_map("a", ns, {"data": {"value": "1"}})
        core.delete_namespaced_config_map("before", ns)
        assert store.wait_for(4)[1:] == [("add", "a", "0"), ("update", "a", "1"),
                                          ("delete", "before", "0")]
        assert sorted(store.store.list_keys()) == [f"{ns}/a"]
        readers = [t.name for t in threading.enumerate() if t.name.startswith("watch-")]
        assert readers == [], readers
    finally:
        stop.set()  # the watch is open and quiet: the stop interrupts its read
        thread.join(1)
    assert not thread.is_alive(), "the reflector outlived its stop by a second"
