"""How a sharded controller's replicas find each other: :class:`ShardingConfig`."""

from __future__ import annotations

import math
import re
import secrets
import socket
from dataclasses import dataclass

from client_cache.sharding._ring import DEFAULT_VIRTUAL_NODES
from client_cache.util.errors import ClientCacheError

__all__ = ["MAX_LEASE_DURATION", "MAX_VIRTUAL_NODES", "MODES", "RING_LABEL", "VIEW_ANNOTATION",
           "ShardingConfig", "ShardingConfigError"]

MODES = ("hash", "labels", "server")
"""``hash``: every replica caches every object and reconciles the keys the ring gives it;
``labels``: a sharder labels each object with its member and each replica caches only its
own; ``server``: each replica owns a contiguous range of the uid hash and asks the API
server for its range only (KEP-5866 shard selectors; see :mod:`client_cache.sharding`)."""

RING_LABEL = "sharding.client-cache.io/ring"
"""The label on every member Lease: the ring's name. Members are read by it."""

VIEW_ANNOTATION = "sharding.client-cache.io/view"
"""The annotation of a member Lease listing, comma-separated, the members of the ring its
holder acts on: the keys that ring gives the holder are the ones it claims."""

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

MAX_VIRTUAL_NODES = 10_000
"""The most points a member may have on the ring (each member's ring holds ``members *
virtual_nodes`` points, rebuilt at every membership change: 10,000 is already far past
what spreads keys evenly)."""

MAX_LEASE_DURATION = 3600.0
"""The longest lease a member may hold: past an hour a dead member's keys would wait
that long (and a Lease's ``leaseDurationSeconds`` is an int32)."""


class ShardingConfigError(ClientCacheError, ValueError):
    """A sharding configuration that cannot work (bad types, durations, names or
    bounds); a :class:`~client_cache.errors.ClientCacheError` and a ``ValueError``."""


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
    members' identities make a :class:`~client_cache.sharding._ring.HashRing` of
    ``virtual_nodes`` points each (the same number in every replica of a ring); a replica
    reconciles the keys the ring gives it.

    ``mode`` (:data:`MODES`) says how a replica learns its keys. ``"hash"`` (the default):
    every replica caches every object and computes the ring itself; handovers go through
    the views written in the members' Leases (:mod:`client_cache.sharding._membership`).
    It scales reconcile CPU, not memory. ``"labels"``: a sharder, run by the member
    elected among them (a Lease named ``<ring>-sharder``), labels each object with its
    member (:meth:`shard_label`) and each replica's informer lists only its own
    (:meth:`selector`), so memory and watch traffic scale too; handovers go through a
    drain label (:mod:`client_cache.sharding._sharder`). ``"server"``: the members,
    sorted, split the 64-bit hash of ``metadata.uid`` into equal contiguous ranges
    (:mod:`client_cache.sharding._ranges`), and each replica's primary informer sends the
    shard selector of its range (KEP-5866, ``shardRange(object.metadata.uid, ...)``), so
    the API server filters: memory and watch traffic scale as in label mode, with no
    sharder and no label writes. It needs an API server with the ``ShardedListAndWatch``
    feature gate (alpha in v1.36); one without it ignores the selector and the member
    caches everything (its reconciles are still its range's alone: one WARNING says so).
    A membership change moves up to about half the objects (every range boundary
    shifts) and the member relists its range, which reconciles every object it keeps,
    as any relist does; ``virtual_nodes`` does not apply.

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
        """Every field checked; :class:`ShardingConfigError` names the first that cannot
        work: a type that is not the field's, a duration that is not a finite positive
        number of seconds, a name that is not a lowercase DNS label (``namespace``
        included), ``virtual_nodes`` outside 1 to :data:`MAX_VIRTUAL_NODES`."""
        for what in ("mode", "namespace", "ring", "identity"):
            if not isinstance(getattr(self, what), str):
                raise ShardingConfigError(f"{what} must be a str, not "
                                          f"{type(getattr(self, what)).__name__}")
        if self.mode not in MODES:
            raise ShardingConfigError(f"mode must be one of {', '.join(MODES)}, not "
                                      f"{self.mode!r}")
        for what in ("lease_duration", "renew_deadline", "retry_period"):
            value = getattr(self, what)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not math.isfinite(value) or value <= 0:
                raise ShardingConfigError(f"{what} must be a finite positive number of "
                                          f"seconds, not {value!r}")
        if self.lease_duration < 1 or self.lease_duration > MAX_LEASE_DURATION:
            raise ShardingConfigError(f"lease_duration must be from 1 s (Leases count whole "
                                      f"seconds) to {MAX_LEASE_DURATION:.0f} s, not "
                                      f"{self.lease_duration!r}")
        if int(self.lease_duration) <= self.renew_deadline:
            raise ShardingConfigError("lease_duration (whole seconds, as a Lease holds it) "
                                      "must be greater than renew_deadline")
        if self.renew_deadline <= 1.2 * self.retry_period:
            raise ShardingConfigError("renew_deadline must be greater than 1.2 * retry_period")
        if isinstance(self.virtual_nodes, bool) or not isinstance(self.virtual_nodes, int) \
                or not 1 <= self.virtual_nodes <= MAX_VIRTUAL_NODES:
            raise ShardingConfigError(f"virtual_nodes must be an int from 1 to "
                                      f"{MAX_VIRTUAL_NODES}, not {self.virtual_nodes!r}")
        if not self.namespace or len(self.namespace) > 63 or not _NAME.match(self.namespace):
            raise ShardingConfigError(
                f"namespace {self.namespace!r} must be a lowercase DNS label (a-z, 0-9 and "
                f"'-', at most 63 characters)")
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

    @property
    def by_server(self) -> bool:
        """Whether the API server filters each member's range (``mode="server"``)."""
        return self.mode == "server"

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
