"""Issue 71: conversion between the versions of a typed custom resource, hub and spoke:
the webhook's answers, the round-trip helper, the CRD's ``spec.conversion``, and
kube-apiserver converting through the library's server over loopback HTTPS (the
embedded server does not call conversion webhooks yet)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from kubernetes.client import CustomObjectsApi

from client_cache.crd import CustomResource, crd, custom_resource, install_crd
from client_cache.testing.envtest import ControlPlane
from client_cache.webhooks import ConversionWebhook, WebhookServer, round_trip_errors
from tests.fixtures import envtest_binaries

GROUP = "convert.example.com"


class SpecV1(msgspec.Struct, rename="camel"):
    replicas: int = 1
    image: str = ""


class SpecV2(msgspec.Struct, rename="camel"):
    scale: int = 1
    container: str = ""


@custom_resource(group=GROUP, version="v2", kind="Widget")
class WidgetV2(CustomResource):
    """The hub (and the storage version)."""

    spec: SpecV2


@custom_resource(group=GROUP, version="v1", kind="Widget")
class WidgetV1(CustomResource):
    """A spoke: its fields have other names in the hub."""

    spec: SpecV1

    def to_hub(self) -> WidgetV2:
        return WidgetV2(metadata=self.metadata, spec=SpecV2(
            scale=self.spec.replicas, container=self.spec.image))

    @classmethod
    def from_hub(cls, hub: WidgetV2) -> WidgetV1:
        return cls(metadata=hub.metadata, spec=SpecV1(
            replicas=hub.spec.scale, image=hub.spec.container))


@custom_resource(group=GROUP, version="v1beta1", kind="Widget")
class WidgetLossy(CustomResource):
    """A spoke that forgets the image on its way to the hub."""

    spec: SpecV1

    def to_hub(self) -> WidgetV2:
        return WidgetV2(metadata=self.metadata, spec=SpecV2(scale=self.spec.replicas))

    @classmethod
    def from_hub(cls, hub: WidgetV2) -> WidgetLossy:
        return cls(metadata=hub.metadata, spec=SpecV1(replicas=hub.spec.scale))


V1 = {"apiVersion": f"{GROUP}/v1", "kind": "Widget",
      "metadata": {"name": "w", "namespace": "default", "uid": "u", "labels": {"a": "b"}},
      "spec": {"replicas": 3, "image": "nginx"}}


def _review(objects: list[Any], desired: str) -> bytes:
    return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                       "request": {"uid": "r-1", "desiredAPIVersion": desired,
                                   "objects": objects}}).encode()


def test_a_review_converts_through_the_hub_and_keeps_the_metadata() -> None:
    webhook = ConversionWebhook(WidgetV2, WidgetV1)
    response = webhook.answer(_review([V1], f"{GROUP}/v2"))["response"]
    assert response["uid"] == "r-1" and response["result"] == {"status": "Success"}
    (converted,) = response["convertedObjects"]
    assert converted == {"apiVersion": f"{GROUP}/v2", "kind": "Widget",
                         "metadata": V1["metadata"],
                         "spec": {"scale": 3, "container": "nginx"}}
    back = webhook.convert(converted, f"{GROUP}/v1")
    assert back == V1


def test_a_failed_conversion_fails_the_review_without_the_object() -> None:
    webhook = ConversionWebhook(WidgetV2, WidgetV1)
    secret = {**V1, "apiVersion": f"{GROUP}/v9", "spec": {"image": "hunter2"}}
    response = webhook.answer(_review([V1, secret], f"{GROUP}/v2"))["response"]
    assert response["result"]["status"] == "Failure"
    assert response["result"]["message"] == \
        f"converting Widget default/w to {GROUP}/v2 failed: ValueError"
    assert response["convertedObjects"] == []


def test_round_trips_name_what_a_spoke_loses() -> None:
    assert round_trip_errors(ConversionWebhook(WidgetV2, WidgetV1), V1) == []
    lossy = ConversionWebhook(WidgetV2, WidgetLossy)
    sample = {**V1, "apiVersion": f"{GROUP}/v1beta1"}
    assert round_trip_errors(lossy, sample) == [
        f"{GROUP}/v1beta1 -> {GROUP}/v2 -> {GROUP}/v1beta1 changed spec.image"]


def test_classes_that_cannot_convert_are_refused() -> None:
    with pytest.raises(TypeError, match="needs to_hub"):
        ConversionWebhook(WidgetV1, WidgetV2)  # the hub has no to_hub: a spoke needs it


def test_the_crd_points_the_api_server_at_the_webhook() -> None:
    webhook = ConversionWebhook(WidgetV2, WidgetV1)
    conversion = webhook.crd_conversion("https://127.0.0.1:9443", ca_bundle=b"CA")
    definition = crd(WidgetV2, WidgetV1, conversion=conversion)
    assert definition["spec"]["conversion"] == {
        "strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://127.0.0.1:9443/convert", "caBundle": "Q0E="},
            "conversionReviewVersions": ["v1"]}}


def test_kube_apiserver_converts_through_the_library_s_webhook() -> None:
    """Written as v1, read as v2 (the storage version), and back: every read through a
    version other than the stored one is converted by the library's server."""
    webhook = ConversionWebhook(WidgetV2, WidgetV1)
    with ControlPlane(envtest_binaries()) as plane, \
            WebhookServer([webhook], port=0) as server:
        api = plane.api_client()
        install_crd(api, crd(WidgetV2, WidgetV1, conversion=webhook.crd_conversion(
            server.url, ca_bundle=server.ca_bundle)))
        custom = CustomObjectsApi(api)
        body = {k: v for k, v in V1.items() if k != "metadata"}
        custom.create_namespaced_custom_object(GROUP, "v1", "default", "widgets", {
            **body, "metadata": {"name": "w"}})
        stored = custom.get_namespaced_custom_object(GROUP, "v2", "default", "widgets", "w")
        assert stored["spec"] == {"scale": 3, "container": "nginx"}
        custom.patch_namespaced_custom_object(GROUP, "v2", "default", "widgets", "w",
                                              {"spec": {"scale": 5}})
        again = custom.get_namespaced_custom_object(GROUP, "v1", "default", "widgets", "w")
        assert again["spec"] == {"replicas": 5, "image": "nginx"}
        api.close()
