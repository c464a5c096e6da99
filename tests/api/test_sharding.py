"""client_cache.api.sharding: the hash, the ranges and the parser (its refusals are the
API server's; the conformance suite checks both servers agree)."""

from __future__ import annotations

import itertools

import pytest

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.sharding import (
    FULL_RANGE_END,
    ShardSelector,
    ShardSelectorError,
    hash_field,
    hash_value,
    parse_shard_selector,
    shard_range_selector,
    shard_ranges,
)
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.listwatch import new_list_watch_from_client
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import eventually

HALF = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
REST = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"


def test_the_hash_is_fnv1a_64() -> None:
    # the published FNV-1a 64 vectors
    assert hash_field("") == "cbf29ce484222325"
    assert hash_field("a") == "af63dc4c8601ec8c"
    assert hash_field("foobar") == "85944171f73967e8"
    assert hash_value("a") == 0xAF63DC4C8601EC8C


def test_ranges_cover_the_space_without_gaps() -> None:
    for count in (1, 2, 3, 7):
        ranges = shard_ranges(count)
        assert ranges[0][0] == 0 and ranges[-1][1] == FULL_RANGE_END
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    with pytest.raises(ValueError):
        shard_ranges(0)
    assert shard_range_selector(shard_ranges(2)) == f"{HALF} || {REST}"
    with pytest.raises(ValueError, match="not within"):
        shard_range_selector([(5, 5)])


def test_a_selector_parses_round_trips_and_matches() -> None:
    selector = parse_shard_selector(f"  ({HALF}) || {REST} ")
    assert str(selector) == f"{HALF} || {REST}"
    assert parse_shard_selector(str(selector)) == selector
    low = parse_shard_selector(HALF)
    obj = {"metadata": {"uid": "a"}}  # hashes to 0xaf63..., the upper half
    assert not low.matches(obj) and selector.matches(obj)
    assert ShardSelector().empty() and ShardSelector().matches(obj)
    by_ns = parse_shard_selector(HALF.replace("uid", "namespace"))
    assert by_ns.matches({"metadata": {"namespace": "b"}}) is (hash_value("b") < 1 << 63)


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty shard selector is not allowed"),
    (HALF.replace("0x0000000000000000", "0x0"),
     'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" (did you mean '
     '"0x0000000000000000"?)'),
    (HALF.replace("'0x8000000000000000'", "'8000000000000000'"),
     "hexEnd must have '0x' prefix"),
    (HALF.replace("8000", "800g"), 'hexEnd: invalid hex character "g"'),
    (REST.replace("0x10000000000000000", "0x20000000000000000"),
     "17-digit hex value must be '0x10000000000000000'"),
    (HALF.replace("uid", "name"), 'unsupported field path "object.metadata.name"'),
    ("shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
     "shard range start 0x8000000000000000 must be less than end 0x0000000000000000"),
    (f"{HALF} || {REST.replace('uid', 'namespace')}",
     'all shard ranges must use the same field'),
    (f"{HALF} && {REST}", 'unsupported function "_&&_"'),
    ("size(object)", 'unsupported function "size"'),
    ("shardRange(object.metadata.uid, '0x0000000000000000')",
     "shardRange() requires exactly 3 arguments, got 2"),
    (f"{HALF} ;", "CEL parse error"),
])
def test_refusals_say_what_the_api_server_says(text: str, message: str) -> None:
    with pytest.raises(ShardSelectorError) as refused:
        parse_shard_selector(text)
    assert message in str(refused.value)


def test_the_option_is_sent_and_ignored_without_the_gate() -> None:
    assert ("shardSelector", HALF) in ListOptions(shard_selector=HALF).to_query()
    with EmbeddedApiServer() as server:  # ShardedListAndWatch off, as on a real v1.36
        pods = server.store.lookup("", "v1", "pods")
        for i in range(10):
            server.store.create(pods, "ns", {"metadata": {"name": f"p{i}"}})
        api = server.api_client()
        try:
            lw = new_list_watch_from_client(api, GroupVersionResource("", "v1", "pods"))
            listed = lw.list(ListOptions(shard_selector="not even parsed"))
            assert len(listed["items"]) == 10 and "shardInfo" not in listed["metadata"]
        finally:
            api.close()
    with pytest.raises(ValueError, match="unrecognized feature gate: Nope"):
        EmbeddedApiServer(feature_gates={"Nope": True})


def test_a_sharded_informer_stays_sharded_across_a_relist() -> None:
    """After a 410 the informer fills again, with the same selector: the new objects of
    the other shard never reach its cache."""
    low = shard_ranges(2)[0]
    with EmbeddedApiServer(bookmark_interval=0.2,
                           feature_gates={"ShardedListAndWatch": True}) as server:
        pods = server.store.lookup("", "v1", "pods")
        assert pods is not None
        for i in range(20):
            server.store.create(pods, "ns", {"metadata": {"name": f"a{i}"}})
        api = server.api_client()
        factory = new_shared_informer_factory_with_options(api, 0, SharedInformerFactoryOptions(
            shard_selector=shard_range_selector([low])))
        informer = factory.core().v1().pods().informer()
        try:
            with factory.running(timeout=10):
                fills = informer.health().lists
                server.send_watch_error(410)
                for i in range(20):
                    server.store.create(pods, "ns", {"metadata": {"name": f"b{i}"}})
                eventually(lambda: informer.health().lists > fills, 10, "no relist")
                everything = server.store.snapshot(pods, None)[0]
                wanted = {f"ns/{o['metadata']['name']}" for o in everything
                          if low[0] <= hash_value(o["metadata"]["uid"]) < low[1]}
                eventually(lambda: set(informer.get_store().list_keys()) == wanted, 10)
                assert 0 < len(wanted) < 40
        finally:
            api.close()
