"""Issue 71: the webhook server, admission handlers, certificates and configurations,
called by the embedded API server in-process."""

from __future__ import annotations

import base64
import http.client
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from kubernetes.client import ApiException, CoreV1Api, V1ConfigMap

from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import request_json
from client_cache.crd import CustomResource, custom_resource
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.webhooks import (
    AdmissionDenied,
    AdmissionRequest,
    FieldCause,
    WebhookServer,
    mutating,
    self_signed,
    validating,
)
from client_cache.webhooks.configuration import WebhookConfigurations
from client_cache.webhooks.metrics import (
    NoopWebhookMetricsProvider,
    reset_webhook_metrics_provider_for_tests,
    set_webhook_metrics_provider,
)

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
NS = "default"


def _review(obj: Any, operation: str = "CREATE", old: Any = None,
            uid: str = "u-1") -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "operation": operation,
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "namespace": NS, "name": "x", "object": obj, "oldObject": old}}


def _post(server: WebhookServer, path: str, body: bytes,
          headers: dict[str, str] | None = None) -> tuple[int, Any]:
    assert server.ca_bundle is not None
    context = ssl.create_default_context(cadata=server.ca_bundle.decode())
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        conn.request("POST", path, body, headers if headers is not None
                     else {"Content-Type": "application/json"})
        answer = conn.getresponse()
        data = answer.read()
        return answer.status, json.loads(data) if data else None
    finally:
        conn.close()


def _refuses(call: Any) -> ApiException:
    with pytest.raises(ApiException) as caught:
        call()
    return caught.value


def _reject_bad(obj: Any, request: AdmissionRequest) -> None:
    if (obj.get("data") or {}).get("bad"):
        raise AdmissionDenied("bad data", causes=[FieldCause("data.bad", "not allowed")])
    request.warn("checked")


def _label(obj: Any, request: AdmissionRequest) -> None:
    obj["metadata"].setdefault("labels", {})["defaulted"] = request.operation.lower()


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer() as srv:
        yield srv


def test_the_embedded_server_calls_mutating_then_validating_webhooks(
        server: EmbeddedApiServer) -> None:
    """Mutating first (its patch applied), then validating; a denial is the client's
    error in the real server's words, with the handler's causes; the configurations are
    removed on a clean exit, and nothing is called afterwards."""
    seen: list[tuple[str, str, Any]] = []

    def validate(obj: Any, request: AdmissionRequest) -> None:
        seen.append(("validate", request.operation, (obj["metadata"].get("labels") or {})))
        _reject_bad(obj, request)

    api = server.api_client()
    core = CoreV1Api(api)
    with WebhookServer([validating(validate, CONFIGMAPS), mutating(_label, CONFIGMAPS)],
                       port=0) as webhooks, \
            WebhookConfigurations(api, webhooks, name="cms"):
        made = core.create_namespaced_config_map(NS, {"metadata": {"name": "a"}})
        assert made.metadata.labels == {"defaulted": "create"}
        assert seen == [("validate", "CREATE", {"defaulted": "create"})]  # after the mutation
        patched = core.patch_namespaced_config_map("a", NS, {"data": {"k": "v"}})
        assert patched.metadata.labels == {"defaulted": "update"}
        err = _refuses(lambda: core.create_namespaced_config_map(
            NS, {"metadata": {"name": "b"}, "data": {"bad": "1"}}))
        status = json.loads(err.body)
        assert err.status == 422 and status["reason"] == "Invalid"
        assert status["message"] == ('admission webhook "validate.configmaps.core" denied '
                                     'the request: bad data')
        assert status["details"]["causes"] == [{"field": "data.bad", "message": "not allowed",
                                                "reason": "FieldValueInvalid"}]
    for plural in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        code, listed = request_json(api, "GET", f"/apis/admissionregistration.k8s.io/v1/"
                                                f"{plural}")
        assert code == 200 and listed["items"] == [], plural  # removed on the clean exit
    core.create_namespaced_config_map(NS, {"metadata": {"name": "c"}, "data": {"bad": "1"}})
    assert len(seen) == 3  # the configurations left with the block


def test_rules_selectors_and_the_old_object(server: EmbeddedApiServer) -> None:
    """Only the operations and the labelled objects the configuration names reach the
    webhook; UPDATE carries the old object and DELETE the object being deleted."""
    seen: list[tuple[str, Any, Any]] = []

    def record(obj: Any, request: AdmissionRequest) -> None:
        seen.append((request.operation, obj["data"], (request.old_object or {}).get("data")))
        if request.operation == "DELETE":
            raise AdmissionDenied("kept")

    api = server.api_client()
    core = CoreV1Api(api)
    hook = validating(record, CONFIGMAPS, operations=("UPDATE", "DELETE"),
                      object_selector={"matchLabels": {"watched": "yes"}})
    with WebhookServer([hook], port=0) as webhooks, \
            WebhookConfigurations(api, webhooks, name="rules"):
        core.create_namespaced_config_map(NS, {"metadata": {
            "name": "w", "labels": {"watched": "yes"}}, "data": {"v": "1"}})
        core.create_namespaced_config_map(NS, {"metadata": {"name": "u"}, "data": {"v": "1"}})
        core.patch_namespaced_config_map("w", NS, {"data": {"v": "2"}})
        core.patch_namespaced_config_map("u", NS, {"data": {"v": "2"}})
        core.delete_namespaced_config_map("u", NS)  # not selected: deleted
        err = _refuses(lambda: core.delete_namespaced_config_map("w", NS))
        assert err.status == 403 and "denied the request: kept" in json.loads(err.body)[
            "message"]
    # on DELETE the handler is given the object being deleted, which is the old one
    assert seen == [("UPDATE", {"v": "2"}, {"v": "1"}), ("DELETE", {"v": "2"}, {"v": "2"})]


