"""meta.py: one metadata accessor over wire dicts, models and dynamic-client objects."""

from __future__ import annotations

from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, ClassVar

import pytest
from kubernetes.client import V1ObjectMeta, V1OwnerReference, V1Pod
from kubernetes.dynamic.resource import ResourceInstance

from client_cache import MetaAccessError
from client_cache.api import meta
from client_cache.api.meta import OwnerReference
from client_cache.codec.objects import to_struct
from client_cache.codec.structs import struct_type

WIRE_META: dict[str, Any] = {
    "name": "web-0",
    "namespace": "shop",
    "uid": "0c1d-77",
    "resourceVersion": "4711",
    "generation": 3,
    "labels": {"app": "web", "tier": "front"},
    "annotations": {"note": "hello"},
    "ownerReferences": [
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "name": "web",
            "uid": "ss-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ],
    "deletionTimestamp": "2026-11-22T10:11:12Z",
}
EXPECTED_OWNER = OwnerReference("apps/v1", "StatefulSet", "web", "ss-1", True, True)
EXPECTED_DELETION = datetime(2026, 11, 22, 10, 11, 12, tzinfo=timezone.utc)


class ClassicMeta:
    """Shaped like the classic (pre-pydantic) generated models: snake_case properties."""

    openapi_types: ClassVar[dict[str, str]] = {"name": "str"}

    def __init__(self, **fields: Any) -> None:
        self._fields = fields

    def __getattr__(self, item: str) -> Any:
        fields = self.__dict__["_fields"]
        if item in ("name", "namespace", "uid", "resource_version", "generation", "labels",
                    "annotations", "owner_references", "deletion_timestamp"):
            return fields.get(item)
        raise AttributeError(item)


class ClassicPod:
    def __init__(self, metadata: Any) -> None:
        self.metadata = metadata


def wire() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": dict(WIRE_META)}


def model() -> V1Pod:
    return V1Pod(
        api_version="v1",
        kind="Pod",
        metadata=V1ObjectMeta(
            name="web-0",
            namespace="shop",
            uid="0c1d-77",
            resource_version="4711",
            generation=3,
            labels={"app": "web", "tier": "front"},
            annotations={"note": "hello"},
            owner_references=[
                V1OwnerReference(api_version="apps/v1", kind="StatefulSet", name="web",
                                 uid="ss-1", controller=True, block_owner_deletion=True)
            ],
            deletion_timestamp=EXPECTED_DELETION,
        ),
    )


def classic() -> ClassicPod:
    return ClassicPod(
        ClassicMeta(
            name="web-0", namespace="shop", uid="0c1d-77", resource_version="4711",
            generation=3, labels={"app": "web", "tier": "front"}, annotations={"note": "hello"},
            owner_references=[
                V1OwnerReference(api_version="apps/v1", kind="StatefulSet", name="web",
                                 uid="ss-1", controller=True, block_owner_deletion=True)
            ],
            deletion_timestamp=EXPECTED_DELETION,
        )
    )


def dynamic() -> ResourceInstance:
    return ResourceInstance(None, wire())


@pytest.mark.parametrize("make", [wire, model, classic, dynamic], ids=lambda f: f.__name__)
def test_accessor_reads_every_field(make: Any) -> None:
    obj = make()
    acc = meta.accessor(obj)
    assert acc.name == "web-0"
    assert acc.namespace == "shop"
    assert acc.uid == "0c1d-77"
    assert acc.resource_version == "4711"
    assert acc.generation == 3
    assert dict(acc.labels) == {"app": "web", "tier": "front"}
    assert dict(acc.annotations) == {"note": "hello"}
    assert acc.owner_references == [EXPECTED_OWNER]
    assert acc.deletion_timestamp == EXPECTED_DELETION
    assert meta.namespace_and_name(obj) == ("shop", "web-0")
    assert meta.get_name(obj) == "web-0"
    assert meta.get_namespace(obj) == "shop"
    assert meta.get_resource_version(obj) == "4711"
    assert dict(meta.get_labels(obj)) == {"app": "web", "tier": "front"}


@pytest.mark.parametrize(
    "obj",
    [
        {"metadata": {}},
        V1Pod(metadata=V1ObjectMeta()),
        ClassicPod(ClassicMeta()),
        ResourceInstance(None, {"kind": "Pod", "apiVersion": "v1", "metadata": {}}),
    ],
    ids=["wire", "model", "classic", "dynamic"],
)
def test_missing_fields_read_as_zero_values(obj: Any) -> None:
    acc = meta.accessor(obj)
    assert (acc.name, acc.namespace, acc.uid, acc.resource_version) == ("", "", "", "")
    assert acc.generation == 0
    assert dict(acc.labels) == {} and dict(acc.annotations) == {}
    assert acc.owner_references == []
    assert acc.deletion_timestamp is None


def test_wire_labels_are_not_copied() -> None:
    obj = wire()
    assert meta.get_labels(obj) is obj["metadata"]["labels"]


@pytest.mark.parametrize(
    ("obj", "type_name"),
    [
        ({"kind": "Pod"}, "dict"),
        ({"metadata": None}, "dict"),
        ({"metadata": ["x"]}, "dict"),
        (V1Pod(metadata=None), "V1Pod"),
        (ResourceInstance(None, {"kind": "Pod", "apiVersion": "v1"}), "ResourceInstance"),
        (object(), "object"),
        ("text", "str"),
        (None, "NoneType"),
    ],
)
def test_no_usable_metadata_names_the_type(obj: Any, type_name: str) -> None:
    with pytest.raises(MetaAccessError) as info:
        meta.accessor(obj)
    assert "object has no meta" in str(info.value)
    assert type_name in str(info.value)
    assert isinstance(info.value, TypeError)


def test_bad_field_types_raise() -> None:
    with pytest.raises(MetaAccessError, match="generation"):
        _ = meta.accessor({"metadata": {"generation": "3"}}).generation
    with pytest.raises(MetaAccessError, match="deletionTimestamp"):
        _ = meta.accessor({"metadata": {"deletionTimestamp": "yesterday"}}).deletion_timestamp
    with pytest.raises(MetaAccessError, match="resourceVersion"):
        _ = meta.accessor({"metadata": {"resourceVersion": 12}}).resource_version


def test_type_meta() -> None:
    assert meta.type_meta(wire()) == ("v1", "Pod")
    assert meta.type_meta(model()) == ("v1", "Pod")
    assert meta.type_meta(dynamic()) == ("v1", "Pod")
    assert meta.type_meta({"metadata": {}}) == ("", "")


def test_resource_version_fast_path_keeps_the_checks() -> None:
    """The plain-dict shortcut answers only well-formed objects; the rest take the
    checked path (a wrong type raises, a missing value is empty, other mappings work)."""
    assert meta.get_resource_version({"metadata": {"resourceVersion": "7"}}) == "7"
    assert meta.get_resource_version({"metadata": {}}) == ""
    assert meta.get_resource_version(OrderedDict(metadata={"resourceVersion": "8"})) == "8"
    with pytest.raises(MetaAccessError, match="resourceVersion"):
        meta.get_resource_version({"metadata": {"resourceVersion": 12}})
    with pytest.raises(MetaAccessError, match="metadata"):
        meta.get_resource_version({"metadata": None})


def rv(value: Any) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": value}}


@pytest.mark.parametrize(("a", "b", "same"), [
    (rv("7"), rv("7"), True),
    (rv("7"), rv("8"), False),
    ({"metadata": {}}, {"metadata": {}}, True),  # both "" as get_resource_version reads
    ({"metadata": {}}, rv("8"), False),
    (rv("9"), V1Pod(metadata=V1ObjectMeta(resource_version="9")), True),
    (OrderedDict(metadata={"resourceVersion": "5"}), rv("5"), True),
    (V1Pod(metadata=V1ObjectMeta(resource_version="5")),
     V1Pod(metadata=V1ObjectMeta(resource_version="6")), False),
])
def test_same_resource_version_says_what_comparing_both_reads_says(
        a: Any, b: Any, same: bool) -> None:
    assert meta.same_resource_version(a, b) is same
    assert (meta.get_resource_version(a) == meta.get_resource_version(b)) is same


@pytest.mark.parametrize(("a", "b"), [
    (rv(12), rv(12)),  # equal, but not strings: the checked path raises
    (rv("7"), {"metadata": None}),
    ({"kind": "Pod"}, rv("7")),
])
def test_same_resource_version_raises_where_reading_them_does(a: Any, b: Any) -> None:
    with pytest.raises(MetaAccessError):
        meta.same_resource_version(a, b)


def struct() -> Any:
    return to_struct(wire(), struct_type(V1Pod))


def test_attribute_objects_take_the_remembered_class_path_with_the_same_checks() -> None:
    """Structs and models are read by attribute without asking the Mapping ABC each
    time; what they answer, and what they raise, is what the checked path gives."""
    for obj in (struct(), model(), classic()):
        assert meta.namespace_and_name(obj) == ("shop", "web-0")
        assert meta.get_namespace(obj) == "shop"
        assert meta.get_resource_version(obj) == "4711"

    class Holder:
        def __init__(self, metadata: Any) -> None:
            self.metadata = metadata

    for bad in ("web-0", b"x", 3, 1.5, ["x"], ("x",)):
        with pytest.raises(MetaAccessError, match=type(bad).__name__):
            meta.namespace_and_name(Holder(bad))
    with pytest.raises(MetaAccessError, match="namespace"):
        meta.namespace_and_name(Holder(ClassicMeta(name="web-0", namespace=7)))
    # a mapping that is not a dict, as metadata or as the object, is still read by key
    assert meta.namespace_and_name(Holder(OrderedDict(name="a", namespace="b"))) == ("b", "a")
    assert meta.namespace_and_name(OrderedDict(metadata={"name": "c"})) == ("", "c")


def test_a_remembered_class_is_still_checked_object_by_object() -> None:
    """Once objects of a class were read by attribute, the next ones are read without
    asking what their class is; what each one holds is still checked as before."""

    class Meta:
        def __init__(self, **fields: Any) -> None:
            self.__dict__.update(fields)

        def __getattr__(self, item: str) -> Any:
            return None  # an unset field reads None, as on a struct or model

    class Holder:
        def __init__(self, metadata: Any) -> None:
            self.metadata = metadata

    first = Holder(Meta(name="a", namespace="b", resource_version="1"))
    for _ in range(2):  # the first round remembers the classes, the second uses them
        assert meta.namespace_and_name(first) == ("b", "a")
        assert meta.get_namespace(first) == "b"
        assert meta.get_resource_version(first) == "1"
        cluster_scoped = Holder(Meta(name="n"))
        assert meta.namespace_and_name(cluster_scoped) == ("", "n")
        assert meta.get_namespace(cluster_scoped) == ""
        assert meta.get_resource_version(cluster_scoped) == ""
        # only the wire spelling set: the snake_case one reads None, the other is tried
        assert meta.get_resource_version(Holder(Meta(resourceVersion="9"))) == "9"
        with pytest.raises(MetaAccessError, match="namespace"):
            meta.get_namespace(Holder(Meta(namespace=7)))
        with pytest.raises(MetaAccessError, match="namespace"):
            meta.namespace_and_name(Holder(Meta(name="x", namespace=7)))
        with pytest.raises(MetaAccessError, match="resourceVersion"):
            meta.get_resource_version(Holder(Meta(resource_version=12)))
        for bad in (None, "web-0", ("x",)):
            with pytest.raises(MetaAccessError):
                meta.get_namespace(Holder(bad))
            with pytest.raises(MetaAccessError):
                meta.get_resource_version(Holder(bad))
        # a remembered class holding a mapping as its metadata: read by key
        assert meta.get_namespace(Holder({"namespace": "m"})) == "m"
        assert meta.get_resource_version(Holder(OrderedDict(resourceVersion="3"))) == "3"
