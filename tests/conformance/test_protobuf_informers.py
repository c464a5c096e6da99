"""Informers asked for protobuf (``SharedInformerFactoryOptions(protobuf=True)``) on both
servers: on each initial-sync path and in each object form, the cache holds what an
informer reading JSON holds, through the sync and the watch events after it (struct
mode's structs decoded from protobuf straight, :mod:`client_cache.codec._protobuf_structs`)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kubernetes.client import CoreV1Api, V1Pod

from bench.bench_compare import real_pod
from client_cache.codec import protobuf
from client_cache.codec.objects import to_wire
from client_cache.codec.structs import struct_type
from tests.conformance.test_protobuf import POD
from tests.conformance.util import parallel, recorded_pods, synced

PODS = 25


def canonical(obj: Any) -> Any:
    """An object's wire dict as a protobuf round trip leaves it (Go's zero values
    written): the forms compare equal whatever server stored them."""
    wire = to_wire(obj)
    return protobuf.decode(protobuf.encode({"apiVersion": "v1", "kind": "Pod", **wire}))


@pytest.mark.parametrize("form", ["dicts", "models", "structs"])
@pytest.mark.parametrize("sync", ["list", "watch-list"])
def test_a_protobuf_informer_holds_what_a_json_one_holds(
        api: Any, ns: str, sync: str, form: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="client_cache")
    decoded = {"lists": 0, "events": 0}  # what came in protobuf (the JSON informer: none)
    finish, decode_event = protobuf.ListReader.finish, protobuf.decode_watch_event

    def counted_finish(reader: protobuf.ListReader) -> dict[str, Any]:
        decoded["lists"] += 1
        return finish(reader)

    def counted_event(frame: bytes, flags: int = 0,
                      plans: tuple[Any, int] = ()) -> tuple[str, Any]:
        decoded["events"] += 1
        return decode_event(frame, flags, plans)

    monkeypatch.setattr(protobuf.ListReader, "finish", counted_finish)
    monkeypatch.setattr(protobuf, "decode_watch_event", counted_event)
    core = CoreV1Api(api)
    parallel(lambda i=i: core.create_namespaced_pod(ns, real_pod(i), _preload_content=False)
             for i in range(PODS))
    core.create_namespaced_pod(ns, {**POD, "metadata": {**POD["metadata"],
                                                         "finalizers": []}})
    factories, stores, recorders = zip(*(
        recorded_pods(api, form, namespace=ns, use_watch_list=sync == "watch-list",
                      protobuf=encoding) for encoding in (False, True)), strict=True)
    with synced(factories):
        core.patch_namespaced_pod("web-000001", ns, {"metadata": {"labels": {"x": "1"}}})
        core.delete_namespaced_pod("web-000002", ns, grace_period_seconds=0)
        core.create_namespaced_pod(ns, real_pod(PODS + 1))
        late = ("delete", "web-000002")
        for recorder in recorders:
            assert recorder.wait(lambda got: late in got and ("update", "web-000001")
                                 in got and ("add", f"web-{PODS + 1:06d}") in got)
        from_json, from_protobuf = ({key: canonical(store.get_by_key(key)[0])
                                     for key in store.list_keys()} for store in stores)
        assert len(from_protobuf) == PODS + 1
        assert from_protobuf == from_json
        if sync == "list":
            assert decoded["lists"] == 1 and decoded["events"] >= 3
        else:  # every pod an event, then the bookmark, then the three changes
            assert decoded["lists"] == 0 and decoded["events"] >= PODS + 1 + 3
        # neither informer fell back from its sync path (a model refusing the zero values
        # of a bookmark's object once made the watch-list fall back to a LIST)
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], \
            [r.getMessage()[:200] for r in caplog.records]
        if form == "dicts":
            assert type(stores[1].list()[0]) is dict
        elif form == "models":
            assert isinstance(stores[1].list()[0], V1Pod)
        else:
            assert type(stores[1].list()[0]) is struct_type(V1Pod)
            assert stores[1].list()[0].metadata.name.startswith(("web-", "rich"))
