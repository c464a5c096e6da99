"""What a reconcile receives and returns (kube-rs ``Action``, ``ReconcileReason``,
``ReconcileRequest``; the context object).

``reconcile(obj, ctx) -> Action`` and ``error_policy(obj, error, ctx) -> Action`` are the
two functions a user gives :meth:`~client_cache.runtime.controller.Controller.run`. ``obj``
is the cached object itself, shared with the cache and with every other reader: read it,
never change it (:func:`deep_copy` makes a copy to edit and send).
"""

from __future__ import annotations

import copy
import enum
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from urllib3.exceptions import HTTPError

from client_cache.errors import ClientCacheError, find_api_error
from client_cache.runtime.objectref import ObjectRef

if TYPE_CHECKING:
    from client_cache.runtime._read_your_writes import Writer

__all__ = [
    "Action",
    "Context",
    "ReasonKind",
    "ReconcileError",
    "ReconcileReason",
    "ReconcileRequest",
    "ReconcileTimeoutError",
    "RunSummary",
    "TerminalError",
    "deep_copy",
    "is_panic",
]

D = TypeVar("D")


@dataclass(frozen=True, slots=True)
class Action:
    """What to do after a reconcile (kube-rs ``Action``): run it again after
    ``requeue_after`` seconds, or (None) only when something changes; ``backoff``: run it
    again after the object's next backoff delay (controller-runtime's
    ``Result{Requeue: true}``); ``priority``: the priority of that next run (None: the
    priority this run was requested at; controller-runtime ``Result.Priority``)."""

    requeue_after: float | None = None
    backoff: bool = False
    priority: int | None = None

    @classmethod
    def requeue(cls, seconds: float, priority: int | None = None) -> Action:
        """Reconcile this object again in ``seconds`` (kube-rs ``Action::requeue``), at
        ``priority`` (None: this request's; higher runs first among the due requests,
        :mod:`client_cache.runtime.scheduler`)."""
        if seconds < 0:
            raise ValueError(f"requeue delay must not be negative, not {seconds}")
        if priority is not None and (isinstance(priority, bool)
                                     or not isinstance(priority, int)):
            raise TypeError(f"priority must be an int, not {type(priority).__name__}")
        return cls(float(seconds), False, priority)

    @classmethod
    def requeue_with_backoff(cls) -> Action:
        """Reconcile this object again after its per-object backoff delay (the one a
        failure would get, growing while it is asked for again and reset by a reconcile
        that asks for anything else), without counting a failure: controller-runtime's
        ``Result{Requeue: true}``, counted as the ``requeue`` result. kube-rs has no
        such action."""
        return cls(None, True)

    @classmethod
    def await_change(cls) -> Action:
        """Reconcile again only when a trigger fires (kube-rs ``Action::await_change``)."""
        return cls(None)


class ReasonKind(str, enum.Enum):
    """The variants of :class:`ReconcileReason`."""

    UNKNOWN = "unknown"
    OBJECT_UPDATED = "object updated"
    RELATED_OBJECT_UPDATED = "related object updated"
    RECONCILER_REQUESTED_RETRY = "reconciler requested retry"
    ERROR_POLICY_REQUESTED_RETRY = "error policy requested retry"
    BULK_RECONCILE = "bulk reconcile requested"
    CUSTOM = "custom"


