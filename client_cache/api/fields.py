"""Field selectors (apimachinery ``pkg/fields``).

A field selector is a conjunction of ``field=value``, ``field==value`` and
``field!=value`` terms separated by commas, for example
``metadata.namespace=default,status.phase!=Running``. In values, ``\\``, ``,`` and ``=``
are written escaped (``\\\\``, ``\\,``, ``\\=``). A field that is absent reads as the empty
string, so ``field!=value`` matches it and ``field=`` does too. Bad syntax raises
:class:`~client_cache.errors.SelectorParseError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from client_cache.api.labels import SelectorParseError

__all__ = [
    "Selector",
    "Term",
    "and_selectors",
    "escape_value",
    "everything",
    "one_term_equal_selector",
    "one_term_not_equal_selector",
    "parse_selector",
    "selector_from_set",
    "unescape_value",
]


def escape_value(value: str) -> str:
    """Escape ``\\``, ``,`` and ``=`` in a value (Go ``fields.EscapeValue``)."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    """Undo :func:`escape_value`; an invalid escape or an unescaped ``,``/``=`` raises."""
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise SelectorParseError(f"invalid field selector: invalid escape sequence \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            raise SelectorParseError(f"invalid field selector: unescaped {ch!r} in value")
        else:
            out.append(ch)
    if escaped:
        raise SelectorParseError("invalid field selector: unterminated escape sequence")
    return "".join(out)


@dataclass(frozen=True)
class Term:
    """One ``field op value`` term; ``negated`` is ``!=``."""

    field: str
    value: str
    negated: bool = False

    def matches(self, fields: Mapping[str, str]) -> bool:
        # As in Go, a missing field reads as "" (so "f=" matches objects without f).
        """True when the field has (or, negated, has not) the value; a missing field reads
        as ""."""
        value = fields.get(self.field, "")
        return value != self.value if self.negated else value == self.value

    def __str__(self) -> str:
        return f"{self.field}{'!=' if self.negated else '='}{escape_value(self.value)}"


class Selector:
    """A conjunction of :class:`Term` (Go ``fields.Selector``)."""

    __slots__ = ("_terms",)

    def __init__(self, terms: tuple[Term, ...] = ()) -> None:
        self._terms = terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        """True when every term matches ``fields``."""
        return all(t.matches(fields) for t in self._terms)

    def empty(self) -> bool:
        """True when the selector has no term (it matches everything)."""
        return not self._terms

    def terms(self) -> tuple[Term, ...]:
        """The terms, all of which must hold."""
        return self._terms

    def requires_exact_match(self, field: str) -> tuple[str, bool]:
        """``(value, True)`` when the selector requires ``field == value``."""
        for term in self._terms:
            if term.field == field and not term.negated:
                return term.value, True
        return "", False

    def __str__(self) -> str:
        return ",".join(str(t) for t in self._terms)

    def __repr__(self) -> str:
        return f"fields.Selector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Selector):
            return NotImplemented
        return self._terms == other._terms

    def __hash__(self) -> int:
        return hash(self._terms)


_EVERYTHING = Selector()


def everything() -> Selector:
    """The field selector that matches everything."""
    return _EVERYTHING


def one_term_equal_selector(field: str, value: str) -> Selector:
    """``field=value``."""
    return Selector((Term(field, value),))


def one_term_not_equal_selector(field: str, value: str) -> Selector:
    """``field!=value``."""
    return Selector((Term(field, value, negated=True),))


def selector_from_set(fields: Mapping[str, str] | None) -> Selector:
    """``f1=v1,f2=v2`` sorted by field; an empty mapping selects everything."""
    if not fields:
        return _EVERYTHING
    return Selector(tuple(Term(k, fields[k]) for k in sorted(fields)))


def and_selectors(*selectors: Selector) -> Selector:
    """The conjunction of ``selectors``."""
    terms: tuple[Term, ...] = ()
    for selector in selectors:
        terms += selector.terms()
    return Selector(terms)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    start, i, n = 0, 0, len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == sep:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _split_term(term: str) -> tuple[str, str, str]:
    i, n = 0, len(term)
    while i < n:
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
        i += 1
    raise SelectorParseError(f"invalid selector: '{term}'; can't understand '{term}'")


def parse_selector(selector: str) -> Selector:
    """Parse a field selector string (Go ``fields.ParseSelector``); ``""`` selects
    everything. Terms keep their written order."""
    if not isinstance(selector, str):
        raise SelectorParseError(f"selector must be a str, not {type(selector).__name__}")
    terms: list[Term] = []
    for part in _split_unescaped(selector, ","):
        if not part:
            continue
        field, op, raw = _split_term(part)
        if not field:
            raise SelectorParseError(f"invalid selector: '{selector}'; field name is empty")
        terms.append(Term(field, unescape_value(raw), negated=op == "!="))
    return Selector(tuple(terms)) if terms else _EVERYTHING
