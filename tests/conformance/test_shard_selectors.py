"""Server-side shard selectors (KEP-5866, ``ShardedListAndWatch``): on both servers, the
ranges partition a LIST exactly (the same FNV-1a hash as kube-apiserver's), a sharded
LIST carries ``shardInfo``, a WATCH sends only its range's changes, an informer of one
shard caches only that shard, a bad selector is refused alike, and two members of a
server-mode ring each cache and reconcile their range."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.lists import ListOptions, list_shard_selector
from client_cache.api.schema import GroupVersionResource
from client_cache.api.sharding import (
    hash_value,
    parse_shard_selector,
    shard_range_selector,
    shard_ranges,
)
from client_cache.api.watch import EventType
from client_cache.errors import ApiStatusError
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from client_cache.runtime import Action, Context, Controller, ControllerConfig
from client_cache.sharding import RangeRing, ShardingConfig
from tests.conformance.util import collect, create_configmaps, list_all, lister_watcher
from tests.fixtures import eventually

COUNT = 60


def uid_of(item: dict[str, Any]) -> str:
    return str(item["metadata"]["uid"])


def test_ranges_partition_a_list_by_the_uid_hash(api: Any, ns: str) -> None:
    create_configmaps(api, ns, [f"cm-{i:03d}" for i in range(COUNT)])
    lw = lister_watcher(api, ns)
    everything = {uid_of(i) for i in list_all(lw)["items"]}
    assert len(everything) == COUNT
    seen: set[str] = set()
    for start, end in shard_ranges(4):
        selector = shard_range_selector([(start, end)])
        listed = list_all(lw, shard_selector=selector)
        assert list_shard_selector(listed) == selector  # echoed in shardInfo
        uids = {uid_of(i) for i in listed["items"]}
        assert all(start <= hash_value(uid) < end for uid in uids)  # the same hash
        assert not uids & seen
        seen |= uids
    assert seen == everything
    assert list_shard_selector(list_all(lw)) == ""  # an unsharded list says nothing


def test_two_ranges_in_one_selector_and_the_namespace_key(api: Any, ns: str) -> None:
    create_configmaps(api, ns, [f"cm-{i:03d}" for i in range(20)])
    lw = lister_watcher(api, ns)
    quarters = shard_ranges(4)
    both = shard_range_selector([quarters[0], quarters[2]])
    listed = list_all(lw, shard_selector=both)
    assert str(parse_shard_selector(list_shard_selector(listed))) == both
    assert all(quarters[0][0] <= hash_value(uid_of(i)) < quarters[0][1]
               or quarters[2][0] <= hash_value(uid_of(i)) < quarters[2][1]
               for i in listed["items"])
    in_ns = hash_value(ns)
    mine = next(r for r in quarters if r[0] <= in_ns < r[1])
    by_ns = list_all(lw, shard_selector=shard_range_selector([mine],
                                                             "object.metadata.namespace"))
    assert len(by_ns["items"]) == 20  # every object of the namespace hashes alike


def test_a_sharded_watch_sends_only_its_range(api: Any, ns: str) -> None:
    lw = lister_watcher(api, ns)
    start_rv = list_all(lw)["metadata"]["resourceVersion"]
    low = shard_ranges(2)[0]
    selector = shard_range_selector([low])
    watch = lw.watch(ListOptions(resource_version=start_rv, shard_selector=selector))
    create_configmaps(api, ns, [f"w-{i:02d}" for i in range(30)])
    in_low = {uid_of(i) for i in list_all(lw)["items"]
              if low[0] <= hash_value(uid_of(i)) < low[1]}
    events, _ = collect(watch, lambda evs: len(evs) >= len(in_low), timeout=20)
    added = {uid_of(e.object) for e in events if e.type is EventType.ADDED}
    assert added == in_low
    assert 0 < len(in_low) < 30


def test_an_informer_of_one_shard_caches_only_it(api: Any, ns: str) -> None:
    create_configmaps(api, ns, [f"cm-{i:03d}" for i in range(40)])
    high = shard_ranges(2)[1]
    selector = shard_range_selector([high])
    factory = new_factory(api, 0, SharedInformerFactoryOptions(
        namespace=ns, shard_selector=selector))
    informer = factory.core().v1().config_maps().informer()
    with factory.running(timeout=20):
        cached = informer.get_store().list()
        assert cached and all(high[0] <= hash_value(uid_of(o)) < high[1] for o in cached)
        expected = sum(1 for i in list_all(lister_watcher(api, ns))["items"]
                       if high[0] <= hash_value(uid_of(i)) < high[1])
        assert len(cached) == expected
    assert factory.shutdown(5) == []


@pytest.mark.parametrize("selector", [
    "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
    "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
    "labels(object)",
])
def test_a_bad_selector_is_refused_alike(api: Any, ns: str, selector: str) -> None:
    lw = lister_watcher(api, ns)
    with pytest.raises(ApiStatusError) as refused:
        list_all(lw, shard_selector=selector)
    assert refused.value.code == 500
    assert "invalid shard selector: " in str(refused.value)
    CoreV1Api(api).list_namespaced_config_map(ns)  # the server is fine


def test_server_sharded_controllers_cache_and_reconcile_their_range(
        backend: Any, api: Any, ns: str) -> None:
    """``ShardingConfig(mode="server")`` on both servers: two members each cache exactly
    the objects of their uid range (the server filters), every object's latest reconcile
    is by its range's owner, and when one leaves the other lists the whole space and
    reconciles the objects it took over."""
    create_configmaps(api, ns, [f"cm-{i:03d}" for i in range(COUNT)])
    uids = {uid_of(i) for i in list_all(lister_watcher(api, ns))["items"]}
    ring = RangeRing(["a", "b"])
    cond = threading.Condition()
    latest: dict[str, str] = {}  # uid -> the member of its latest reconcile
    by_a: set[str] = set()

    def reconcile(obj: Any, ctx: Context[None]) -> Action:
        with cond:
            latest[obj["metadata"]["uid"]] = ctx.shard
            if ctx.shard == "a":
                by_a.add(obj["metadata"]["uid"])
            cond.notify_all()
        return Action.await_change()

    def member(identity: str) -> Controller[Any]:
        factory = new_factory(backend.api_client(), 0,
                              SharedInformerFactoryOptions(namespace=ns))
        return Controller(factory, GroupVersionResource("", "v1", "configmaps"),
                          kind="ConfigMap", namespaced=True, config=ControllerConfig(
                              name="cms", events=False, sharding=ShardingConfig(
                                  ns, "cms", identity, mode="server", lease_duration=2.0,
                                  renew_deadline=1.5, retry_period=0.5)))

    def cached(controller: Controller[Any]) -> set[str]:
        return {uid_of(obj) for obj in controller.store().list()}

    a, b = member("a"), member("b")
    with a.running(reconcile):
        with b.running(reconcile):
            eventually(lambda: cached(a) == {u for u in uids if ring.owner(u) == "a"}
                       and cached(b) == {u for u in uids if ring.owner(u) == "b"}, 20,
                       lambda: f"a {len(cached(a))}, b {len(cached(b))} of {len(uids)}")
            with cond:
                assert cond.wait_for(lambda: set(latest) == uids and all(
                    m == ring.owner(u) for u, m in latest.items()), 20), latest
                by_a.clear()
        eventually(lambda: cached(a) == uids, 20)
        with cond:
            assert cond.wait_for(lambda: by_a >= {u for u in uids if ring.owner(u) == "b"},
                                 20)
