"""Issue 67: a typed informer past its bookmarks, and objects that do not fit its class.

A class with a required ``spec`` never sees a BOOKMARK (its object carries only metadata),
so the watch goes on past every bookmark without a relist; an object the CRD's schema
allows but the class refuses is left out of the cache, named in ``health()`` and in one
ERROR line (visible with no logging configured), while every object that fits is cached
and delivered."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from kubernetes.client import CustomObjectsApi

from client_cache.codec._unfit import UnfitObject
from client_cache.codec._watch_decoders import object_lines
from client_cache.codec._wire import loads
from client_cache.codec.structs import StructCodec, struct_type
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.crd import CustomResource, custom_resource, install_crd, resource_info
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import eventually


class WidgetSpec(msgspec.Struct, rename="camel"):
    size: int


@custom_resource(group="unfit.example.com", version="v1", kind="Widget")
class Widget(CustomResource):
    spec: WidgetSpec


class LooseSpec(msgspec.Struct, rename="camel"):
    size: int | str


@custom_resource(group="unfit.example.com", version="v1", kind="Widget")
class LooseWidget(CustomResource):
    """The CRD the server holds: it allows ``size: "three"``, which Widget refuses."""

    spec: LooseSpec


def test_a_bookmark_never_reaches_the_class() -> None:
    codec = StructCodec(Widget)
    line = (b'{"type":"BOOKMARK","object":{"kind":"Widget","apiVersion":"unfit.example.com/v1",'
            b'"metadata":{"resourceVersion":"7"}}}')
    kind, obj = codec.decode_event(line)
    assert (kind, obj["metadata"]["resourceVersion"]) == ("BOOKMARK", "7")
    decode_model = object_lines(loads, lambda d: Widget(**d), Widget)
    assert decode_model(line)[1] == obj


def test_an_object_that_does_not_fit_is_named_not_raised() -> None:
    codec = StructCodec(Widget)
    line = (b'{"type":"MODIFIED","object":{"kind":"Widget","metadata":{"name":"w",'
            b'"namespace":"ns","resourceVersion":"9"},"spec":{"size":"three"}}}')
    kind, obj = codec.decode_event(line)
    assert kind == "MODIFIED" and isinstance(obj, UnfitObject)
    assert (obj.key(), obj.resource_version()) == ("ns/w", "9")
    assert "$.spec.size" in obj.reason and "three" not in repr(obj) + obj.reason
    body = (b'{"kind":"WidgetList","metadata":{"resourceVersion":"9"},"items":['
            b'{"metadata":{"name":"a"},"spec":{"size":1}},{"metadata":{"name":"b"}}]}')
    items = codec.decode_list(body)["items"]
    assert isinstance(items[0], Widget) and isinstance(items[1], UnfitObject)
    assert "spec" in items[1].reason
    with pytest.raises(ValueError):  # not JSON at all: still an error of the stream
        codec.decode_event(b'{"type":"ADDED","object":{')
    pods = StructCodec(struct_type(__import__("kubernetes").client.V1Pod))
    assert pods.decode_event(b'{"type":"BOOKMARK","object":{"metadata":'
                             b'{"resourceVersion":"3"}}}')[0] == "BOOKMARK"


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer(bookmark_interval=0.2) as running:
        yield running


def test_a_typed_informer_syncs_past_bookmarks_and_bad_objects(
        server: EmbeddedApiServer, caplog: pytest.LogCaptureFixture) -> None:
    api = server.api_client()
    install_crd(api, LooseWidget)
    info = resource_info(Widget)
    custom = CustomObjectsApi(api)

    def create(name: str, size: Any) -> None:
        custom.create_namespaced_custom_object(
            info.group, info.version, "default", info.plural,
            {"apiVersion": info.api_version, "kind": info.kind,
             "metadata": {"name": name}, "spec": {"size": size}})
    create("good", 1)
    create("bad", "three")
    caplog.set_level(logging.ERROR, "client_cache")
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace="default"))
    informer = factory.for_resource(Widget).informer()
    added: list[Any] = []
    deleted: list[Any] = []
    informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=added.append, delete_func=deleted.append))
    stop = threading.Event()
    factory.start(stop)
    try:
        assert factory.wait_for_cache_sync(stop, timeout=10)
        assert [w.metadata.name for w in informer.get_store().list()] == ["good"]
        health = informer.health()
        assert health.decode_errors >= 1 and set(health.unfit) == {"default/bad"}
        assert "$.spec.size" in health.unfit["default/bad"]
        text = "\n".join(r.getMessage() for r in caplog.records
                         if r.levelno == logging.ERROR)
        assert "Widget default/bad" in text and "does not fit Widget" in text
        assert "three" not in text
        # the watch goes on: a later bad version, a fixed one, a delete of a bad one
        create("later-bad", "four")
        custom.patch_namespaced_custom_object(info.group, info.version, "default",
                                              info.plural, "bad", {"spec": {"size": 3}})
        eventually(lambda: {w.metadata.name for w in informer.get_store().list()}
                   == {"good", "bad"}, 10, "the fixed object was not cached")
        eventually(lambda: set(informer.health().unfit) == {"default/later-bad"}, 10,
                   "the fixed object is still named")
        custom.delete_namespaced_custom_object(info.group, info.version, "default",
                                               info.plural, "later-bad")
        watch_events = informer.health().watch_events
        # several bookmark periods (0.2 s each) pass with no relist
        eventually(lambda: informer.health().watch_events >= watch_events + 5, 10,
                   "no bookmarks arrived")
        health = informer.health()
        assert (health.lists, health.relists, health.consecutive_failures) == (1, 0, 0)
        assert health.unfit == {}
        assert {w.metadata.name for w in added} == {"good", "bad"}
        assert deleted == []  # never cached: its delete reaches no handler
    finally:
        stop.set()
        factory.shutdown(5)
        api.close()
