"""Metadata-only informers (Go ``k8s.io/client-go/metadata/metadatainformer`` and
``metadatalister``).

Many controllers need only names, labels, owner references and finalizers of the objects
they watch (garbage collectors, quota counters, "does it exist" checks). A metadata
informer asks the server for the metadata-only forms: LIST returns a
``PartialObjectMetadataList`` and watch events carry ``PartialObjectMetadata`` objects
(``kind``, ``apiVersion: meta.k8s.io/v1``, ``metadata``; no spec, no status), so the cache
holds a fraction of the bytes. Cached objects are wire dicts of that shape, or
:class:`PartialObjectMetadata` models (``metadata`` a ``V1ObjectMeta``) with
``models=True``: the ``kubernetes`` package has no model of its own for this kind::

    factory = new_metadata_shared_informer_factory(api_client, 0)
    pods = factory.for_resource(GroupVersionResource("", "v1", "pods"))
    factory.start(stop)
    factory.wait_for_cache_sync(stop)
    pods.lister().by_namespace("default").get("web-0")["metadata"]["labels"]

As Go's metadata factory, it has only ``for_resource`` (no typed accessors: every
resource looks the same in metadata form). Every informer gets a namespace index; the
factory's options (namespace, tweaks, resync, transform, timeouts) work as for the full
factory.
"""

from __future__ import annotations

from typing import Any, ClassVar

from client_cache.api.meta import describe
from client_cache.api.schema import GroupVersionResource
from client_cache.index import Indexer
from client_cache.informers.factory import (
    GenericInformer,
    SharedInformerFactory,
    SharedInformerFactoryOptions,
    TweakListOptionsFunc,
)
from client_cache.informers.typed import TypedGroups
from client_cache.listers import GenericLister, new_generic_lister

__all__ = [
    "PARTIAL_OBJECT_METADATA",
    "PartialObjectMetadata",
    "MetadataSharedInformerFactory",
    "new_filtered_metadata_shared_informer_factory",
    "new_metadata_lister",
    "new_metadata_shared_informer_factory",
]

#: What a metadata informer's reflector checks objects against (and lists against
#: ``PartialObjectMetadataList``).
PARTIAL_OBJECT_METADATA = {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata"}


class PartialObjectMetadata:
    """A metadata-only object as a model (Go ``metav1.PartialObjectMetadata``):
    ``api_version``, ``kind`` and ``metadata`` (a ``kubernetes.client.V1ObjectMeta``).
    Built by the ``kubernetes`` client's own deserializer, either generation (it carries
    ``openapi_types``/``attribute_map`` for the classic one and ``from_dict`` for the
    newer one); ``to_dict()`` gives the wire form back."""

    openapi_types: ClassVar[dict[str, str]] = {
        "api_version": "str", "kind": "str", "metadata": "V1ObjectMeta"}
    attribute_map: ClassVar[dict[str, str]] = {
        "api_version": "apiVersion", "kind": "kind", "metadata": "metadata"}

    def __init__(self, api_version: str | None = None, kind: str | None = None,
                 metadata: Any = None) -> None:
        self.api_version = api_version
        self.kind = kind
        self.metadata = metadata

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PartialObjectMetadata:
        """Build it from a ``PartialObjectMetadata`` wire dict."""
        from kubernetes.client import V1ObjectMeta  # noqa: PLC0415 - only in model mode

        md = data.get("metadata") or {}
        build = getattr(V1ObjectMeta, "from_dict", None)
        return cls(data.get("apiVersion"), data.get("kind"),
                   build(md) if callable(build) else md)

    def to_dict(self) -> dict[str, Any]:
        """The wire dict (the server's field names)."""
        md = self.metadata
        to_dict = getattr(md, "to_dict", None)
        return {"apiVersion": self.api_version, "kind": self.kind,
                "metadata": to_dict() if callable(to_dict) else md}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartialObjectMetadata) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PartialObjectMetadata({describe(self)})"


class MetadataSharedInformerFactory(SharedInformerFactory):
    """A factory of metadata-only informers, one per resource (Go
    ``metadatainformer.SharedInformerFactory``); see the module documentation."""

    metadata_only = True

    def for_resource(self, gvr: GroupVersionResource,  # type: ignore[override]
                     object_type: Any = None, models: bool = False) -> GenericInformer[Any]:
        """The metadata informer of ``gvr`` (Go ``ForResource``): wire dicts, or
        :class:`PartialObjectMetadata` models with ``models=True``. A resource the server
        does not serve (yet) is waited for, as in the full factory."""
        if models and object_type is None:
            object_type = PartialObjectMetadata
        informer = self.informer_for(
            gvr, object_type=object_type,
            expected_type=object_type if object_type is not None else PARTIAL_OBJECT_METADATA)
        return GenericInformer(informer, gvr)

    def _no_typed_accessors(self) -> Any:
        """Not available on a metadata factory (use ``for_resource``): raises
        ``AttributeError``."""
        raise AttributeError("a metadata informer factory has for_resource() only, as Go's "
                             "metadatainformer (every resource has the same metadata form)")


# Every group accessor of the full factory (the generated TypedGroups) is refused, not
# only the first four: a typed informer expects its kind, a metadata watch sends
# PartialObjectMetadata.
for _group in [name for name in vars(TypedGroups) if not name.startswith("_")]:
    setattr(MetadataSharedInformerFactory, _group,
            MetadataSharedInformerFactory._no_typed_accessors)
del _group


def new_metadata_shared_informer_factory(
    api_client: Any, default_resync: float,
    options: SharedInformerFactoryOptions | None = None,
) -> MetadataSharedInformerFactory:
    """A metadata informer factory for all namespaces (Go
    ``metadatainformer.NewSharedInformerFactory``; ``options`` as the full factory's)."""
    return MetadataSharedInformerFactory(api_client, default_resync,
                                         options or SharedInformerFactoryOptions())


def new_filtered_metadata_shared_informer_factory(
    api_client: Any, default_resync: float, namespace: str,
    tweak_list_options: TweakListOptionsFunc | None,
) -> MetadataSharedInformerFactory:
    """A factory of metadata-only informers limited to ``namespace`` ("" for all) with
    ``tweak_list_options`` applied to every list and watch (Go
    ``metadatainformer.NewFilteredSharedInformerFactory``)."""
    return new_metadata_shared_informer_factory(
        api_client, default_resync,
        SharedInformerFactoryOptions(namespace=namespace, tweak_list_options=tweak_list_options))


def new_metadata_lister(indexer: Indexer, gvr: GroupVersionResource) -> GenericLister[Any]:
    """A lister over a metadata informer's indexer (Go ``metadatalister.New``): ``list``,
    ``get`` and ``by_namespace`` as every generic lister; a missing object raises the
    API's NotFound error."""
    return new_generic_lister(indexer, gvr.group_resource())
