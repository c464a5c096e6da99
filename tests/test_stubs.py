"""Every native module has a .pyi beside it that names exactly what the built module has
(its functions, constants and classes, and each class's methods and attributes), so
mypy --strict checks every call into it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

from client_cache.util import _native as native


def stub_of(name: str) -> Path:
    return native.PACKAGE_DIR / (name.replace(".", "/") + ".pyi")


def public(names: object) -> set[str]:
    return {n for n in names if not n.startswith("_")}  # type: ignore[attr-defined]


def stub_names(tree: ast.Module | ast.ClassDef) -> set[str]:
    """The names a stub (or a class of it) declares."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return public(found)


def built(name: str) -> ModuleType:
    module = native.load(name)
    if module is None:
        pytest.skip(f"client_cache.{name} is not built or is turned off here")
    assert isinstance(module, ModuleType)
    return module


@pytest.mark.parametrize("name", sorted(native.SOURCES))
def test_each_native_module_has_a_stub_naming_what_it_has(name: str) -> None:
    module = built(name)
    tree = ast.parse(stub_of(name).read_text())
    assert stub_names(tree) == public(dir(module))
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            cls = getattr(module, node.name)
            assert stub_names(node) - {"__init__"} == public(dir(cls)), node.name


def test_a_stub_missing_a_name_is_caught() -> None:
    module = built("codec._codec")
    tree = ast.parse(stub_of("codec._codec").read_text())
    tree.body = [n for n in tree.body
                 if not (isinstance(n, ast.FunctionDef) and n.name == "walk")]
    assert public(dir(module)) - stub_names(tree) == {"walk"}


def test_the_stubs_ship_with_the_package() -> None:
    """pyproject's package data lists every stub (a wheel without them types nothing)."""
    text = (native.PACKAGE_DIR.parent / "pyproject.toml").read_text()
    for name in native.SOURCES:
        folder = name.split(".")[0]
        assert f'"{folder}/*.pyi"' in text, name
        assert stub_of(name).exists()


def test_every_native_module_is_listed() -> None:
    """No extension module in the tree lacks its entry in native.SOURCES (and so its
    stub and its hash check)."""
    found = {str(p.relative_to(native.PACKAGE_DIR)).split(".")[0].replace("/", ".")
             for p in native.PACKAGE_DIR.rglob("*.so")}
    assert found <= set(native.SOURCES)
    importlib.import_module("client_cache")
