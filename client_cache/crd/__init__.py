"""Typed custom resources: a resource declared as a ``msgspec.Struct`` class and its
CustomResourceDefinition (kube-rs ``#[derive(CustomResource)]``), installed with
:func:`install_crd`; ``python -m client_cache.crd print module:Class`` writes the CRD as
YAML. Needs the ``[struct]`` extra (``msgspec``)."""

from client_cache.crd.generate import Generated, generate
from client_cache.crd.install import CRDNotEstablishedError, install_crd
from client_cache.crd.resource import (
    CustomResource,
    ObjectMeta,
    PrinterColumn,
    ResourceInfo,
    ScaleSubresource,
    UnsupportedSchemaError,
    crd,
    custom_resource,
    resource_info,
    version_schema,
)
from client_cache.crd.schema import structural_schema
from client_cache.crd.write import from_wire, patch_status

__all__ = [
    "CRDNotEstablishedError",
    "CustomResource",
    "Generated",
    "ObjectMeta",
    "PrinterColumn",
    "ResourceInfo",
    "ScaleSubresource",
    "UnsupportedSchemaError",
    "crd",
    "custom_resource",
    "from_wire",
    "generate",
    "install_crd",
    "patch_status",
    "resource_info",
    "structural_schema",
    "version_schema",
]
