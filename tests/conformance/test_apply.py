"""Server-side apply (runtime/apply.py) on both servers: an apply creates the object and
fills in apiVersion and kind; a hand edit of an applied field makes every non-forced
apply of another value fail with 409 naming the editor and the field, and a forced apply
takes the field over; a field left out of the next apply is removed; the server's own
refusals (no field manager, force on a plain patch) agree (issue 59)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.client.rest import JSON_MERGE_PATCH, request_json
from client_cache.errors import ApiStatusError
from client_cache.runtime import apply
from tests.conformance.util import CONFIGMAPS

MANAGER = "apply-test"


def test_apply_creates_then_merges_and_prunes(api: Any, ns: str) -> None:
    stored = apply(api, CONFIGMAPS, {"metadata": {"name": "applied", "namespace": ns},
                                     "data": {"a": "1", "b": "2"}}, field_manager=MANAGER)
    assert stored["kind"] == "ConfigMap" and stored["data"] == {"a": "1", "b": "2"}
    managers = {e["manager"]: e for e in stored["metadata"]["managedFields"]}
    assert managers[MANAGER]["operation"] == "Apply"
    assert managers[MANAGER]["fieldsV1"]["f:data"] == {"f:a": {}, "f:b": {}}
    # b is no longer applied: the server removes it; a changes; c is new
    stored = apply(api, CONFIGMAPS, {"metadata": {"name": "applied"}, "data": {"a": "3",
                                                                          "c": "4"}},
                   field_manager=MANAGER, namespace=ns)
    assert stored["data"] == {"a": "3", "c": "4"}


def test_a_hand_edit_conflicts_until_a_forced_apply(api: Any, ns: str) -> None:
    desired = {"metadata": {"name": "contested", "namespace": ns}, "data": {"replicas": "3"}}
    apply(api, CONFIGMAPS, desired, field_manager=MANAGER)
    # a person edits the field (a merge patch, as kubectl edit sends, by manager "editor")
    status, _ = request_json(api, "PATCH", f"/api/v1/namespaces/{ns}/configmaps/contested"
                             "?fieldManager=editor", {"data": {"replicas": "5"}},
                             JSON_MERGE_PATCH)
    assert status == 200
    for _ in range(2):  # every retry of the non-forced apply fails the same way
        with pytest.raises(ApiStatusError) as caught:
            apply(api, CONFIGMAPS, desired, field_manager=MANAGER)
        assert caught.value.code == 409 and caught.value.reason == "Conflict"
        assert 'conflict with "editor"' in caught.value.message
        assert ".data.replicas" in caught.value.message
    assert CoreV1Api(api).read_namespaced_config_map("contested", ns).data == {"replicas": "5"}
    stored = apply(api, CONFIGMAPS, desired, field_manager=MANAGER, force=True)
    assert stored["data"] == {"replicas": "3"}
    owners = {e["manager"]: e.get("fieldsV1", {}) for e in stored["metadata"]["managedFields"]}
    assert "f:replicas" in owners[MANAGER]["f:data"]
    assert "f:replicas" not in owners.get("editor", {}).get("f:data", {})
    # the same value applied by another manager is shared, not a conflict
    shared = apply(api, CONFIGMAPS, desired, field_manager="another")
    assert shared["data"] == {"replicas": "3"}


def test_the_server_refuses_what_the_real_one_refuses(api: Any, ns: str) -> None:
    apply(api, CONFIGMAPS, {"metadata": {"name": "checked", "namespace": ns}},
          field_manager=MANAGER)
    path = f"/api/v1/namespaces/{ns}/configmaps/checked"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "checked"}}
    status, answer = request_json(api, "PATCH", path, body, "application/apply-patch+yaml")
    assert status == 422 and "fieldManager: Required value" in answer["message"]
    status, answer = request_json(api, "PATCH", path + "?force=true", {"data": {}},
                                  JSON_MERGE_PATCH)
    assert status == 422 and "force: Forbidden" in answer["message"]
    with pytest.raises(ValueError, match="field_manager"):
        apply(api, CONFIGMAPS, body, field_manager="")
    with pytest.raises(ValueError, match=r"metadata\.name"):
        apply(api, CONFIGMAPS, {"metadata": {}}, field_manager=MANAGER)
