"""Informer health and sync timeouts against both servers: a synced informer reports
healthy with one LIST; an informer of a resource the server does not serve never syncs,
and the timeout names it with the server's answer."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache import CacheSyncTimeoutError
from client_cache.informers import new_shared_informer_factory
from client_cache.schema import GroupVersionResource
from tests.fixtures import eventually


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
