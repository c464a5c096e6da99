"""The embedded server's dynamic admission: it calls the webhooks of the
``MutatingWebhookConfiguration`` and ``ValidatingWebhookConfiguration`` objects it
stores, as kube-apiserver does, so webhook tests run in-process.

On a create, update, patch (merge and apply) or delete of a resource that a webhook's
rules match (``apiGroups``, ``apiVersions``, ``resources``, ``operations`` and ``scope``,
``*`` included; subresources are not admitted here), whose object (on DELETE the old
one) the ``objectSelector`` selects and whose namespace the ``namespaceSelector`` does:

* the mutating webhooks are called first, one after the other in the order of their
  configurations' names and then of the webhooks in each, each seeing the previous ones'
  JSON Patches applied (``reinvocationPolicy`` is not acted on); then the validating
  ones;
* each call POSTs an AdmissionReview v1 to its ``clientConfig.url`` (a loopback address
  only: a ``service`` reference, or any other host, counts as a failed call), trusting
  its ``caBundle``, within its ``timeoutSeconds`` (default 10);
* a denial refuses the request with the webhook's status code (400 when it gives none)
  and the message ``admission webhook "<name>" denied the request: <message>``, as the
  real server words it; warnings come back in ``Warning`` headers;
* a failed call (refused, timed out, a bad answer) refuses the request with 500
  (``failed calling webhook "<name>": ...``) under ``failurePolicy: Fail`` (the
  default) and is skipped under ``Ignore``.

The store calls :meth:`Admission.admit` outside its lock, so a webhook may read from this
same server; an update admitted while the object changed is built and admitted again.
A dry-run create (``?dryRun=All``) is sent with ``dryRun: true`` and stores nothing; the
embedded server refuses ``dryRun`` on the other writes (400) rather than write.
"""

from __future__ import annotations

import base64
import copy
import ipaddress
import json
import ssl
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from client_cache.api import labels as labelsel
from client_cache.errors import ApiStatusError
from client_cache.testing.apiserver.resources import ResourceType

__all__ = ["ADMISSION_CONFIGURATIONS", "Admission"]

ADMISSION_GROUP = "admissionregistration.k8s.io"
ADMISSION_CONFIGURATIONS = ((ADMISSION_GROUP, "mutatingwebhookconfigurations"),
                            (ADMISSION_GROUP, "validatingwebhookconfigurations"))

Lister = Callable[[tuple[str, str]], list[dict[str, Any]]]
"""The stored objects of a resource key (``(group, plural)``)."""


class Admission:
    """The admission chain of one embedded server: ``objects(key)`` lists what the store
    holds of a resource (the configurations, the namespaces)."""

    def __init__(self, objects: Lister) -> None:
        self._objects = objects
        self.warnings = threading.local()

    def active(self) -> bool:
        """Whether any webhook configuration is stored (none: nothing to call)."""
        return any(self._objects(key) for key in ADMISSION_CONFIGURATIONS)

    def take_warnings(self) -> list[str]:
        """The warnings of the webhooks this thread's request called (then forgotten)."""
        found: list[str] = getattr(self.warnings, "found", [])
        self.warnings.found = []
        return found

    def admit(self, operation: str, rtype: ResourceType, obj: dict[str, Any] | None,
              old: dict[str, Any] | None, user: str = "", *,
              dry_run: bool = False) -> dict[str, Any] | None:
        """``obj`` (None on DELETE) as the mutating webhooks leave it, once every matching
        webhook allowed it; an :class:`ApiStatusError` when one refuses or fails closed.
        ``dry_run``: the reviews say so (a dry-run create)."""
        for key in ADMISSION_CONFIGURATIONS:
            mutating = key[1].startswith("mutating")
            for config in sorted(self._objects(key), key=lambda c: c["metadata"]["name"]):
                for webhook in config.get("webhooks") or ():
                    subjects = [o for o in (obj, old) if o is not None]
                    if not self._matches(webhook, operation, rtype, subjects):
                        continue
                    response = self._call(webhook, operation, rtype, obj, old, user,
                                          dry_run)
                    if response is None:  # failed, ignored
                        continue
                    if mutating and obj is not None and response.get("patch"):
                        obj = _patched(webhook["name"], obj, response)
        return obj

    # -- matching ----------------------------------------------------------------------------
    def _matches(self, webhook: dict[str, Any], operation: str, rtype: ResourceType,
                 subjects: list[dict[str, Any]]) -> bool:
        """Whether ``webhook`` is called: a rule matches, and its object selector selects
        the new or the old object (either, as the real server judges an UPDATE), and its
        namespace selector the object's namespace."""
        if not subjects or not any(_rule_matches(rule, operation, rtype)
                                   for rule in webhook.get("rules") or ()):
            return False
        if not any(_selects(webhook.get("objectSelector"),
                            (s.get("metadata") or {}).get("labels") or {}) for s in subjects):
            return False
        subject = subjects[0]
        namespace_selector = webhook.get("namespaceSelector")
        if namespace_selector is None or not namespace_selector:
            return True
        if rtype.namespaced:
            name = (subject.get("metadata") or {}).get("namespace", "")
        elif (rtype.group, rtype.plural) == ("", "namespaces"):
            name = (subject.get("metadata") or {}).get("name", "")
        else:
            return True  # a cluster-scoped object: the namespace selector does not apply
        for namespace in self._objects(("", "namespaces")):
            if namespace["metadata"]["name"] == name:
                return _selects(namespace_selector,
                                namespace["metadata"].get("labels") or {})
        return _selects(namespace_selector, {})

    # -- calling -----------------------------------------------------------------------------
    def _call(self, webhook: dict[str, Any], operation: str, rtype: ResourceType,
              obj: dict[str, Any] | None, old: dict[str, Any] | None,
              user: str, dry_run: bool) -> dict[str, Any] | None:
        """The webhook's response (allowed), None when the call failed and is ignored;
        raises when it refused or failed closed."""
        name = str(webhook.get("name", ""))
        subject = obj if obj is not None else old
        assert subject is not None
        md = subject.get("metadata") or {}
        uid = str(uuid.uuid4())
        review: dict[str, Any] = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {
                      "uid": uid,
                      "kind": {"group": rtype.group, "version": rtype.version,
                               "kind": rtype.kind},
                      "resource": {"group": rtype.group, "version": rtype.version,
                                   "resource": rtype.plural},
                      "requestKind": {"group": rtype.group, "version": rtype.version,
                                      "kind": rtype.kind},
                      "requestResource": {"group": rtype.group, "version": rtype.version,
                                          "resource": rtype.plural},
                      "name": md.get("name", ""), "namespace": md.get("namespace", ""),
                      "operation": operation,
                      "userInfo": {"username": user or "system:anonymous"},
                      "object": copy.deepcopy(obj), "oldObject": copy.deepcopy(old),
                      "dryRun": dry_run}}
        try:
            answer = _post(webhook, review)
            response = answer.get("response")
            if not isinstance(response, dict) or response.get("uid") != uid:
                raise ValueError("the answer is not an AdmissionReview for this request")
        except Exception as err:
            if webhook.get("failurePolicy", "Fail") == "Ignore":
                return None
            raise ApiStatusError(500, "InternalError",
                                 f'Internal error occurred: failed calling webhook "{name}": '
                                 f"{_reason(err)}") from None
        found = getattr(self.warnings, "found", None)
        if found is None:
            found = self.warnings.found = []
        found.extend(str(w) for w in response.get("warnings") or ())
        if response.get("allowed") is True:
            return response
        status = response.get("status") or {}
        message = str(status.get("message") or "")
        raise ApiStatusError(int(status.get("code") or 400),
                             str(status.get("reason") or ""),
                             f'admission webhook "{name}" denied the request'
                             + (f": {message}" if message else " without explanation"),
                             status.get("details"))


