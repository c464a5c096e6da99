"""What the generated typed accessors (:mod:`client_cache.informers.typed`) are built
on: one class per API group version whose methods hand out the factory's informers.

Names follow client-go's (``config_maps()`` for Go ``ConfigMaps()``); the REST plural
(``configmaps``) is accepted too, through :meth:`GroupVersion.resource` and as an
attribute, so code written before the generated names keeps working. An unknown name
raises ``AttributeError`` listing the valid ones, and ``dir()`` shows them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from client_cache.api.schema import GroupResource, GroupVersionResource
from client_cache.errors import ClientCacheError
from client_cache.informers.generic import GenericInformer

if TYPE_CHECKING:
    from client_cache.informers.factory import SharedInformerFactory

__all__ = ["GroupVersion", "ModelNotInstalledError", "TypedResource", "builtin_group",
           "builtin_kind"]

# The kind of a kubernetes.client model name: V1Pod -> Pod, CoreV1Event -> Event.
_KIND_OF_MODEL = re.compile(r"^(?:[A-Z][a-z]+)?V\d+(?:(?:alpha|beta)\d+)?(?=[A-Z])")


@dataclass(frozen=True)
class TypedResource:
    """One resource of a group version: its REST plural, its lister's singular (Go's
    NotFound names it), the ``kubernetes.client`` model, whether it is namespaced."""

    plural: str
    singular: str
    model: str
    namespaced: bool


class ModelNotInstalledError(ClientCacheError, LookupError):
    """``models=True`` for a resource whose model class the installed ``kubernetes``
    package lacks (it is older than the one the accessors were generated from)."""


class GroupVersion:
    """Base of the generated ``<Group><Version>`` classes."""

    GROUP: ClassVar[str] = ""
    VERSION: ClassVar[str] = ""
    GENERATED_FROM: ClassVar[str] = ""
    """The ``kubernetes`` version whose models the generated class was made from."""
    RESOURCES: ClassVar[dict[str, TypedResource]] = {}

    def __init__(self, factory: SharedInformerFactory) -> None:
        self._factory = factory

    def informer(self, name: str, object_type: Any = None,
                 models: bool = False) -> GenericInformer[Any]:
        """The informer of resource ``name`` (an accessor name or the REST plural);
        ``models=True`` decodes into the ``kubernetes.client`` model (e.g. ``V1Pod``),
        ``object_type`` names a type explicitly; the default keeps wire dicts."""
        known = self._lookup(name)
        if models and object_type is None:
            import kubernetes  # noqa: PLC0415 - only when asked
            import kubernetes.client as models_module  # noqa: PLC0415

            object_type = getattr(models_module, known.model, None)
            if object_type is None:
                raise ModelNotInstalledError(
                    f"{known.model} (for {self.GROUP or 'core'}/{self.VERSION} "
                    f"{known.plural}) is not in the installed kubernetes package "
                    f"({kubernetes.__version__}); the typed accessors were generated from "
                    f"kubernetes {self.GENERATED_FROM}, which has it: install "
                    f"kubernetes>={self.GENERATED_FROM}, or read wire dicts "
                    "(models=False)")
        gvr = GroupVersionResource(self.GROUP, self.VERSION, known.plural)
        # Like Go's typed informers, whose reflector rejects watch objects of another
        # type: with wire dicts, the reflector checks apiVersion and kind.
        api_version = f"{self.GROUP}/{self.VERSION}" if self.GROUP else self.VERSION
        expected = object_type if object_type is not None else {
            "apiVersion": api_version, "kind": _KIND_OF_MODEL.sub("", known.model)}
        informer = self._factory.informer_for(gvr, object_type=object_type,
                                              expected_type=expected)
        return GenericInformer(informer, gvr, GroupResource(self.GROUP, known.singular))

    resource = informer
    """:meth:`informer` under the name the hand-written accessors had."""

    def _lookup(self, name: str) -> TypedResource:
        known = self.RESOURCES.get(name)
        if known is None:
            by_plural = {r.plural: r for r in self.RESOURCES.values()}
            known = by_plural.get(name)
        if known is None:
            where = f"{self.GROUP or 'core'}/{self.VERSION}"
            raise AttributeError(f"no typed informer for {where} {name!r}; valid: "
                                 f"{', '.join(sorted(self.RESOURCES))}")
        return known

    if not TYPE_CHECKING:  # at run time only: for mypy a misspelt accessor stays an error
        def __getattr__(self, name: str) -> Callable[..., GenericInformer]:
            """A REST plural (``configmaps``) as an alias of its accessor; any other name
            raises ``AttributeError`` listing the valid ones."""
            if name.startswith("_"):
                raise AttributeError(name)
            self._lookup(name)  # raises, listing the valid names
            return lambda object_type=None, models=False: self.informer(
                name, object_type, models)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.RESOURCES))


def _group_versions() -> list[type[GroupVersion]]:
    """The generated ``<Group><Version>`` classes (:mod:`client_cache.informers.typed`,
    imported with the factory)."""
    return GroupVersion.__subclasses__()


def builtin_group(group: str) -> bool:
    """Whether ``group`` is a built-in API group this package has accessors for (``""``,
    ``apps``, ``coordination.k8s.io``...): one no CustomResourceDefinition can add a
    resource to."""
    return any(group == cls.GROUP for cls in _group_versions())


def builtin_kind(group: str, version: str, plural: str) -> tuple[str, bool] | None:
    """``(kind, namespaced)`` of a built-in resource from the generated tables, without
    asking a server; None for any other (a custom resource: discovery tells)."""
    for cls in _group_versions():
        if group == cls.GROUP and version == cls.VERSION:
            for known in cls.RESOURCES.values():
                if known.plural == plural:
                    return _KIND_OF_MODEL.sub("", known.model), known.namespaced
    return None
