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


@dataclass(frozen=True)
class FifoObject:
    """Upstream's ``testFifoObject{name, val}``: key is ``name``."""

    name: str
    val: Any


def mk(name: str, val: Any) -> FifoObject:
    return FifoObject(name, val)


def fifo_key(obj: Any) -> str:
    if not isinstance(obj, FifoObject):
        raise TypeError(f"not a FifoObject: {obj!r}")
    return obj.name


class LiteralListerGetter:
    """Upstream's ``literalListerGetter``: known objects from a function returning a list."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def list_keys(self) -> list[str]:
        return [o.name for o in self._source()]

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        for obj in self._source():
            if obj.name == key:
                return obj, True
        return None, False


def known(*objs: FifoObject) -> LiteralListerGetter:
    """``K(objs...)``."""
    return LiteralListerGetter(lambda: list(objs))


def pop2(queue: Any, timeout: float = 5.0) -> tuple[Any, bool]:
    """Pop once; return ``(item, is_in_initial_list)``."""
    seen: list[bool] = []
    item = queue.pop(lambda obj, initial: seen.append(initial), timeout=timeout)
    return item, seen[0]


def newest(deltas: Any) -> Any:
    """``testPop``'s projection: the newest object of popped Deltas."""
    return deltas.newest().object
