"""A custom resource declared in Python, and its CustomResourceDefinition (kube-rs
``#[derive(CustomResource)]`` with ``#[kube(group, version, kind, namespaced, status,
scale, printcolumn, shortname)]``; kubebuilder's markers read by controller-gen).

::

    class FooSpec(msgspec.Struct, rename="camel"):
        deployment_name: str
        replicas: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1

    class FooStatus(msgspec.Struct, rename="camel"):
        available_replicas: int = 0

    @custom_resource(group="samplecontroller.example.com", version="v1alpha1", kind="Foo")
    class Foo(msgspec.Struct, rename="camel"):
        spec: FooSpec
        status: FooStatus | None = None

    crd(Foo)            # the apiextensions.k8s.io/v1 CustomResourceDefinition, a wire dict

The class is a ``msgspec.Struct`` whose fields are the resource's top-level members
besides ``apiVersion``, ``kind`` and ``metadata`` (which it may declare too; they are left
out of the schema, as the server defines them). A ``status`` field turns the status
subresource on. :func:`crd` of several classes of one group and kind (one per version)
gives one CRD with several versions, ``storage`` naming the storage version.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
from kubernetes.client import V1ObjectMeta
from msgspec import inspect as mi

from client_cache.api.schema import APPROVAL_ANNOTATION, GroupVersionResource, protected_group
from client_cache.codec import struct_type
from client_cache.crd.schema import UnsupportedSchemaError, checked_type_info, structural_schema

__all__ = ["CustomResource", "ObjectMeta", "PrinterColumn", "ResourceInfo", "ScaleSubresource",
           "UnsupportedSchemaError", "crd", "custom_resource", "resource_info",
           "version_schema"]

C = TypeVar("C", bound=type)

ObjectMeta: Any = struct_type(V1ObjectMeta)
"""The struct class of ``metadata`` (struct mode's ``V1ObjectMeta``)."""


class CustomResource(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True,
                     gc=False):
    """A base for custom resource classes: ``api_version``, ``kind`` and ``metadata``
    (struct mode's ``ObjectMeta``: ``foo.metadata.name``), camelCase wire names, and
    members left at their default left out when encoded. Not frozen, so that a subclass
    needs no class arguments to type-check (a type checker takes a frozen base's
    subclass for a mutable one unless it says ``frozen=True`` too); the objects an
    informer hands out are its cache's own all the same: never change them, make a
    changed copy (``msgspec.structs.replace``), as with the cache's dicts. Decoded as
    struct mode's classes are: strings shared and maps compacted while decoding, and,
    as with struct mode's classes, out of the garbage collector's sight (``gc=False``,
    inherited). Declare the class and its parts ``frozen=True`` to have the list-watch
    share equal immutable parts between cached objects too, as it does for struct mode's
    frozen classes. A subclass declares
    ``spec`` (and ``status``); with it, ``factory.for_resource(Foo)`` is an informer of
    ``Foo`` objects decoded straight from the server's JSON, and ``Controller(factory,
    Foo)`` reconciles them. Fields the class does not declare are dropped when decoding
    (a newer schema's): msgspec ignores unknown fields, so an older controller keeps
    working against a newer CRD, as a client-go controller built against older types
    does."""

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta = msgspec.field(default_factory=ObjectMeta)

_SERVER_FIELDS = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True)
class PrinterColumn:
    """A column ``kubectl get`` shows (``additionalPrinterColumns``): ``json_path`` is
    ``.spec.replicas``-style; ``type`` one of ``string``, ``integer``, ``number``,
    ``boolean``, ``date``."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ScaleSubresource:
    """The scale subresource (``kubectl scale``, the HorizontalPodAutoscaler): where the
    desired and current replica counts and the label selector live."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str = ""


