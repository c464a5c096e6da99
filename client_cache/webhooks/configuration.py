"""The webhook configurations the API server reads, written by the library
(controller-runtime leaves them to controller-gen's manifests and cert-manager's CA
injector; kopf manages them, as here).

``WebhookConfigurations(api_client, server, name="foo-operator")`` describes the
server's admission webhooks as one ``ValidatingWebhookConfiguration`` and one
``MutatingWebhookConfiguration`` named ``name`` (either left out when it would be
empty): per webhook, its rule (the resource's group, version and plural and its
operations, any scope), ``failurePolicy``, ``timeoutSeconds``, ``sideEffects``,
``objectSelector`` and ``namespaceSelector``, ``admissionReviewVersions: [v1]``,
``matchPolicy: Equivalent`` and, mutating, ``reinvocationPolicy: Never``. Where the API
server sends the requests: ``url`` (default: the server's own ``https://host:port``, for
a process outside the cluster: loopback in tests and development) or ``service``
(``{"namespace": ..., "name": ..., "port": ...}``, in a cluster) plus each webhook's
path; the ``caBundle`` is the server's self-made CA unless ``ca_bundle`` is given.

:meth:`WebhookConfigurations.apply` writes them by server-side apply (field manager
``name``, forced: the library owns what it writes); :meth:`~WebhookConfigurations.remove`
deletes them; as a context manager it applies them on entry and, unless
``persistent=True``, removes them on a clean exit (kopf's non-persistent configurations:
an operator that stops leaves no webhook that would refuse every request).
:meth:`~WebhookConfigurations.manifests` gives them as wire dicts, to write as YAML.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from client_cache.api.errors import from_status
from client_cache.api.schema import GroupVersionResource
from client_cache.client.rest import request_json, resource_path
from client_cache.runtime.apply import apply
from client_cache.webhooks.admission import AdmissionWebhook
from client_cache.webhooks.server import WebhookServer

__all__ = ["MUTATING", "VALIDATING", "WebhookConfigurations"]

VALIDATING = GroupVersionResource("admissionregistration.k8s.io", "v1",
                                  "validatingwebhookconfigurations")
MUTATING = GroupVersionResource("admissionregistration.k8s.io", "v1",
                                "mutatingwebhookconfigurations")


class WebhookConfigurations:
    """See the module documentation."""

    def __init__(self, api_client: Any, server: WebhookServer, *, name: str,
                 url: str = "", service: Mapping[str, Any] | None = None,
                 ca_bundle: bytes | None = None, persistent: bool = False) -> None:
        if not name:
            raise ValueError("the webhook configurations need a name")
        if url and service:
            raise ValueError("a webhook is reached by url or by service, not both")
        self.api_client = api_client
        self.server = server
        self.name = name
        self.url = url.rstrip("/") or ("" if service else server.url)
        self.service = dict(service) if service else None
        self.ca_bundle = ca_bundle if ca_bundle is not None else server.ca_bundle
        self.persistent = persistent

    def __repr__(self) -> str:
        return f"<WebhookConfigurations {self.name} for {self.server!r}>"

    def _client_config(self, path: str) -> dict[str, Any]:
        config: dict[str, Any] = {"url": self.url + path} if self.service is None else {
            "service": {**self.service, "path": path}}
        if self.ca_bundle:
            config["caBundle"] = base64.b64encode(self.ca_bundle).decode()
        return config

    def _entry(self, webhook: AdmissionWebhook) -> dict[str, Any]:
        gvr = webhook.resource
        entry: dict[str, Any] = {
            "name": webhook.name,
            "clientConfig": self._client_config(webhook.path),
            "rules": [{"apiGroups": [gvr.group], "apiVersions": [gvr.version],
                       "resources": [gvr.resource], "operations": list(webhook.operations),
                       "scope": "*"}],
            "failurePolicy": webhook.failure_policy,
            "matchPolicy": "Equivalent",
            "sideEffects": webhook.side_effects,
            "timeoutSeconds": webhook.timeout_seconds,
            "admissionReviewVersions": ["v1"],
        }
        if webhook.object_selector is not None:
            entry["objectSelector"] = webhook.object_selector
        if webhook.namespace_selector is not None:
            entry["namespaceSelector"] = webhook.namespace_selector
        if webhook.mutates:
            entry["reinvocationPolicy"] = "Never"
        return entry

    def manifests(self) -> list[dict[str, Any]]:
        """The configurations as wire dicts (a kind with no webhook left out)."""
        admission = [r for r in self.server.routes() if isinstance(r, AdmissionWebhook)]
        out = []
        for kind, gvr, mutates in (("ValidatingWebhookConfiguration", VALIDATING, False),
                                   ("MutatingWebhookConfiguration", MUTATING, True)):
            entries = [self._entry(w) for w in admission if w.mutates is mutates]
            if entries:
                out.append({"apiVersion": gvr.group_version(), "kind": kind,
                            "metadata": {"name": self.name,
                                         "labels": {"app.kubernetes.io/managed-by":
                                                    "client_cache"}},
                            "webhooks": entries})
        return out

    def apply(self) -> list[dict[str, Any]]:
        """Write the configurations (server-side apply); what the server stored."""
        return [apply(self.api_client, MUTATING if m["kind"].startswith("Mutating")
                      else VALIDATING, m, field_manager=self.name, force=True)
                for m in self.manifests()]

    def remove(self) -> None:
        """Delete both configurations (one that is not there is no error)."""
        for gvr in (VALIDATING, MUTATING):
            path = f"{resource_path(gvr)}/{self.name}"
            status, body = request_json(self.api_client, "DELETE", path, timeout=30.0)
            if status >= 400 and status != 404:
                raise from_status(body if isinstance(body, dict) else {
                    "code": status, "message": f"deleting {gvr.resource}/{self.name} failed"})

    def __enter__(self) -> WebhookConfigurations:
        self.apply()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if not self.persistent and exc_type is None:
            self.remove()
