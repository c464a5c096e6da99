"""A Reflector, a SharedIndexInformer and a factory + lister each converge to the server's
state after 1k mixed changes, across a lost watch history on the way (on the real server:
compaction plus an API server restart, etcd keeping the data)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.labels import parse
from client_cache.api.lists import ListOptions
from client_cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from client_cache.reflector import ReflectorOptions, new_reflector_with_options
from client_cache.shared_informer import (
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
    wait_for_cache_sync,
)
from client_cache.store import Store, meta_namespace_key_func, new_store
from tests.conformance.util import (
    CONFIGMAPS,
    Backend,
    Recorder,
    configmap,
    create_configmaps,
    lister_watcher,
    name_of,
    parallel,
    rv,
)
from tests.fixtures import eventually

KEYS = 160
CHANGES = 1000
WORKERS = 8


def mixed_changes(api: Any, ns: str, count: int, seed: int,
                  midway: Callable[[], None] | None = None) -> None:
    """``count`` random creates, updates and deletes over ``KEYS`` names; each worker owns
    its own names, so there are no conflicts; ``midway`` runs after half of them."""
    core = CoreV1Api(api)
    barrier = threading.Barrier(WORKERS + 1)

    def worker(w: int) -> None:
        rnd = random.Random(seed * 100 + w)
        mine = [f"m-{k:03d}" for k in range(KEYS) if k % WORKERS == w]
        alive = {name for name in mine if int(name[2:]) < KEYS // 2}
        for step in range(count // WORKERS):
            if step == count // WORKERS // 2:
                barrier.wait(60)  # let midway() run with nothing in flight
                barrier.wait(60)
            name = rnd.choice(mine)
            if name not in alive:
                core.create_namespaced_config_map(
                    ns, configmap(name, {"parity": str(int(name[2:]) % 2)}, str(step)))
                alive.add(name)
            elif rnd.random() < 0.3:
                core.delete_namespaced_config_map(name, ns)
                alive.discard(name)
            else:
                core.patch_namespaced_config_map(name, ns, {"data": {"value": str(step)}})

    def coordinator() -> None:
        barrier.wait(60)
        if midway is not None:
            midway()
        barrier.wait(60)

    parallel([*(lambda w=w: worker(w) for w in range(WORKERS)), coordinator],
             workers=WORKERS + 1)


def seed_objects(api: Any, ns: str) -> None:
    create_configmaps(api, ns, [f"m-{k:03d}" for k in range(KEYS // 2)],
                      labels=lambda n: {"parity": str(int(n[2:]) % 2)})


def server_state(api: Any, ns: str) -> dict[str, int]:
    listed = lister_watcher(api, ns).list(ListOptions())
    return {name_of(o): rv(o) for o in listed["items"]}


def cache_state(store: Store) -> dict[str, int]:
    return {name_of(o): rv(o) for o in store.list()}


def converge(api: Any, ns: str, state: Callable[[], dict[str, int]],
             timeout: float = 60.0) -> dict[str, int]:
    """Wait until ``state()`` equals the server's; returns it."""
    truth = server_state(api, ns)
    deadline = time.monotonic() + timeout
    while True:
        seen = state()
        if seen == truth:
            return truth
        assert time.monotonic() < deadline, (
            f"no convergence: missing {sorted(set(truth) - set(seen))[:5]}, extra "
            f"{sorted(set(seen) - set(truth))[:5]}, stale "
            f"{[k for k in truth if k in seen and seen[k] != truth[k]][:5]}")
        time.sleep(0.05)


def test_reflector_into_a_store_converges(api: Any, ns: str, backend: Backend) -> None:
    seed_objects(api, ns)
    store = new_store(meta_namespace_key_func)
    reflector = new_reflector_with_options(
        lister_watcher(api, ns), {"kind": "ConfigMap", "apiVersion": "v1"}, store,
        ReflectorOptions(name="conformance"))
    stop = threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,), name="reflector-test")
    thread.start()
    try:
        converge(api, ns, lambda: cache_state(store))
        # half the changes, then the server forgets the watch history, then the rest
        mixed_changes(api, ns, CHANGES, seed=1, midway=backend.expire_watch_cache)
        truth = converge(api, ns, lambda: cache_state(store))
        # the store is replaced before the reflector records the list's resourceVersion
        # (Go's order), so the version may trail the store's contents for a moment
        newest = max(truth.values())
        eventually(lambda: int(reflector.last_sync_resource_version()) >= newest, 10,
                   lambda: f"{reflector.last_sync_resource_version()} < {newest}")
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


