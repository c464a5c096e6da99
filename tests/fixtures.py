"""Objects and key functions shared by the tests (the upstream fixtures, with our values)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class StoreObject:
    """Upstream's ``testStoreObject{id, val}``: key is ``id``, index ``by_val`` is ``[val]``."""

    id: str
    val: str


def store_key_func(obj: Any) -> str:
    assert isinstance(obj, StoreObject)
    return obj.id


def by_val(obj: Any) -> list[str]:
    return [obj.val]


def pod(name: str, namespace: str = "", labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, rv: str = "1") -> dict[str, Any]:
    """A wire-form pod dict."""
    md: dict[str, Any] = {"name": name, "resourceVersion": rv}
    if namespace:
        md["namespace"] = namespace
    if labels is not None:
        md["labels"] = labels
    if annotations is not None:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md}
