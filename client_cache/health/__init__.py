"""Health, readiness and what operators read: informer health snapshots
(:class:`InformerHealth`), the reflector's status keeper and its log lines
(:class:`ReflectorStatus`), and liveness/readiness/metrics over HTTP (:func:`serve`)."""

from client_cache.health.server import (
    Check,
    HealthServer,
    Probes,
    caches_synced_check,
    controller_ready_check,
    informers_check,
    leader_election_check,
    serve,
    sharding_check,
)
from client_cache.reflector_status import (
    DEFAULT_FAILING_AFTER,
    SLOW_LIST_SECONDS,
    InformerHealth,
    ReflectorStatus,
    describe_failure,
    display_resource,
)

__all__ = [
    "DEFAULT_FAILING_AFTER",
    "SLOW_LIST_SECONDS",
    "Check",
    "HealthServer",
    "Probes",
    "InformerHealth",
    "ReflectorStatus",
    "caches_synced_check",
    "controller_ready_check",
    "describe_failure",
    "display_resource",
    "informers_check",
    "leader_election_check",
    "serve",
    "sharding_check",
]