@dataclass(frozen=True)
class ResourceInfo:
    """What :func:`custom_resource` records on a class."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: ScaleSubresource | None = None
    status: bool = False
    annotations: tuple[tuple[str, str], ...] = field(default=())

    @property
    def gvr(self) -> GroupVersionResource:
        """The resource's ``GroupVersionResource``."""
        return GroupVersionResource(self.group, self.version, self.plural)

    @property
    def api_version(self) -> str:
        """``group/version``."""
        return f"{self.group}/{self.version}"

    @property
    def name(self) -> str:
        """The CRD's name, ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"


def custom_resource(*, group: str, version: str, kind: str, plural: str = "",
                    singular: str = "", namespaced: bool = True,
                    short_names: Sequence[str] = (), categories: Sequence[str] = (),
                    printer_columns: Sequence[PrinterColumn] = (),
                    scale: ScaleSubresource | None = None,
                    annotations: dict[str, str] | None = None) -> Callable[[C], C]:
    """Declare a ``msgspec.Struct`` class as the custom resource ``kind`` of
    ``group``/``version`` (see the module documentation). ``plural`` defaults to the
    lowercase kind plus ``s``, ``singular`` to the lowercase kind. ``annotations`` go on
    the CRD (a ``*.k8s.io`` group needs ``api-approved.kubernetes.io``). Raises
    ``TypeError`` for a class that is not a struct or has no ``spec`` field and
    :class:`~client_cache.crd.schema.UnsupportedSchemaError` for a field type without a
    structural schema (at declaration, not at install); a protected group (``k8s.io``,
    ``kubernetes.io`` and their subgroups) without that annotation raises ``ValueError``,
    as the real server refuses its CRD."""
    _check_names(group, version, kind, plural or kind.lower() + "s",
                 singular or kind.lower())
    if protected_group(group) and not (annotations or {}).get(APPROVAL_ANNOTATION):
        raise ValueError(f"group {group!r} is protected: the server refuses its CRD without "
                         f"annotations={{{APPROVAL_ANNOTATION!r}: ...}} (KEP 1111: "
                         "'unapproved, experimental-only' will do for a test); or use a "
                         "group of your own domain")

    def declare(cls: C) -> C:
        if not (isinstance(cls, type) and issubclass(cls, msgspec.Struct)):
            raise TypeError(f"a custom resource is a msgspec.Struct class, not {cls!r}")
        names = {f.encode_name for f in _fields(cls)}
        if "spec" not in names:
            raise TypeError(f"{cls.__name__} has no spec field")
        info = ResourceInfo(
            group=group, version=version, kind=kind,
            plural=plural or kind.lower() + "s", singular=singular or kind.lower(),
            namespaced=namespaced, short_names=tuple(short_names),
            categories=tuple(categories), printer_columns=tuple(printer_columns),
            scale=scale, status="status" in names,
            annotations=tuple(sorted((annotations or {}).items())))
        cls.__custom_resource__ = info  # type: ignore[attr-defined]
        version_schema(cls)  # refuse what has no structural schema now
        return cls
    return declare


_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_NAME_RULES = (
    ("group", re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})+"),
     "a DNS subdomain with at least one dot (example.com)"),
    ("version", re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?"),
     "a lowercase DNS label starting with a letter (v1, v1beta1)"),
    ("kind", re.compile(r"[A-Z][A-Za-z0-9]*"), "CamelCase starting with a capital (Foo)"),
    ("plural", re.compile(_DNS_LABEL), "a lowercase DNS label (foos)"),
    ("singular", re.compile(_DNS_LABEL), "a lowercase DNS label (foo)"),
)


def _check_names(group: str, version: str, kind: str, plural: str, singular: str) -> None:
    """ValueError for a name the API server would refuse (checked at declaration, so a
    bad name fails where it is written, not at install)."""
    given = {"group": group, "version": version, "kind": kind, "plural": plural,
             "singular": singular}
    for name, rule, shape in _NAME_RULES:
        if rule.fullmatch(given[name]) is None:
            raise ValueError(f"{name} {given[name]!r} is invalid: it must be {shape}")


def resource_info(cls: type) -> ResourceInfo:
    """The :class:`ResourceInfo` :func:`custom_resource` recorded on ``cls``."""
    info = getattr(cls, "__custom_resource__", None)
    if not isinstance(info, ResourceInfo):
        raise TypeError(f"{getattr(cls, '__name__', cls)!r} is not declared with "
                        "@custom_resource")
    return info


def _fields(cls: type) -> tuple[mi.Field, ...]:
    info = checked_type_info(cls)
    assert isinstance(info, mi.StructType)
    return info.fields


def version_schema(cls: type) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one version: the class's fields but the server's own,
    and ``apiVersion``, ``kind`` and ``metadata`` as controller-gen writes them."""
    schema = structural_schema(cls, exclude=_SERVER_FIELDS)
    properties = schema["properties"]
    required = schema.get("required", [])
    out: dict[str, Any] = {
        "type": "object",
        "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                       "metadata": {"type": "object"}, **properties}}
    if required:
        out["required"] = required
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        out["description"] = " ".join(cls.__doc__.split())
    return out


def crd(*classes: type, storage: type | None = None,
        conversion: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``apiextensions.k8s.io/v1`` CustomResourceDefinition of one or more classes
    (the versions of one group and kind), as a wire dict; ``storage`` is the storage
    version (default: the first class); ``conversion`` its ``spec.conversion`` (default:
    none, the ``None`` strategy: only ``apiVersion`` changes between versions; a
    conversion webhook's is
    :meth:`client_cache.webhooks.conversion.ConversionWebhook.crd_conversion`)."""
    if not classes:
        raise ValueError("crd() needs at least one custom resource class")
    infos = [resource_info(cls) for cls in classes]
    first = infos[0]
    for info in infos[1:]:
        if (info.group, info.kind, info.plural, info.namespaced) != (
                first.group, first.kind, first.plural, first.namespaced):
            raise ValueError(f"{info.kind} {info.version} is not a version of "
                             f"{first.kind} in {first.group}")
    if len({info.version for info in infos}) != len(infos):
        raise ValueError("two classes declare the same version")
    storage = storage if storage is not None else classes[0]
    if storage not in classes:
        raise ValueError("storage must be one of the classes")
    names: dict[str, Any] = {"plural": first.plural, "singular": first.singular,
                             "kind": first.kind, "listKind": f"{first.kind}List"}
    if first.short_names:
        names["shortNames"] = list(first.short_names)
    if first.categories:
        names["categories"] = list(first.categories)
    metadata: dict[str, Any] = {"name": first.name}
    if first.annotations:
        metadata["annotations"] = dict(first.annotations)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": first.group,
            "names": names,
            "scope": "Namespaced" if first.namespaced else "Cluster",
            "versions": [_version(cls, info, cls is storage)
                         for cls, info in zip(classes, infos, strict=True)],
            **({"conversion": dict(conversion)} if conversion else {}),
        },
    }


def _version(cls: type, info: ResourceInfo, storage: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": info.version, "served": True, "storage": storage,
                           "schema": {"openAPIV3Schema": version_schema(cls)}}
    subresources: dict[str, Any] = {}
    if info.status:
        subresources["status"] = {}
    if info.scale is not None:
        scale = {"specReplicasPath": info.scale.spec_replicas_path,
                 "statusReplicasPath": info.scale.status_replicas_path}
        if info.scale.label_selector_path:
            scale["labelSelectorPath"] = info.scale.label_selector_path
        subresources["scale"] = scale
    if subresources:
        out["subresources"] = subresources
    if info.printer_columns:
        out["additionalPrinterColumns"] = [
            {k: v for k, v in (("name", c.name), ("type", c.type), ("jsonPath", c.json_path),
                               ("description", c.description), ("priority", c.priority),
                               ("format", c.format)) if v not in ("", 0) or k == "name"}
            for c in info.printer_columns]
    return out

