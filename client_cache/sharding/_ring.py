"""A consistent-hash ring with virtual nodes: which member owns a key.

Each member is placed on a 64-bit circle at ``virtual_nodes`` points (the BLAKE2b hash of
``"<member>#<i>"``); a key belongs to the member of the first point at or after the key's
own hash, going round. With members placed that way, a member joining takes about
``1/N`` of the keys from the others and a member leaving spreads its keys over the
rest: nothing else moves. The hash is BLAKE2b, not Python's ``hash()`` (salted per
process), so every process on every machine computes the same owner for a key.

The design is the one of timebertt/kubernetes-controller-sharding (its ``ring`` package
places members by their names the same way); client-go and kube-rs have no ring.
"""

from __future__ import annotations

import bisect
import hashlib
from array import array
from collections.abc import Iterable

__all__ = ["DEFAULT_VIRTUAL_NODES", "HashRing", "key_hash"]

DEFAULT_VIRTUAL_NODES = 1000
"""Points per member. With 1,000, the larger of two members owns 51 % of the keys at the
median of random identities (52.6 % at the 90th percentile); with 100 it was 52.7 %
(56.5 %), which cost two members about 5 % of their combined rate. A ring of 10 members
builds in about 15 ms and holds 16 bytes a point. Every replica of a ring must use the
same number: the rings they compute must be equal."""


def key_hash(text: str) -> int:
    """The position of ``text`` on the ring: the first 8 bytes of its BLAKE2b digest."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


class HashRing:
    """The ring over ``members`` (an iterable of distinct identities; order does not
    matter: two rings over the same set are equal). ``owner(key)`` is the member that
    owns ``key``, or ``""`` when the ring is empty."""

    __slots__ = ("_members", "_owners", "_points")

    def __init__(self, members: Iterable[str],
                 virtual_nodes: int = DEFAULT_VIRTUAL_NODES) -> None:
        if virtual_nodes < 1:
            raise ValueError(f"virtual_nodes must be at least 1, not {virtual_nodes}")
        self._members = frozenset(members)
        if "" in self._members:
            raise ValueError("a ring member needs a non-empty identity")
        placed = sorted((key_hash(f"{member}#{i}"), member)
                        for member in self._members for i in range(virtual_nodes))
        self._points = array("Q", [point for point, _ in placed])  # 8 bytes a point
        self._owners = [member for _, member in placed]

    @staticmethod
    def position(key: str) -> int:
        """The position of ``key`` on the ring (:func:`key_hash`)."""
        return key_hash(key)

    @property
    def members(self) -> frozenset[str]:
        """The identities on the ring."""
        return self._members

    def owner(self, key: str) -> str:
        """The member owning ``key`` (``""`` on an empty ring)."""
        return self.owner_of_hash(key_hash(key))

    def owner_of_hash(self, position: int) -> str:
        """The member owning the key at ``position`` (:func:`key_hash` of it), for a
        caller asking several rings about one key."""
        if not self._points:
            return ""
        i = bisect.bisect_left(self._points, position)
        return self._owners[i if i < len(self._points) else 0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HashRing) and other._points == self._points

    def __hash__(self) -> int:
        return hash(self._members)

    def __repr__(self) -> str:
        return f"<HashRing {sorted(self._members)}>"
