"""Typed custom resources on both servers (issue 61, its first part): the CRD generated
from Python classes is accepted and Established (the real kube-apiserver checks that the
schema is structural), its objects are served with their defaults, installing it again
updates it, and a runtime controller of the class reconciles instances of it and writes
their status from a status instance."""

from __future__ import annotations

import json
import threading
from typing import Annotated, Any, Literal

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
from tests.conformance.util import run_controller
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
    stop, runner = run_controller(controller, reconcile, "test-typed-controller")
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


class CheckedSpec(msgspec.Struct, rename="camel"):
    name: Annotated[str, msgspec.Meta(pattern="^[a-z]+$", min_length=1, max_length=8)]
    count: Annotated[int, msgspec.Meta(gt=0, lt=100, multiple_of=5)] = 5
    mode: Literal["fast", "safe"] = "fast"
    tags: Annotated[list[str], msgspec.Meta(max_length=3)] = []
    port: int | str = 80
    labels: dict[str, str] = {}


@custom_resource(group="typed.example.com", version="v1", kind="Checked")
class Checked(CustomResource):
    spec: CheckedSpec


#: (spec sent, the causes both servers answer as (reason, field), and the message after
#: "is invalid: "); no causes means accepted.
TABLE: list[tuple[dict[str, Any] | None, set[tuple[str, str]], str]] = [
    ({"name": "ok"}, set(), ""),
    ({"name": "ok", "count": 95, "mode": "safe", "tags": ["a"], "port": "http"}, set(), ""),
    (None, {("FieldValueRequired", "spec")}, "spec: Required value"),
    ({}, {("FieldValueRequired", "spec.name")}, "spec.name: Required value"),
    ({"name": "UPPER"}, {("FieldValueInvalid", "spec.name")},
     "spec.name: Invalid value: \"UPPER\": spec.name in body should match '^[a-z]+$'"),
    ({"name": "toolongname"}, {("FieldValueTooLong", "spec.name")},
     "spec.name: Too long: may not be more than 8 bytes"),
    ({"name": 3}, {("FieldValueTypeInvalid", "spec.name")},
     'spec.name: Invalid value: "integer": spec.name in body must be of type string: '
     '"integer"'),
    ({"name": "ok", "count": 7}, {("FieldValueInvalid", "spec.count")},
     "spec.count: Invalid value: 7: spec.count in body should be a multiple of 5"),
    ({"name": "ok", "count": 100}, {("FieldValueInvalid", "spec.count")},
     "spec.count: Invalid value: 100: spec.count in body should be less than 100"),
    ({"name": "ok", "count": 0}, {("FieldValueInvalid", "spec.count")},
     "spec.count: Invalid value: 0: spec.count in body should be greater than 0"),
    ({"name": "ok", "mode": "slow"}, {("FieldValueNotSupported", "spec.mode")},
     'spec.mode: Unsupported value: "slow": supported values: "fast", "safe"'),
    ({"name": "ok", "tags": ["a", "b", "c", "d"]}, {("FieldValueTooMany", "spec.tags")},
     "spec.tags: Too many: 4: must have at most 3 items"),
    ({"name": "ok", "labels": {"a": 1}}, {("FieldValueTypeInvalid", "spec.labels.a")},
     'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type '
     'string: "integer"'),
    ({"name": "ok", "port": True}, {("FieldValueTypeInvalid", "spec.port")},
     'spec.port: Invalid value: "boolean": spec.port in body must be of type '
     'integer,string: "boolean"'),
]


def test_both_servers_refuse_what_breaks_the_schema_alike(api: Any, ns: str) -> None:
    """Issue 61: a table of valid and invalid objects; both servers accept the same
    ones and refuse the others with 422 Invalid, the same causes (reason, field) and the
    same message."""
    info = resource_info(Checked)
    install_crd(api, Checked, timeout=60)
    custom = CustomObjectsApi(api)
    answers: list[tuple[int, set[tuple[str, str]], str]] = []

    def send(i: int, spec: dict[str, Any] | None) -> bool:
        body: dict[str, Any] = {"apiVersion": info.api_version, "kind": info.kind,
                                "metadata": {"name": f"case-{i}"}}
        if spec is not None:
            body["spec"] = spec
        try:
            custom.create_namespaced_custom_object(info.group, info.version, ns,
                                                   info.plural, body)
            answers.append((201, set(), ""))
        except ApiException as err:
            if err.status in (404, 429, 503) and not answers:
                return False  # not served yet
            status = json.loads(err.body)
            answers.append((err.status, {(c["reason"], c["field"]) for c in
                                         (status.get("details") or {}).get("causes") or []},
                            status["message"].split(" is invalid: ", 1)[-1]))
        return True
    for i, (spec, _, _) in enumerate(TABLE):
        eventually(lambda i=i, spec=spec: send(i, spec), 30, "not served")
    expected = [(201, set(), "") if not causes else (422, causes, message)
                for _, causes, message in TABLE]
    assert answers == expected
