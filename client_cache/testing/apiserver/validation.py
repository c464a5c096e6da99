"""What the embedded API server checks on a write beyond names and versions, as the real
server's validation does for the same resources (422 Invalid, the causes listed in the
message). Only events.k8s.io/v1 Events are checked so far: what a recorder must send."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from client_cache.errors import ApiStatusError

__all__ = ["validate_write"]

_NOTE_LIMIT = 1024  # bytes; the real server's NoteLengthLimit
_FIELD_LIMIT = 128


def _event_v1_causes(event: Mapping[str, Any]) -> list[str]:
    causes = []
    if not event.get("eventTime"):
        causes.append("eventTime: Required value")
    if event.get("type") not in ("Normal", "Warning"):
        causes.append(f"type: Unsupported value: \"{event.get('type', '')}\": "
                      "supported values: \"Normal\", \"Warning\"")
    for field in ("reportingController", "reportingInstance", "action", "reason"):
        value = event.get(field) or ""
        if not value:
            causes.append(f"{field}: Required value")
        elif len(value) > _FIELD_LIMIT:
            causes.append(f"{field}: Too long: may not be more than {_FIELD_LIMIT} bytes")
    if len((event.get("note") or "").encode()) > _NOTE_LIMIT:
        causes.append(f"note: Too long: may not be more than {_NOTE_LIMIT} bytes")
    for deprecated in ("deprecatedSource", "deprecatedFirstTimestamp",
                       "deprecatedLastTimestamp", "deprecatedCount"):
        if event.get(deprecated):
            causes.append(f"{deprecated}: Invalid value: needs to be unset")
    series = event.get("series")
    if series is not None:
        if int(series.get("count") or 0) < 2:
            causes.append("series.count: Invalid value: should be at least 2")
        if not series.get("lastObservedTime"):
            causes.append("series.lastObservedTime: Required value")
    namespace = (event.get("metadata") or {}).get("namespace", "")
    regarding = event.get("regarding") or {}
    if regarding.get("namespace") and regarding["namespace"] != namespace:
        causes.append("regarding.namespace: Invalid value: does not match event.namespace")
    return causes


_CHECKS: dict[tuple[str, str], tuple[str, Callable[[Mapping[str, Any]], list[str]]]] = {
    ("events.k8s.io", "events"): ("Event.events.k8s.io", _event_v1_causes),
}


def validate_write(group: str, plural: str, obj: Mapping[str, Any]) -> None:
    """Raise 422 Invalid when ``obj`` (a create or update of ``group``/``plural``) breaks
    the real server's rules for that resource; resources without rules pass."""
    check = _CHECKS.get((group, plural))
    if check is None:
        return
    kind, causes_of = check
    causes = causes_of(obj)
    if causes:
        name = (obj.get("metadata") or {}).get("name", "")
        raise ApiStatusError(422, "Invalid",
                             f"{kind} \"{name}\" is invalid: [{', '.join(causes)}]")
