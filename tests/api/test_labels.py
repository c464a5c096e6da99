"""labels.py: the apimachinery label selector language."""

from __future__ import annotations

import pytest

from client_cache import SelectorParseError
from client_cache.api.labels import (
    Operator,
    Requirement,
    everything,
    format_labels,
    new_requirement,
    nothing,
    parse,
    selector_from_set,
    validated_selector_from_set,
)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("x=a", "x=a"),
        ("x==a", "x==a"),
        ("x!=a", "x!=a"),
        ("x", "x"),
        ("!x", "!x"),
        ("x in (b,a)", "x in (a,b)"),
        ("x notin (b, a)", "x notin (a,b)"),
        ("  z = 1 , a = 2 ", "a=2,z=1"),
        ("x>1,y<20", "x>1,y<20"),
        ("example.com/app=web,tier", "example.com/app=web,tier"),
        ("x=", "x="),
        ("x in ()", "x in ()"),
        ("x in (a,)", "x in (,a)"),
        ("x in (in, notin)", "x in (in,notin)"),
        ("x=in", "x=in"),
        ("a.b_c-d=E.f_g-9", "a.b_c-d=E.f_g-9"),
    ],
)
def test_parse_canonical_form(text: str, canonical: str) -> None:
    selector = parse(text)
    assert str(selector) == canonical
    assert str(parse(str(selector))) == canonical  # canonical form is a fixed point


@pytest.mark.parametrize(
    "text",
    [
        "x=a=b",
        "x in a",
        "x in (a",
        "x in (a b)",
        "x notin",
        ",x",
        "x,",
        "x,,y",
        "!",
        "!x=a",
        "x>a",
        "x<",
        "x<-2",  # gt/lt values must also be valid label values
        "x=(a)",
        "x=a b",
        "-bad=key",
        "bad-=key",
        "a/b/c=d",
        "/name=v",
        "UPPER.example.com/x=y",
        "x=-bad-value",
        "x=" + "v" * 64,
        "k" * 64 + "=v",
        "x ? y",
        "x=a)",
        "(x=a",
    ],
)
def test_parse_errors(text: str) -> None:
    with pytest.raises(SelectorParseError):
        parse(text)


def test_parse_rejects_non_string() -> None:
    with pytest.raises(SelectorParseError):
        parse(None)  # type: ignore[arg-type]


LABELS = {"app": "web", "tier": "front", "replicas": "3"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("app!=web", False),
        ("missing!=x", True),  # != matches when the key is absent
        ("missing=x", False),
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db)", True),
        ("missing notin (db)", True),
        ("missing in (db)", False),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("replicas>2", True),
        ("replicas>3", False),
        ("replicas<4", True),
        ("app>1", False),  # not an integer label value
        ("missing<9", False),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("missing=", False),  # "=" needs the key even for an empty value
    ],
)
def test_matches(text: str, matches: bool) -> None:
    assert parse(text).matches(LABELS) is matches


def test_everything_and_nothing() -> None:
    assert everything().empty() and everything().matches({}) and str(everything()) == ""
    assert not nothing().empty() and not nothing().matches({}) and str(nothing()) == ""
    assert nothing().matches_nothing() and not everything().matches_nothing()
    assert parse("").empty()
    assert not parse("a").empty()


def test_selector_from_set() -> None:
    selector = selector_from_set({"b": "2", "a": "1"})
    assert str(selector) == "a=1,b=2"
    assert selector.matches({"a": "1", "b": "2", "c": "3"})
    assert not selector.matches({"a": "1"})
    assert selector_from_set({}).empty() and selector_from_set(None).empty()
    # no validation in selector_from_set; validated_selector_from_set checks
    assert str(selector_from_set({"bad key": "v"})) == "bad key=v"
    with pytest.raises(SelectorParseError):
        validated_selector_from_set({"bad key": "v"})
    assert validated_selector_from_set({"ok": "v"}) == parse("ok=v")


def test_new_requirement_validation() -> None:
    assert new_requirement("k", Operator.IN, ["b", "a", "b"]) == Requirement(
        "k", Operator.IN, ("a", "b")
    )
    assert new_requirement("k", "exists").operator is Operator.EXISTS
    for op, values in [
        (Operator.IN, []),
        (Operator.EQUALS, ["a", "b"]),
        (Operator.NOT_EQUALS, []),
        (Operator.EXISTS, ["a"]),
        (Operator.DOES_NOT_EXIST, ["a"]),
        (Operator.GREATER_THAN, ["x"]),
        (Operator.LESS_THAN, ["1", "2"]),
    ]:
        with pytest.raises(SelectorParseError):
            new_requirement("k", op, values)
    with pytest.raises(SelectorParseError):
        new_requirement("k", "like", ["a"])


def test_add_returns_new_selector() -> None:
    base = parse("b=1")
    more = base.add(new_requirement("a", Operator.EXISTS))
    assert str(base) == "b=1" and str(more) == "a,b=1"
    assert nothing().add(new_requirement("a", Operator.EXISTS)).matches_nothing()


def test_format_labels() -> None:
    assert format_labels({"b": "2", "a": "1"}) == "a=1,b=2"
    assert format_labels({}) == ""
