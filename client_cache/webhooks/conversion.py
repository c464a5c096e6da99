"""Conversion between the versions of a typed custom resource, served as a CRD
conversion webhook (ConversionReview v1; controller-runtime's ``conversion.Hub`` and
``conversion.Convertible``).

Hub and spoke: one version class is the hub; every other (a spoke) defines
``to_hub(self) -> Hub`` and a class method ``from_hub(cls, hub) -> Spoke``. A conversion
from any version to any other goes through the hub, so N versions need N - 1 pairs of
functions, not N². ``ConversionWebhook(Hub, SpokeA, SpokeB)`` answers the API server's
ConversionReviews at ``/convert`` (a :class:`~client_cache.webhooks.server.WebhookServer`
route); :meth:`ConversionWebhook.crd_conversion` is the CRD's ``spec.conversion`` that
points the API server at it (``crd(Hub, SpokeA, SpokeB, conversion=...)``).

What a conversion keeps: the object's ``metadata`` is the one it was sent, whatever the
functions did (the API server refuses a conversion that changes anything there but
labels and annotations); ``apiVersion`` and ``kind`` are the desired version's. An object
that does not convert (its version unknown, a function that raises) fails the whole
review with a message naming the object and the exception's type, never its contents;
the API server then refuses the request that needed it.

:func:`round_trip_errors` checks a user's functions in their tests: spoke to hub to spoke
(and hub to spoke to hub) gives back every field.
"""

from __future__ import annotations

import base64
import copy
import logging
from collections.abc import Mapping
from typing import Any

from client_cache.codec import to_wire
from client_cache.crd import from_wire, resource_info
from client_cache.util._logs import log_visibly
from client_cache.webhooks.review import MalformedReviewError, read_review

__all__ = ["CONVERSION_API_VERSION", "ConversionWebhook", "round_trip_errors"]

_log = logging.getLogger("client_cache.webhooks")

CONVERSION_API_VERSION = "apiextensions.k8s.io/v1"


