"""References to objects and owner references (kube-rs ``ObjectRef``, apimachinery
``metav1.OwnerReference`` helpers, controller-runtime ``SetControllerReference``).

An :class:`ObjectRef` names one object: its kind (with apiVersion), namespace and name, and
optionally its uid. Two refs are equal when apiVersion, kind, namespace and name are (the
uid is carried along but not compared, as kube-rs compares refs without their ``extra``),
so a ref is a dict key and a work-queue item.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from client_cache.api import meta
from client_cache.errors import ClientCacheError

__all__ = [
    "ObjectRef",
    "OwnerConflictError",
    "controller_owner_ref",
    "get_controller_of",
    "is_controlled_by",
    "object_ref",
    "set_controller_reference",
]


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """One object by name (kube-rs ``ObjectRef``). ``ObjectRef("web").within("default")``
    reads as kube-rs's ``ObjectRef::new("web").within("default")``; a ref a mapper returns
    without kind is taken as a ref to the controller's primary kind."""

    name: str
    namespace: str = ""
    kind: str = ""
    api_version: str = ""
    uid: str = field(default="", compare=False)

    def within(self, namespace: str) -> ObjectRef:
        """This ref in ``namespace`` (kube-rs ``ObjectRef::within``)."""
        return ObjectRef(self.name, namespace, self.kind, self.api_version, self.uid)

    def key(self) -> str:
        """The cache key of the object: ``namespace/name`` or ``name``."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def __str__(self) -> str:
        kind = f"{self.kind}." + self.api_version if self.kind and self.api_version \
            else self.kind
        return f"{kind + ' ' if kind else ''}{self.key()}"


def object_ref(obj: Any, kind: str = "", api_version: str = "") -> ObjectRef:
    """The ref of ``obj`` (a wire dict, a model or a dynamic object). Its kind and
    apiVersion are taken from the object when it carries them (list items from a server
    usually do not), else from ``kind`` and ``api_version`` (kube-rs ``ObjectRef::from_obj``)."""
    md = meta.accessor(obj)
    own_version, own_kind = meta.type_meta(obj)
    return ObjectRef(md.name, md.namespace, own_kind or kind, own_version or api_version,
                     md.uid)


def controller_owner_ref(owner: Any, kind: str = "", api_version: str = "",
                         block_owner_deletion: bool | None = True) -> dict[str, Any]:
    """The ``ownerReferences`` entry (wire form) that makes ``owner`` the controller of
    another object. ``kind`` and ``api_version`` are needed when ``owner`` does not carry
    them (a cached LIST item does not: :meth:`Controller.owner_ref
    <client_cache.runtime.Controller.owner_ref>` fills in the controller's own). Raises
    ``ValueError`` when the owner has no uid (it was never stored by a server) or no kind
    is known.

    ``block_owner_deletion``: True (the default) writes ``blockOwnerDeletion: true``, the
    shape of apimachinery's ``metav1.NewControllerRef`` and controller-runtime's
    ``SetControllerReference``: a foreground deletion of the owner waits for this object.
    Under the ``OwnerReferencesPermissionEnforcement`` admission plugin (OpenShift enables
    it) writing it needs ``update`` on the owner's ``finalizers`` subresource, which a
    controller's RBAC often lacks (the write is refused with 403). None leaves the field
    out, kube-rs's ``Resource::controller_owner_ref`` shape, which needs no more than
    write access to the object itself; False writes ``false``."""
    ref = object_ref(owner, kind, api_version)
    if not ref.uid:
        raise ValueError(f"{meta.describe(owner)} has no uid: only a stored object can own")
    if not ref.kind or not ref.api_version:
        raise ValueError(f"{meta.describe(owner)}: kind and apiVersion are needed")
    entry: dict[str, Any] = {"apiVersion": ref.api_version, "kind": ref.kind,
                             "name": ref.name, "uid": ref.uid, "controller": True}
    if block_owner_deletion is not None:
        entry["blockOwnerDeletion"] = block_owner_deletion
    return entry


def get_controller_of(obj: Any) -> dict[str, Any] | None:
    """The owner reference (wire form) of ``obj``'s controller, or None (apimachinery
    ``metav1.GetControllerOf``)."""
    for ref in meta.accessor(obj).owner_references:
        if ref.controller:
            entry = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name,
                     "uid": ref.uid, "controller": True}
            if ref.block_owner_deletion is not None:
                entry["blockOwnerDeletion"] = ref.block_owner_deletion
            return entry
    return None


def is_controlled_by(obj: Any, owner: Any) -> bool:
    """Whether ``owner`` is ``obj``'s controller, by uid (apimachinery
    ``metav1.IsControlledBy``)."""
    controller = get_controller_of(obj)
    uid = meta.accessor(owner).uid
    return controller is not None and bool(uid) and controller["uid"] == uid


class OwnerConflictError(ClientCacheError, ValueError):
    """The object already has another controller (controller-runtime
    ``AlreadyOwnedError``)."""

    def __init__(self, obj: Any, current: Mapping[str, Any]) -> None:
        self.current = dict(current)
        super().__init__(f"{meta.describe(obj)} is already controlled by "
                         f"{current.get('kind')} {current.get('name')}")


def set_controller_reference(owner: Any, child: dict[str, Any], kind: str = "",
                             api_version: str = "",
                             block_owner_deletion: bool | None = True) -> dict[str, Any]:
    """Make ``owner`` the controller of ``child`` (a wire dict, changed in place and
    returned; build it before creating or updating it): replaces an entry for the same
    owner, adds one otherwise (controller-runtime ``SetControllerReference``; the entry as
    :func:`controller_owner_ref` makes it, ``block_owner_deletion`` included). Raises
    :class:`OwnerConflictError` when another object is already its controller."""
    entry = controller_owner_ref(owner, kind, api_version, block_owner_deletion)
    refs = child.setdefault("metadata", {}).setdefault("ownerReferences", [])
    for current in refs:
        if current.get("controller") and current.get("uid") != entry["uid"]:
            raise OwnerConflictError(child, current)
    kept = [r for r in refs if r.get("uid") != entry["uid"]]
    child["metadata"]["ownerReferences"] = [*kept, entry]
    return child
