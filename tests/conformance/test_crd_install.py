"""Typed custom resources on both servers (issue 61, its first part): the CRD generated
from Python classes is accepted and Established (the real kube-apiserver checks that the
schema is structural), its objects are served with their defaults, installing it again
updates it, and a runtime controller of the class reconciles instances of it and writes
their status from a status instance."""

from __future__ import annotations

import threading
from typing import Annotated, Any

import msgspec
from kubernetes.client import ApiException, CustomObjectsApi

from client_cache.crd import (
    CustomResource,
    crd,
    custom_resource,
    install_crd,
    patch_status,
    resource_info,
)
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from client_cache.runtime import Action, Context, Controller, ControllerConfig
from tests.fixtures import eventually


class GizmoSpec(msgspec.Struct, rename="camel"):
    size: Annotated[int, msgspec.Meta(ge=1, le=10)]
    color: str = "red"
    port: int | str = 80
    labels: dict[str, str] = {}
    extra: dict[str, Any] | None = None


class GizmoStatus(msgspec.Struct, rename="camel"):
    ready: bool = False


@custom_resource(group="typed.example.com", version="v1", kind="Gizmo", short_names=("gz",))
class Gizmo(CustomResource):
    spec: GizmoSpec
    status: GizmoStatus | None = None


def test_a_generated_crd_is_established_and_serves_objects(api: Any, ns: str) -> None:
    gizmo = Gizmo
    info = resource_info(gizmo)
    # the CRD stays for the next test (a CRD being deleted cannot be made again at once)
    stored = install_crd(api, gizmo, timeout=60)
    assert stored["metadata"]["name"] == info.name
    conditions = {c["type"]: c["status"] for c in stored["status"]["conditions"]}
    assert conditions["Established"] == "True"
    again = install_crd(api, gizmo, timeout=60)  # exists: updated, not refused
    assert again["spec"]["versions"][0]["schema"] == \
        crd(gizmo)["spec"]["versions"][0]["schema"]
    custom = CustomObjectsApi(api)
    created: list[Any] = []

    def create() -> bool:
        try:
            created.append(custom.create_namespaced_custom_object(
                info.group, info.version, ns, info.plural,
                {"apiVersion": info.api_version, "kind": info.kind,
                 "metadata": {"name": "one"}, "spec": {"size": 3, "port": "http"}}))
            return True
        except ApiException as err:  # 404, or 429 on the real server, until served
            if err.status not in (404, 429, 503):
                raise
            return False
    eventually(create, 30, "the new resource was not served")
    # the server applied the plain defaults (an empty map has none in the schema)
    assert created[0]["spec"] == {"size": 3, "port": "http", "color": "red"}


def test_a_controller_of_the_class_reconciles_typed_objects(api: Any, ns: str) -> None:
    info = resource_info(Gizmo)
    install_crd(api, Gizmo, timeout=60)
    custom = CustomObjectsApi(api)

    def create(name: str, size: int) -> bool:
        try:
            custom.create_namespaced_custom_object(
                info.group, info.version, ns, info.plural,
                {"apiVersion": info.api_version, "kind": info.kind,
                 "metadata": {"name": name}, "spec": {"size": size}})
            return True
        except ApiException as err:
            if err.status not in (404, 429, 503):
                raise
            return False
    eventually(lambda: create("small", 2), 30, "the resource was not served")
    assert create("big", 9)
    seen: list[Gizmo] = []
    written = threading.Event()

    def reconcile(gizmo: Gizmo, ctx: Context[None]) -> Action:
        seen.append(gizmo)
        if gizmo.status is None or gizmo.status.ready != (gizmo.spec.size > 5):
            stored = patch_status(api, gizmo, GizmoStatus(ready=gizmo.spec.size > 5))
            assert isinstance(stored, Gizmo) and stored.status is not None
        if len({g.metadata.name for g in seen if g.status is not None}) == 2:
            written.set()
        return Action.await_change()

    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns))
    controller = Controller(factory, Gizmo, config=ControllerConfig(events=False))
    stop = threading.Event()
    runner = threading.Thread(target=controller.run, args=(reconcile,), kwargs={"stop": stop},
                              name="test-typed-controller", daemon=True)
    runner.start()
    try:
        assert written.wait(30), [(g.metadata.name, g.status) for g in seen]
        assert all(isinstance(g, Gizmo) for g in seen)
        statuses = {g.metadata.name: g.status.ready for g in seen if g.status is not None}
        assert statuses == {"small": False, "big": True}
        assert controller.kind == "Gizmo"
    finally:
        stop.set()
        controller.shutdown()
        runner.join(10)
        factory.shutdown(5)
    assert not runner.is_alive()
