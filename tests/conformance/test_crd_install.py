"""Typed custom resources on both servers (issue 61, its first part): the CRD generated
from Python classes is accepted and Established (the real kube-apiserver checks that the
schema is structural), its objects are served, and installing it again updates it."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from kubernetes.client import ApiException, ApiextensionsV1Api, CustomObjectsApi

from client_cache.crd import crd, custom_resource, install_crd, resource_info
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
class Gizmo(msgspec.Struct, rename="camel"):
    spec: GizmoSpec
    status: GizmoStatus | None = None


def test_a_generated_crd_is_established_and_serves_objects(api: Any, ns: str) -> None:
    gizmo = Gizmo
    info = resource_info(gizmo)
    try:
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
    finally:
        ApiextensionsV1Api(api).delete_custom_resource_definition(info.name)
