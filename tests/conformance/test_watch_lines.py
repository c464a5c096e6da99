"""A dicts lister-watcher's JSON watch reads its lines a buffer at a time
(client_cache.codec._sharing.line_decoder; tests/codec/test_watch_lines.py checks the decoder
itself), on both servers."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import Event, EventType
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.codec import _sharing as sharing

pytestmark = pytest.mark.skipif(not sharing.AVAILABLE,
                                reason="the C part of client_cache is not built")


def test_a_lister_watchers_json_watch_decodes_its_lines_in_batches(
        api: Any, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The events of a dicts lister-watcher's watch are made by the line decoder its
    decoding gives (counted here), and are the pods written."""
    lw = ClientListerWatcher(api, GroupVersionResource("", "v1", "pods"), ns)
    made: list[Event] = []
    given = sharing.line_decoder

    def counting(*args: Any, **kwargs: Any) -> Any:
        decode = given(*args, **kwargs)
        assert decode is not None

        def lines(data: bytes, pos: int) -> Any:
            found = decode(data, pos)
            made.extend(found[0])
            return found
        return lines
    monkeypatch.setattr(sharing, "line_decoder", counting)
    listed = lw.list(ListOptions())
    watch = lw.watch(ListOptions(resource_version=listed["metadata"]["resourceVersion"]))
    try:
        core = CoreV1Api(api)
        for name in ("a", "b"):
            core.create_namespaced_pod(ns, {"metadata": {"name": name}, "spec": {
                "containers": [{"name": "c", "image": "example.com/c:1"}]}})
        events = []
        while len(events) < 2:
            event, ok = watch.result_chan().recv(30)
            assert ok, "the watch ended or was silent for 30 s"
            events.append(event)
    finally:
        watch.stop()
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        (EventType.ADDED, "a"), (EventType.ADDED, "b")]
    assert made == events
