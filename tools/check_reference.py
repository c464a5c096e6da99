"""Checks the built API reference (``make docs``) against the public line.

The API is what a public module (no underscored part in its dotted name) lists in
``__all__``. The reference must document each such name once, under a public module
that exports it, and nothing else at a module's top level; and no page may show a
reStructuredText role or a lone ``::`` (``tools/docs_roles.py`` turns them into links and
colons). Reads the reference pages' HTML in ``build/site``; prints what is wrong and
exits 1, or prints the counts.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import sys
import warnings
from pathlib import Path

import client_cache

SITE = Path(__file__).resolve().parent.parent / "build" / "site"
RAW = re.compile(r":(?:class|meth|func|mod|data|attr|exc|obj|const):`|<p>::</p>")


def public_modules() -> dict[str, object]:
    names = ["client_cache", *(m.name for m in pkgutil.walk_packages(
        client_cache.__path__, "client_cache.")
        if not any(part.startswith("_") for part in m.name.split(".")))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: importlib.import_module(name) for name in names}


def inventory() -> set[str]:
    """The identifiers the reference pages give a heading (their ``id`` attributes)."""
    return {ident for page in (SITE / "reference").rglob("*.html")
            for ident in re.findall(r'id="(client_cache[\w.]*)"', page.read_text())}


def directives() -> set[str]:
    """The modules the reference pages document (their ``::: module`` lines)."""
    pages = SITE.parent.parent / "docs" / "reference"
    return {name for page in pages.glob("*.md")
            for name in re.findall(r"^::: (\S+)", page.read_text(), re.M)}


def problems() -> tuple[list[str], int]:
    modules = public_modules()
    documented = inventory()
    pages = directives()
    wrong = [f"private module documented: {name}" for name in sorted(pages)
             if any(part.startswith("_") for part in name.split("."))]
    shown: dict[int, list[str]] = {}
    wrong += [f"a class's private or special member documented: {ident}"
              for ident in sorted(documented)
              if ident.rpartition(".")[2].startswith("_") and ident not in modules]
    for ident in documented:
        module_name, _, name = ident.rpartition(".")
        module = modules.get(module_name)
        if ident in modules or module_name not in pages or module is None:
            continue  # a module, a member of a class, or an alias's second anchor
        if name not in getattr(module, "__all__", ()):
            wrong.append(f"documented but not in {module_name}.__all__: {name}")
        else:
            shown.setdefault(id(getattr(module, name)), []).append(ident)
    count = 0
    for module_name, module in modules.items():
        for name in getattr(module, "__all__", ()):
            count += 1
            value = getattr(module, name)
            if getattr(value, "__name__", None) in pages and value is modules.get(
                    value.__name__):
                continue  # an exported submodule, documented by its own page section
            if id(value) not in shown:
                wrong.append(f"not in the reference: {module_name}.{name}")
    for page in sorted((SITE / "reference").rglob("*.html")):
        raw = RAW.findall(page.read_text())
        if raw:
            wrong.append(f"{page.relative_to(SITE)}: {len(raw)} raw role markers")
    return wrong, count


def main() -> int:
    wrong, count = problems()
    for line in sorted(wrong):
        print(line)
    if wrong:
        print(f"{len(wrong)} problem(s) in the API reference", file=sys.stderr)
        return 1
    print(f"API reference: {count} exported names documented, 0 raw role markers, "
          "0 private or special members")
    return 0


if __name__ == "__main__":
    sys.exit(main())
