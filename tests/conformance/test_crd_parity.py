"""Issue 67: the embedded server behaves as the real one on CustomResourceDefinitions, held
to it on both servers: a protected group (``*.k8s.io``, ``*.kubernetes.io``) needs the
approval annotation; an updated CRD's schema (a new bound, a new default) applies to every
later request; fields the structural schema does not declare are pruned."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client import ApiException, ApiextensionsV1Api, CustomObjectsApi

from tests.fixtures import eventually


def definition(group: str, plural: str, spec_properties: dict[str, Any],
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": f"{plural}.{group}"}
    if annotations:
        md["annotations"] = annotations
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": md,
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural[:-1], "kind": "Thing",
                           "listKind": "ThingList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "properties": spec_properties},
                         "loose": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}}}]}}


def create_when_served(api: Any, group: str, plural: str, ns: str,
                       body: dict[str, Any]) -> dict[str, Any]:
    """Create ``body``, retrying while the new resource is not served yet."""
    custom = CustomObjectsApi(api)
    created: list[dict[str, Any]] = []

    def attempt() -> bool:
        try:
            created.append(custom.create_namespaced_custom_object(group, "v1", ns, plural,
                                                                  body))
            return True
        except ApiException as err:
            if err.status in (404, 429, 503):
                return False
            raise
    eventually(attempt, 30, "the resource was not served")
    return created[0]


def thing(name: str, spec: dict[str, Any], group: str, **top: Any) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "Thing", "metadata": {"name": name},
            "spec": spec, **top}


@pytest.mark.parametrize("group", ["widgets.k8s.io", "k8s.io", "x.kubernetes.io"])
def test_a_protected_group_needs_the_approval_annotation(api: Any, group: str) -> None:
    extensions = ApiextensionsV1Api(api)
    with pytest.raises(ApiException) as info:
        extensions.create_custom_resource_definition(definition(group, "things", {}))
    status = json.loads(info.value.body)
    assert info.value.status == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        f'CustomResourceDefinition.apiextensions.k8s.io "things.{group}" is invalid: '
        'metadata.annotations[api-approved.kubernetes.io]: Required value: protected '
        'groups must have approval annotation "api-approved.kubernetes.io", see '
        "https://github.com/kubernetes/enhancements/pull/1111")
    assert [(c["reason"], c["field"]) for c in status["details"]["causes"]] == [
        ("FieldValueRequired", "metadata.annotations[api-approved.kubernetes.io]")]


def test_an_approved_protected_group_is_accepted(api: Any) -> None:
    body = definition("approved.k8s.io", "things", {},
                      {"api-approved.kubernetes.io": "unapproved, testing only"})
    try:
        ApiextensionsV1Api(api).create_custom_resource_definition(body)
    except ApiException as err:
        assert err.status == 409  # an earlier run on this server made it


def test_undeclared_fields_are_pruned(api: Any, ns: str) -> None:
    group = "pruning.example.com"
    try:
        ApiextensionsV1Api(api).create_custom_resource_definition(
            definition(group, "things", {"size": {"type": "integer"}}))
    except ApiException as err:
        assert err.status == 409
    stored = create_when_served(api, group, "things", ns, thing(
        "a", {"size": 1, "extra": "x"}, group, top="y", loose={"any": {"thing": 1}}))
    assert stored["spec"] == {"size": 1}
    assert "top" not in stored and stored["loose"] == {"any": {"thing": 1}}


def test_an_updated_schema_applies_to_later_requests(api: Any, ns: str) -> None:
    group = "updating.example.com"
    extensions = ApiextensionsV1Api(api)
    name = f"things.{group}"
    try:
        extensions.create_custom_resource_definition(
            definition(group, "things", {"size": {"type": "integer", "maximum": 10}}))
    except ApiException as err:
        assert err.status == 409
    create_when_served(api, group, "things", ns, thing("before", {"size": 5}, group))
    current = api.sanitize_for_serialization(extensions.read_custom_resource_definition(name))
    spec = current["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["size"]["maximum"] = 3
    spec["properties"]["color"] = {"type": "string", "default": "red"}
    extensions.replace_custom_resource_definition(name, current)
    custom = CustomObjectsApi(api)
    refused: list[dict[str, Any]] = []

    def new_bound_enforced() -> bool:  # the real server takes a moment to switch
        try:
            custom.delete_namespaced_custom_object(group, "v1", ns, "things", "probe")
        except ApiException as err:
            assert err.status == 404
        try:
            custom.create_namespaced_custom_object(group, "v1", ns, "things",
                                                   thing("probe", {"size": 5}, group))
            return False
        except ApiException as err:
            assert err.status == 422
            refused.append(json.loads(err.body))
            return True
    eventually(new_bound_enforced, 30, "the new maximum was not enforced")
    assert refused[-1]["message"] == ('Thing.updating.example.com "probe" is invalid: '
                                      "spec.size: Invalid value: 5: spec.size in body should "
                                      "be less than or equal to 3")
    stored = custom.create_namespaced_custom_object(group, "v1", ns, "things",
                                                    thing("after", {"size": 2}, group))
    assert stored["spec"] == {"size": 2, "color": "red"}
