"""The recorder a reconcile gets as ``ctx.recorder``: Events about its objects, written
as events.k8s.io/v1 Events by default (controller-runtime v0.23's
``mgr.GetEventRecorder``) or as core/v1 Events (``ControllerConfig(events_api="v1")``,
controller-runtime's deprecated ``GetEventRecorderFor``).

One call shape serves both APIs, the core/v1 recorder's (so a reconcile written for it
runs unchanged) with the newer API's two extra fields as keywords::

    ctx.recorder.event(foo, "Normal", "Synced", "Foo synced")
    ctx.recorder.eventf(foo, "Warning", "Conflict", "%s is owned elsewhere", name,
                        action="Adopt", related=deployment)

Go's ``events.EventRecorder.Eventf(regarding, related, type, reason, action, note,
args...)`` is ``eventf(regarding, type, reason, note, *args, related=, action=)`` here.
``action`` (required by events.k8s.io/v1: what the controller did or failed to do)
defaults to ``"Reconcile"``; the core/v1 API has no place for ``action`` and ``related``
and drops them, as client-go's ``EventRecorderAdapter`` does. Repeats are folded as each
API folds them: a series (``series.count``) on events.k8s.io/v1, a count on core/v1
(client-go's correlator and spam filter). Recording never blocks the reconcile: Events
are queued and written on the broadcaster's thread, and flushed at the run's shutdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from client_cache.events import EventRecorder as EventsV1Recorder
from client_cache.record import EventRecorder as CoreV1Recorder

__all__ = ["DEFAULT_ACTION", "EVENTS_APIS", "ControllerRecorder"]

DEFAULT_ACTION = "Reconcile"
"""The ``action`` of an events.k8s.io/v1 Event recorded without one."""

EVENTS_APIS = ("events.k8s.io/v1", "v1")
"""The values of ``ControllerConfig.events_api``: the newer API (the default) or core/v1."""


class ControllerRecorder:
    """``ctx.recorder`` (see the module documentation): records through ``recorder``, an
    events.k8s.io/v1 :class:`client_cache.events.EventRecorder` or a core/v1
    :class:`client_cache.record.EventRecorder`. :attr:`api` says which."""

    def __init__(self, recorder: EventsV1Recorder | CoreV1Recorder) -> None:
        self.recorder = recorder
        self.api = "events.k8s.io/v1" if isinstance(recorder, EventsV1Recorder) else "v1"

    def __repr__(self) -> str:
        return f"<ControllerRecorder {self.api}>"

    def event(self, obj: Any, event_type: str, reason: str, message: str, *,
              action: str = DEFAULT_ACTION, related: Any = None, kind: str = "",
              api_version: str = "") -> None:
        """Record an Event about ``obj`` with ``message`` as it is (Go ``Event``)."""
        self._record(obj, None, event_type, reason, message, action, related, kind,
                     api_version)

    def eventf(self, obj: Any, event_type: str, reason: str, fmt: str, *args: Any,
               action: str = DEFAULT_ACTION, related: Any = None, kind: str = "",
               api_version: str = "") -> None:
        """Record an Event about ``obj`` with ``fmt % args`` (Go ``Eventf``)."""
        self._record(obj, None, event_type, reason, fmt % args if args else fmt, action,
                     related, kind, api_version)

    def annotated_eventf(self, obj: Any, annotations: Mapping[str, str], event_type: str,
                         reason: str, fmt: str, *args: Any, action: str = DEFAULT_ACTION,
                         related: Any = None, kind: str = "",
                         api_version: str = "") -> None:
        """:meth:`eventf` with ``annotations`` on the Event's metadata (Go
        ``AnnotatedEventf``)."""
        self._record(obj, annotations, event_type, reason, fmt % args if args else fmt,
                     action, related, kind, api_version)

    def _record(self, obj: Any, annotations: Mapping[str, str] | None, event_type: str,
                reason: str, message: str, action: str, related: Any, kind: str,
                api_version: str) -> None:
        recorder = self.recorder
        if isinstance(recorder, EventsV1Recorder):
            recorder.eventf(obj, related, event_type, reason, action, message, kind=kind,
                            api_version=api_version, annotations=annotations)
        elif annotations:
            recorder.annotated_eventf(obj, annotations, event_type, reason, message,
                                      kind=kind, api_version=api_version)
        else:
            recorder.event(obj, event_type, reason, message, kind=kind,
                           api_version=api_version)
