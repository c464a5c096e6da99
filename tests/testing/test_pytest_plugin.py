"""The pytest plugin for users' controllers: the testing guide's own tests
(examples/testing) pass as a user runs them, and a controller that does not stop fails
its test."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from client_cache.testing.envtest_build import find_binaries
from client_cache.testing.pytest_plugin import RunningController

GUIDE = Path(__file__).resolve().parents[2] / "examples" / "testing"


def test_the_guide_s_tests_pass_on_both_servers() -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-rs", str(GUIDE)], capture_output=True, text=True, timeout=300,
                          cwd=GUIDE, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    expected = "3 passed" if find_binaries() is not None else "2 passed, 1 skipped"
    assert expected in done.stdout.splitlines()[-1], done.stdout[-3000:]


class _Stubborn:
    """A controller whose run ignores its stop until released."""

    name = "stubborn"

    def __init__(self) -> None:
        self.release = threading.Event()

    def run(self, reconcile: Any, error_policy: Any, data: Any, *,
            stop: threading.Event) -> str:
        self.release.wait()
        return "done"


class _Failing:
    name = "failing"

    def run(self, reconcile: Any, error_policy: Any, data: Any, *,
            stop: threading.Event) -> str:
        raise RuntimeError("run broke")


def test_a_controller_still_running_after_its_stop_fails_the_test() -> None:
    stubborn = _Stubborn()
    running = RunningController(stubborn, lambda obj, ctx: None, None, None)
    with pytest.raises(AssertionError, match=r"still running 0\.05 s after its stop"):
        running.stop(within=0.05)
    stubborn.release.set()
    assert running.stop() == "done"
    assert running.thread.name == "test-controller-stubborn" and running.thread.daemon


def test_what_run_raised_is_raised_by_stop() -> None:
    running = RunningController(_Failing(), lambda obj, ctx: None, None, None)
    with pytest.raises(RuntimeError, match="run broke"):
        running.stop()
