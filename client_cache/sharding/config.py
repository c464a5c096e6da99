"""How a sharded controller's replicas find each other: :class:`ShardingConfig`."""

from __future__ import annotations

import re
import secrets
import socket
from dataclasses import dataclass

from client_cache.sharding.ring import DEFAULT_VIRTUAL_NODES

__all__ = ["MODES", "RING_LABEL", "VIEW_ANNOTATION", "ShardingConfig", "ShardingConfigError"]

MODES = ("hash", "labels")
"""``hash``: every replica caches every object and reconciles the keys the ring gives it;
``labels``: a sharder labels each object with its member and each replica caches only its
own (see :mod:`client_cache.sharding`)."""

RING_LABEL = "sharding.client-cache.io/ring"
"""The label on every member Lease: the ring's name. Members are read by it."""

VIEW_ANNOTATION = "sharding.client-cache.io/view"
"""The annotation of a member Lease listing, comma-separated, the members of the ring its
holder acts on: the keys that ring gives the holder are the ones it claims."""

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class ShardingConfigError(ValueError):
    """A sharding configuration that cannot work (bad durations or names)."""


def _dns_label(text: str, limit: int) -> str:
    cleaned = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return cleaned[:limit].rstrip("-") or "member"


@dataclass
class ShardingConfig:
    """Split the keys of a controller among its replicas (port addition; client-go,
    controller-runtime and kube-rs have no sharding, the design is timebertt's
    kubernetes-controller-sharding, on Leases and a hash ring).

    Each replica holds a Lease of its own named ``identity`` in ``namespace``, labelled
    :data:`RING_LABEL` = ``ring`` and renewed every ``retry_period`` seconds; a replica
    whose Lease this replica has not seen change for ``lease_duration`` is gone. The
    members' identities make a :class:`~client_cache.sharding.ring.HashRing` of
    ``virtual_nodes`` points each; a replica reconciles the keys the ring gives it.

    ``mode`` (:data:`MODES`) says how a replica learns its keys. ``"hash"`` (the default):
    every replica caches every object and computes the ring itself; handovers go through
    the views written in the members' Leases (:mod:`client_cache.sharding.membership`).
    It scales reconcile CPU, not memory. ``"labels"``: a sharder, run by the member
    elected among them (a Lease named ``<ring>-sharder``), labels each object with its
    member (:meth:`shard_label`) and each replica's informer lists only its own
    (:meth:`selector`), so memory and watch traffic scale too; handovers go through a
    drain label (:mod:`client_cache.sharding.sharder`).

    ``ring`` defaults to the controller's name (made a valid label value) and
    ``identity`` to ``<ring>-<hostname>-<6 random hex digits>``; an identity must be a
    lowercase DNS label (it names the Lease and goes in label values), unique per replica.
    The durations follow the leader elector's rules (``lease_duration > renew_deadline >
    1.2 * retry_period``) for the same reason: a replica stops starting reconciles
    ``renew_deadline`` after its last successful renewal was sent, so it has stopped
    before the others, who wait ``lease_duration`` from when they saw that renewal, take
    its keys. A reconcile longer than ``lease_duration - renew_deadline`` that is still
    running when its replica loses its Lease (a partition, a pause) may overlap the new
    owner's: the guide's failure bounds say what to do about it."""

    namespace: str = "default"
    ring: str = ""
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    virtual_nodes: int = DEFAULT_VIRTUAL_NODES
    mode: str = "hash"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ShardingConfigError(f"mode must be one of {', '.join(MODES)}, not "
                                      f"{self.mode!r}")
        if int(self.lease_duration) <= self.renew_deadline:
            raise ShardingConfigError("lease_duration (whole seconds, as a Lease holds it) "
                                      "must be greater than renew_deadline")
        if self.renew_deadline <= 1.2 * self.retry_period:
            raise ShardingConfigError("renew_deadline must be greater than 1.2 * retry_period")
        if self.retry_period <= 0 or self.lease_duration < 1:
            raise ShardingConfigError("retry_period must be positive and lease_duration at "
                                      "least 1 s (Leases count whole seconds)")
        if self.virtual_nodes < 1:
            raise ShardingConfigError("virtual_nodes must be at least 1")
        for what, value in (("ring", self.ring), ("identity", self.identity)):
            if value and (len(value) > 63 or not _NAME.match(value)):
                raise ShardingConfigError(
                    f"{what} {value!r} must be a lowercase DNS label (a-z, 0-9 and '-', at "
                    f"most 63 characters)")

    def resolved(self, controller_name: str) -> ShardingConfig:
        """A copy with ``ring`` and ``identity`` filled in (from ``controller_name``, the
        host name and randomness) when they were left empty."""
        ring = self.ring or _dns_label(controller_name, 40)
        identity = self.identity or _dns_label(
            f"{ring}-{socket.gethostname()}", 55) + f"-{secrets.token_hex(3)}"
        return ShardingConfig(self.namespace, ring, identity, self.lease_duration,
                              self.renew_deadline, self.retry_period, self.virtual_nodes,
                              self.mode)

    @property
    def by_labels(self) -> bool:
        """Whether objects are assigned by label (``mode="labels"``)."""
        return self.mode == "labels"

    def shard_label(self) -> str:
        """The label whose value names an object's member (``shard.client-cache.io/<ring>``),
        in the label-assigned mode."""
        return f"shard.client-cache.io/{self.ring}"

    def drain_label(self) -> str:
        """The label the sharder sets to ask an object's member to let it go
        (``drain.client-cache.io/<ring>``)."""
        return f"drain.client-cache.io/{self.ring}"

    def selector(self) -> str:
        """The label selector of this member's objects (``<shard label>=<identity>``)."""
        return f"{self.shard_label()}={self.identity}"

    @staticmethod
    def identity_for(ring: str, index: int) -> str:
        """A stable identity for worker ``index`` of a supervised group on this host
        (:mod:`client_cache.sharding.workers`): ``<ring>-<hostname>-<index>``, the pid
        left out so a restarted worker takes its predecessor's place at once."""
        return _dns_label(f"{ring}-{socket.gethostname()}", 55) + f"-{index}"
