"""Every public class, function and method of the package says what it does: a docstring
of its own or inherited, and more than a bare "Go ``Name``"."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from typing import Any

import client_cache

GO_NAME_ONLY = re.compile(r"^\(?(Go|upstream)\s+``[^`]+``\)?\.?$", re.IGNORECASE)


def public_members() -> Iterator[tuple[str, Any, str | None]]:
    """(qualified name, object, docstring) of every public class, function, method and
    property defined in the package (``__main__`` modules left out: they run on
    import)."""
    seen: set[int] = set()
    for info in pkgutil.walk_packages(client_cache.__path__, "client_cache."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{module.__name__}.{name}", obj, inspect.getdoc(obj)
            if inspect.isclass(obj):
                yield from methods(f"{module.__name__}.{name}", obj)


def methods(owner: str, cls: type) -> Iterator[tuple[str, Any, str | None]]:
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) \
        else set()
    for name, member in vars(cls).items():
        if name.startswith("_") or name in fields:
            continue
        if isinstance(member, property):
            yield f"{owner}.{name}", member, member.__doc__
            continue
        function = getattr(member, "__func__", member)
        if inspect.isfunction(function):
            yield f"{owner}.{name}", member, inspect.getdoc(getattr(cls, name))


def test_every_public_name_has_a_docstring() -> None:
    members = list(public_members())
    assert len(members) > 1000  # the walk found the package
    missing = sorted(name for name, _, doc in members if not doc or not doc.strip())
    assert not missing, f"{len(missing)} without a docstring: {missing}"


def test_no_docstring_is_only_a_go_name() -> None:
    bare = sorted(name for name, _, doc in public_members()
                  if doc and GO_NAME_ONLY.match(doc.strip()))
    assert not bare, f"say what it does, then the Go name: {bare}"