def test_failure_policy_decides_when_the_webhook_cannot_be_called(
        server: EmbeddedApiServer) -> None:
    """A webhook server that never started: ``Fail`` refuses the request with 500,
    ``Ignore`` lets it through."""
    api = server.api_client()
    core = CoreV1Api(api)
    for policy in ("Fail", "Ignore"):
        webhooks = WebhookServer([validating(_reject_bad, CONFIGMAPS,
                                             failure_policy=policy)], port=0)
        configurations = WebhookConfigurations(api, webhooks, name="away")
        configurations.apply()
        webhooks.stop()  # its port closed: every call is refused
        try:
            if policy == "Fail":
                err = _refuses(lambda: core.create_namespaced_config_map(
                    NS, {"metadata": {"name": "a"}}))
                assert err.status == 500
                assert 'failed calling webhook "reject-bad.configmaps.core"' in \
                    json.loads(err.body)["message"]
            else:
                core.create_namespaced_config_map(NS, {"metadata": {"name": "a"}})
        finally:
            configurations.remove()


class Recorded(NoopWebhookMetricsProvider):
    def __init__(self) -> None:
        self.requests: dict[tuple[str, str], int] = {}
        self.observed: list[str] = []
        self.in_flight: dict[str, int] = {}

    def new_requests_metric(self, webhook: str, code: str) -> Any:
        provider = self

        class Counter:
            def inc(self) -> None:
                key = (webhook, code)
                provider.requests[key] = provider.requests.get(key, 0) + 1
        return Counter()

    def new_latency_metric(self, webhook: str) -> Any:
        provider = self

        class Histogram:
            def observe(self, value: float) -> None:
                provider.observed.append(webhook)
        return Histogram()

    def new_in_flight_metric(self, webhook: str) -> Any:
        provider = self

        class Gauge:
            def inc(self) -> None:
                provider.in_flight[webhook] = provider.in_flight.get(webhook, 0) + 1

            def dec(self) -> None:
                provider.in_flight[webhook] -= 1
        return Gauge()


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    provider = Recorded()
    set_webhook_metrics_provider(provider)
    yield provider
    reset_webhook_metrics_provider_for_tests()


def test_answers_bad_requests_and_failing_handlers_safely(
        recorded: Recorded, caplog: pytest.LogCaptureFixture) -> None:
    """A malformed review: 400 and a WARNING quoting none of it; a body too large: 413;
    no length: 411; a handler that raises: refused (500) unless fail_open, which allows
    with a warning; every request counted by code."""
    def broken(obj: Any, request: AdmissionRequest) -> None:
        raise KeyError("secret-value")

    closed = validating(broken, CONFIGMAPS, name="closed.example.com", path="/closed")
    opened = validating(broken, CONFIGMAPS, name="open.example.com", path="/open",
                        fail_open=True)
    with caplog.at_level(logging.WARNING), \
            WebhookServer([closed, opened], port=0, max_body_bytes=10_000) as webhooks:
        secret = b'{"kind": "AdmissionReview", "request": {"uid": "", "password": "hunter2"}}'
        code, body = _post(webhooks, "/closed", secret)
        assert code == 400 and "uid" in body["message"]
        code, body = _post(webhooks, "/closed", b"x" * 10_001)
        assert code == 413
        code, body = _post(webhooks, "/closed", json.dumps(_review({"metadata": {}})).encode())
        assert code == 200 and body["response"]["allowed"] is False
        assert body["response"]["status"]["code"] == 500
        assert body["response"]["status"]["message"] == \
            "webhook closed.example.com failed: internal error (KeyError)"
        code, body = _post(webhooks, "/open", json.dumps(_review({"metadata": {}})).encode())
        assert body["response"]["allowed"] is True
        assert body["response"]["warnings"] == [
            "webhook open.example.com failed: internal error (KeyError)"]
        code, _ = _post(webhooks, "/nowhere", b"{}")
        assert code == 404
        raw = socket.create_connection(("127.0.0.1", webhooks.port))
        assert webhooks.ca_bundle is not None
        tls = ssl.create_default_context(cadata=webhooks.ca_bundle.decode()).wrap_socket(
            raw, server_hostname="127.0.0.1")
        tls.sendall(b"POST /closed HTTP/1.1\r\nHost: x\r\n\r\n")
        assert tls.recv(100).startswith(b"HTTP/1.1 411")
        tls.close()
    text = caplog.text
    assert "hunter2" not in text and "secret-value" not in str(
        [r.getMessage() for r in caplog.records])
    assert recorded.requests == {("/closed", "400"): 1, ("/closed", "200"): 1,
                                 ("/open", "200"): 1}
    assert recorded.in_flight == {"/closed": 0, "/open": 0}


