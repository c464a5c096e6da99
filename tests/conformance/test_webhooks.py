"""Issue 71 on both servers: the library's webhook server, its configurations written by
the library, called over loopback HTTPS by the embedded server and by kube-apiserver
alike (mutating, then validating; the old object; failure policies). Each test's
webhooks select only the objects labelled with its namespace, so the tests sharing a
server never reach each other's."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiException, CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.webhooks import (
    AdmissionDenied,
    AdmissionRequest,
    WebhookServer,
    mutating,
    validating,
)
from client_cache.webhooks.configuration import WebhookConfigurations
from tests.fixtures import eventually

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
_probes = itertools.count()


def _cm(ns: str, name: str, **data: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"webhook-test": ns}}, "data": data}


def _until_effective(core: CoreV1Api, ns: str, effective: Callable[[Any], bool]) -> None:
    """Create probe objects until one shows the webhooks at work: the real server reads
    new configurations from a watch, a moment after they are written."""
    def probe() -> bool:
        name = f"probe-{next(_probes)}"
        try:
            made = core.create_namespaced_config_map(ns, _cm(ns, name))
        except ApiException as err:
            return effective(err)
        core.delete_namespaced_config_map(name, ns)
        return effective(made)
    eventually(probe, 30, "the webhook configuration never took effect")


def test_mutating_then_validating_webhooks_on_both_servers(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    updates: list[tuple[Any, Any]] = []

    def default(obj: Any, request: AdmissionRequest) -> None:
        obj["metadata"]["labels"]["defaulted"] = "yes"

    def check(obj: Any, request: AdmissionRequest) -> None:
        if request.operation == "UPDATE":
            updates.append((request.old_object["data"], obj["data"]))
        if "defaulted" not in obj["metadata"]["labels"]:
            raise AdmissionDenied("not defaulted first")
        if (obj.get("data") or {}).get("bad"):
            raise AdmissionDenied("bad data")

    selector = {"matchLabels": {"webhook-test": ns}}
    with WebhookServer([mutating(default, CONFIGMAPS, object_selector=selector),
                        validating(check, CONFIGMAPS, object_selector=selector)],
                       port=0) as webhooks, \
            WebhookConfigurations(api, webhooks, name=f"cf-{ns}"):
        _until_effective(core, ns, lambda made: not isinstance(made, ApiException)
                         and (made.metadata.labels or {}).get("defaulted") == "yes")
        made = core.create_namespaced_config_map(ns, _cm(ns, "a", v="1"))
        assert made.metadata.labels == {"webhook-test": ns, "defaulted": "yes"}
        core.patch_namespaced_config_map("a", ns, {"data": {"v": "2"}})
        assert updates == [({"v": "1"}, {"v": "2"})]
        with pytest.raises(ApiException) as caught:
            core.create_namespaced_config_map(ns, _cm(ns, "b", bad="1"))
        status = json.loads(caught.value.body)
        assert caught.value.status == 403 and status["reason"] == "Forbidden"
        assert status["message"] == ('admission webhook "check.configmaps.core" denied '
                                     "the request: bad data")
        # an object the selector does not select is never sent
        core.create_namespaced_config_map(ns, {"metadata": {"name": "free"},
                                               "data": {"bad": "1"}})


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
def test_an_unreachable_webhook_follows_its_failure_policy(api: Any, ns: str,
                                                           policy: str) -> None:
    """An unreachable mutating webhook: under ``Fail`` requests are refused with 500;
    under ``Ignore`` they go through, which shows once a reachable webhook configured
    after it (the server reads configurations in order) is at work."""
    core = CoreV1Api(api)
    selector = {"matchLabels": {"webhook-test": ns}}

    def default(obj: Any, request: AdmissionRequest) -> None:
        obj["metadata"]["labels"]["defaulted"] = "yes"

    away = WebhookServer([mutating(default, CONFIGMAPS, name="away.example.com",
                                   failure_policy=policy, object_selector=selector)],
                         port=0)
    away.stop()  # never served: its port refuses
    with WebhookConfigurations(api, away, name=f"cf-{ns}-away"):
        if policy == "Fail":
            def refused(outcome: Any) -> bool:
                return isinstance(outcome, ApiException) and outcome.status == 500 and \
                    'failed calling webhook "away.example.com"' in \
                    json.loads(outcome.body)["message"]
            _until_effective(core, ns, refused)
            return
        with WebhookServer([mutating(default, CONFIGMAPS, name="live.example.com",
                                     object_selector=selector)], port=0) as live, \
                WebhookConfigurations(api, live, name=f"cf-{ns}-live"):
            _until_effective(core, ns, lambda made: not isinstance(made, ApiException)
                             and (made.metadata.labels or {}).get("defaulted") == "yes")
            made = core.create_namespaced_config_map(ns, _cm(ns, "through"))
            assert made.metadata.labels["defaulted"] == "yes"


def test_an_update_is_sent_when_the_old_object_or_the_new_one_is_selected(
        api: Any, ns: str) -> None:
    """Removing the selected label is still sent (the old object matches); the next
    update, matching neither, is not."""
    core = CoreV1Api(api)
    seen: list[tuple[str, str]] = []

    def record(obj: Any, request: AdmissionRequest) -> None:
        seen.append((request.operation, request.name))

    hook = validating(record, CONFIGMAPS, object_selector={"matchLabels": {
        "webhook-test": ns}})
    with WebhookServer([hook], port=0) as webhooks, \
            WebhookConfigurations(api, webhooks, name=f"cf-{ns}"):
        _until_effective(core, ns, lambda made: bool(seen))
        core.create_namespaced_config_map(ns, _cm(ns, "x"))
        core.patch_namespaced_config_map("x", ns, {"metadata": {"labels": None}})
        core.patch_namespaced_config_map("x", ns, {"data": {"v": "2"}})
        core.create_namespaced_config_map(ns, _cm(ns, "marker"))  # sent: in order
    assert [entry for entry in seen if not entry[1].startswith("probe-")] == [
        ("CREATE", "x"), ("UPDATE", "x"), ("CREATE", "marker")]


def test_a_dry_run_create_is_admitted_as_one_and_stores_nothing(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    runs: list[tuple[str, bool]] = []

    def default(obj: Any, request: AdmissionRequest) -> None:
        runs.append((request.name, request.dry_run))
        obj["metadata"]["labels"]["defaulted"] = "yes"

    hook = mutating(default, CONFIGMAPS, object_selector={"matchLabels": {
        "webhook-test": ns}})
    with WebhookServer([hook], port=0) as webhooks, \
            WebhookConfigurations(api, webhooks, name=f"cf-{ns}"):
        _until_effective(core, ns, lambda made: bool(runs))
        made = core.create_namespaced_config_map(ns, _cm(ns, "dry"), dry_run="All")
        assert made.metadata.labels["defaulted"] == "yes"
        assert made.metadata.uid and not made.metadata.resource_version
        with pytest.raises(ApiException) as caught:
            core.read_namespaced_config_map("dry", ns)
        assert caught.value.status == 404
    assert ("dry", True) in runs
