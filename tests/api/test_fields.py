"""fields.py: the apimachinery field selector language."""

from __future__ import annotations

import pytest

from client_cache import SelectorParseError
from client_cache.api.fields import (
    Term,
    and_selectors,
    escape_value,
    everything,
    one_term_equal_selector,
    one_term_not_equal_selector,
    parse_selector,
    selector_from_set,
    unescape_value,
)

FIELDS = {"metadata.name": "web", "metadata.namespace": "shop", "status.phase": "Running"}


@pytest.mark.parametrize(
    ("text", "canonical", "matches"),
    [
        ("", "", True),
        ("metadata.name=web", "metadata.name=web", True),
        ("metadata.name==web", "metadata.name=web", True),
        ("metadata.name!=web", "metadata.name!=web", False),
        ("status.phase!=Pending,metadata.namespace=shop",
         "status.phase!=Pending,metadata.namespace=shop", True),
        ("spec.nodeName=", "spec.nodeName=", True),  # absent reads as ""
        ("spec.nodeName!=n1", "spec.nodeName!=n1", True),
        ("metadata.name=a\\,b", "metadata.name=a\\,b", False),
    ],
)
def test_parse_and_match(text: str, canonical: str, matches: bool) -> None:
    selector = parse_selector(text)
    assert str(selector) == canonical
    assert selector.matches(FIELDS) is matches


def test_escaping_round_trip() -> None:
    raw = "a,b=c\\d"
    assert escape_value(raw) == "a\\,b\\=c\\\\d"
    assert unescape_value(escape_value(raw)) == raw
    selector = parse_selector("x=" + escape_value(raw))
    assert selector.terms() == (Term("x", raw),)
    assert selector.matches({"x": raw})


@pytest.mark.parametrize("text", ["novalue", "=v", "x=a\\q", "x=a=b", "x=tail\\"])
def test_parse_errors(text: str) -> None:
    with pytest.raises(SelectorParseError):
        parse_selector(text)


def test_constructors() -> None:
    assert str(one_term_equal_selector("metadata.name", "a,b")) == "metadata.name=a\\,b"
    assert str(one_term_not_equal_selector("f", "v")) == "f!=v"
    assert str(selector_from_set({"z": "1", "a": "2"})) == "a=2,z=1"
    assert selector_from_set({}).empty() and everything().empty()
    both = and_selectors(one_term_equal_selector("a", "1"), one_term_not_equal_selector("b", "2"))
    assert str(both) == "a=1,b!=2"
    assert both.requires_exact_match("a") == ("1", True)
    assert both.requires_exact_match("b") == ("", False)
