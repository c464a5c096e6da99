"""The embedded server's feature gates, set as kube-apiserver's ``--feature-gates``
(``Name=true,Other=false``): only the gates of behaviour the server implements, each off
by default where a v1.36 kube-apiserver has it off.

* ``ShardedListAndWatch`` (KEP-5866, alpha): LIST and WATCH apply a ``shardSelector``
  (:mod:`client_cache.api.sharding`) and a sharded LIST says so in
  ``metadata.shardInfo``; off, the parameter is ignored, as a real server ignores it.
* ``CoordinatedLeaderElection`` (KEP-4355, beta, off by default): the server elects the
  holders of Leases that ``LeaseCandidate`` objects name
  (:mod:`client_cache.testing.apiserver.coordinator`). The ``LeaseCandidate`` resource
  (``coordination.k8s.io/v1beta1``) is served either way.
"""

from __future__ import annotations

from collections.abc import Mapping

from client_cache.util._env import parse_bool

__all__ = ["COORDINATED_LEADER_ELECTION", "KNOWN_GATES", "SHARDED_LIST_AND_WATCH",
           "check_feature_gates", "parse_feature_gates"]

SHARDED_LIST_AND_WATCH = "ShardedListAndWatch"
COORDINATED_LEADER_ELECTION = "CoordinatedLeaderElection"

KNOWN_GATES: dict[str, bool] = {SHARDED_LIST_AND_WATCH: False,
                                COORDINATED_LEADER_ELECTION: False}
"""Each gate the embedded server knows, with its default."""


def check_feature_gates(gates: Mapping[str, bool]) -> dict[str, bool]:
    """Every known gate's value (the defaults where ``gates`` says nothing);
    ``ValueError`` for a gate the server does not know, as kube-apiserver refuses one."""
    unknown = sorted(set(gates) - set(KNOWN_GATES))
    if unknown:
        raise ValueError(f"unrecognized feature gate: {', '.join(unknown)} (the embedded "
                         f"server knows {', '.join(sorted(KNOWN_GATES))})")
    return {**KNOWN_GATES, **{name: bool(on) for name, on in gates.items()}}


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``Name=true,Other=false`` as a mapping; ``ValueError`` for a malformed pair."""
    gates: dict[str, bool] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or value.lower() not in ("true", "false", "1", "0", "t", "f"):
            raise ValueError(f"invalid feature gate {part!r}: expected Name=true or "
                             "Name=false")
        gates[name.strip()] = parse_bool(value)
    return gates
