"""Server-assigned sharding (``ShardingConfig(mode="server")``): the ranges, the
reflector's relist with new options, and sharded controllers on the embedded server with
``ShardedListAndWatch`` on (each member caches its range only, reconciles each of its
objects, and takes the others' range when they leave) and off (a WARNING; reconciles
still split). The member processes and membership changes on both servers are in
``tests/conformance/test_sharding.py`` (``make test-slow``)."""

from __future__ import annotations

import logging
import random
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.sharding import FULL_RANGE_END, parse_shard_selector
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers.factory import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.listwatch import new_filtered_list_watch_from_client
from client_cache.runtime import Action, Context, Controller, ControllerConfig
from client_cache.sharding import RangeRing, ShardingConfig, ShardMember
from client_cache.shared_informer import (
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
)
from client_cache.testing import EmbeddedApiServer
from tests.fixtures import eventually

FAST = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.5}
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


# -- the ranges ---------------------------------------------------------------------------------
def test_sorted_members_own_equal_contiguous_ranges_the_server_selects_alike() -> None:
    """Each member's range is the one its selector asks the server for: an object the
    ring gives a member is one that member's selector matches, and no other's."""
    ring = RangeRing(["c", "a", "b"])
    assert ring == RangeRing(["a", "b", "c"]) and ring != RangeRing(["a", "b"])
    assert [ring.range_of(m) for m in "abc"] == [
        (0, FULL_RANGE_END // 3), (FULL_RANGE_END // 3, 2 * FULL_RANGE_END // 3),
        (2 * FULL_RANGE_END // 3, FULL_RANGE_END)]
    selectors = {m: parse_shard_selector(ring.selector_of(m)) for m in "abc"}
    rng = random.Random(7)
    uids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(3000)]
    counts = dict.fromkeys("abc", 0)
    for uid in uids:
        owner = ring.owner(uid)
        obj = {"metadata": {"uid": uid}}
        assert [m for m, sel in selectors.items() if sel.matches(obj)] == [owner]
        counts[owner] += 1
    assert all(900 < n < 1100 for n in counts.values()), counts
    assert RangeRing([]).owner(uids[0]) == "" and RangeRing([]).range_of("a") is None
    with pytest.raises(ValueError, match="not a member"):
        ring.selector_of("d")
    with pytest.raises(ValueError, match="non-empty identity"):
        RangeRing(["a", ""])


def test_a_member_s_selector_exists_in_server_mode_only(server: EmbeddedApiServer) -> None:
    hashed = ShardMember(ShardingConfig("default", "r", "m", **FAST), server.api_client())
    with pytest.raises(ValueError, match="mode='server'"):
        hashed.target_selector()
    ranged = ShardMember(ShardingConfig("default", "r", "m", mode="server", **FAST),
                         server.api_client())
    assert parse_shard_selector(ranged.target_selector()).requirements[0].end == \
        "0x10000000000000000"  # alone, before it has read the ring: the whole space


# -- the relist ---------------------------------------------------------------------------------
class _Seen:
    """The names an informer's handler holds, woken at every event."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.cond = threading.Condition()

    def handler(self) -> ResourceEventHandlerFuncs[Any]:
        def add(obj: Any, is_in_initial_list: bool = False) -> None:
            with self.cond:
                self.names.add(obj["metadata"]["name"])
                self.cond.notify_all()

        def delete(obj: Any) -> None:
            obj = getattr(obj, "obj", obj)
            with self.cond:
                self.names.discard(obj["metadata"]["name"])
                self.cond.notify_all()
        return ResourceEventHandlerFuncs(add_func=add, update_func=lambda o, n: add(n),
                                         delete_func=delete)

    def wait(self, names: set[str], timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.names == names, timeout), self.names


def _started(lw: Any) -> tuple[Any, _Seen, threading.Event, threading.Thread]:
    """An informer over ``lw`` running on a thread of its own, its handler's names."""
    informer = new_shared_index_informer_with_options(lw, None, SharedIndexInformerOptions())
    seen = _Seen()
    informer.add_event_handler(seen.handler())
    stop = threading.Event()
    runner = threading.Thread(target=informer.run, args=(stop,), name="test-relist",
                              daemon=True)
    runner.start()
    return informer, seen, stop, runner


@pytest.fixture
def labelled(server: EmbeddedApiServer) -> CoreV1Api:
    core = CoreV1Api(server.api_client())
    for name, app in (("a1", "a"), ("a2", "a"), ("b1", "b")):
        core.create_namespaced_config_map("default", {"metadata": {
            "name": name, "labels": {"app": app}}})
    return core


def test_a_relist_fills_the_cache_again_with_the_options_of_then(
        server: EmbeddedApiServer, labelled: CoreV1Api, fill_path: str) -> None:
    """The options a list-watch sends change; ``reconnect(relist=True)`` replaces the
    cache with what they select now, and the watch that follows sends them too."""
    selector = ["app=a"]
    lw = new_filtered_list_watch_from_client(
        server.api_client(), CONFIGMAPS, "default",
        lambda options: setattr(options, "label_selector", selector[0]))
    informer, seen, stop, runner = _started(lw)
    try:
        seen.wait({"a1", "a2"})
        lists = informer.health().lists
        selector[0] = "app=b"
        informer.reconnect("the test moved the selector", relist=True)
        seen.wait({"b1"})
        assert informer.health().lists == lists + 1
        labelled.create_namespaced_config_map("default", {"metadata": {
            "name": "b2", "labels": {"app": "b"}}})
        labelled.create_namespaced_config_map("default", {"metadata": {
            "name": "a3", "labels": {"app": "a"}}})
        seen.wait({"b1", "b2"})
        assert sorted(informer.get_indexer().list_keys()) == ["default/b1", "default/b2"]
    finally:
        stop.set()
        runner.join(2)


class _HeldFirstList:
    """A list-watch sending ``selector[0]`` as read when a request starts; its first
    LIST waits for ``release`` after reading it (a relist asked meanwhile must be
    followed by another LIST, with the selector of then)."""

    def __init__(self, inner: Any, selector: list[str]) -> None:
        self.inner = inner
        self.selector = selector
        self.entered = threading.Event()
        self.release = threading.Event()
        self.selectors: list[str] = []

    def list(self, options: ListOptions) -> Any:
        options.label_selector = self.selector[0]
        self.selectors.append(options.label_selector)
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(10)
        return self.inner.list(options)

    def watch(self, options: ListOptions) -> Any:
        options.label_selector = self.selector[0]
        return self.inner.watch(options)


def test_a_relist_asked_during_a_list_is_another_list(
        server: EmbeddedApiServer, labelled: CoreV1Api, list_path: None) -> None:
    selector = ["app=a"]
    held = _HeldFirstList(new_filtered_list_watch_from_client(
        server.api_client(), CONFIGMAPS, "default"), selector)
    informer, seen, stop, runner = _started(held)
    try:
        assert held.entered.wait(10)  # the first LIST is out, with app=a
        selector[0] = "app=b"
        informer.reconnect("the test moved the selector", relist=True)
        held.release.set()
        seen.wait({"b1"})
        assert held.selectors == ["app=a", "app=b"]
    finally:
        held.release.set()
        stop.set()
        runner.join(2)


# -- sharded controllers --------------------------------------------------------------------------
@pytest.fixture
def gated() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer(feature_gates={"ShardedListAndWatch": True}) as srv:
        yield srv


class _Reconciled:
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.by: list[tuple[str, str]] = []  # (member, uid)

    def __call__(self, obj: Any, ctx: Context[None]) -> Action:
        with self.cond:
            self.by.append((ctx.shard, obj["metadata"]["uid"]))
            self.cond.notify_all()
        return Action.await_change()

    def wait(self, predicate: Any, timeout: float = 15.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(list(self.by)), timeout), \
                self.by[-5:]


def ranged(server: EmbeddedApiServer, identity: str) -> Controller[Any]:
    factory = new_shared_informer_factory_with_options(
        server.api_client(), 0, SharedInformerFactoryOptions(namespace="default"))
    return Controller(factory, CONFIGMAPS, kind="ConfigMap", namespaced=True,
                      config=ControllerConfig(name="cms", events=False, sharding=ShardingConfig(
                          "default", "cms", identity, mode="server", **FAST)))


def _uids(core: CoreV1Api, count: int) -> list[str]:
    return [core.create_namespaced_config_map("default", {"metadata": {
        "name": f"cm-{i}"}}).metadata.uid for i in range(count)]


def _latest_by_owner(by: list[tuple[str, str]], ring: RangeRing, uids: list[str]) -> bool:
    """Every uid reconciled, and the latest reconcile of each by its range's owner (a
    uid may have started on a member alone before the other joined)."""
    latest = {uid: member for member, uid in by}
    return set(latest) == set(uids) and all(m == ring.owner(u) for u, m in latest.items())


def _cached(controller: Controller[Any]) -> set[str]:
    return {obj["metadata"]["uid"] for obj in controller.store().list()}


def test_members_cache_and_reconcile_their_range_and_take_over_on_leave(
        gated: EmbeddedApiServer) -> None:
    uids = _uids(CoreV1Api(gated.api_client()), 60)
    reconciled = _Reconciled()
    a, b = ranged(gated, "a"), ranged(gated, "b")
    ring = RangeRing(["a", "b"])
    mine = {m: {u for u in uids if ring.owner(u) == m} for m in "ab"}
    assert mine["a"] and mine["b"]
    with a.running(reconciled):
        with b.running(reconciled):
            eventually(lambda: all(c.shard_member is not None and c.shard_member.published()
                                   == ["a", "b"] for c in (a, b)), 10)
            # each cache holds its own range, filled again when the other joined
            eventually(lambda: _cached(a) == mine["a"] and _cached(b) == mine["b"], 10,
                       lambda: f"a {len(_cached(a))}, b {len(_cached(b))}")
            # once both act on the ring of two, each uid's latest reconcile is its owner's
            reconciled.wait(lambda by: _latest_by_owner(by, ring, uids))
            with reconciled.cond:
                reconciled.by.clear()
        # b left: a's range is the whole space again; it lists b's objects and
        # reconciles each of them
        eventually(lambda: _cached(a) == set(uids), 10)
        reconciled.wait(lambda by: {u for m, u in by if m == "a"} >= mine["b"])
        member = a.shard_member
        assert member is not None and member.members() == ["a"]


def test_a_server_without_the_gate_is_named_and_reconciles_still_split(
        server: EmbeddedApiServer, caplog: pytest.LogCaptureFixture) -> None:
    uids = _uids(CoreV1Api(server.api_client()), 20)
    reconciled = _Reconciled()
    a, b = ranged(server, "a"), ranged(server, "b")
    ring = RangeRing(["a", "b"])
    with caplog.at_level(logging.WARNING, "client_cache.sharding._ranged"), \
            a.running(reconciled), b.running(reconciled):
        eventually(lambda: all(c.shard_member is not None and c.shard_member.published()
                               == ["a", "b"] for c in (a, b)), 10)
        reconciled.wait(lambda by: _latest_by_owner(by, ring, uids))
        assert _cached(a) == set(uids)  # everything: the server sent it
    assert any("ignores shard selectors" in r.getMessage() for r in caplog.records)
