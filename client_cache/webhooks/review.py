"""AdmissionReview v1 on the wire: the request a webhook is sent and the answer it gives
(k8s.io/api/admission/v1; controller-runtime ``admission.Request`` and
``admission.Response``; kopf's admission ``body``, ``old``, ``operation``, ``dryrun``).

:func:`parse_admission_review` reads a review into an :class:`AdmissionRequest` or raises
:class:`MalformedReviewError` (the server answers 400); :func:`admission_answer` writes
the answer review with the request's ``uid``. A handler refuses with
:class:`AdmissionDenied` (a message, an HTTP code, field causes), which becomes the
answer's ``status``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from client_cache.errors import ClientCacheError

__all__ = [
    "ADMISSION_API_VERSION",
    "AdmissionDenied",
    "AdmissionRequest",
    "FieldCause",
    "MalformedReviewError",
    "admission_answer",
    "parse_admission_review",
]

ADMISSION_API_VERSION = "admission.k8s.io/v1"
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


class MalformedReviewError(ClientCacheError, ValueError):
    """A request body that is not an AdmissionReview (or ConversionReview) v1: the
    server answers 400 with this message, which never quotes the body."""


@dataclass(frozen=True)
class FieldCause:
    """One field a denial is about (``metav1.StatusCause``): ``field`` as a path
    (``spec.replicas``), what is wrong with it, and its reason
    (``FieldValueInvalid`` by default)."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"


class AdmissionDenied(ClientCacheError):
    """Raise it in a handler to refuse the request (controller-runtime
    ``admission.Denied``, kopf ``AdmissionError``): ``message`` is what the client sees,
    ``code`` the HTTP code of the answer's status (403 Forbidden by default, 422 Invalid
    with ``causes``, the fields at fault: a validation error's ``details.causes``)."""

    def __init__(self, message: str, *, code: int | None = None,
                 causes: Iterable[FieldCause] = (), reason: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.causes = tuple(causes)
        self.code = code if code is not None else (422 if self.causes else 403)
        self.reason = reason or ("Invalid" if self.causes else "Forbidden")


@dataclass
class AdmissionRequest:
    """One admission request (``admissionv1.AdmissionRequest``): what is being done
    (``operation``, ``kind``, ``resource``, ``sub_resource``), to what (``namespace``,
    ``name``, ``object``: the new state, ``old_object``: the state before, on UPDATE and
    DELETE), by whom (``user_info``), whether it is a dry run (``dry_run``: a handler with
    side effects must not act on it) and the operation's ``options``. ``object`` and
    ``old_object`` are wire dicts, or instances of the handler's class when it has one."""

    uid: str
    operation: str
    kind: Mapping[str, str]
    resource: Mapping[str, str]
    sub_resource: str
    namespace: str
    name: str
    object: Any
    old_object: Any
    dry_run: bool
    user_info: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    """What :meth:`warn` collected: sent with the answer, printed by kubectl."""

    def warn(self, text: str) -> None:
        """Add a warning to the answer (kept short: the API server limits them)."""
        self.warnings.append(str(text)[:256])

    def __repr__(self) -> str:  # names the object, never its contents
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return (f"<AdmissionRequest {self.operation} {self.kind.get('kind', '')} "
                f"{where or '(unnamed)'} uid={self.uid}>")


def _mapping(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedReviewError(f"{what} is not an object")
    return value


def read_review(body: bytes, kind: str) -> dict[str, Any]:
    """The ``request`` of the ``kind`` review v1 in ``body``, or
    :class:`MalformedReviewError`."""
    try:
        review = json.loads(body)
    except (ValueError, UnicodeDecodeError) as err:
        raise MalformedReviewError(f"the body is not JSON ({type(err).__name__})") from None
    review = _mapping(review, "the body")
    if review.get("kind") != kind:
        raise MalformedReviewError(f"expected a {kind}, not {review.get('kind')!r}"[:200])
    request = _mapping(review.get("request"), "request")
    if not isinstance(request.get("uid"), str) or not request["uid"]:
        raise MalformedReviewError("request.uid is missing")
    return request


def parse_admission_review(body: bytes) -> AdmissionRequest:
    """The request of the AdmissionReview in ``body``, its objects as wire dicts."""
    request = read_review(body, "AdmissionReview")
    operation = request.get("operation")
    if operation not in OPERATIONS:
        raise MalformedReviewError(f"request.operation {operation!r} is not one of "
                                   f"{', '.join(OPERATIONS)}"[:200])
    for name in ("object", "oldObject"):
        if request.get(name) is not None:
            _mapping(request[name], f"request.{name}")
    return AdmissionRequest(
        uid=request["uid"], operation=operation,
        kind=_mapping(request.get("kind") or {}, "request.kind"),
        resource=_mapping(request.get("resource") or {}, "request.resource"),
        sub_resource=str(request.get("subResource") or ""),
        namespace=str(request.get("namespace") or ""), name=str(request.get("name") or ""),
        object=request.get("object"), old_object=request.get("oldObject"),
        dry_run=bool(request.get("dryRun")),
        user_info=_mapping(request.get("userInfo") or {}, "request.userInfo"),
        options=request.get("options"))


def admission_answer(uid: str, allowed: bool, *, denied: AdmissionDenied | None = None,
                     warnings: Sequence[str] = (), patch: list[Any] | None = None,
                     ) -> dict[str, Any]:
    """The AdmissionReview answering request ``uid``: allowed or not, with a denial's
    status, ``warnings`` and a JSON Patch (sent base64-encoded as the API wants)."""
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if denied is not None:
        status: dict[str, Any] = {"code": denied.code, "message": denied.message,
                                  "reason": denied.reason}
        if denied.causes:
            status["details"] = {"causes": [
                {"field": c.field, "message": c.message, "reason": c.reason}
                for c in denied.causes]}
        response["status"] = status
    if warnings:
        response["warnings"] = list(warnings)
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview",
            "response": response}
