"""object-names.go (object-names_test.go)."""

from __future__ import annotations

import random

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod

from client_cache import (
    DeletedFinalStateUnknown,
    InvalidKeyError,
    MetaAccessError,
    ObjectName,
    deletion_handling_object_to_name,
    meta_namespace_key_func,
    namespaced_name_as_object_name,
    new_object_name,
    object_to_name,
    parse_object_name,
)
from client_cache.object_names import NamespacedName
from tests.fixtures import pod


def test_object_names_round_trip_random() -> None:
    """Upstream TestObjectNames: random strings over a small alphabet containing '/'."""
    rnd = random.Random(20261122)
    for _ in range(300):
        text = "".join(rnd.choice("abcdefghi/") for _ in range(10))
        parts = text.split("/")
        if len(parts) > 2:
            with pytest.raises(InvalidKeyError):
                parse_object_name(text)
            continue
        name = parse_object_name(text)
        if len(parts) == 2:
            assert name == ObjectName(parts[0], parts[1])
            expected = text if parts[0] else parts[1]  # a leading '/' is lost
        else:
            assert name == ObjectName("", text)
            expected = text
        assert str(name) == expected
        assert parse_object_name(str(name)) == name


def test_object_name_string_matches_key_func() -> None:
    for obj in (pod("a", "ns"), pod("cluster-thing"),
                V1Pod(metadata=V1ObjectMeta(name="m", namespace="z"))):
        assert str(object_to_name(obj)) == meta_namespace_key_func(obj)


def test_object_name_parts_and_namespaced_name() -> None:
    name = new_object_name("ns", "n")
    assert name.parts() == ("ns", "n")
    assert str(name.as_namespaced_name()) == "ns/n"
    assert str(NamespacedName("", "n")) == "/n"  # always has the '/'
    assert str(ObjectName("", "n")) == "n"
    assert namespaced_name_as_object_name(NamespacedName("a", "b")) == ObjectName("a", "b")


def test_deletion_handling_object_to_name() -> None:
    assert deletion_handling_object_to_name(DeletedFinalStateUnknown("ns/x", None)) == ObjectName(
        "ns", "x"
    )
    assert deletion_handling_object_to_name(pod("y", "q")) == ObjectName("q", "y")
    with pytest.raises(InvalidKeyError):
        deletion_handling_object_to_name(DeletedFinalStateUnknown("a/b/c", None))
    with pytest.raises(MetaAccessError):
        object_to_name({"spec": {}})
