"""Sharded controllers: split one controller's keys among its replicas (port addition).

Leader election (:mod:`client_cache.leaderelection`) keeps one replica acting; sharding
lets every replica act on its share. Each replica holds a membership Lease
(:class:`ShardMember`), the live members make a consistent-hash ring (:class:`HashRing`),
or in server mode contiguous uid-hash ranges (:class:`RangeRing`), and a replica
reconciles the keys the ring gives it, handed over between replicas
without two reconciling one key at once. In the runtime:
``ControllerConfig(sharding=ShardingConfig(...))``. :func:`run_workers` starts and
supervises N worker processes of a controller on one machine.
"""

from client_cache.sharding._keys import shard_key
from client_cache.sharding._membership import ShardingError, ShardMember
from client_cache.sharding._ranges import RangeRing
from client_cache.sharding._ring import DEFAULT_VIRTUAL_NODES, HashRing, key_hash
from client_cache.sharding.config import (
    RING_LABEL,
    VIEW_ANNOTATION,
    ShardingConfig,
    ShardingConfigError,
)
from client_cache.sharding.metrics import (
    NoopShardingMetricsProvider,
    ShardingMetricsProvider,
    get_sharding_metrics_provider,
    set_sharding_metrics_provider,
)
from client_cache.sharding.workers import WorkerGroup, run_workers

__all__ = [
    "DEFAULT_VIRTUAL_NODES",
    "RING_LABEL",
    "VIEW_ANNOTATION",
    "HashRing",
    "NoopShardingMetricsProvider",
    "RangeRing",
    "ShardMember",
    "ShardingConfig",
    "ShardingConfigError",
    "ShardingError",
    "ShardingMetricsProvider",
    "WorkerGroup",
    "get_sharding_metrics_provider",
    "key_hash",
    "run_workers",
    "set_sharding_metrics_provider",
    "shard_key",
]
