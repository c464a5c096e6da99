"""Leader election on Leases (Go ``tools/leaderelection`` and its ``resourcelock``)."""

from client_cache.leaderelection.leaderelection import (
    JITTER_FACTOR,
    HealthzAdaptor,
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaderElectionError,
    LeaderElector,
    new_leader_elector,
    run_or_die,
)
from client_cache.leaderelection.leasecandidate import (
    LEASE_CANDIDATES,
    OLDEST_EMULATION_VERSION,
    LeaseCandidate,
)
from client_cache.leaderelection.resourcelock import (
    LEASES_RESOURCE_LOCK,
    Interface,
    LeaderElectionRecord,
    LeaseLock,
    LockConflictError,
    LockError,
    LockNotFoundError,
    ResourceLockConfig,
    format_micro_time,
    parse_micro_time,
)

__all__ = [
    "JITTER_FACTOR",
    "LEASES_RESOURCE_LOCK",
    "LEASE_CANDIDATES",
    "OLDEST_EMULATION_VERSION",
    "HealthzAdaptor",
    "Interface",
    "LeaderCallbacks",
    "LeaderElectionConfig",
    "LeaderElectionError",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaseCandidate",
    "LeaseLock",
    "LockConflictError",
    "LockError",
    "LockNotFoundError",
    "ResourceLockConfig",
    "format_micro_time",
    "new_leader_elector",
    "parse_micro_time",
    "run_or_die",
]