@dataclass(frozen=True, slots=True)
class ReconcileReason:
    """Why a reconcile was requested (kube-rs ``ReconcileReason``): ``str()`` reads as
    kube-rs displays it; ``related`` is the object that changed for
    ``RELATED_OBJECT_UPDATED``; ``text`` the user's words for ``CUSTOM``."""

    kind: ReasonKind
    related: ObjectRef | None = None
    text: str = ""

    @classmethod
    def unknown(cls) -> ReconcileReason:
        """The reason is not known (kube-rs ``Unknown``)."""
        return cls(ReasonKind.UNKNOWN)

    @classmethod
    def object_updated(cls) -> ReconcileReason:
        """The object itself changed (kube-rs ``ObjectUpdated``)."""
        return cls(ReasonKind.OBJECT_UPDATED)

    @classmethod
    def related_object_updated(cls, related: ObjectRef) -> ReconcileReason:
        """An owned or watched object ``related`` changed (kube-rs
        ``RelatedObjectUpdated``)."""
        return cls(ReasonKind.RELATED_OBJECT_UPDATED, related)

    @classmethod
    def reconciler_requested_retry(cls) -> ReconcileReason:
        """The last reconcile asked to run again (kube-rs ``ReconcilerRequestedRetry``)."""
        return cls(ReasonKind.RECONCILER_REQUESTED_RETRY)

    @classmethod
    def error_policy_requested_retry(cls) -> ReconcileReason:
        """The error policy asked for a retry (kube-rs ``ErrorPolicyRequestedRetry``)."""
        return cls(ReasonKind.ERROR_POLICY_REQUESTED_RETRY)

    @classmethod
    def bulk_reconcile(cls) -> ReconcileReason:
        """Everything was asked to reconcile (kube-rs ``BulkReconcile``)."""
        return cls(ReasonKind.BULK_RECONCILE)

    @classmethod
    def custom(cls, text: str) -> ReconcileReason:
        """A reason given by an external trigger (kube-rs ``Custom``)."""
        return cls(ReasonKind.CUSTOM, text=text)

    def __str__(self) -> str:
        if self.kind is ReasonKind.UNKNOWN:
            return "unknown (some unregistered source)"
        if self.kind is ReasonKind.RELATED_OBJECT_UPDATED:
            return f"related object updated: {self.related}"
        if self.kind is ReasonKind.CUSTOM:
            return self.text
        return str(self.kind.value)


@dataclass(frozen=True, slots=True)
class ReconcileRequest:
    """A request to reconcile ``obj_ref`` (kube-rs ``ReconcileRequest``); what a
    ``reconcile_on`` source may yield to give its own reason (a bare :class:`ObjectRef`
    gets ``UNKNOWN``). ``priority`` orders it among the due requests (higher first;
    :mod:`client_cache.runtime.scheduler`): a source's request asks for it, a reconcile
    reads the one it was handed out at (controller-runtime ``GetWithPriority``)."""

    obj_ref: ObjectRef
    reason: ReconcileReason = field(default_factory=ReconcileReason.unknown)
    priority: int = 0


