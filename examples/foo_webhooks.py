"""Admission webhooks for sample-controller's Foo: a defaulting (mutating) webhook that
fills ``spec.replicas`` and ``spec.deploymentName``, and a validating webhook that
refuses a Foo without a valid Deployment name, or one that renames its Deployment.

It starts the embedded API server (which calls webhooks as kube-apiserver does), installs
the Foo CRD, serves both webhooks over HTTPS with a self-signed certificate, writes their
configurations, and creates and updates a few Foos, printing what the API server
answered. The handlers take typed ``Foo`` objects (``client_cache.crd``).

    .venv/bin/python examples/foo_webhooks.py
"""

from __future__ import annotations

import json
import re

import msgspec
from _sample_apis import FOOS, Foo, FooSpec, foo, install_crd
from kubernetes.client import ApiException, CustomObjectsApi

from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.webhooks import (
    AdmissionDenied,
    AdmissionRequest,
    FieldCause,
    WebhookServer,
    mutating,
    validating,
)
from client_cache.webhooks.configuration import WebhookConfigurations

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def default_foo(obj: Foo, request: AdmissionRequest) -> Foo:
    """Fill what a Foo leaves out (controller-runtime's ``Default``)."""
    spec = obj.spec if isinstance(obj.spec, FooSpec) else FooSpec()
    if spec.replicas is msgspec.UNSET:
        spec.replicas = 1
    if spec.deployment_name is msgspec.UNSET:
        spec.deployment_name = f"{obj.metadata.name}-deployment"
        request.warn(f"spec.deploymentName defaulted to {spec.deployment_name}")
    obj.spec = spec
    return obj


def validate_foo(obj: Foo, request: AdmissionRequest) -> None:
    """Refuse what sample-controller cannot reconcile (controller-runtime's
    ``ValidateCreate`` and ``ValidateUpdate``)."""
    spec = obj.spec if isinstance(obj.spec, FooSpec) else FooSpec()
    name = spec.deployment_name
    if not isinstance(name, str) or not DNS_LABEL.match(name):
        raise AdmissionDenied(f"spec.deploymentName {name!r} is not a DNS label",
                              causes=[FieldCause("spec.deploymentName",
                                                 "must be a DNS label")])
    old = request.old_object
    if request.operation == "UPDATE" and isinstance(old, Foo) and \
            isinstance(old.spec, FooSpec) and old.spec.deployment_name != name:
        raise AdmissionDenied("spec.deploymentName cannot change", causes=[
            FieldCause("spec.deploymentName", "is immutable", "FieldValueForbidden")])


def main() -> None:
    with EmbeddedApiServer() as server, WebhookServer(
            [mutating(default_foo, Foo), validating(validate_foo, Foo)],
            port=0) as webhooks:
        api = server.api_client()
        install_crd(api)
        objects = CustomObjectsApi(api)
        with WebhookConfigurations(api, webhooks, name="foo-webhooks"):
            bare = foo("bare", "", 0)
            bare["spec"] = {}
            made = objects.create_namespaced_custom_object(
                FOOS.group, FOOS.version, "default", FOOS.resource, bare)
            print(f"created bare: spec {json.dumps(made['spec'], sort_keys=True)}")
            for name, deployment in (("bad", "Not_A_Name"), ("good", "web")):
                try:
                    objects.create_namespaced_custom_object(
                        FOOS.group, FOOS.version, "default", FOOS.resource,
                        foo(name, deployment, 2))
                    print(f"created {name}")
                except ApiException as err:
                    print(f"refused {name}: {json.loads(err.body)['message']}")
            try:
                objects.patch_namespaced_custom_object(
                    FOOS.group, FOOS.version, "default", FOOS.resource, "good",
                    {"spec": {"deploymentName": "other"}})
            except ApiException as err:
                print(f"refused the rename: {json.loads(err.body)['message']}")


if __name__ == "__main__":
    main()