def _rule_matches(rule: dict[str, Any], operation: str, rtype: ResourceType) -> bool:
    def among(values: Any, value: str) -> bool:
        return "*" in (values or ()) or value in (values or ())

    scope = rule.get("scope", "*")
    if scope != "*" and (scope == "Namespaced") != rtype.namespaced:
        return False
    return (among(rule.get("apiGroups"), rtype.group)
            and among(rule.get("apiVersions"), rtype.version)
            and among(rule.get("resources"), rtype.plural)
            and among(rule.get("operations"), operation))


def _selects(selector: Any, labels: dict[str, str]) -> bool:
    if selector is None:
        return True
    return labelsel.label_selector_as_selector(selector).matches(labels)


def _loopback(url: str) -> str:
    """``url`` when its host is a loopback address, else a ValueError."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if parts.scheme != "https" or not loopback:
        raise ValueError("the embedded server calls https webhooks on loopback only")
    return url


def _post(webhook: dict[str, Any], review: dict[str, Any]) -> dict[str, Any]:
    config = webhook.get("clientConfig") or {}
    if "url" not in config:
        raise ValueError("a service reference cannot be reached from the embedded server")
    context = ssl.create_default_context()
    bundle = config.get("caBundle")
    if bundle:
        context.load_verify_locations(cadata=base64.b64decode(bundle).decode())
    request = urllib.request.Request(
        _loopback(str(config["url"])), data=json.dumps(review).encode(), method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"})
    timeout = float(webhook.get("timeoutSeconds") or 10)
    with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
        body = json.loads(answer.read())
    if not isinstance(body, dict):
        raise ValueError("the answer is not a JSON object")
    return body


def _patched(name: str, obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    try:
        import jsonpatch  # noqa: PLC0415 - the [webhooks] extra, only when patched

        if response.get("patchType") != "JSONPatch":
            raise ValueError(f"patchType {response.get('patchType')!r} is not JSONPatch")
        patch = json.loads(base64.b64decode(response["patch"]))
        result = jsonpatch.apply_patch(obj, patch)
    except Exception as err:
        raise ApiStatusError(500, "InternalError",
                             f'Internal error occurred: the patch of webhook "{name}" '
                             f"does not apply: {_reason(err)}") from None
    if not isinstance(result, dict):
        raise ApiStatusError(500, "InternalError", f'the patch of webhook "{name}" does not '
                             "leave an object")
    return result


def _reason(err: BaseException) -> str:
    if isinstance(err, urllib.error.URLError):
        return f"{type(err.reason).__name__}: {err.reason}"[:200]
    return f"{type(err).__name__}: {err}"[:200]
