"""Servers and helpers of the conformance suite (see ``conftest.py``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from types import TracebackType
from typing import Any

from kubernetes.client import CoreV1Api, V1Pod

from client_cache import DeletedFinalStateUnknown
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import Event, EventType, Watch
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec.structs import struct_type
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from client_cache.listwatch import new_filtered_list_watch_from_client
from client_cache.testing.apiserver import EmbeddedApiServerProcess
from client_cache.testing.envtest import ControlPlane
from tests.fixtures import eventually

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
#: Served without a watch cache on the real server (``--watch-cache-sizes=podtemplates#0``):
#: its watches read etcd directly, so a compaction gives them etcd's 410.
PODTEMPLATES = GroupVersionResource("", "v1", "podtemplates")


class Backend:
    """What a conformance test may ask of a server, whichever it is."""

    name = ""

    def api_client(self) -> Any:
        raise NotImplementedError

    def compact(self) -> int:
        """Compact the storage at its current revision; returns that revision."""
        raise NotImplementedError

    def expire_watch_cache(self) -> None:
        """Make every resourceVersion seen so far too old for a watch of a cached resource:
        on the real server, restart the API server (its watch cache starts over at the
        current revision); on the embedded one, compact."""
        raise NotImplementedError

    def restart_apiserver(self, state_path: str) -> None:
        """Restart the API server keeping the data (the embedded one through a dump at
        ``state_path``; the real one's etcd keeps it)."""
        raise NotImplementedError

    def stop_apiserver(self, state_path: str) -> None:
        """An outage: the API server stops (connections refused) until
        :meth:`start_apiserver`, the data kept (the embedded one's in a dump at
        ``state_path``, the real one's in etcd)."""
        raise NotImplementedError

    def start_apiserver(self, state_path: str) -> None:
        """End the outage :meth:`stop_apiserver` began, on the same port."""
        raise NotImplementedError

    def kubeconfig(self) -> dict[str, Any]:
        """A kubeconfig for another process (an admin's, on the real server)."""
        raise NotImplementedError


class EmbeddedBackend(Backend):
    name = "embedded"

    def __init__(self) -> None:
        self.server = EmbeddedApiServerProcess(bookmark_interval=1.0,
                                               uncached_resources=("podtemplates",),
                                               feature_gates={
                                                   "ShardedListAndWatch": True,
                                                   "CoordinatedLeaderElection": True})

    def __enter__(self) -> EmbeddedBackend:
        self.server.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.server.stop()

    def api_client(self) -> Any:
        return self.server.api_client()

    def compact(self) -> int:
        return self.server.compact()

    def expire_watch_cache(self) -> None:
        self.server.compact()

    def restart_apiserver(self, state_path: str) -> None:
        self.server.kill_and_restart(state_path)

    def stop_apiserver(self, state_path: str) -> None:
        self.server.kill(state_path)

    def start_apiserver(self, state_path: str) -> None:
        self.server.restart(state_path)

    def kubeconfig(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Config",
                "clusters": [{"name": "embedded", "cluster": {"server": self.server.url}}],
                "users": [{"name": "anyone", "user": {}}],
                "contexts": [{"name": "embedded",
                              "context": {"cluster": "embedded", "user": "anyone"}}],
                "current-context": "embedded"}


class RealBackend(Backend):
    name = "real"

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane

    def api_client(self) -> Any:
        return self.plane.api_client()

    def compact(self) -> int:
        return self.plane.compact()

    def expire_watch_cache(self) -> None:
        self.plane.compact()
        self.plane.restart_apiserver()

    def restart_apiserver(self, state_path: str) -> None:
        self.plane.restart_apiserver()

    def stop_apiserver(self, state_path: str) -> None:
        self.plane.stop_apiserver()

    def start_apiserver(self, state_path: str) -> None:
        self.plane.start_apiserver()

    def kubeconfig(self) -> dict[str, Any]:
        return self.plane.kubeconfig()


# -- objects ---------------------------------------------------------------------------------------

def configmap(name: str, labels: dict[str, str] | None = None, value: str = "0") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {"value": value}}


def parallel(calls: Iterable[Callable[[], Any]], workers: int = 8) -> list[Any]:
    """Run the calls on a few threads (the pool is shut down before returning)."""
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="conformance") as pool:
        return list(pool.map(lambda call: call(), list(calls)))


def create_configmaps(api: Any, ns: str, names: Iterable[str],
                      labels: Callable[[str], dict[str, str]] | None = None) -> None:
    """Create the ConfigMaps, then wait until a list at resourceVersion "0" holds them all.
    The real API server answers such a list (an informer's first, as client-go's) from its
    watch cache, which can trail the writes just made by a few tenths of a second on a
    loaded machine; it only moves forward, so a cache that syncs afterwards holds them."""
    core = CoreV1Api(api)
    wanted = list(names)
    parallel(lambda n=n: core.create_namespaced_config_map(  # type: ignore[misc]
        ns, configmap(n, labels(n) if labels else None)) for n in wanted)

    def served() -> bool:
        listed = core.list_namespaced_config_map(ns, resource_version="0")
        return set(wanted) <= {item.metadata.name for item in listed.items if item.metadata}

    eventually(served, 30, f"the server's cache does not hold {len(wanted)} new ConfigMaps")


