"""Conditions for :func:`~client_cache.informers.wait.await_condition` (kube-rs
``runtime::wait::conditions``). Each takes the object (a wire dict, a model or a struct)
or None when it does not exist, and answers whether it is as wanted; a plain function
or lambda of the same shape is a condition too, and ``all_of``/``any_of`` combine them
(kube-rs ``Condition::and``/``or``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from client_cache.api import meta

__all__ = ["Condition", "all_of", "any_of", "exists", "has_condition", "is_crd_established",
           "is_deleted", "is_job_completed", "is_pod_running"]

Condition = Callable[[Any], bool]
"""``condition(obj_or_None) -> bool`` (kube-rs ``Condition``)."""


def _get(obj: Any, *path: str) -> Any:
    """The field at ``path`` (camelCase names; a model's snake_case attributes too), None
    where it is missing."""
    for name in path:
        if obj is None:
            return None
        if isinstance(obj, Mapping):
            obj = obj.get(name)
        else:
            snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name)
            obj = getattr(obj, snake, getattr(obj, name, None))
    return obj


def exists() -> Condition:
    """The object exists (kube-rs: ``|obj| obj.is_some()``)."""
    return lambda obj: obj is not None


def is_deleted(uid: str = "") -> Condition:
    """The object is gone; with ``uid``, also when the name now holds another object
    (kube-rs ``is_deleted``)."""
    return lambda obj: obj is None or (bool(uid) and meta.accessor(obj).uid != uid)


def has_condition(type_: str, status: str = "True") -> Condition:
    """``status.conditions`` has an entry of ``type_`` with ``status`` (what ``kubectl
    wait --for=condition=Ready`` checks)."""
    def check(obj: Any) -> bool:
        for entry in _get(obj, "status", "conditions") or ():
            if _get(entry, "type") == type_ and _get(entry, "status") == status:
                return True
        return False
    return check


def is_pod_running() -> Condition:
    """A Pod's ``status.phase`` is Running (kube-rs ``is_pod_running``)."""
    return lambda obj: _get(obj, "status", "phase") == "Running"


def is_job_completed() -> Condition:
    """A Job has its Complete condition (kube-rs ``is_job_completed``)."""
    return has_condition("Complete")


def is_crd_established() -> Condition:
    """A CustomResourceDefinition is Established (kube-rs ``is_crd_established``)."""
    return has_condition("Established")


def all_of(*conditions: Condition) -> Condition:
    """Every one of ``conditions`` holds."""
    return lambda obj: all(condition(obj) for condition in conditions)


def any_of(*conditions: Condition) -> Condition:
    """At least one of ``conditions`` holds."""
    return lambda obj: any(condition(obj) for condition in conditions)
