"""Check the package's import contract (docs/concepts/layout.md):
``python tools/check_layers.py``.

The layers, bottom first; a module may import its own layer and those of a lower rank:

    util  <-  codec, api (apimachinery)  <-  client (rest, discovery, pager, watch stream)
          <-  cache (the tools/cache port at the root, informers, workqueue)
          <-  runtime, leaderelection, record, events, health, metrics, aio, crd, sharding,
              webhooks
          <-  testing

Two layers of one rank do not import each other (codec and api are independent), except
the layers above the cache along :data:`UPPER_EDGES`. Every
import counts: at module level, inside a function, under ``if TYPE_CHECKING:``. On top
of the layers, an import inside a function must not hide a cycle: the module it imports
must not reach back to the importing module through module-level imports.

It reads the source with :mod:`ast` and runs nothing of the package. It prints one line
per broken rule and exits 1 when there is any (``make lint`` runs it; tests/test_layers.py
tests it on the tree and on made-up packages).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "client_cache"
CACHE_SUBPACKAGES = ("informers", "workqueue")
UPPER = ("runtime", "leaderelection", "record", "events", "health", "metrics", "aio", "crd",
         "sharding", "webhooks")
RANKS = {"util": 0, "codec": 1, "api": 1, "client": 2, "cache": 3, **dict.fromkeys(UPPER, 4),
         "testing": 5}

UPPER_EDGES: dict[str, set[str]] = {
    # a controller runs under leader election, records Events (events.k8s.io/v1 or
    # core/v1) and runs async reconciles
    "runtime": {"leaderelection", "record", "events", "aio", "sharding"},
    # the Prometheus exporters of the runtime's and the elector's metrics providers
    "metrics": {"runtime", "leaderelection", "sharding", "webhooks"},
    # the events.k8s.io recorder shares client-go record's broadcaster
    "events": {"record"},
    # label-mode sharding elects the one member that runs the sharder (a Lease election)
    "sharding": {"leaderelection"},
    # the webhook server answers the health probes on its port and decodes custom
    # resource classes; its configurations are written with the runtime's apply
    "webhooks": {"health", "crd", "runtime"},
}
"""The imports allowed between two layers above the cache, and why."""


@dataclass(frozen=True)
class Import:
    """One import of a package module: who, what, where, and whether it runs inside a
    function."""

    source: str
    target: str
    line: int
    in_function: bool


def layer_of(module: str) -> str:
    """The layer of a dotted module name of the package."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in CACHE_SUBPACKAGES:
        return "cache"
    if parts[1] in RANKS:
        return parts[1]
    return "cache"  # a module at the package's root: the client-go port


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path`` in the package directory ``root``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.Module, module: str, is_package: bool) -> Iterator[Import]:
    """Every import of the package's own modules in ``tree``, with whether it sits in a
    function."""
    def visit(node: ast.AST, in_function: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef,
                                                       ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield Import(module, alias.name, child.lineno, inside)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    package = module.split(".")
                    keep = len(package) - child.level + (1 if is_package else 0)
                    base = ".".join(package[:keep] + ([base] if base else []))
                yield Import(module, base, child.lineno, inside)
                for alias in child.names:
                    yield Import(module, f"{base}.{alias.name}", child.lineno, inside)
            yield from visit(child, inside)
    for found in visit(tree, False):
        if found.target == PACKAGE or found.target.startswith(PACKAGE + "."):
            yield found


def collect(root: Path) -> tuple[set[str], list[Import]]:
    """The package's modules under ``root`` and their imports of one another (each
    target resolved to the module it names: ``from a import b`` is ``a.b`` when that is
    a module, else ``a``)."""
    files = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    modules = set(files)
    found: list[Import] = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        resolved: list[Import] = []
        for imp in _imports(tree, module, path.name == "__init__.py"):
            target = imp.target
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != module:
                resolved.append(Import(module, target, imp.line, imp.in_function))
        # ``from a import b`` with b a module is an import of a.b, not also of a
        found += [imp for imp in resolved if not any(
            other.line == imp.line and other.target.startswith(imp.target + ".")
            for other in resolved)]
    return modules, list(dict.fromkeys(found))


def _allowed(source: str, target: str) -> bool:
    a, b = layer_of(source), layer_of(target)
    if a in (b, "testing"):
        return True
    if RANKS[a] == RANKS[b] == RANKS["aio"]:
        return b in UPPER_EDGES.get(a, set())
    return RANKS[b] < RANKS[a]


def _reaches(start: str, goal: str, graph: dict[str, set[str]]) -> bool:
    seen, todo = {start}, [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def violations(root: Path) -> list[str]:
    """Each broken rule of the contract in the package at ``root``, as a line naming the
    file, line and both modules."""
    _, found = collect(root)
    at_top: dict[str, set[str]] = {}
    for imp in found:
        if not imp.in_function:
            at_top.setdefault(imp.source, set()).add(imp.target)
    out: list[str] = []
    for imp in found:
        where = f"{imp.source} (line {imp.line})"
        if not _allowed(imp.source, imp.target):
            out.append(f"{where} imports {imp.target}: layer {layer_of(imp.source)} may not "
                       f"import layer {layer_of(imp.target)}")
        elif imp.in_function and _reaches(imp.target, imp.source, at_top):
            out.append(f"{where} imports {imp.target} inside a function, hiding a cycle: "
                       f"{imp.target} imports {imp.source} back")
    return sorted(set(out))


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parent.parent / PACKAGE
    found = violations(root)
    for line in found:
        print(line)
    print(f"import contract: {len(found)} violation(s) in {root}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