def test_a_mutating_webhook_patches_only_what_its_handler_changed() -> None:
    """Typed with a model: the patch touches the label the handler set, not the fields
    the model does not carry."""
    def label(cm: V1ConfigMap, request: AdmissionRequest) -> V1ConfigMap:
        cm.metadata.labels = {**(cm.metadata.labels or {}), "typed": "yes"}
        return cm

    hook = mutating(label, CONFIGMAPS, model=V1ConfigMap)
    sent = {"metadata": {"name": "x", "managedFields": [{"manager": "m"}]},
            "data": {"a": "1"}, "unknownField": {"kept": True}}
    answer = hook.answer(json.dumps(_review(sent)).encode())["response"]
    patch = json.loads(base64.b64decode(answer["patch"]))
    assert patch == [{"op": "add", "path": "/metadata/labels", "value": {"typed": "yes"}}]


class GadgetSpec(msgspec.Struct, rename="camel"):
    size: int = 1


@custom_resource(group="webhooks.example.com", version="v1", kind="Gadget")
class Gadget(CustomResource):
    spec: GadgetSpec


def test_a_typed_custom_resource_handler_gets_its_class() -> None:
    got: list[Any] = []

    def check(gadget: Gadget, request: AdmissionRequest) -> None:
        got.append(gadget)
        if gadget.spec.size > 3:
            raise AdmissionDenied("too big", causes=[FieldCause("spec.size", "at most 3")])

    hook = validating(check, Gadget)
    assert hook.resource == GroupVersionResource("webhooks.example.com", "v1", "gadgets")
    body = {"apiVersion": "webhooks.example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g"}, "spec": {"size": 5}}
    answer = hook.answer(json.dumps(_review(body)).encode())["response"]
    assert isinstance(got[0], Gadget) and got[0].spec.size == 5
    assert answer["allowed"] is False and answer["status"]["code"] == 422


def test_certificate_files_are_reloaded_when_they_change(tmp_path: Path) -> None:
    """A renewed pair is served from the next connection on, without a restart; a pair
    half written keeps the previous one serving."""
    first, second = self_signed(), self_signed()
    files = first.write(tmp_path)
    hook = validating(_reject_bad, CONFIGMAPS)

    def handshake(ca: bytes) -> bool:
        context = ssl.create_default_context(cadata=ca.decode())
        try:
            with socket.create_connection(("127.0.0.1", webhooks.port), timeout=5) as raw, \
                    context.wrap_socket(raw, server_hostname="127.0.0.1"):
                return True
        except ssl.SSLError:
            return False

    with WebhookServer([hook], port=0, certificate=files) as webhooks:
        assert handshake(first.ca_pem) and not handshake(second.ca_pem)
        second.write(tmp_path)
        assert handshake(second.ca_pem) and not handshake(first.ca_pem)
        (tmp_path / "tls.crt").write_bytes(first.cert_pem)  # a mismatched pair
        assert handshake(second.ca_pem)
    assert files.loads == 2  # the first pair and the renewal; the mismatched pair never


def test_stop_closes_idle_connections_and_finishes_requests_in_flight() -> None:
    """Within a second: an idle keep-alive connection is closed at once; a request in
    flight is answered; every server thread ends."""
    entered, release = threading.Event(), threading.Event()

    def slow(obj: Any, request: AdmissionRequest) -> None:
        entered.set()
        release.wait(5)

    webhooks = WebhookServer([validating(slow, CONFIGMAPS)], port=0, threads=2).start()
    try:
        _stop_while_busy(webhooks, entered, release)
    finally:
        release.set()
        webhooks.stop()


def _stop_while_busy(webhooks: WebhookServer, entered: threading.Event,
                     release: threading.Event) -> None:
    assert webhooks.ca_bundle is not None
    context = ssl.create_default_context(cadata=webhooks.ca_bundle.decode())
    idle = http.client.HTTPSConnection("127.0.0.1", webhooks.port, context=context)
    idle.request("GET", "/healthz")
    assert idle.getresponse().read() == b"ok"  # kept alive, now idle
    answers: list[Any] = []
    path = webhooks.routes()[0].path

    def busy() -> None:
        answers.append(_post(webhooks, path, json.dumps(_review({"metadata": {}})).encode()))

    caller = threading.Thread(target=busy, name="test-busy-caller")
    caller.start()
    assert entered.wait(5)
    threading.Timer(0.3, release.set).start()
    began = time.monotonic()
    assert webhooks.stop(timeout=1.0)
    assert time.monotonic() - began < 1.5
    caller.join(5)
    assert answers and answers[0][0] == 200
    assert not [t for t in threading.enumerate() if t.name.startswith("webhook-")]
