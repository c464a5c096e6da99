"""Leader-election metrics through a provider (Go ``leaderelection/metrics.go``): the
elector reports ``on(name)`` when it starts leading and ``off(name)`` when it stops; the
Prometheus adapter (:mod:`client_cache.metrics.prometheus`) turns them into the gauge
``leader_election_master_status{name}``. No-op by default; :func:`set_provider` sets the
provider for electors built afterwards (Go: the first call wins; here the last, as the
runtime's controller metrics)."""

from __future__ import annotations

from typing import Protocol

from client_cache.util.provider import ProviderSlot

__all__ = [
    "LeaderMetricsProvider",
    "NoopLeaderMetricsProvider",
    "get_leader_metrics_provider",
    "set_leader_metrics_provider",
]


class LeaderMetricsProvider(Protocol):
    """Go ``leaderMetricsAdapter``: whether the named election is led by this process."""

    def on(self, name: str) -> None:
        """Report that this process now leads ``name``."""
        ...

    def off(self, name: str) -> None:
        """Report that this process no longer leads ``name``."""
        ...


class NoopLeaderMetricsProvider:
    """Records nothing (the default)."""

    def on(self, name: str) -> None:
        """Nothing."""

    def off(self, name: str) -> None:
        """Nothing."""


_slot: ProviderSlot[LeaderMetricsProvider] = ProviderSlot(NoopLeaderMetricsProvider())


def set_leader_metrics_provider(provider: LeaderMetricsProvider) -> None:
    """Use ``provider`` for electors built afterwards (Go ``SetProvider``)."""
    _slot.set(provider)


def get_leader_metrics_provider() -> LeaderMetricsProvider:
    """The provider electors built now use."""
    return _slot.get()
