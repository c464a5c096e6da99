"""Every Python block in the README and the docs runs as written, as a standalone script
(on the embedded server it starts itself), or says it is a fragment: the word
``fragment`` on its opening fence line or on the line just before it, with what it needs
(``<!-- fragment: needs api and FOOS from the block above -->``). A block that is one
``--8<-- "path"`` line (pymdownx.snippets) runs the file it includes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```python[^\n]*\n(?P<body>.*?)^```", re.M | re.S)
SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"\s*$')


def blocks() -> list[tuple[str, str, bool]]:
    """(page:line, code, fragment) of every Python block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            fence = text[match.start():text.index("\n", match.start())]
            line = text.count("\n", 0, match.start()) + 1
            body = match["body"]
            snippet = SNIPPET.match(body.strip())
            if snippet:
                body = (ROOT / snippet["path"]).read_text(encoding="utf-8")
            found.append((f"{page.relative_to(ROOT)}:{line}", body,
                          "fragment" in fence or "fragment" in before))
    return found


BLOCKS = blocks()
RUNNABLE = [(where, code) for where, code, fragment in BLOCKS if not fragment]


def test_the_pages_have_blocks_and_most_of_a_first_reader_s_run() -> None:
    assert len(BLOCKS) >= 15
    first = {where.split(":")[0] for where, _ in RUNNABLE}
    assert {"README.md", "docs/getting-started/first-controller.md",
            "docs/getting-started/first-informer.md"} <= first


def test_a_fragment_says_what_it_needs() -> None:
    for page in PAGES:
        for marker in re.findall(r"<!--\s*fragment\b(.*?)-->", page.read_text(encoding="utf-8"),
                                 re.S):
            assert "needs" in marker or "shows" in marker, (page, marker)


@pytest.mark.parametrize(("where", "code"), RUNNABLE, ids=[w for w, _ in RUNNABLE])
def test_the_block_runs_as_written(where: str, code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 0, f"{where}:\n{done.stderr[-3000:]}"


ANY_FENCE = re.compile(r"^```[^\n]*\n(?P<body>.*?)^```", re.M | re.S)
COLUMNS = 80
"""What the site's content column shows of a code line without scrolling (Material's
default width at a laptop's 1280 px): a longer line hides its end, usually a comment."""


def test_code_lines_fit_the_content_column() -> None:
    """Every line of every code block, and of every file a block includes, is at most
    80 characters, so that no comment is cut off in the rendered site."""
    long = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in ANY_FENCE.finditer(text):
            body = match["body"]
            snippet = SNIPPET.match(body.strip())
            source = ROOT / snippet["path"] if snippet else page
            if snippet:
                body = source.read_text(encoding="utf-8")
            first = 1 if snippet else text.count("\n", 0, match.start()) + 2
            long += [f"{source.relative_to(ROOT)}:{first + n}: {len(line)} columns"
                     for n, line in enumerate(body.splitlines()) if len(line) > COLUMNS]
    assert not long, "\n".join(long)
