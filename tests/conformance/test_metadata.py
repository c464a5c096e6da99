"""Metadata-only informers (issue 16, item 5) on both servers: LIST and WATCH in the
``PartialObjectMetadata`` forms, no relist loop, listers, models."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kubernetes.client import CoreV1Api, V1ObjectMeta

from client_cache.api.labels import everything
from client_cache.api.schema import GroupVersionResource
from client_cache.informers import (
    PartialObjectMetadata,
    SharedInformerFactoryOptions,
    new_metadata_lister,
    new_metadata_shared_informer_factory,
)
from tests.conformance.util import Recorder, configmap

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


def test_metadata_informer_lists_and_watches_metadata_only(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    for i in range(3):
        core.create_namespaced_config_map(ns, {**configmap(f"m-{i}", {"app": "x"}),
                                               "data": {"secret-ish": f"payload-{i}"}})
    factory = new_metadata_shared_informer_factory(
        api, 0, SharedInformerFactoryOptions(namespace=ns))
    configmaps = factory.for_resource(CONFIGMAPS)
    watch_errors: list[BaseException] = []
    informer = configmaps.informer()
    informer.set_watch_error_handler(lambda r, err: watch_errors.append(err))
    recorder = Recorder()
    informer.add_event_handler(recorder)
    with pytest.raises(AttributeError, match="for_resource"):
        factory.core()
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop) == {CONFIGMAPS: True}
        cached = configmaps.lister().by_namespace(ns).get("m-1")
        assert cached["kind"] == "PartialObjectMetadata"
        assert cached["apiVersion"] == "meta.k8s.io/v1"
        assert set(cached) == {"kind", "apiVersion", "metadata"}  # no data
        assert cached["metadata"]["labels"] == {"app": "x"}
        # changes arrive by watch, in metadata form
        core.patch_namespaced_config_map("m-1", ns, {"metadata": {"labels": {"app": "y"}}})
        core.delete_namespaced_config_map("m-2", ns)
        core.create_namespaced_config_map(ns, configmap("m-3"))
        assert recorder.wait(lambda evs: ("update", "m-1") in evs and ("delete", "m-2") in evs
                             and ("add", "m-3") in evs)
        lister = new_metadata_lister(informer.get_indexer(), CONFIGMAPS)
        assert lister.by_namespace(ns).get("m-1")["metadata"]["labels"] == {"app": "y"}
        assert sorted(o["metadata"]["name"] for o in lister.list(everything())) == [
            "m-0", "m-1", "m-3"]
        # the watch held: no "very short watch" and no relist loop
        assert watch_errors == []
        assert [k for k, _ in recorder.events].count("add") == 4
    finally:
        stop.set()
        assert factory.shutdown(timeout=5) == []


def test_metadata_informer_models(api: Any, ns: str) -> None:
    CoreV1Api(api).create_namespaced_config_map(ns, configmap("model-0", {"k": "v"}))
    factory = new_metadata_shared_informer_factory(
        api, 0, SharedInformerFactoryOptions(namespace=ns))
    configmaps = factory.for_resource(CONFIGMAPS, models=True)
    stop = threading.Event()
    factory.start(stop)
    try:
        assert all(factory.wait_for_cache_sync(stop).values())
        obj = configmaps.lister().by_namespace(ns).get("model-0")
        assert isinstance(obj, PartialObjectMetadata)
        assert isinstance(obj.metadata, V1ObjectMeta) and obj.metadata.labels == {"k": "v"}
        assert obj.to_dict()["kind"] == "PartialObjectMetadata"
    finally:
        stop.set()
        assert factory.shutdown(timeout=5) == []