@dataclass(frozen=True)
class Context(Generic[D]):
    """The second argument of ``reconcile`` and the third of ``error_policy``: the user's
    ``data`` given to ``run`` (kube-rs passes that object itself; here it sits beside the
    request), the request being served and its reason, ``stopping``, an event set when
    graceful shutdown begins or leadership is lost (a long reconcile may check it), and
    ``recorder``, a :class:`~client_cache.runtime.recorder.ControllerRecorder` reporting
    as the controller on events.k8s.io/v1 or core/v1 (``ControllerConfig.events_api``;
    None when the controller was built without events), and ``shard``, the
    identity of the shard (this replica's member of the ring) running the reconcile when
    the controller is sharded (``ControllerConfig.sharding``), else ``""``.

    Writes made through the context (:meth:`apply`, :meth:`patch_status`, and those
    :meth:`record_write` is told of) are read back: the next reconcile of the object waits
    until the cache holds them (:mod:`client_cache.runtime._read_your_writes`, KEP-5647).
    A context built by hand (a test's) has no ``writer``: :meth:`apply` and
    :meth:`patch_status` raise ``RuntimeError`` and :meth:`record_write` does nothing."""

    data: D
    request: ReconcileRequest
    stopping: threading.Event
    recorder: Any = None
    shard: str = ""
    writer: Writer | None = None
    deadline: float | None = None
    """When the call's ``ControllerConfig.reconcile_timeout`` passes (monotonic), None
    without one; ``stopping`` is set then too."""

    def expired(self) -> bool:
        """Whether this reconcile's deadline has passed (never without a timeout): a long
        reconcile checks it and returns early (controller-runtime ``ctx.Err()``)."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _writer(self) -> Writer:
        if self.writer is None:
            raise RuntimeError("this Context writes nothing: it was not made by a "
                               "running Controller")
        return self.writer

    def apply(self, obj: Any, *, force: bool = True,
              field_manager: str | None = None) -> dict[str, Any]:
        """Server-side apply ``obj`` to the controller's primary resource, as the
        controller's field manager (its name) unless ``field_manager`` says otherwise,
        forced by default (a controller owns what it applies: see
        :func:`~client_cache.runtime.apply.apply`); returns what the server stored. When
        ``obj`` is the reconciled object, its next reconcile waits for the cache to hold
        this write."""
        return self._writer().apply(self.obj_ref, obj, force=force,
                                    field_manager=field_manager)

    def patch_status(self, patch: Mapping[str, Any]) -> dict[str, Any]:
        """Merge-patch the reconciled object's ``status`` subresource with ``patch``
        (``{"status": {...}}`` or the status fields alone); returns what the server
        stored, and the next reconcile waits for the cache to hold it.
        :class:`~client_cache.errors.ApiStatusError` when the server refuses."""
        return self._writer().patch_status(self.obj_ref, patch)

    def record_write(self, written: Any) -> None:
        """Tell the controller of a write to the reconciled object made another way (the
        object the server returned, or its resourceVersion): its next reconcile waits
        for the cache to hold it."""
        if self.writer is not None:
            self.writer.versions.record(self.obj_ref, written)

    @property
    def reason(self) -> ReconcileReason:
        """Why this reconcile runs."""
        return self.request.reason

    @property
    def obj_ref(self) -> ObjectRef:
        """The reference of the object being reconciled."""
        return self.request.obj_ref


@dataclass
class RunSummary:
    """What :meth:`~client_cache.runtime.controller.Controller.run` did: reconciles run,
    failed (the reconcile raised), requeued (a requeue was scheduled after success or
    error), skipped because the object was no longer cached, and the refs still being
    reconciled when the shutdown deadline passed; ``lost_leadership`` when the run ended
    because this replica stopped leading; ``lost_shard`` when it ended because its
    membership Lease of a label-assigned ring lapsed."""

    reconciles: int = 0
    errors: int = 0
    requeues: int = 0
    not_found: int = 0
    unfinished: list[ObjectRef] = field(default_factory=list)
    lost_leadership: bool = False
    lost_shard: bool = False


class ReconcileError(Exception):
    """A failure a reconcile raises on purpose (the Python spelling of the error a Go
    reconciler returns): counted as an ``error``, retried by the error policy, not as a
    panic. API errors and network failures are expected failures as well, without
    deriving from this class (:func:`is_panic`)."""


class ReconcileTimeoutError(ReconcileError):
    """A reconcile ran past ``ControllerConfig.reconcile_timeout``: the attempt failed
    whatever it returned (the call's own exception, if any, is the cause), and the error
    policy, or else the key's backoff, decides when it runs again (controller-runtime
    ``context.DeadlineExceeded`` under ``ReconciliationTimeout``)."""


class TerminalError(ReconcileError):
    """A failure that retrying cannot mend (controller-runtime's
    ``reconcile.TerminalError``): logged and counted (``error``, and
    ``controller_runtime_terminal_reconcile_errors_total``), not retried; the object is
    reconciled again only when it or a related object changes. Chain the cause:
    ``raise TerminalError("spec.replicas must be positive") from err``."""


def is_panic(err: BaseException) -> bool:
    """Whether ``err``, raised by a reconcile, counts as a panic
    (``controller_runtime_reconcile_panics_total``): any exception but the expected
    failures, which are a :class:`ReconcileError`, an API error (an ``ApiException`` or
    this library's :class:`~client_cache.errors.ApiStatusError`, also as a cause), a
    network failure (``OSError``, urllib3's ``HTTPError``) and the library's own errors.
    So a ``KeyError``, ``TypeError`` or ``AttributeError`` from a bug counts, as a nil
    dereference panics in Go. Like controller-runtime (its ``RecoverPanic`` default), a
    panic is still an error: retried and counted in the error counter."""
    if isinstance(err, (ReconcileError, ClientCacheError, OSError, HTTPError)):
        return False
    return find_api_error(err) is None


def deep_copy(obj: Any) -> Any:
    """A deep copy of a cached object, to change and send to the server (Go
    ``obj.DeepCopy()``)."""
    return copy.deepcopy(obj)