# -- list and watch --------------------------------------------------------------------------------

def lister_watcher(api: Any, ns: str, gvr: GroupVersionResource = CONFIGMAPS,
                   **kwargs: Any) -> ClientListerWatcher:
    return new_filtered_list_watch_from_client(api, gvr, ns, **kwargs)


def rv(obj: Any) -> int:
    return int(obj["metadata"]["resourceVersion"])


def name_of(obj: Any) -> str:
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key.rsplit("/", 1)[-1]
    if isinstance(obj, dict):
        return str(obj["metadata"]["name"])
    return str(obj.metadata.name)


def collect(watch: Watch, until: Callable[[list[Event]], bool],
            timeout: float = 20.0) -> tuple[list[Event], bool]:
    """Events of ``watch`` until ``until(events)`` holds, the stream ends, or ``timeout``;
    returns the events and whether the stream ended. The watch is stopped either way."""
    events: list[Event] = []
    deadline = time.monotonic() + timeout
    ended = False
    try:
        while not until(events):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            event, ok = watch.result_chan().recv(timeout=left)
            if not ok:
                ended = True
                break
            if event is not None:
                events.append(event)
    finally:
        watch.stop()
    return events, ended


def initial_events_ended(events: list[Event]) -> bool:
    """Whether a watch-list's initial events have ended: the bookmark that says so is in
    ``events``."""
    return any(e.type == EventType.BOOKMARK and (e.object["metadata"].get("annotations")
                                                 or {}).get("k8s.io/initial-events-end")
               for e in events)


def changes(events: list[Event]) -> list[tuple[str, str]]:
    """(type, name) of the events that are not bookmarks."""
    return [(e.type.value, name_of(e.object)) for e in events if e.type != EventType.BOOKMARK]


def list_all(lw: ClientListerWatcher, **options: Any) -> dict[str, Any]:
    return lw.list(ListOptions(**options))  # type: ignore[no-any-return]


class Recorder:
    """A ResourceEventHandler that records (kind, name) and wakes waiters."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.events: list[tuple[str, str]] = []
        self.running = 0
        self.overlaps = 0
        self.threads: set[int] = set()  # client-go calls one handler from one goroutine

    def _record(self, kind: str, obj: Any) -> None:
        with self.cond:
            self.running += 1
            self.overlaps += self.running > 1
            self.threads.add(threading.get_ident())
        with self.cond:
            self.events.append((kind, name_of(obj)))
            self.running -= 1
            self.cond.notify_all()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._record("update", new)

    def on_delete(self, obj: Any) -> None:
        self._record("tombstone" if isinstance(obj, DeletedFinalStateUnknown) else "delete", obj)

    def wait(self, predicate: Callable[[list[tuple[str, str]]], bool],
             timeout: float = 30.0) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: predicate(self.events), timeout)

    def final_state(self) -> set[str]:
        """Names alive after replaying the recorded story (adds minus deletes)."""
        alive: set[str] = set()
        with self.cond:
            for kind, name in self.events:
                if kind in ("add", "update"):
                    alive.add(name)
                else:
                    alive.discard(name)
        return alive


def recorded_pods(api: Any, form: str, **options: Any) -> tuple[Any, Any, Recorder]:
    """A factory made with ``options`` (:class:`SharedInformerFactoryOptions`' fields), its
    pods informer in ``form`` (``dicts``, ``models`` or ``structs``) and a
    :class:`Recorder` on it: (factory, the informer's store, the recorder)."""
    factory = new_factory(api, 0, SharedInformerFactoryOptions(**options))
    pods = factory.core().v1().pods(struct_type(V1Pod)) if form == "structs" else \
        factory.core().v1().pods(models=form == "models")
    recorder = Recorder()
    pods.informer().add_event_handler(recorder)
    return factory, pods.informer().get_store(), recorder


@contextmanager
def synced(factories: Iterable[Any]) -> Iterator[threading.Event]:
    """Start ``factories``, wait for every informer's sync, yield their stop event; stop
    and shut them down after."""
    stop = threading.Event()
    try:
        for factory in factories:
            factory.start(stop)
            assert all(factory.wait_for_cache_sync(stop).values())
        yield stop
    finally:
        stop.set()
        for factory in factories:
            factory.shutdown()


def run_controller(controller: Any, reconcile: Any, name: str,
                   ) -> tuple[threading.Event, threading.Thread]:
    """``controller.run(reconcile, stop=...)`` on a named thread; returns the stop event
    (the caller owns the informers' lifetime) and the thread."""
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(reconcile,),
                              kwargs={"stop": stop}, name=name, daemon=True)
    runner.start()
    return stop, runner
