"""Sharding metrics through a provider, as the leader elector's
(:mod:`client_cache.leaderelection.metrics`): the membership and the controller report
members, keys owned, keys handed over and drain times; the Prometheus adapter
(:mod:`client_cache.metrics.prometheus`) exports them as ``shard_members{ring}``,
``shard_keys_owned{ring}``, ``shard_handovers_total{ring}`` and
``shard_drain_duration_seconds{ring}``. No-op by default."""

from __future__ import annotations

from typing import Protocol

from client_cache.util.provider import ProviderSlot

__all__ = [
    "NoopShardingMetricsProvider",
    "ShardingMetricsProvider",
    "get_sharding_metrics_provider",
    "set_sharding_metrics_provider",
]


class ShardingMetricsProvider(Protocol):
    """What a sharded replica reports, per ring."""

    def set_members(self, ring: str, count: int) -> None:
        """The members this replica counts live (itself included; 0 once it left)."""
        ...

    def set_keys_owned(self, ring: str, count: int) -> None:
        """The cached keys this replica may reconcile now."""
        ...

    def add_handovers(self, ring: str, count: int) -> None:
        """``count`` keys came to this replica from another member."""
        ...

    def observe_drain(self, ring: str, seconds: float) -> None:
        """A change of members took ``seconds`` from being seen to being acted on (the
        keys given away finished their running reconciles, the new view written)."""
        ...


class NoopShardingMetricsProvider:
    """Records nothing (the default)."""

    def set_members(self, ring: str, count: int) -> None:
        """Nothing."""

    def set_keys_owned(self, ring: str, count: int) -> None:
        """Nothing."""

    def add_handovers(self, ring: str, count: int) -> None:
        """Nothing."""

    def observe_drain(self, ring: str, seconds: float) -> None:
        """Nothing."""


_slot: ProviderSlot[ShardingMetricsProvider] = ProviderSlot(NoopShardingMetricsProvider())


def set_sharding_metrics_provider(provider: ShardingMetricsProvider) -> None:
    """Use ``provider`` for members built afterwards."""
    _slot.set(provider)


def get_sharding_metrics_provider() -> ShardingMetricsProvider:
    """The provider members built now use."""
    return _slot.get()
