"""The ring of the server-assigned mode: each member owns one contiguous range of the
uid hash space.

The members, sorted by identity, split the 64-bit space into equal contiguous ranges
(:func:`~client_cache.api.sharding.shard_ranges`): the first member owns the lowest, and
so on. An object's position is the 64-bit FNV-1a hash of its ``metadata.uid``, the hash
the API server's ``shardRange(object.metadata.uid, ...)`` selector applies (KEP-5866), so
a member's informer can ask the server for its range alone
(:meth:`RangeRing.selector_of`). One range per member keeps the selector one clause; the
price is movement: a member joining or leaving shifts every boundary, so up to about
half of the objects change owner, where the consistent-hash ring of
:mod:`~client_cache.sharding._ring` moves about ``1/N``. (timebertt's controller-sharding
assigns by a hash ring and labels; the contiguous ranges are how KEP-5866 expects
clients to split the space.)

:class:`RangeRing` answers what :class:`~client_cache.sharding._ring.HashRing` answers
(``members``, ``owner``, ``owner_of_hash``, ``position``), so a
:class:`~client_cache.sharding._membership.ShardMember` runs its views, claims and drains
over either.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from client_cache.api.sharding import hash_value, shard_range_selector, shard_ranges

__all__ = ["RangeRing"]


class RangeRing:
    """The ranges over ``members`` (distinct, non-empty identities; order does not
    matter). ``owner(uid)`` is the member whose range holds the uid's hash, ``""`` when
    the ring is empty."""

    __slots__ = ("_members", "_ranges", "_sorted", "_starts")

    def __init__(self, members: Iterable[str]) -> None:
        self._members = frozenset(members)
        if "" in self._members:
            raise ValueError("a ring member needs a non-empty identity")
        self._sorted = sorted(self._members)
        self._ranges = shard_ranges(len(self._sorted)) if self._sorted else []
        self._starts = [start for start, _ in self._ranges]

    @staticmethod
    def position(uid: str) -> int:
        """The position of an object on the ring: FNV-1a 64 of its uid (the server's
        shard hash)."""
        return hash_value(uid)

    @property
    def members(self) -> frozenset[str]:
        """The identities on the ring."""
        return self._members

    def owner(self, uid: str) -> str:
        """The member owning the object of ``uid`` (``""`` on an empty ring)."""
        return self.owner_of_hash(hash_value(uid))

    def owner_of_hash(self, position: int) -> str:
        """The member whose range holds ``position``."""
        if not self._sorted:
            return ""
        return self._sorted[bisect.bisect_right(self._starts, position) - 1]

    def range_of(self, member: str) -> tuple[int, int] | None:
        """``member``'s ``[start, end)``, or None when it is not on the ring."""
        if member not in self._members:
            return None
        return self._ranges[self._sorted.index(member)]

    def selector_of(self, member: str) -> str:
        """The shard selector of ``member``'s range (``ValueError`` when it is not on the
        ring)."""
        bounds = self.range_of(member)
        if bounds is None:
            raise ValueError(f"{member!r} is not a member of {self!r}")
        return shard_range_selector([bounds])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RangeRing) and other._members == self._members

    def __hash__(self) -> int:
        return hash(self._members)

    def __repr__(self) -> str:
        return f"<RangeRing {self._sorted}>"
