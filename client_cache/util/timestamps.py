"""Kubernetes timestamps on the wire: ``Time`` (RFC 3339, whole seconds, UTC) and
``MicroTime`` (RFC 3339, microseconds, UTC), as ``metav1.Time`` and ``metav1.MicroTime``
marshal them. Only what is shown to people or sent to the server is wall time; durations
in the library use the monotonic clock."""

from __future__ import annotations

import re
from datetime import datetime, timezone

__all__ = ["format_micro_time", "format_time", "parse_micro_time"]

_FRACTION = re.compile(r"\.(\d+)")


def format_time(seconds: float) -> str:
    """Wall-clock ``seconds`` (``time.time()``) as Kubernetes ``Time``:
    ``2026-11-23T12:00:00Z``."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(when: datetime | float) -> str:
    """``when`` (an aware datetime, or wall-clock seconds) as Kubernetes ``MicroTime``:
    ``2026-11-23T12:00:00.123456Z``."""
    if not isinstance(when, datetime):
        when = datetime.fromtimestamp(when, timezone.utc)
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(text: str | None) -> datetime | None:
    """A ``MicroTime`` (or any RFC 3339 time) as an aware datetime; None for none."""
    if not text:
        return None
    value = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    # Python 3.10's fromisoformat takes exactly 3 or 6 fraction digits: pad or cut to 6
    value = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], value, count=1)
    return datetime.fromisoformat(value)
