"""The benchmarks' replay source (bench/replay): a client_cache informer syncs from its
LIST and from its watch-list, then receives every change event once they are let go."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from bench.replay import ReplayServer
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from tests.fixtures import eventually, go_program

go_program("replay")  # built by make envtest; until then the module is skipped

PODS, EVENTS = 300, 2000


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer(PODS, EVENTS) as server:
        yield server


@pytest.mark.parametrize("watch_list", [False, True])
def test_an_informer_syncs_and_receives_every_change(
        replay: ReplayServer, watch_list: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENABLE_CLIENT_GO_WATCH_LIST_ALPHA", raising=False)
    monkeypatch.setenv("KUBE_FEATURE_WatchListClient", "true" if watch_list else "false")
    changes: list[str] = []
    everything = threading.Event()

    def updated(old: Any, new: Any) -> None:
        changes.append(new["status"]["message"])
        if len(changes) == EVENTS:
            everything.set()

    api = replay.api_client()
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace="bench"))
    informer = factory.core().v1().pods().informer()
    informer.add_event_handler(ResourceEventHandlerFuncs(update_func=updated))
    with factory.running(timeout=30):
        assert len(informer.get_store().list_keys()) == PODS
        stats = replay.stats()  # the path asked for was taken
        assert (stats["lists"], stats["watchLists"]) == ((0, 1) if watch_list else (1, 0))
        assert 1500 < replay.pod_bytes < 4000
        replay.start_events()
        assert everything.wait(30), f"{len(changes)} of {EVENTS} changes"
        # none lost or repeated, and each pod's changes in order; across pods the order
        # may differ: a change to a pod whose earlier change still waits in the DeltaFIFO
        # joins that key's deltas (a loaded machine made the handler lag a whole round)
        assert sorted(changes, key=lambda c: int(c.split()[1])) == [
            f"change {j}" for j in range(EVENTS)]
        for i in range(PODS):
            mine = [int(c.split()[1]) for c in changes if int(c.split()[1]) % PODS == i]
            assert mine == sorted(mine), f"pod {i}'s changes out of order: {mine}"
        # the reflector records an event's version after queueing it (Go's order), so the
        # handler may see the last change a moment before the version moves
        eventually(lambda: informer.last_sync_resource_version() == str(PODS + EVENTS), 10,
                   lambda: f"at {informer.last_sync_resource_version()}")
    api.close()
