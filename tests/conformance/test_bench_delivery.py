"""The benchmark's server-delivery measurement (``bench.contenders.delivery``) on both
servers: it reads a sync path's initial data to its end, and never reports an answer in
another encoding than the one it asked for."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from bench import contenders
from bench.bench_compare import real_pod
from bench.contenders import JSON, PROTOBUF, delivery
from tests.conformance.util import parallel

PODS = 30


@pytest.fixture
def pods(api: Any, ns: str) -> list[dict[str, Any]]:
    """``PODS`` pods in ``ns``, as a JSON LIST from resourceVersion 0 returns them."""
    core = CoreV1Api(api)
    parallel(lambda i=i: core.create_namespaced_pod(ns, real_pod(i), _preload_content=False)
             for i in range(PODS))
    body = core.list_namespaced_pod(ns, _preload_content=False).data
    items: list[dict[str, Any]] = json.loads(body)["items"]
    assert len(items) == PODS
    return items


def test_a_list_is_read_to_the_end_of_its_body(api: Any, ns: str,
                                                pods: list[dict[str, Any]]) -> None:
    got = delivery(api, ns, "list")
    body = CoreV1Api(api).list_namespaced_pod(ns, resource_version="0",
                                              _preload_content=False).data
    assert got["content_type"].startswith(JSON)
    assert got["bytes"] == len(body)
    assert got["seconds"] > 0


def test_a_watch_list_is_read_up_to_the_bookmark_that_ends_its_initial_events(
        api: Any, ns: str, pods: list[dict[str, Any]]) -> None:
    got = delivery(api, ns, "watch-list")
    assert got["content_type"].startswith(JSON)
    # every pod came (each event carries one), and the read stopped at the bookmark
    # rather than waiting on the open stream for changes that never come
    assert got["bytes"] >= sum(len(json.dumps(p, separators=(",", ":"))) for p in pods)
    assert got["seconds"] > 0


@pytest.mark.parametrize("sync", ["list", "watch-list"])
def test_protobuf_is_read_and_an_answer_in_another_type_refused(
        api: Any, ns: str, pods: list[dict[str, Any]], sync: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    got = delivery(api, ns, sync, protobuf=True)
    assert got["content_type"].startswith(PROTOBUF)
    assert 0 < got["bytes"] < delivery(api, ns, sync)["bytes"]  # protobuf is the smaller
    # a server that cannot answer in the type asked for (406 here) is never reported
    monkeypatch.setattr(contenders, "PROTOBUF", "application/x-not-a-kubernetes-type")
    with pytest.raises(SystemExit, match="asked for application/x-not-a-kubernetes-type"):
        delivery(api, ns, sync, protobuf=True)
