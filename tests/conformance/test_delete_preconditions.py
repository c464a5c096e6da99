"""DELETE with preconditions (DeleteOptions ``preconditions``), as the sharding members
delete an expired member's Lease: a stale resourceVersion or uid is a 409 Conflict and
deletes nothing, the current one deletes; on both servers."""

from __future__ import annotations

from typing import Any

import pytest

from client_cache.client.rest import request_json


@pytest.mark.parametrize("field", ["resourceVersion", "uid"])
def test_a_delete_whose_precondition_fails_is_a_conflict(api: Any, ns: str,
                                                         field: str) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
    status, lease = request_json(api, "POST", path, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "member"}, "spec": {"holderIdentity": "member"}})
    assert status == 201
    status, renewed = request_json(api, "PUT", f"{path}/member", dict(
        lease, spec={"holderIdentity": "member", "leaseDurationSeconds": 2}))
    assert status == 200
    stale = lease["metadata"][field] if field == "resourceVersion" else "0000-not-it"
    status, answer = request_json(api, "DELETE", f"{path}/member", {
        "apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {field: stale}})
    assert (status, answer["reason"]) == (409, "Conflict")
    label, why = (("ResourceVersion", "modified") if field == "resourceVersion"
                  else ("UID", "deleted and then recreated"))
    assert answer["message"] == (
        f'Operation cannot be fulfilled on Lease.coordination.k8s.io "member": the {label} '
        f'in the precondition ({stale}) does not match the {label} in record '
        f'({renewed["metadata"][field]}). The object might have been {why}')
    assert request_json(api, "GET", f"{path}/member")[0] == 200
    status, _ = request_json(api, "DELETE", f"{path}/member", {
        "apiVersion": "v1", "kind": "DeleteOptions",
        "preconditions": {field: renewed["metadata"][field]}})
    assert status == 200
    assert request_json(api, "GET", f"{path}/member")[0] == 404
