"""util/runtime.py: handle_error and handle_crash."""

from __future__ import annotations

import logging
import time

import pytest
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import ProtocolError

from client_cache.runtime import ReconcileError, TerminalError, is_panic
from client_cache.util import runtime


@pytest.fixture(autouse=True)
def _reset() -> None:
    runtime.reset_for_tests()


def test_handle_error_logs_and_rate_limits(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="client_cache"):
        start = time.monotonic()
        for i in range(20):
            runtime.handle_error(RuntimeError(f"failure {i}"))
        elapsed = time.monotonic() - start
    assert [r.getMessage() for r in caplog.records] == [f"failure {i}" for i in range(20)]
    assert elapsed >= 0.019  # at most one error per millisecond reaches the handlers


def test_handle_error_ignores_empty_and_calls_custom_handlers() -> None:
    seen: list[object] = []
    runtime.ERROR_HANDLERS[:] = [seen.append]
    runtime.handle_error("")
    runtime.handle_error("text error")
    assert seen == ["text error"]


def test_handle_crash_logs_then_reraises(caplog: pytest.LogCaptureFixture) -> None:
    extra: list[BaseException] = []
    with pytest.raises(ValueError, match="boom"), runtime.handle_crash(extra.append):
        raise ValueError("boom")
    assert len(extra) == 1
    assert "Observed a panic" in caplog.text


def test_handle_crash_swallows_when_not_really_crash() -> None:
    runtime.REALLY_CRASH = False
    with runtime.handle_crash():
        raise ValueError("logged only")
    runtime.reset_for_tests()
    assert runtime.REALLY_CRASH is True


def test_which_failures_count_as_panics() -> None:
    """Expected failures (the reconcile's own ReconcileError, API errors, also as a cause,
    network failures) are not panics; a bug's exception is."""
    def caused_by(cause: BaseException) -> BaseException:
        try:
            raise RuntimeError("wrapped") from cause
        except RuntimeError as err:
            return err

    for expected in (ReconcileError("x"), TerminalError("x"), ApiException(status=409),
                     caused_by(ApiException(status=500)), ConnectionRefusedError(),
                     ProtocolError("reset")):
        assert not is_panic(expected), expected
    for bug in (KeyError("spec"), TypeError("x"), AttributeError("x"), RuntimeError("x")):
        assert is_panic(bug), bug