@pytest.mark.parametrize("queue", ["DeltaFIFO", "RealFIFO", "atomic"])
def test_shared_index_informer_converges_with_a_consistent_story(
        api: Any, ns: str, backend: Backend, queue: str) -> None:
    """Halfway through, the watch history is lost (real server: compaction and an API
    server restart, etcd keeping the data); handlers still see a consistent story and end
    at the server's state. On a RealFIFO the informer processes batches (one store
    transaction each, as client-go v0.35+); on the atomic RealFIFO (client-go v0.36's
    default) each relist is one item, applied in one step."""
    seed_objects(api, ns)
    informer = new_shared_index_informer_with_options(
        lister_watcher(api, ns), {"kind": "ConfigMap", "apiVersion": "v1"},
        SharedIndexInformerOptions(indexers={NAMESPACE_INDEX: meta_namespace_index_func},
                                   use_real_fifo=queue != "DeltaFIFO",
                                   atomic_relist=queue == "atomic"))
    batches: list[int] = []
    handle_batch = informer.handle_batch_deltas

    def counted(deltas: list[Any], is_in_initial_list: bool) -> None:
        batches.append(len(deltas))
        handle_batch(deltas, is_in_initial_list)

    informer.handle_batch_deltas = counted  # type: ignore[method-assign]
    handlers = [Recorder(), Recorder()]
    for handler in handlers:
        informer.add_event_handler(handler)
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name="informer-test")
    thread.start()
    try:
        assert wait_for_cache_sync(stop, informer.has_synced)
        mixed_changes(api, ns, CHANGES, seed=2, midway=backend.expire_watch_cache)
        truth = converge(api, ns, lambda: cache_state(informer.get_indexer()))
        assert {name_of(o) for o in informer.get_indexer().by_index(NAMESPACE_INDEX, ns)} == set(
            truth)
        for handler in handlers:
            assert handler.wait(lambda evs, h=handler: h.final_state() == set(truth))
            # a handler never runs concurrently with itself: all its calls come from the
            # one listener thread it was given
            assert handler.overlaps == 0 and len(handler.threads) == 1
            story: dict[str, str] = {}
            for kind, name in handler.events:
                last = story.get(name)
                if kind == "add":
                    # a tombstone is a delete seen by a relist (the object went while the
                    # watch was down); the name may be created again after it
                    assert last in (None, "delete", "tombstone"), (name, last)
                elif kind == "update":
                    assert last in ("add", "update"), (name, last)
                else:
                    assert last in ("add", "update"), (name, last)
                story[name] = kind
        if queue == "RealFIFO":  # the initial list came as one batch at least
            assert batches and max(batches) >= KEYS // 2
        elif queue == "atomic":  # the lists came whole: batches are of watch events only
            assert informer.atomic_relist and (not batches or max(batches) < KEYS // 2)
        else:
            assert batches == []
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_factory_and_lister_converge(api: Any, ns: str, backend: Backend) -> None:
    seed_objects(api, ns)
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns))
    configmaps = factory.core().v1().config_maps()
    recorder = Recorder()
    configmaps.informer().add_event_handler(recorder)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop) == {CONFIGMAPS: True}
        mixed_changes(api, ns, CHANGES, seed=3, midway=backend.expire_watch_cache)
        lister = configmaps.lister()
        truth = converge(api, ns, lambda: {name_of(o): rv(o) for o in lister.list(parse(""))})
        odd = {name_of(o) for o in lister.by_namespace(ns).list(parse("parity=1"))}
        assert odd == {n for n in truth if int(n[2:]) % 2 == 1}
        some = sorted(truth)[0]
        assert rv(lister.by_namespace(ns).get(some)) == truth[some]
    finally:
        stop.set()
        factory.shutdown(5)
