"""The controller runtime (kube-rs ``kube::runtime`` on this library's informers): the
:class:`Controller`, its scheduler and the helpers a controller needs. See
:mod:`client_cache.runtime.controller`."""

from client_cache.runtime import predicates
from client_cache.runtime.apply import APPLY_PATCH, apply
from client_cache.runtime.controller import (
    Controller,
    ControllerConfig,
    ErrorPolicy,
    Mapper,
    Reconciler,
)
from client_cache.runtime.daemons import DaemonContext
from client_cache.runtime.finalizer import FinalizerError, finalizer
from client_cache.runtime.metrics import (
    ControllerMetricsProvider,
    NoopControllerMetricsProvider,
    get_controller_metrics_provider,
    reset_controller_metrics_provider_for_tests,
    set_controller_metrics_provider,
)
from client_cache.runtime.objectref import (
    ObjectRef,
    OwnerConflictError,
    controller_owner_ref,
    get_controller_of,
    is_controlled_by,
    object_ref,
    set_controller_reference,
)
from client_cache.runtime.predicates import Predicate
from client_cache.runtime.reconcile import (
    Action,
    Context,
    ReasonKind,
    ReconcileError,
    ReconcileReason,
    ReconcileRequest,
    ReconcileTimeoutError,
    RunSummary,
    TerminalError,
    deep_copy,
    is_panic,
)
from client_cache.runtime.recorder import ControllerRecorder
from client_cache.runtime.scheduler import Scheduler

__all__ = [
    "APPLY_PATCH",
    "Action",
    "Context",
    "Controller",
    "ControllerConfig",
    "ControllerRecorder",
    "DaemonContext",
    "ErrorPolicy",
    "ControllerMetricsProvider",
    "FinalizerError",
    "Mapper",
    "Reconciler",
    "NoopControllerMetricsProvider",
    "ObjectRef",
    "OwnerConflictError",
    "Predicate",
    "ReasonKind",
    "ReconcileError",
    "ReconcileReason",
    "ReconcileRequest",
    "ReconcileTimeoutError",
    "RunSummary",
    "TerminalError",
    "apply",
    "Scheduler",
    "controller_owner_ref",
    "deep_copy",
    "is_panic",
    "finalizer",
    "get_controller_metrics_provider",
    "get_controller_of",
    "is_controlled_by",
    "object_ref",
    "predicates",
    "reset_controller_metrics_provider_for_tests",
    "set_controller_metrics_provider",
    "set_controller_reference",
]
