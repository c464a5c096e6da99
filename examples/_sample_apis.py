"""The Foo API of Kubernetes' sample-controller (its ``pkg/apis/samplecontroller/v1alpha1``
and ``artifacts/examples/crd-status-subresource.yaml``), shared by ``sample_controller.py``
(written with the runtime) and ``sample_controller_plain.py`` (the Go ``controller.go``
line by line): the resource names, the CRD, and ``new_deployment``.

``Foo`` declares the resource in Python (``client_cache.crd``; the ``[struct]`` extra):
its CRD, ``crd(Foo)``, means what ``artifacts/crd.yaml`` (the upstream
``crd-status-subresource.yaml``) means, field by field (``tests/crd/test_crd.py``), and the
runtime port reconciles typed ``Foo`` objects. The plain port reads wire dicts, as the Go
original's generated clientset would hand it typed structs: ``foo["spec"]["deploymentName"]``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import msgspec
from kubernetes.client import ApiClient, ApiException, CustomObjectsApi

from client_cache import crd as crd_module
from client_cache.api.schema import GroupVersionResource
from client_cache.crd import CustomResource, custom_resource
from client_cache.runtime import controller_owner_ref

GROUP, VERSION, KIND = "samplecontroller.k8s.io", "v1alpha1", "Foo"
API_VERSION = f"{GROUP}/{VERSION}"
FOOS = GroupVersionResource(GROUP, VERSION, "foos")
DEPLOYMENTS = GroupVersionResource("apps", "v1", "deployments")
CRD_FILE = Path(__file__).resolve().parent / "artifacts" / "crd.yaml"
"""The upstream CRD, as a file (``crd(Foo)`` means the same)."""

# The reasons and messages of sample-controller's Events.
SUCCESS_SYNCED = "Synced"
ERR_RESOURCE_EXISTS = "ErrResourceExists"
MESSAGE_RESOURCE_EXISTS = "Resource %s already exists and is not managed by Foo"
MESSAGE_RESOURCE_SYNCED = "Foo synced successfully"


class FooSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    """What a Foo asks for (Go ``FooSpec``)."""

    deployment_name: str | msgspec.UnsetType = msgspec.UNSET
    replicas: Annotated[int, msgspec.Meta(ge=1, le=10)] | msgspec.UnsetType = msgspec.UNSET


class FooStatus(msgspec.Struct, rename="camel", omit_defaults=True):
    """What the controller saw (Go ``FooStatus``)."""

    available_replicas: int | msgspec.UnsetType = msgspec.UNSET


@custom_resource(group=GROUP, version=VERSION, kind=KIND, annotations={
    # required for a *.k8s.io group; sample-controller's CRD carries the same
    "api-approved.kubernetes.io": "unapproved, experimental-only; please use "
                                  "https://github.com/kubernetes/enhancements/pull/1111"})
class Foo(CustomResource):
    """A Foo names a Deployment and its replicas (Go ``Foo``)."""

    spec: FooSpec | msgspec.UnsetType = msgspec.UNSET
    status: FooStatus | msgspec.UnsetType = msgspec.UNSET


def install_crd(api_client: ApiClient, timeout: float = 60) -> None:
    """Create (or update) the Foo CRD generated from :class:`Foo`, wait until it is
    Established and Foos are served (``kubectl apply -f`` and a wait, in one call)."""
    crd_module.install_crd(api_client, Foo, timeout=timeout)
    deadline = time.monotonic() + timeout
    objects = CustomObjectsApi(api_client)
    while True:
        try:
            objects.list_cluster_custom_object(GROUP, VERSION, FOOS.resource, limit=1)
            return
        except ApiException as err:  # 404 until served; 429 while the storage initialises
            if err.status not in (404, 429, 503) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def foo(name: str, deployment_name: str, replicas: int) -> dict[str, Any]:
    """A Foo to create (as ``artifacts/examples/example-foo.yaml``)."""
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name},
            "spec": {"deploymentName": deployment_name, "replicas": replicas}}


def new_deployment(foo: Any) -> dict[str, Any]:
    """The Deployment a Foo asks for, owned by it (Go ``newDeployment``)."""
    labels = {"app": "nginx", "controller": foo["metadata"]["name"]}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": foo["spec"]["deploymentName"],
                     "namespace": foo["metadata"]["namespace"],
                     "ownerReferences": [controller_owner_ref(foo, KIND, API_VERSION)]},
        "spec": {"replicas": foo["spec"].get("replicas"),
                 "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels},
                              "spec": {"containers": [{"name": "nginx",
                                                       "image": "nginx:latest"}]}}},
    }


def is_controlled_by(obj: Any, owner: Any) -> bool:
    """Whether ``owner`` is the controller of ``obj`` (Go ``metav1.IsControlledBy``)."""
    uid = owner["metadata"].get("uid")
    return any(ref.get("controller") and ref.get("uid") == uid
               for ref in obj["metadata"].get("ownerReferences") or [])


def with_available_replicas(foo: Any, deployment: Any) -> dict[str, Any]:
    """A copy of ``foo`` whose status carries the Deployment's availableReplicas (the body
    of Go's ``updateFooStatus``)."""
    available = (deployment.get("status") or {}).get("availableReplicas") or 0
    return {**foo, "status": {**(foo.get("status") or {}), "availableReplicas": available}}
