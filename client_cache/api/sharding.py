"""Server-side shard selectors (KEP-5866, alpha in Kubernetes v1.36 behind the
``ShardedListAndWatch`` gate; Go ``k8s.io/apimachinery/pkg/sharding`` and the parser of
``k8s.io/apiserver/pkg/sharding``).

A LIST or WATCH with ``ListOptions.shard_selector`` gets only the objects whose field
hashes into one of the selector's ranges: ``shardRange(object.metadata.uid,
'0x0000000000000000', '0x8000000000000000')``, several joined by ``||``. The hash is
64-bit FNV-1a of the field's UTF-8 bytes (``object.metadata.uid`` or
``object.metadata.namespace``), the range's start inclusive and its end exclusive, each
a ``0x`` and 16 lowercase hex digits (``'0x10000000000000000'``, 2^64, as the last end).
A server that applies the selector answers a LIST with ``metadata.shardInfo.selector``;
one that does not (the gate off, an older server) ignores it and sends everything.

:func:`parse_shard_selector` checks an expression as the API server does (the same
errors); :func:`shard_ranges` splits the hash space into contiguous ranges, and
:func:`shard_range_selector` writes the selector of one.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from client_cache.api import meta

__all__ = [
    "FULL_RANGE_END",
    "SHARD_KEYS",
    "ShardRangeRequirement",
    "ShardSelector",
    "ShardSelectorError",
    "hash_field",
    "hash_value",
    "parse_shard_selector",
    "shard_range_selector",
    "shard_ranges",
]

SHARD_KEYS = ("object.metadata.uid", "object.metadata.namespace")
"""The fields a shard range may hash."""

FULL_RANGE_END = 1 << 64
"""The exclusive end of the hash space (``'0x10000000000000000'``)."""

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1


class ShardSelectorError(ValueError):
    """A shard selector the API server refuses (its message is the server's)."""


def hash_value(value: str) -> int:
    """64-bit FNV-1a of ``value``'s UTF-8 bytes."""
    h = _FNV_OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def hash_field(value: str) -> str:
    """:func:`hash_value` as 16 lowercase hex digits (Go ``HashField``)."""
    return f"{hash_value(value):016x}"


def _hex(bound: int) -> str:
    return "0x10000000000000000" if bound == FULL_RANGE_END else f"0x{bound:016x}"


@dataclass(frozen=True)
class ShardRangeRequirement:
    """One ``shardRange(key, start, end)`` (Go ``ShardRangeRequirement``): ``start`` and
    ``end`` are the hex literals as written (canonical: ``0x`` and 16 digits, or 2^64)."""

    key: str
    start: str
    end: str

    def contains(self, hashed: int) -> bool:
        """Whether a hash falls in ``[start, end)``."""
        return int(self.start, 16) <= hashed < int(self.end, 16)


@dataclass(frozen=True)
class ShardSelector:
    """Ranges of one field's hash (Go ``sharding.Selector``); the empty selector matches
    everything."""

    requirements: tuple[ShardRangeRequirement, ...] = ()

    def empty(self) -> bool:
        """True when it selects everything."""
        return not self.requirements

    def matches(self, obj: Any) -> bool:
        """Whether ``obj``'s field hashes into one of the ranges."""
        if not self.requirements:
            return True
        hashed = hash_value(_field(obj, self.requirements[0].key))
        return any(req.contains(hashed) for req in self.requirements)

    def __str__(self) -> str:
        """The wire form, which the server echoes in ``shardInfo.selector``."""
        return " || ".join(f"shardRange({r.key}, '{r.start}', '{r.end}')"
                           for r in self.requirements)


def _field(obj: Any, key: str) -> str:
    if key == "object.metadata.namespace":
        return meta.get_namespace(obj)
    md = obj.get("metadata") if isinstance(obj, Mapping) else getattr(obj, "metadata", None)
    uid = md.get("uid") if isinstance(md, Mapping) else getattr(md, "uid", None)
    return uid if isinstance(uid, str) else ""


def shard_ranges(count: int) -> list[tuple[int, int]]:
    """``count`` contiguous ``[start, end)`` ranges covering the hash space, as equal as
    integers allow (``ValueError`` for a count below 1)."""
    if count < 1:
        raise ValueError(f"count must be at least 1, not {count}")
    bounds = [FULL_RANGE_END * i // count for i in range(count + 1)]
    return list(itertools.pairwise(bounds))


def shard_range_selector(ranges: Sequence[tuple[int, int]],
                         key: str = "object.metadata.uid") -> str:
    """The selector of ``ranges`` (``[start, end)`` pairs of integers) on ``key``."""
    if key not in SHARD_KEYS:
        raise ValueError(f"unsupported field path {key!r}; supported: {', '.join(SHARD_KEYS)}")
    if not ranges:
        raise ValueError("a shard selector needs at least one range")
    parts = []
    for start, end in ranges:
        if not 0 <= start < end <= FULL_RANGE_END:
            raise ValueError(f"shard range [{start:#x}, {end:#x}) is not within "
                             "[0, 2^64) with start before end")
        parts.append(f"shardRange({key}, '{_hex(start)}', '{_hex(end)}')")
    return " || ".join(parts)


# -- the parser ---------------------------------------------------------------------------------
_TOKEN = re.compile(r"""\s*(?:(?P<or>\|\|)|(?P<punct>[(),])|(?P<ident>[A-Za-z_][A-Za-z_0-9]*)
                    |(?P<dot>\.)|(?P<str>'[^'\\]*'|"[^"\\]*")|(?P<other>\S))""", re.VERBOSE)


class _Parser:
    """A recursive-descent reading of the part of CEL a shard selector may use: calls,
    field paths, string literals, ``||`` and parentheses (the API server parses the whole
    of CEL, then refuses anything else; the messages are its)."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup or "other"
            value = match.group(kind)
            if kind == "other":
                if value in "&!=<>+-*/%?:[]{}" or value.isdigit():
                    kind = "op"
                else:
                    raise ShardSelectorError(
                        f"CEL parse error: Syntax error: token recognition error at: "
                        f"'{value}'")
            self.tokens.append((kind, value))
        self.pos = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ("end", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.pos += 1
        return token

    def expect(self, value: str) -> None:
        _, got = self.take()
        if got != value:
            raise ShardSelectorError(f"CEL parse error: Syntax error: expected '{value}', "
                                     f"found '{got or '<EOF>'}'")

    def expression(self) -> list[ShardRangeRequirement]:
        reqs = self.term()
        while self.peek()[0] == "or":
            self.take()
            reqs += self.term()
        kind, value = self.peek()
        if kind == "op" and value == "&":
            raise ShardSelectorError('unsupported function "_&&_"; only shardRange() and || '
                                     "are allowed")
        return reqs

    def term(self) -> list[ShardRangeRequirement]:
        kind, value = self.peek()
        if value == "(":
            self.take()
            reqs = self.expression()
            self.expect(")")
            return reqs
        if kind != "ident":
            raise ShardSelectorError("unexpected expression; expected shardRange() call or "
                                     "|| operator")
        path = self.path()
        if self.peek()[1] != "(":
            raise ShardSelectorError("unexpected expression kind; expected shardRange() "
                                     "call or || operator")
        self.take()
        args: list[tuple[str, str]] = []
        while self.peek()[1] != ")":
            args.append(self.argument())
            if self.peek()[1] == ",":
                self.take()
            elif self.peek()[1] != ")":
                self.expect(")")
        self.take()
        if path != "shardRange":
            raise ShardSelectorError(f'unsupported function "{path}"; only shardRange() and '
                                     "|| are allowed")
        return [_range_of(args)]

    def path(self) -> str:
        parts = [self.take()[1]]
        while self.peek()[0] == "dot":
            self.take()
            kind, value = self.take()
            if kind != "ident":
                raise ShardSelectorError(f"CEL parse error: Syntax error: mismatched input "
                                         f"'{value}'")
            parts.append(value)
        return ".".join(parts)

    def argument(self) -> tuple[str, str]:
        kind, value = self.peek()
        if kind == "str":
            self.take()
            return "str", value[1:-1]
        if kind == "ident":
            return "path", self.path()
        self.take()
        return "other", value


def _range_of(args: list[tuple[str, str]]) -> ShardRangeRequirement:
    if len(args) != 3:
        raise ShardSelectorError(f"shardRange() requires exactly 3 arguments, got {len(args)}")
    (kind, key), start, end = args
    if kind != "path":
        raise ShardSelectorError("shardRange() first argument: expected field path (e.g. "
                                 "object.metadata.uid)")
    if key not in SHARD_KEYS:
        raise ShardSelectorError(f'unsupported field path "{key}"; supported: '
                                 "object.metadata.uid, object.metadata.namespace")
    lo, hi = _hex_literal(start, "hexStart"), _hex_literal(end, "hexEnd")
    if not int(lo, 16) < int(hi, 16):
        raise ShardSelectorError(f"shard range start {lo} must be less than end {hi}")
    return ShardRangeRequirement(key, lo, hi)


def _hex_literal(arg: tuple[str, str], name: str) -> str:
    kind, text = arg
    if kind != "str":
        raise ShardSelectorError(f"{name} must be a string literal (e.g. '0xff')")
    if not text.startswith("0x"):
        raise ShardSelectorError(f'{name} must have \'0x\' prefix, got "{text}"')
    digits = text[2:]
    if not digits:
        raise ShardSelectorError(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise ShardSelectorError(f'{name}: hex value too long ({len(digits)} chars, max 17): '
                                 f'"{digits}"')
    for char in digits:
        if char not in "0123456789abcdef":
            raise ShardSelectorError(f'{name}: invalid hex character "{char}" in "{text}"')
    if len(digits) == 17:
        if text != "0x10000000000000000":
            raise ShardSelectorError(f"{name}: 17-digit hex value must be "
                                     f"'0x10000000000000000' (2^64), got \"{text}\"")
    elif len(digits) != 16:
        padded = "0x" + digits.rjust(16, "0")
        raise ShardSelectorError(f'{name} must be a 0x-prefixed 16-digit hex value, got '
                                 f'"{text}" (did you mean "{padded}"?)')
    return text


def parse_shard_selector(expression: str) -> ShardSelector:
    """Parse a shard selector as the API server does (Go ``sharding.Parse``);
    :class:`ShardSelectorError` with the server's message for one it refuses (an empty
    one, another function, a field other than ``object.metadata.uid`` or
    ``object.metadata.namespace``, hex bounds not of 16 digits, a start not before its
    end, ranges on two fields)."""
    text = expression.strip()
    if not text:
        raise ShardSelectorError("empty shard selector is not allowed; omit the parameter "
                                 "for unfiltered lists")
    parser = _Parser(text)
    reqs = parser.expression()
    if parser.peek()[0] != "end":
        raise ShardSelectorError(f"CEL parse error: Syntax error: extraneous input "
                                 f"'{parser.peek()[1]}'")
    for req in reqs[1:]:
        if req.key != reqs[0].key:
            raise ShardSelectorError(f'all shard ranges must use the same field, got '
                                     f'"{reqs[0].key}" and "{req.key}"')
    return ShardSelector(tuple(reqs))
