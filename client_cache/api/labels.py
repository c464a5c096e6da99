"""Label selectors (apimachinery ``pkg/labels`` and ``pkg/selection``).

The selector language::

    selector    := requirement ( "," requirement )*
    requirement := KEY | "!" KEY
                 | KEY ( "=" | "==" | "!=" | ">" | "<" ) VALUE
                 | KEY ( "in" | "notin" ) "(" VALUE ( "," VALUE )* ")"

``KEY`` is a qualified name (an optional DNS-subdomain prefix and ``/``, then a name of at
most 63 characters of ``[A-Za-z0-9_.-]`` that starts and ends alphanumeric); ``VALUE`` is a
label value (at most 63 such characters, possibly empty). ``>``/``<`` compare integers.
``notin`` and ``!=`` also match label sets that lack the key; ``in``, ``=``, ``>`` and
``<`` require it.

A parsed selector keeps its requirements sorted by key, and ``str(selector)`` prints the
canonical form (values of a set sorted), so two equivalent strings print alike. Parse and
validation errors raise :class:`~client_cache.errors.SelectorParseError`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from client_cache.util.errors import ClientCacheError

__all__ = [
    "Operator",
    "Requirement",
    "Selector",
    "SelectorParseError",
    "everything",
    "format_labels",
    "label_selector_as_selector",
    "new_requirement",
    "nothing",
    "parse",
    "selector_from_set",
    "selector_from_validated_set",
    "validate_label_key",
    "validate_label_value",
    "validated_selector_from_set",
]


class SelectorParseError(ClientCacheError, ValueError):
    """A label or field selector string (or requirement) is invalid."""


class Operator(str, enum.Enum):
    """Selector operators (apimachinery ``selection.Operator``), with the Go string values."""

    DOES_NOT_EXIST = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    IN = "in"
    NOT_EQUALS = "!="
    NOT_IN = "notin"
    EXISTS = "exists"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_RE = re.compile(rf"^{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*$")
_INT_RE = re.compile(r"^[+-]?[0-9]+$")


def validate_label_key(key: str) -> None:
    """Raise :class:`SelectorParseError` unless ``key`` is a valid qualified name."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            raise SelectorParseError(f"invalid label key {key!r}: prefix part must be non-empty")
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix):
            raise SelectorParseError(
                f"invalid label key {key!r}: prefix part must be a lowercase DNS-1123 "
                "subdomain of at most 253 characters"
            )
    else:
        raise SelectorParseError(
            f"invalid label key {key!r}: a qualified name is an optional prefix and '/' "
            "followed by a name"
        )
    if not name:
        raise SelectorParseError(f"invalid label key {key!r}: name part must be non-empty")
    if len(name) > 63:
        raise SelectorParseError(
            f"invalid label key {key!r}: name part must be no more than 63 characters"
        )
    if not _NAME_RE.match(name):
        raise SelectorParseError(
            f"invalid label key {key!r}: name part must consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )


def validate_label_value(value: str) -> None:
    """Raise :class:`SelectorParseError` unless ``value`` is a valid label value."""
    if len(value) > 63:
        raise SelectorParseError(
            f"invalid label value {value!r}: must be no more than 63 characters"
        )
    if not _VALUE_RE.match(value):
        raise SelectorParseError(
            f"invalid label value {value!r}: must be empty or consist of alphanumeric "
            "characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character"
        )


@dataclass(frozen=True)
class Requirement:
    """One ``key op values`` term. Build it with :func:`new_requirement`, which validates;
    ``values`` is kept sorted and de-duplicated."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()
    # the test specialised for this operator and these values, built once (listers run
    # it on every cached object)
    _match: Callable[[Mapping[str, str]], bool] = field(
        init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_match", self._compile())

    def _compile(self) -> Callable[[Mapping[str, str]], bool]:
        op, key, values = self.operator, self.key, self.values
        if op in (Operator.IN, Operator.EQUALS, Operator.DOUBLE_EQUALS):
            if len(values) == 1:
                wanted = values[0]
                return lambda labels: labels.get(key) == wanted
            allowed = frozenset(values)
            return lambda labels: labels.get(key) in allowed
        if op in (Operator.NOT_IN, Operator.NOT_EQUALS):
            barred = frozenset(values)
            return lambda labels: labels.get(key) not in barred
        if op is Operator.EXISTS:
            return lambda labels: key in labels
        if op is Operator.DOES_NOT_EXIST:
            return lambda labels: key not in labels
        return self._compare

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a label set satisfies this requirement (Go ``Requirement.Matches``)."""
        return self._match(labels)

    def _compare(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        # GREATER_THAN / LESS_THAN: the label must be present and an integer.
        value = labels.get(self.key)
        if value is None or not _INT_RE.match(value):
            return False
        bound = int(self.values[0])
        return int(value) > bound if op is Operator.GREATER_THAN else int(value) < bound

    def __str__(self) -> str:
        op = self.operator
        if op is Operator.EXISTS:
            return self.key
        if op is Operator.DOES_NOT_EXIST:
            return "!" + self.key
        symbol = {
            Operator.EQUALS: "=",
            Operator.DOUBLE_EQUALS: "==",
            Operator.NOT_EQUALS: "!=",
            Operator.GREATER_THAN: ">",
            Operator.LESS_THAN: "<",
            Operator.IN: " in ",
            Operator.NOT_IN: " notin ",
        }[op]
        joined = ",".join(self.values)
        if op in (Operator.IN, Operator.NOT_IN):
            joined = f"({joined})"
        return f"{self.key}{symbol}{joined}"


def new_requirement(key: str, operator: Operator | str, values: Iterable[str] = ()) -> Requirement:
    """Build a validated :class:`Requirement` (Go ``labels.NewRequirement``).

    ``in``/``notin`` need at least one value; ``=``, ``==``, ``!=`` exactly one; ``exists``
    and ``!`` none; ``gt``/``lt`` exactly one integer. Keys and values are validated.
    """
    validate_label_key(key)
    try:
        op = Operator(operator)
    except ValueError:
        raise SelectorParseError(f"operator {operator!r} is not recognized") from None
    vals = tuple(sorted(set(values)))
    if op in (Operator.IN, Operator.NOT_IN):
        if not vals:
            raise SelectorParseError(
                f"for 'in', 'notin' operators, values set can't be empty ({key})"
            )
    elif op in (Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS):
        if len(vals) != 1:
            raise SelectorParseError(f"exact-match compatibility requires one single value ({key})")
    elif op in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        if vals:
            raise SelectorParseError(
                f"values set must be empty for exists and does not exist ({key})"
            )
    else:
        if len(vals) != 1:
            raise SelectorParseError(
                f"for 'Gt', 'Lt' operators, exactly one value is required ({key})"
            )
        if not _INT_RE.match(vals[0]):
            raise SelectorParseError(
                f"for 'Gt', 'Lt' operators, the value must be an integer ({key})"
            )
    for value in vals:
        validate_label_value(value)
    return Requirement(key, op, vals)


class Selector:
    """A label query (Go ``labels.Selector``): a conjunction of requirements.

    ``matches(labels)`` tests a label mapping; ``empty()`` is true for the selector that
    matches everything (then ``list_all`` does not even read labels); ``matches_nothing()``
    is true only for :func:`nothing`; ``str()`` gives the canonical text (``""`` for both
    the everything and the nothing selector, as in Go).
    """

    __slots__ = ("_requirements", "matches")

    def __init__(self, requirements: Iterable[Requirement] = ()) -> None:
        self._requirements: tuple[Requirement, ...] = tuple(
            sorted(requirements, key=lambda r: r.key)
        )
        tests = tuple(r._match for r in self._requirements)
        #: Whether ``labels`` satisfies every requirement (specialised at construction).
        self.matches: Callable[[Mapping[str, str]], bool]
        if len(tests) == 1:
            self.matches = tests[0]
        elif tests:
            self.matches = lambda labels: all(test(labels) for test in tests)
        else:
            self.matches = lambda labels: True

    def empty(self) -> bool:
        """True when the selector has no requirement (it matches everything)."""
        return not self._requirements

    def matches_nothing(self) -> bool:
        """True for the selector that matches no object (:func:`nothing`)."""
        return False

    def requirements(self) -> tuple[Requirement, ...]:
        """The requirements, all of which must hold."""
        return self._requirements

    def add(self, *requirements: Requirement) -> Selector:
        """A new selector with ``requirements`` added (this one is unchanged)."""
        return Selector(self._requirements + requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        return f"Selector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Selector)
        return self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash(self._requirements)


class _NothingSelector(Selector):
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        self.matches = lambda labels: False

    def empty(self) -> bool:
        return False

    def matches_nothing(self) -> bool:
        return True

    def add(self, *requirements: Requirement) -> Selector:
        return self

    def __repr__(self) -> str:
        return "nothing()"


_EVERYTHING = Selector()
_NOTHING = _NothingSelector()


def everything() -> Selector:
    """The selector that matches every label set."""
    return _EVERYTHING


def nothing() -> Selector:
    """The selector that matches no label set."""
    return _NOTHING


def selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """``k1=v1,k2=v2,...`` from a mapping, without validation (Go ``SelectorFromSet``);
    an empty or ``None`` mapping selects everything."""
    return selector_from_validated_set(labels)


def selector_from_validated_set(labels: Mapping[str, str] | None) -> Selector:
    """Like :func:`selector_from_set`, for a mapping the caller has validated."""
    if not labels:
        return _EVERYTHING
    return Selector(Requirement(k, Operator.EQUALS, (v,)) for k, v in labels.items())


_LABEL_SELECTOR_OPERATORS = {"In": Operator.IN, "NotIn": Operator.NOT_IN,
                              "Exists": Operator.EXISTS, "DoesNotExist": Operator.DOES_NOT_EXIST}


def label_selector_as_selector(selector: Mapping[str, Any] | None) -> Selector:
    """A ``metav1.LabelSelector`` in wire form (``matchLabels``, ``matchExpressions``
    with ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``) as a :class:`Selector` (Go
    ``metav1.LabelSelectorAsSelector``): None selects nothing, an empty one everything;
    an unknown operator or a bad key or value raises :class:`SelectorParseError`."""
    if selector is None:
        return _NOTHING
    requirements = [new_requirement(k, Operator.EQUALS, (v,))
                    for k, v in (selector.get("matchLabels") or {}).items()]
    for expression in selector.get("matchExpressions") or ():
        operator = _LABEL_SELECTOR_OPERATORS.get(expression.get("operator", ""))
        if operator is None:
            raise SelectorParseError(f"{expression.get('operator')!r} is not a valid label "
                                     "selector operator")
        requirements.append(new_requirement(str(expression.get("key", "")), operator,
                                            expression.get("values") or ()))
    return Selector(requirements) if requirements else _EVERYTHING


def validated_selector_from_set(labels: Mapping[str, str] | None) -> Selector:
    """Like :func:`selector_from_set`, but every key and value is validated first."""
    if not labels:
        return _EVERYTHING
    return Selector(new_requirement(k, Operator.EQUALS, (v,)) for k, v in labels.items())


def format_labels(labels: Mapping[str, str]) -> str:
    """``k1=v1,k2=v2`` sorted by key (Go ``labels.Set.String``)."""
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


# --- parser ------------------------------------------------------------------------------

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_SYMBOLS = {"!", "!=", "(", ")", ",", "=", "==", ">", "<"}
_ID = "identifier"
_END = "end of string"
_KEYWORDS = {"in", "notin"}


def _lex(text: str) -> list[tuple[str, str]]:
    """Tokens as ``(kind, literal)``; kind is ``_ID``, ``_END``, a symbol or a keyword."""
    tokens: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            tokens.append((_END, ""))
            return tokens
        ch = text[i]
        if ch in _SPECIAL:
            # Longest symbol starting here.
            j = i + 1
            best = ch if ch in _SYMBOLS else ""
            while j < n and text[j] in _SPECIAL and text[i : j + 1] in _SYMBOLS:
                best = text[i : j + 1]
                j += 1
            if not best:
                raise SelectorParseError(
                    f"unable to parse requirement: error expected: keyword found {ch!r}"
                )
            tokens.append((best, best))
            i += len(best)
        else:
            j = i
            while j < n and text[j] not in _WHITESPACE and text[j] not in _SPECIAL:
                j += 1
            word = text[i:j]
            tokens.append((word if word in _KEYWORDS else _ID, word))
            i = j


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.pos = 0

    @staticmethod
    def _as_value(tok: tuple[str, str]) -> tuple[str, str]:
        # In a value position the keywords are plain identifiers ("x in (in)").
        return (_ID, tok[1]) if tok[0] in _KEYWORDS else tok

    def lookahead(self, values: bool) -> tuple[str, str]:
        tok = self.tokens[self.pos]
        return self._as_value(tok) if values else tok

    def consume(self, values: bool) -> tuple[str, str]:
        tok = self.lookahead(values)
        if tok[0] != _END:
            self.pos += 1
        return tok

    @staticmethod
    def error(message: str) -> SelectorParseError:
        return SelectorParseError(f"unable to parse requirement: {message}")

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            kind, lit = self.lookahead(True)
            if kind in (_ID, "!"):
                requirements.append(self.requirement())
                kind, lit = self.consume(True)
                if kind == _END:
                    return requirements
                if kind == ",":
                    nxt, nlit = self.lookahead(True)
                    if nxt not in (_ID, "!"):
                        raise self.error(f"found '{nlit}', expected: identifier after ','")
                    continue
                raise self.error(f"found '{lit}', expected: ',' or 'end of string'")
            if kind == _END:
                return requirements
            raise self.error(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        negated = False
        kind, key = self.consume(True)
        if kind == "!":
            negated = True
            kind, key = self.consume(True)
        if kind != _ID:
            raise self.error(f"found '{key}', expected: identifier")
        validate_label_key(key)
        nxt, _ = self.lookahead(True)
        if negated or nxt in (_END, ","):
            if negated and nxt not in (_END, ","):
                found = self.lookahead(True)[1]
                raise self.error(f"found '{found}', expected: ',' or 'end of string'")
            op = Operator.DOES_NOT_EXIST if negated else Operator.EXISTS
            return new_requirement(key, op)
        op_kind, op_lit = self.consume(False)
        ops = {
            "in": Operator.IN,
            "notin": Operator.NOT_IN,
            "=": Operator.EQUALS,
            "==": Operator.DOUBLE_EQUALS,
            "!=": Operator.NOT_EQUALS,
            ">": Operator.GREATER_THAN,
            "<": Operator.LESS_THAN,
        }
        parsed = ops.get(op_kind)
        if parsed is None:
            raise self.error(
                f"found '{op_lit}', expected: in, notin, =, ==, !=, gt, lt"
            )
        if parsed in (Operator.IN, Operator.NOT_IN):
            return new_requirement(key, parsed, self.set_values())
        return new_requirement(key, parsed, self.exact_value())

    def exact_value(self) -> list[str]:
        kind, _ = self.lookahead(True)
        if kind in (_END, ","):
            return [""]
        kind, lit = self.consume(True)
        if kind == _ID:
            return [lit]
        raise self.error(f"found '{lit}', expected: identifier")

    def set_values(self) -> set[str]:
        kind, lit = self.consume(True)
        if kind != "(":
            raise self.error(f"found '{lit}' expected: '('")
        kind, lit = self.lookahead(True)
        if kind == ")":  # "()" is the set holding the empty string
            self.consume(True)
            return {""}
        if kind not in (_ID, ","):
            raise self.error(f"found '{lit}', expected: ',', ')' or identifier")
        values: set[str] = set()
        expect_value = True
        while True:
            kind, lit = self.consume(True)
            if kind == _ID and expect_value:
                values.add(lit)
                expect_value = False
            elif kind == ",":
                if expect_value:  # ",," or a leading ","
                    values.add("")
                expect_value = True
            elif kind == ")":
                if expect_value:  # a trailing ","
                    values.add("")
                return values
            else:
                raise self.error(f"found '{lit}', expected: ',', ')' or identifier")


def parse(selector: str) -> Selector:
    """Parse a selector string (Go ``labels.Parse``); ``""`` selects everything.

    Raises :class:`~client_cache.errors.SelectorParseError` on bad syntax or an invalid
    key or value.
    """
    if not isinstance(selector, str):
        raise SelectorParseError(f"selector must be a str, not {type(selector).__name__}")
    requirements = _Parser(selector).parse()
    if not requirements:
        return _EVERYTHING
    return Selector(requirements)
