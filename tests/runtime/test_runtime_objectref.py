"""runtime/objectref.py and reconcile.py: refs, owner references, actions, reasons; and the
finalizer helper's conflict handling on the embedded server."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.informers import new_shared_informer_factory
from client_cache.runtime import (
    Action,
    Controller,
    ObjectRef,
    OwnerConflictError,
    ReconcileReason,
    controller_owner_ref,
    deep_copy,
    finalizer,
    get_controller_of,
    is_controlled_by,
    object_ref,
    set_controller_reference,
)
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import pod

OWNER = {"apiVersion": "example.com/v1", "kind": "Foo",
         "metadata": {"name": "f", "namespace": "ns", "uid": "u-1"}}


def test_object_refs_compare_without_uid() -> None:
    ref = object_ref(pod("web", "default", uid="123"), "Pod", "v1")
    assert ref == ObjectRef("web", "default", "Pod", "v1")  # uid not compared
    assert ref.uid == "123" and ref.key() == "default/web"
    assert ObjectRef("web").within("default") == ObjectRef("web", "default")
    assert str(ref) == "Pod.v1 default/web" and str(ObjectRef("n")) == "n"
    assert object_ref(OWNER).kind == "Foo"  # the object's own kind wins
    assert len({ref, ObjectRef("web", "default", "Pod", "v1", uid="other")}) == 1


def test_controller_owner_ref_and_set_controller_reference() -> None:
    assert controller_owner_ref(OWNER) == {
        "apiVersion": "example.com/v1", "kind": "Foo", "name": "f", "uid": "u-1",
        "controller": True, "blockOwnerDeletion": True}
    child: dict[str, Any] = {"metadata": {"name": "c", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "u-2"}]}}
    set_controller_reference(OWNER, child)
    set_controller_reference(OWNER, child)  # idempotent
    assert [r["uid"] for r in child["metadata"]["ownerReferences"]] == ["u-2", "u-1"]
    other = {**OWNER, "metadata": {**OWNER["metadata"], "uid": "u-3", "name": "g"}}
    with pytest.raises(OwnerConflictError, match="already controlled by Foo f"):
        set_controller_reference(other, child)
    with pytest.raises(ValueError, match="no uid"):
        controller_owner_ref({"metadata": {"name": "x"}}, "Foo", "example.com/v1")
    with pytest.raises(ValueError, match="kind and apiVersion"):
        controller_owner_ref({"metadata": {"name": "x", "uid": "1"}})


def test_actions_and_reasons() -> None:
    assert Action.requeue(5).requeue_after == 5.0
    assert Action.await_change().requeue_after is None
    with pytest.raises(ValueError, match="negative"):
        Action.requeue(-1)
    related = ObjectRef("d", "ns", "Deployment", "apps/v1")
    assert str(ReconcileReason.related_object_updated(related)) == \
        "related object updated: Deployment.apps/v1 ns/d"
    assert str(ReconcileReason.unknown()) == "unknown (some unregistered source)"
    assert str(ReconcileReason.custom("because")) == "because"
    assert str(ReconcileReason.bulk_reconcile()) == "bulk reconcile requested"
    original = pod("a", "ns")
    copied = deep_copy(original)
    copied["metadata"]["name"] = "b"
    assert original["metadata"]["name"] == "a"


def test_finalizer_retries_a_conflict_and_keeps_other_finalizers() -> None:
    configmaps = GroupVersionResource("", "v1", "configmaps")
    with EmbeddedApiServer() as server:
        api = server.api_client()
        core = CoreV1Api(api)
        core.create_namespaced_config_map("default", {"metadata": {"name": "x"}})
        stale = api.sanitize_for_serialization(core.read_namespaced_config_map("x", "default"))
        core.patch_namespaced_config_map("x", "default",
                                         {"metadata": {"finalizers": ["other/keep"]}})
        # the stale copy's patch conflicts; the helper reads again and keeps "other/keep"
        action = finalizer(api, configmaps, "mine/cleanup", stale,
                           apply=lambda o: Action.requeue(1), cleanup=lambda o: Action())
        assert action == Action.await_change()
        assert core.read_namespaced_config_map("x", "default").metadata.finalizers == \
            ["other/keep", "mine/cleanup"]
        api.close()


def test_an_owner_reference_of_either_shape() -> None:
    """Issue 59: blockOwnerDeletion written (apimachinery and controller-runtime's shape,
    the default), left out (kube-rs's: None) or false, by choice."""
    assert controller_owner_ref(OWNER)["blockOwnerDeletion"] is True
    assert "blockOwnerDeletion" not in controller_owner_ref(OWNER, block_owner_deletion=None)
    assert controller_owner_ref(OWNER, block_owner_deletion=False)["blockOwnerDeletion"] is False
    child: dict[str, Any] = {"metadata": {"name": "c"}}
    set_controller_reference(OWNER, child, block_owner_deletion=None)
    assert "blockOwnerDeletion" not in child["metadata"]["ownerReferences"][0]


def test_is_controlled_by_and_get_controller_of() -> None:
    child: dict[str, Any] = {"metadata": {"name": "c", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "u-9"}]}}
    assert get_controller_of(child) is None and not is_controlled_by(child, OWNER)
    set_controller_reference(OWNER, child)
    assert get_controller_of(child) == controller_owner_ref(OWNER)
    assert is_controlled_by(child, OWNER)
    assert not is_controlled_by(child, {"metadata": {"name": "x", "uid": "u-9"}})
    assert not is_controlled_by(child, {"metadata": {"name": "no-uid"}})


def test_the_controllers_owner_ref_fills_in_its_kind_for_a_cached_list_item() -> None:
    """A LIST item lacks kind and apiVersion; Controller.owner_ref takes the controller's
    own, so the reconcile need not restate them."""
    with EmbeddedApiServer() as server:
        api = server.api_client()
        try:
            factory = new_shared_informer_factory(api, 0)
            controller: Controller[Any] = Controller(
                factory, GroupVersionResource("", "v1", "configmaps"))
            item = {"metadata": {"name": "web", "namespace": "ns", "uid": "u-1"}}
            assert controller.owner_ref(item) == {
                "apiVersion": "v1", "kind": "ConfigMap", "name": "web", "uid": "u-1",
                "controller": True, "blockOwnerDeletion": True}
            assert "blockOwnerDeletion" not in controller.owner_ref(
                item, block_owner_deletion=None)
        finally:
            api.close()
