"""Issue 67: a typed custom-resource informer and a controller of the class run past three
bookmark periods on both servers (the real server's bookmark comes about once a minute,
so this is the slow tier) with one LIST, no relist, no failure, and each object
reconciled once: before, every BOOKMARK failed the typed decode (the class requires a
``spec`` the bookmark lacks) and the informer relisted, reconciling everything again."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import msgspec
import pytest
from kubernetes.client import ApiException, CustomObjectsApi

from client_cache.crd import CustomResource, custom_resource, install_crd, resource_info
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from client_cache.runtime import Action, Context, Controller, ControllerConfig
from tests.conformance.util import run_controller
from tests.fixtures import eventually

pytestmark = pytest.mark.slow


class LongSpec(msgspec.Struct, rename="camel"):
    size: int


@custom_resource(group="longrun.example.com", version="v1", kind="Longrun")
class Longrun(CustomResource):
    spec: LongSpec  # required: a bookmark's object has no spec


@pytest.mark.timeout(420)
def test_a_typed_informer_and_controller_outlive_three_bookmark_periods(
        api: Any, ns: str) -> None:
    info = resource_info(Longrun)
    install_crd(api, Longrun, timeout=60)
    custom = CustomObjectsApi(api)

    def create(name: str) -> bool:
        try:
            custom.create_namespaced_custom_object(
                info.group, info.version, ns, info.plural,
                {"apiVersion": info.api_version, "kind": info.kind,
                 "metadata": {"name": name}, "spec": {"size": 1}})
            return True
        except ApiException as err:
            if err.status not in (404, 429, 503):
                raise
            return False
    names = [f"w{i}" for i in range(5)]
    for name in names:
        eventually(lambda name=name: create(name), 30, "the resource was not served")
    reconciled: Counter[str] = Counter()
    lock = threading.Lock()

    def reconcile(obj: Longrun, ctx: Context[None]) -> Action:
        with lock:
            reconciled[obj.metadata.name] += 1
        return Action.await_change()

    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns))
    informer = factory.for_resource(Longrun).informer()
    controller = Controller(factory, Longrun, config=ControllerConfig(events=False))
    stop, runner = run_controller(controller, reconcile, "test-long-typed")
    changing = threading.Event()

    def change() -> None:  # one object keeps changing (the embedded server's bookmarks
        size = 1           # come while the resource changes, as the runs did)
        while not changing.wait(1.0):
            size += 1
            custom.patch_namespaced_custom_object(info.group, info.version, ns, info.plural,
                                                  "w0", {"spec": {"size": size}})
    changer = threading.Thread(target=change, name="test-long-typed-changer", daemon=True)
    try:
        eventually(lambda: sorted(reconciled) == names, 30, "not every object reconciled")
        changer.start()
        bookmarks = informer.health().bookmarks

        def three_bookmarks() -> bool:
            health = informer.health()
            assert health.relists == 0, f"relisted: {health.last_error}"  # fail at once
            assert health.decode_errors == 0, health.unfit
            return health.bookmarks >= bookmarks + 3
        eventually(three_bookmarks, 400, "three bookmarks did not arrive")
        health = informer.health()
        assert (health.lists, health.relists, health.consecutive_failures) == (1, 0, 0), \
            health
        assert health.decode_errors == 0
        with lock:  # a relist would have reconciled the unchanged ones again
            assert {n: reconciled[n] for n in names[1:]} == dict.fromkeys(names[1:], 1)
    finally:
        changing.set()
        if changer.ident is not None:
            changer.join(5)
        stop.set()
        controller.shutdown()
        runner.join(10)
        factory.shutdown(5)
    assert not runner.is_alive()
