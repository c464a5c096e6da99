"""Switches read from the environment, spelled as Go's ``strconv.ParseBool`` reads them
(client-go's feature and debugging variables are parsed that way)."""

from __future__ import annotations

import os

__all__ = ["env_bool", "env_true", "parse_bool"]

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def parse_bool(value: str | None) -> bool:
    """Whether ``value`` is one of Go's true spellings (1, t, T, TRUE, true, True); None,
    anything else and the false spellings are False (Go's parse error counts as false)."""
    return value in _TRUE


def env_true(name: str) -> bool:
    """Whether the environment variable ``name`` is set to a true spelling
    (:func:`parse_bool`), read now."""
    return parse_bool(os.environ.get(name))


def env_bool(name: str, default: bool) -> bool:
    """The environment variable ``name`` read as :func:`parse_bool` does, read now;
    ``default`` when it is unset or empty (a feature gate that is on by default: only a
    false spelling, or anything not true, turns it off)."""
    value = os.environ.get(name)
    return default if not value else parse_bool(value)
