"""Informer health and sync timeouts against both servers: a synced informer reports
healthy with one LIST; an informer of a resource the server does not serve never syncs,
and the timeout names it with the server's answer."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache import CacheSyncTimeoutError
from client_cache.api.schema import GroupVersionResource
from client_cache.health import serve
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory,
    new_shared_informer_factory_with_options,
)
from tests.conformance.util import Backend
from tests.fixtures import eventually, http_get


def test_health_of_a_synced_informer(api: Any, ns: str) -> None:
    CoreV1Api(api).create_namespaced_config_map(ns, {"metadata": {"name": "one"}})
    factory = new_shared_informer_factory(api, 0)
    informer = factory.for_resource(GroupVersionResource("", "v1", "configmaps")).informer()
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=30)
        health = informer.health()
        assert (health.resource, health.synced, health.healthy, health.lists) == (
            "configmaps", True, True, 1)
        assert health.consecutive_failures == 0 and health.last_error == ""
        CoreV1Api(api).create_namespaced_config_map(ns, {"metadata": {"name": "two"}})
        eventually(lambda: informer.health().watch_events >= 1, 30, "no watch event")
    finally:
        stop.set()
        assert factory.shutdown(5) == []


def test_a_resource_the_server_does_not_serve_times_out_by_name(api: Any) -> None:
    factory = new_shared_informer_factory(api, 0)
    factory.informer_for(GroupVersionResource("example.com", "v1", "nopes"))
    stop = threading.Event()
    factory.start(stop)
    try:
        with pytest.raises(CacheSyncTimeoutError) as caught:
            factory.wait_for_cache_sync(stop, timeout=3)
        assert list(caught.value.unsynced) == ["nopes.example.com"]
        assert "404" in caught.value.unsynced["nopes.example.com"]
    finally:
        stop.set()
        assert factory.shutdown(5) == []


def test_an_outage_turns_both_probes_red_and_its_end_green(
        backend: Backend, api: Any, ns: str, tmp_path: Path) -> None:
    """Issue 59, on both servers: the API server stops (connections refused); the
    informer counts each failed attempt, turns unhealthy after its threshold, and
    /healthz and /readyz answer 500 naming the resource; when the server is back they
    answer 200 again by themselves."""
    core = CoreV1Api(api)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "before"}})
    factory = new_shared_informer_factory_with_options(
        api, 0, SharedInformerFactoryOptions(namespace=ns))
    informer = factory.for_resource(GroupVersionResource("", "v1", "configmaps")).informer()
    informer.status.failing_after = 0.5
    stop = threading.Event()
    state = str(tmp_path / "state.json")
    try:
        with serve(factory=factory) as health:
            factory.start(stop)
            assert factory.wait_for_cache_sync(stop, timeout=30)
            core.create_namespaced_config_map(ns, {"metadata": {"name": "seen"}})
            eventually(lambda: informer.get_indexer().get_by_key(f"{ns}/seen")[1], 30)
            backend.stop_apiserver(state)
            try:
                eventually(lambda: http_get(health.url + "/healthz")[0] == 500, 30,
                           "/healthz stayed 200 with the API server down")
                for path in ("/healthz", "/readyz"):
                    status, body = http_get(health.url + path)
                    assert status == 500 and "[-]informers failed: configmaps: failing" in body
            finally:
                backend.start_apiserver(state)
            eventually(lambda: http_get(health.url + "/healthz") == (200, "ok"), 60,
                       "/healthz never recovered")
            eventually(lambda: http_get(health.url + "/readyz") == (200, "ok"), 60)
    finally:
        stop.set()
        assert factory.shutdown(5) == []

