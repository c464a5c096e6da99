"""The resources the embedded API server serves: what one is (its group, version, names
and scope), the built-in ones, and the resource a CustomResourceDefinition adds.

Go has no one type for this; it is what the real server's discovery documents
(``APIResource``) and a CRD's ``spec.names`` say of a resource.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from client_cache.api.schema import APPROVAL_ANNOTATION, protected_group
from client_cache.errors import ApiStatusError

__all__ = ["BUILTIN_RESOURCES", "CRD_KEY", "ResourceType",
           "apply_defaults", "crd_resource_type", "prune"]


@dataclass(frozen=True)
class ResourceType:
    """One served resource."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    #: A custom resource's ``openAPIV3Schema`` (its storage version's), whose defaults
    #: the server applies to what it stores; None for the built-in kinds.
    schema: Any = field(default=None, compare=False, hash=False, repr=False)

    @property
    def api_version(self) -> str:
        """``group/version`` (``version`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        """The singular name (the kind in lower case)."""
        return self.kind.lower()

    @property
    def key(self) -> tuple[str, str]:
        """``(group, plural)``, the resource's key in the store."""
        return self.group, self.plural

    def discovery(self) -> dict[str, Any]:
        """The resource's entry in an API discovery document."""
        return {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch",
                      "update", "watch"],
            "shortNames": list(self.short_names),
        }


BUILTIN_RESOURCES = (
    ResourceType("", "v1", "pods", "Pod", True, ("po",)),
    ResourceType("", "v1", "services", "Service", True, ("svc",)),
    ResourceType("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    ResourceType("", "v1", "secrets", "Secret", True),
    ResourceType("", "v1", "namespaces", "Namespace", False, ("ns",)),
    ResourceType("", "v1", "nodes", "Node", False, ("no",)),
    ResourceType("", "v1", "events", "Event", True, ("ev",)),
    # stored apart from core/v1 Events here; one storage with two views on a real server
    ResourceType("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
    ResourceType("apps", "v1", "deployments", "Deployment", True, ("deploy",)),
    ResourceType("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",)),
    ResourceType("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",)),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",)),
    ResourceType("apps", "v1", "controllerrevisions", "ControllerRevision", True),
    ResourceType("batch", "v1", "jobs", "Job", True),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
    # served as by a server with --runtime-config=coordination.k8s.io/v1beta1=true
    ResourceType("coordination.k8s.io", "v1beta1", "leasecandidates", "LeaseCandidate", True),
    ResourceType("", "v1", "podtemplates", "PodTemplate", True),
    ResourceType("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                 "MutatingWebhookConfiguration", False),
    ResourceType("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                 "ValidatingWebhookConfiguration", False),
    ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                 "CustomResourceDefinition", False, ("crd", "crds")),
)

#: ``(group, plural)`` of CustomResourceDefinitions, whose writes register a resource.
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")


def crd_resource_type(crd: dict[str, Any]) -> ResourceType:
    """The resource a CustomResourceDefinition defines (its storage version), or 422
    Invalid as the real server answers a definition without group, names or versions, or
    whose name is not ``<plural>.<group>``."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural, kind = spec.get("group", ""), names.get("plural", ""), names.get("kind", "")
    versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
    storage = [v["name"] for v in versions if v.get("storage") and v.get("name")]
    name = (crd.get("metadata") or {}).get("name", "")
    if not (group and plural and kind and storage):
        raise ApiStatusError(422, "Invalid", f"CustomResourceDefinition.apiextensions.k8s.io "
                             f"\"{name}\" is invalid: spec needs group, names.plural, "
                             "names.kind and one storage version")
    if name != f"{plural}.{group}":
        raise ApiStatusError(422, "Invalid", f"CustomResourceDefinition.apiextensions.k8s.io "
                             f"\"{name}\" is invalid: metadata.name: Invalid value: "
                             f"\"{name}\": must be spec.names.plural+\".\"+spec.group")
    annotations = (crd.get("metadata") or {}).get("annotations") or {}
    if protected_group(group) and not annotations.get(APPROVAL_ANNOTATION):
        message = (f"Required value: protected groups must have approval annotation "
                   f"\"{APPROVAL_ANNOTATION}\", see "
                   "https://github.com/kubernetes/enhancements/pull/1111")
        field = f"metadata.annotations[{APPROVAL_ANNOTATION}]"
        raise ApiStatusError(
            422, "Invalid", f"CustomResourceDefinition.apiextensions.k8s.io \"{name}\" is "
            f"invalid: {field}: {message}",
            {"name": name, "group": "apiextensions.k8s.io",
             "kind": "CustomResourceDefinition",
             "causes": [{"reason": "FieldValueRequired", "message": message,
                         "field": field}]})
    stored = next(v for v in versions if v.get("name") == storage[0])
    return ResourceType(group, storage[0], plural, kind, spec.get("scope") != "Cluster",
                        tuple(names.get("shortNames") or ()),
                        (stored.get("schema") or {}).get("openAPIV3Schema"))


_ROOT_KEPT = ("apiVersion", "kind", "metadata")


def prune(schema: Any, value: Any, root: bool = True) -> None:
    """Drop, in place, every member ``value`` holds that its structural ``schema`` does
    not declare, as the real server prunes a custom resource before defaulting and
    validating it: an object node keeps its ``properties`` (all of them under
    ``x-kubernetes-preserve-unknown-fields``, every key under ``additionalProperties``);
    an embedded resource and the root keep ``apiVersion``, ``kind`` and ``metadata``;
    arrays are pruned item by item."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        keep_all = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or \
            extra is True or isinstance(extra, dict)
        embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
        for key in list(value):
            if embedded and key in _ROOT_KEPT:
                continue  # the server's own members: kept whole, never pruned into
            if key in properties:
                prune(properties[key], value[key], False)
            elif isinstance(extra, dict):
                prune(extra, value[key], False)
            elif not keep_all:
                del value[key]
    elif isinstance(value, list):
        for item in value:
            prune(schema.get("items"), item, False)


def apply_defaults(schema: Any, value: Any) -> None:
    """Fill in, in place, the ``default`` of every property ``value`` leaves out, down
    through the objects and arrays it has, as the real server defaults a custom resource
    from its structural schema before storing it."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        for name, prop in (schema.get("properties") or {}).items():
            if name not in value and isinstance(prop, dict) and "default" in prop:
                value[name] = copy.deepcopy(prop["default"])
            if name in value:
                apply_defaults(prop, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for item in value.values():
                apply_defaults(extra, item)
    elif isinstance(value, list):
        for item in value:
            apply_defaults(schema.get("items"), item)