class ConversionWebhook:
    """The conversion webhook of the custom resource whose versions are ``hub`` and
    ``spokes`` (classes of :mod:`client_cache.crd` of one group and kind), served at
    ``path`` (see the module documentation)."""

    def __init__(self, hub: type, *spokes: type, path: str = "/convert",
                 name: str = "") -> None:
        self.hub = hub
        hub_info = resource_info(hub)
        self.group, self.kind = hub_info.group, hub_info.kind
        self.classes: dict[str, type] = {hub_info.api_version: hub}
        for spoke in spokes:
            info = resource_info(spoke)
            if (info.group, info.kind) != (self.group, self.kind):
                raise ValueError(f"{spoke.__name__} is not a version of {self.kind} in "
                                 f"{self.group}")
            if info.api_version in self.classes:
                raise ValueError(f"two classes for {info.api_version}")
            for method in ("to_hub", "from_hub"):
                if not callable(getattr(spoke, method, None)):
                    raise TypeError(f"{spoke.__name__} needs {method}() to convert through "
                                    f"the hub {hub.__name__}")
            self.classes[info.api_version] = spoke
        if not path.startswith("/"):
            raise ValueError(f"a webhook's path starts with '/', not {path!r}")
        self.path = path
        self.name = name or f"convert.{hub_info.plural}.{self.group}"

    def __repr__(self) -> str:
        return f"<ConversionWebhook {self.kind} {sorted(self.classes)} at {self.path}>"

    def crd_conversion(self, url: str = "", *, service: Mapping[str, Any] | None = None,
                       ca_bundle: bytes | None = None) -> dict[str, Any]:
        """The CRD's ``spec.conversion``: the Webhook strategy, ConversionReview v1, and
        where the API server calls (``url``: the server's ``https://host:port``, this
        webhook's path appended; or ``service``) with the ``caBundle`` to trust."""
        if bool(url) == bool(service):
            raise ValueError("a conversion webhook is reached by url or by service")
        config: dict[str, Any] = {"url": url.rstrip("/") + self.path} if url else {
            "service": {**dict(service or {}), "path": self.path}}
        if ca_bundle:
            config["caBundle"] = base64.b64encode(ca_bundle).decode()
        return {"strategy": "Webhook",
                "webhook": {"clientConfig": config, "conversionReviewVersions": ["v1"]}}

    def convert(self, obj: Mapping[str, Any], desired: str) -> dict[str, Any]:
        """``obj`` (a wire dict) in the ``desired`` apiVersion, through the hub."""
        source = self.classes.get(str(obj.get("apiVersion", "")))
        target = self.classes.get(desired)
        if source is None or target is None:
            raise ValueError(f"{self.kind} converts between {', '.join(sorted(self.classes))}"
                             f", not from {obj.get('apiVersion')!r} to {desired!r}")
        if source is target:
            return copy.deepcopy(dict(obj))
        typed: Any = from_wire(source, copy.deepcopy(dict(obj)))
        hub = typed if source is self.hub else typed.to_hub()
        chosen: Any = target
        result = hub if target is self.hub else chosen.from_hub(hub)
        wire = to_wire(result)
        wire["apiVersion"], wire["kind"] = desired, self.kind
        wire["metadata"] = copy.deepcopy(obj.get("metadata") or {})  # never changed
        return dict(wire)

    def answer(self, body: bytes) -> dict[str, Any]:
        """The ConversionReview answering ``body``."""
        request = read_review(body, "ConversionReview")
        desired = request.get("desiredAPIVersion")
        objects = request.get("objects")
        if not isinstance(desired, str) or not isinstance(objects, list):
            raise MalformedReviewError("request.desiredAPIVersion or request.objects is "
                                       "missing")
        converted = []
        for obj in objects:
            try:
                converted.append(self.convert(obj, desired))
            except Exception as err:
                md = (obj.get("metadata") if isinstance(obj, dict) else None) or {}
                where = f"{md.get('namespace', '')}/{md.get('name', '')}".lstrip("/")
                log_visibly(_log, logging.ERROR, "conversion webhook %s: %s %s to %s "
                            "failed", self.name, self.kind, where, desired, exc_info=err)
                message = (f"converting {self.kind} {where} to {desired} failed: "
                           f"{type(err).__name__}")
                return _answer(request["uid"], [], message)
        return _answer(request["uid"], converted, "")


def _answer(uid: str, objects: list[dict[str, Any]], failure: str) -> dict[str, Any]:
    result: dict[str, Any] = {"status": "Failure", "message": failure} if failure else \
        {"status": "Success"}
    return {"apiVersion": CONVERSION_API_VERSION, "kind": "ConversionReview",
            "response": {"uid": uid, "convertedObjects": objects, "result": result}}


def round_trip_errors(webhook: ConversionWebhook, obj: Mapping[str, Any]) -> list[str]:
    """What does not survive ``obj``'s trips through every other version and back: one
    line per version whose round trip changed the object (``obj``'s own version to the
    other and back, compared as wire dicts). Empty when every trip keeps every field; for
    the user's tests (``assert not round_trip_errors(webhook, sample)``)."""
    start = str(obj.get("apiVersion", ""))
    original = webhook.convert(obj, start)
    errors = []
    for version in sorted(webhook.classes):
        if version == start:
            continue
        back = webhook.convert(webhook.convert(original, version), start)
        if back != original:
            lost = sorted(_differences(original, back))
            errors.append(f"{start} -> {version} -> {start} changed {', '.join(lost)}")
    return errors


def _differences(a: Any, b: Any, path: str = "") -> set[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: set[str] = set()
        for key in set(a) | set(b):
            out |= _differences(a.get(key), b.get(key), f"{path}.{key}" if path else key)
        return out
    return set() if a == b else {path or "(the object)"}
