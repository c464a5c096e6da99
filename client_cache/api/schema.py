"""API group/version/resource/kind identifiers (apimachinery ``runtime/schema``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["APPROVAL_ANNOTATION", "GroupResource", "GroupVersionKind", "GroupVersionResource",
           "protected_group"]

APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
"""What a CustomResourceDefinition in a protected group must carry (any value) for the
API server to accept it (KEP 1111, apiextensions' ``KubeAPIApprovedAnnotation``)."""


def protected_group(group: str) -> bool:
    """Whether ``group`` is reserved to the Kubernetes project: ``k8s.io``,
    ``kubernetes.io`` and their subgroups (a CRD there needs :data:`APPROVAL_ANNOTATION`)."""
    return any(group == root or group.endswith("." + root)
               for root in ("k8s.io", "kubernetes.io"))


@dataclass(frozen=True, slots=True)
class GroupResource:
    """A resource in an API group; ``str()`` is ``resource.group`` (or ``resource`` for the
    core group)."""

    group: str = ""
    resource: str = ""

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True, slots=True)
class GroupVersionResource:
    """A resource at an API version (``apps/v1, Resource=deployments``)."""

    group: str = ""
    version: str = ""
    resource: str = ""

    def group_resource(self) -> GroupResource:
        """The group and resource, without the version (Go ``GroupResource``)."""
        return GroupResource(self.group, self.resource)

    def group_version(self) -> str:
        """``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def label(self) -> str:
        """The resource as thread names and log lines show it: the plural for the core
        group (``pods``), ``group/version/plural`` otherwise (``apps/v1/deployments``)."""
        if not self.group:
            return self.resource if self.version == "v1" else f"{self.version}/{self.resource}"
        return f"{self.group}/{self.version}/{self.resource}"

    def __str__(self) -> str:
        return f"{self.group}/{self.version}, Resource={self.resource}"


@dataclass(frozen=True, slots=True)
class GroupVersionKind:
    """A kind at an API version (``mygroup/v1, Kind=MyKind``)."""

    group: str = ""
    version: str = ""
    kind: str = ""

    def group_version(self) -> str:
        """``group/version`` (``version`` for the core group) (Go
        ``GroupVersion().String()``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.group}/{self.version}, Kind={self.kind}"
