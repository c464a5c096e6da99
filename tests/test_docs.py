"""The README's quick start runs, and the client-go mapping table covers every export."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import client_cache

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
MAPPING = (ROOT / "docs" / "mapping.md").read_text(encoding="utf-8")


def exported_names() -> set[str]:
    names = set(client_cache.__all__)
    for info in pkgutil.walk_packages(client_cache.__path__, "client_cache."):
        # importing __main__ would run it; an underscored module is machinery, not API
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.update(getattr(importlib.import_module(info.name), "__all__", ()))
    return names


def mapping_rows() -> list[tuple[str, str, str]]:
    return re.findall(r"^\| `([^`]+)` \| `([^`]+)` \| (.*?) \|", MAPPING, re.MULTILINE)


def test_quick_start_runs() -> None:
    block = README.split("<!-- quickstart")[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert len(block.splitlines()) <= 25
    result = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                            timeout=60, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"synced default/web-0 [0-9a-f-]{36}\n", result.stdout)


def test_mapping_table_covers_every_exported_name() -> None:
    rows = mapping_rows()
    listed = [name for name, _, _ in rows]
    assert len(rows) == len({(name, module) for name, module, _ in rows}), "a row twice"
    missing = exported_names() - set(listed)
    assert not missing, f"add rows to docs/mapping.md (python tools/gen_mapping.py): {missing}"
    for name, module, go in rows:
        exporter = importlib.import_module(module)
        assert name in getattr(exporter, "__all__", ()), (name, module)
        assert go.strip(), name


def test_mapping_table_is_the_generator_output() -> None:
    spec = importlib.util.spec_from_file_location("gen_mapping", ROOT / "tools" / "gen_mapping.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.render() == MAPPING, "run python tools/gen_mapping.py"


EXAMPLES_PAGE = ROOT / "docs" / "getting-started" / "real-cluster.md"


def test_readme_links_and_examples_exist() -> None:
    """Issue 60: the README is short (a newcomer finishes it) and its links and examples
    exist; every example is listed on the documentation's examples page."""
    assert len(README.splitlines()) <= 200
    for target in re.findall(r"\]\(([^)#:]+)\)", README):
        assert (ROOT / target).exists(), target
    page = EXAMPLES_PAGE.read_text(encoding="utf-8")
    for example in re.findall(r"`(examples/[a-z_]+\.py)`", README + page):
        assert (ROOT / example).is_file(), example
    listed = set(re.findall(r"`examples/([a-z_]+\.py)`", page))
    present = {p.name for p in (ROOT / "examples").glob("[a-z]*.py")}
    assert present <= listed, f"examples missing from {EXAMPLES_PAGE.name}: {present - listed}"


def test_two_objects_of_one_name_have_a_row_each() -> None:
    """The mapping goes by qualified name: client-go's Controller and the runtime's
    (kube-rs's) are two rows, each with its own upstream."""
    rows = {(name, module): go for name, module, go in mapping_rows()}
    assert rows[("Controller", "client_cache")].strip() == "`Controller`"
    assert rows[("Controller", "client_cache.runtime")].strip() == "—"


def test_every_docstring_renders_without_a_raw_role_marker() -> None:
    """The docs build rewrites reStructuredText roles into links (tools/docs_roles.py);
    no docstring of a public module may keep a marker it cannot rewrite."""
    spec = importlib.util.spec_from_file_location("docs_roles", ROOT / "tools" / "docs_roles.py")
    assert spec is not None and spec.loader is not None
    roles = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roles)
    assert roles.markdown(":class:`~client_cache.Store` and :meth:`Title <a.b.c>`::") == (
        '<autoref identifier="client_cache.Store" optional><code>Store</code></autoref> and '
        '<autoref identifier="a.b.c" optional><code>Title</code></autoref>:')
    left: dict[str, list[str]] = {}
    seen = 0
    for info in pkgutil.walk_packages(client_cache.__path__, "client_cache."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for obj in [module, *vars(module).values()]:
            if getattr(obj, "__module__", module.__name__) != module.__name__:
                continue
            for doc in [obj.__doc__, *(getattr(v, "__doc__", None) for v in
                                       vars(obj).values())] if isinstance(obj, type) else [
                                           getattr(obj, "__doc__", None)]:
                if isinstance(doc, str):
                    seen += 1
                    if roles.markers_left(roles.markdown(doc)):
                        left.setdefault(info.name, []).append(doc[:60])
    assert seen > 500
    assert left == {}
