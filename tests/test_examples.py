"""The examples run as documented (each in its own interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run(*args: str) -> str:
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                            timeout=60, check=True)
    return result.stdout


def test_indexer_and_lister_example() -> None:
    out = run(str(EXAMPLES / "indexer_and_lister.py"))
    assert "on node-0: ['blog/web-0', 'shop/web-3']" in out
    assert 'lookup failed: 404 pod "db-0" not found' in out


def test_workqueue_controller_example() -> None:
    out = run(str(EXAMPLES / "workqueue_controller.py"), "--seconds", "1.5", "--fail-rate", "0")
    assert "caches synced; starting workers" in out
    assert "pod default/web-4 is gone" in out
    assert "processed" in out.splitlines()[-1]
