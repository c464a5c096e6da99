"""Admission and conversion webhooks served by the library: the HTTPS server
(:class:`WebhookServer`), admission handlers from functions (:func:`validating`,
:func:`mutating`), conversion between a custom resource's versions
(:class:`ConversionWebhook`), their
certificates (:func:`self_signed`, :class:`CertificateFiles`) and the webhook
configurations the API server reads
(:class:`~client_cache.webhooks.configuration.WebhookConfigurations`).

Needs the ``[webhooks]`` extra (``cryptography`` for the certificates, ``jsonpatch`` for
the mutating answers). The names below are loaded when first used, so that
:mod:`client_cache.webhooks.metrics` (which the Prometheus exporter reads) needs neither.
See the webhooks guide."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from client_cache.webhooks.admission import (
        AdmissionHandler,
        AdmissionWebhook,
        mutating,
        validating,
    )
    from client_cache.webhooks.certs import CertificateBundle, CertificateFiles, self_signed
    from client_cache.webhooks.conversion import ConversionWebhook, round_trip_errors
    from client_cache.webhooks.review import (
        ADMISSION_API_VERSION,
        AdmissionDenied,
        AdmissionRequest,
        FieldCause,
        MalformedReviewError,
    )
    from client_cache.webhooks.server import WebhookServer

_WHERE = {
    "AdmissionHandler": "admission", "AdmissionWebhook": "admission",
    "mutating": "admission", "validating": "admission",
    "CertificateBundle": "certs", "CertificateFiles": "certs", "self_signed": "certs",
    "ConversionWebhook": "conversion", "round_trip_errors": "conversion",
    "ADMISSION_API_VERSION": "review", "AdmissionDenied": "review",
    "AdmissionRequest": "review", "FieldCause": "review", "MalformedReviewError": "review",
    "WebhookServer": "server",
}

__all__ = [
    "ADMISSION_API_VERSION",
    "AdmissionDenied",
    "AdmissionHandler",
    "AdmissionRequest",
    "AdmissionWebhook",
    "CertificateBundle",
    "CertificateFiles",
    "ConversionWebhook",
    "FieldCause",
    "MalformedReviewError",
    "WebhookServer",
    "mutating",
    "round_trip_errors",
    "self_signed",
    "validating",
]


def __getattr__(name: str) -> Any:
    """Load an exported name from its module on first use (PEP 562)."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'client_cache.webhooks' has no attribute {name!r}")
    return getattr(importlib.import_module(f"client_cache.webhooks.{where}"), name)
