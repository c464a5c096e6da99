"""Admission webhooks from plain functions (controller-runtime's ``admission.Validator``
and ``Defaulter``; kopf's ``@kopf.on.validate`` and ``@kopf.on.mutate``).

* :func:`validating` ``(fn, resource)``: ``fn(obj, request)`` allows by returning and
  refuses by raising :class:`~client_cache.webhooks.review.AdmissionDenied` (a message,
  field causes, a code); ``request.warn(text)`` adds a warning the client prints.
* :func:`mutating` ``(fn, resource)``: ``fn(obj, request)`` changes the object it is
  given (a copy) or returns a new one; the webhook answers with the JSON Patch from what
  it was sent to what the handler made (computed by the ``jsonpatch`` library).
* ``resource``: a :class:`~client_cache.api.schema.GroupVersionResource` (``obj`` is a
  wire dict), or a custom resource class of :mod:`client_cache.crd` (``obj`` is an
  instance of it); ``model=`` a ``kubernetes.client`` model class (``V1Pod``) for a
  built-in resource. A typed mutating handler changes only what it touches: the patch
  is taken between the object as the class reads it and as the handler left it, so a
  field the class does not know is never removed.
* On DELETE ``obj`` is the object being deleted (the review's ``oldObject``); on UPDATE
  ``request.old_object`` is the state before (typed like ``obj``).
* A handler that raises anything else fails closed: the request is refused with code 500
  and a short message naming the webhook and the exception's type (never the object),
  and the traceback is logged at ERROR (visible with no logging configured).
  ``fail_open=True`` allows the request instead, with a warning.
* What the API server is told (:mod:`~client_cache.webhooks.configuration`): the rules
  (the resource, ``operations``), ``failure_policy`` (``"Fail"``, ``"Ignore"``),
  ``timeout_seconds``, ``side_effects`` (``"None"``, or ``"NoneOnDryRun"`` for a
  handler that acts outside the object and checks ``request.dry_run``), and the
  ``object_selector`` and ``namespace_selector`` (label selectors, wire form).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

import jsonpatch

from client_cache.api.schema import GroupVersionResource
from client_cache.codec import to_wire
from client_cache.codec.objects import to_model
from client_cache.util._logs import log_visibly
from client_cache.webhooks.review import (
    OPERATIONS,
    AdmissionDenied,
    AdmissionRequest,
    admission_answer,
    parse_admission_review,
)

__all__ = ["AdmissionHandler", "AdmissionWebhook", "mutating", "validating"]

_log = logging.getLogger("client_cache.webhooks")

AdmissionHandler = Callable[[Any, AdmissionRequest], Any]
"""``fn(obj, request)``: a validating handler returns nothing (or raises
``AdmissionDenied``); a mutating one returns the changed object or None (changed in
place)."""

SIDE_EFFECTS = ("None", "NoneOnDryRun")
FAILURE_POLICIES = ("Fail", "Ignore")


@dataclasses.dataclass
class AdmissionWebhook:
    """One admission webhook: its handler, where the server serves it (``path``), its
    name in the webhook configuration and what the API server is told about it (see the
    module documentation). Made by :func:`validating` and :func:`mutating`."""

    fn: AdmissionHandler
    resource: GroupVersionResource
    mutates: bool
    name: str
    path: str
    operations: tuple[str, ...]
    decode: Callable[[Any], Any]
    encode: Callable[[Any], Any]
    failure_policy: str = "Fail"
    timeout_seconds: int = 10
    side_effects: str = "None"
    object_selector: dict[str, Any] | None = None
    namespace_selector: dict[str, Any] | None = None
    fail_open: bool = False

    def __post_init__(self) -> None:
        bad = [op for op in self.operations if op not in OPERATIONS and op != "*"]
        if not self.operations or bad:
            raise ValueError(f"operations are some of {', '.join(OPERATIONS)} or '*', not "
                             f"{list(self.operations)!r}")
        if self.failure_policy not in FAILURE_POLICIES:
            raise ValueError(f"failure_policy is one of {FAILURE_POLICIES}, not "
                             f"{self.failure_policy!r}")
        if self.side_effects not in SIDE_EFFECTS:
            raise ValueError(f"side_effects is one of {SIDE_EFFECTS} (admissionregistration "
                             f"v1), not {self.side_effects!r}")
        if not 1 <= self.timeout_seconds <= 30:
            raise ValueError(f"timeout_seconds is 1 to 30 (the API server's bounds), not "
                             f"{self.timeout_seconds!r}")
        if not self.path.startswith("/"):
            raise ValueError(f"a webhook's path starts with '/', not {self.path!r}")

    def __repr__(self) -> str:
        kind = "mutating" if self.mutates else "validating"
        return f"<AdmissionWebhook {kind} {self.name} at {self.path}>"

    def answer(self, body: bytes) -> dict[str, Any]:
        """The answer review to the AdmissionReview ``body`` (the server's route);
        :class:`~client_cache.webhooks.review.MalformedReviewError` when it is none."""
        return self.review(parse_admission_review(body))

    def review(self, request: AdmissionRequest) -> dict[str, Any]:
        """The answer review to ``request`` (the handler's outcome)."""
        wire = request.old_object if request.operation == "DELETE" else request.object
        warnings: list[str] = []
        try:
            typed = dataclasses.replace(
                request, object=None if request.object is None
                else self.decode(copy.deepcopy(request.object)),
                old_object=None if request.old_object is None
                else self.decode(copy.deepcopy(request.old_object)), warnings=warnings)
            given = typed.old_object if request.operation == "DELETE" else typed.object
            before = None if given is None or not self.mutates \
                else self.encode(copy.deepcopy(given))
            result = self.fn(given, typed)
        except AdmissionDenied as denied:
            return admission_answer(request.uid, False, denied=denied, warnings=warnings)
        except Exception as err:
            return self._failed(request, err, warnings)
        if not self.mutates or wire is None or request.operation == "DELETE":
            return admission_answer(request.uid, True, warnings=warnings)
        try:
            after = self.encode(result if result is not None else given)
            patch = jsonpatch.make_patch(before, after).patch
        except Exception as err:
            return self._failed(request, err, warnings)
        return admission_answer(request.uid, True, warnings=warnings, patch=patch)

    def _failed(self, request: AdmissionRequest, err: Exception,
                warnings: list[str]) -> dict[str, Any]:
        log_visibly(_log, logging.ERROR, "webhook %s: the handler failed on %r",
                    self.name, request, exc_info=err)
        message = f"webhook {self.name} failed: internal error ({type(err).__name__})"
        if self.fail_open:
            return admission_answer(request.uid, True, warnings=[*warnings, message])
        return admission_answer(request.uid, False, warnings=warnings,
                                denied=AdmissionDenied(message, code=500,
                                                       reason="InternalError"))


def _codec(resource: GroupVersionResource | type, model: type | None,
           ) -> tuple[GroupVersionResource, Callable[[Any], Any], Callable[[Any], Any]]:
    """The resource, and how its objects are read and written back."""
    info = getattr(resource, "__custom_resource__", None)
    if info is not None:  # a custom resource class
        from client_cache.crd import from_wire  # noqa: PLC0415 - needs msgspec
        cls: Any = resource
        gvr = GroupVersionResource(info.group, info.version, info.plural)
        return gvr, lambda wire: from_wire(cls, wire), to_wire
    if not isinstance(resource, GroupVersionResource):
        raise TypeError(f"expected a GroupVersionResource or a custom resource class, not "
                        f"{type(resource).__name__}")
    if model is None:
        return resource, lambda wire: wire, lambda obj: obj
    chosen = model
    return resource, lambda wire: to_model(wire, chosen), to_wire


def _webhook(fn: AdmissionHandler, resource: GroupVersionResource | type, mutates: bool,
             model: type | None, name: str, path: str, operations: Sequence[str],
             **settings: Any) -> AdmissionWebhook:
    if not callable(fn):
        raise TypeError(f"a handler is a function fn(obj, request), not {type(fn).__name__}")
    gvr, decode, encode = _codec(resource, model)
    verb = "mutate" if mutates else "validate"
    group = gvr.group or "core"
    label = str(getattr(fn, "__name__", verb)).replace("_", "-").lower().strip("-") or verb
    return AdmissionWebhook(
        fn, gvr, mutates, name or f"{label}.{gvr.resource}.{group}".replace("..", "."),
        path or f"/{verb}-{group.replace('.', '-')}-{gvr.version}-{gvr.resource}-{label}",
        tuple(operations), decode, encode, **settings)


def validating(fn: AdmissionHandler, resource: GroupVersionResource | type, *,
               model: type | None = None, name: str = "", path: str = "",
               operations: Sequence[str] = ("CREATE", "UPDATE"),
               **settings: Any) -> AdmissionWebhook:
    """A validating webhook of ``fn`` for ``resource`` (see the module documentation);
    ``name`` defaults to ``<fn>.<resource>.<group>`` and ``path`` to controller-runtime's
    shape, ``/validate-<group>-<version>-<resource>-<fn>``. ``settings``:
    ``failure_policy``, ``timeout_seconds``, ``side_effects``, ``object_selector``,
    ``namespace_selector``, ``fail_open``."""
    return _webhook(fn, resource, False, model, name, path, operations, **settings)


def mutating(fn: AdmissionHandler, resource: GroupVersionResource | type, *,
             model: type | None = None, name: str = "", path: str = "",
             operations: Sequence[str] = ("CREATE", "UPDATE"),
             **settings: Any) -> AdmissionWebhook:
    """A mutating webhook of ``fn`` for ``resource``: as :func:`validating`, with the
    path ``/mutate-...``; its answer carries the JSON Patch of what ``fn`` changed."""
    return _webhook(fn, resource, True, model, name, path, operations, **settings)
