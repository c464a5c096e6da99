"""Object names as values (Go ``tools/cache/object-names.go``).

:class:`ObjectName` is a ``(namespace, name)`` pair whose ``str()`` is exactly the key
:func:`~client_cache.store.meta_namespace_key_func` computes: ``"ns/name"``, or ``"name"``
when the namespace is empty. This differs from :class:`NamespacedName`, whose ``str()``
always has the ``/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from client_cache.api import meta
from client_cache.store import DeletedFinalStateUnknown, split_meta_namespace_key

__all__ = [
    "NamespacedName",
    "ObjectName",
    "deletion_handling_object_to_name",
    "meta_object_to_name",
    "namespaced_name_as_object_name",
    "new_object_name",
    "object_to_name",
    "parse_object_name",
]


@dataclass(frozen=True, slots=True)
class NamespacedName:
    """apimachinery ``types.NamespacedName``: ``str()`` is always ``"namespace/name"``."""

    namespace: str = ""
    name: str = ""

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True, order=True)
class ObjectName:
    """The namespace and name of an object; ``str()`` is its cache key."""

    namespace: str = ""
    name: str = ""

    def parts(self) -> tuple[str, str]:
        """``(namespace, name)``."""
        return self.namespace, self.name

    def as_namespaced_name(self) -> NamespacedName:
        """The same name as a :class:`NamespacedName` (Go ``AsNamespacedName``)."""
        return NamespacedName(self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def new_object_name(namespace: str, name: str) -> ObjectName:
    """``ObjectName(namespace, name)`` (Go ``NewObjectName``)."""
    return ObjectName(namespace, name)


def parse_object_name(text: str) -> ObjectName:
    """Parse ``"name"`` or ``"ns/name"``; more than one ``/`` raises
    :class:`~client_cache.errors.InvalidKeyError` (a leading ``/`` is dropped: ``"/x"``
    is ``ObjectName("", "x")``)."""
    namespace, name = split_meta_namespace_key(text)
    return ObjectName(namespace, name)


def namespaced_name_as_object_name(nn: NamespacedName) -> ObjectName:
    """The :class:`ObjectName` of a :class:`NamespacedName` (Go
    ``NamespacedNameAsObjectName``)."""
    return ObjectName(nn.namespace, nn.name)


def object_to_name(obj: Any) -> ObjectName:
    """The name of an object with metadata; raises
    :class:`~client_cache.errors.MetaAccessError` otherwise."""
    namespace, name = meta.namespace_and_name(obj)
    return ObjectName(namespace, name)


def meta_object_to_name(obj: Any) -> ObjectName:
    """Same as :func:`object_to_name`, for an object known to have metadata."""
    return object_to_name(obj)


def deletion_handling_object_to_name(obj: Any) -> ObjectName:
    """Like :func:`object_to_name`, but a tombstone gives the name parsed from its key."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return parse_object_name(obj.key)
    return object_to_name(obj)
