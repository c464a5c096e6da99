"""client_cache.util._env: environment switches read with Go's ParseBool spellings."""

from __future__ import annotations

import pytest

from client_cache.util._env import env_bool, env_true, parse_bool


@pytest.mark.parametrize("value", ["1", "t", "T", "TRUE", "true", "True"])
def test_go_true_spellings(value: str) -> None:
    assert parse_bool(value)


@pytest.mark.parametrize("value", [None, "", "0", "f", "false", "yes", "on", " true", "tRUE"])
def test_everything_else_is_false(value: str | None) -> None:
    assert not parse_bool(value)


def test_env_true_reads_the_variable_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLIENT_CACHE_TEST_SWITCH", raising=False)
    assert not env_true("CLIENT_CACHE_TEST_SWITCH")
    monkeypatch.setenv("CLIENT_CACHE_TEST_SWITCH", "true")
    assert env_true("CLIENT_CACHE_TEST_SWITCH")
    monkeypatch.setenv("CLIENT_CACHE_TEST_SWITCH", "no")
    assert not env_true("CLIENT_CACHE_TEST_SWITCH")


def test_env_bool_takes_the_default_only_when_unset_or_empty(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLIENT_CACHE_TEST_SWITCH", raising=False)
    assert env_bool("CLIENT_CACHE_TEST_SWITCH", True)
    assert not env_bool("CLIENT_CACHE_TEST_SWITCH", False)
    monkeypatch.setenv("CLIENT_CACHE_TEST_SWITCH", "")
    assert env_bool("CLIENT_CACHE_TEST_SWITCH", True)
    for off in ("false", "0", "F", "no"):  # Go's false spellings, and what it cannot parse
        monkeypatch.setenv("CLIENT_CACHE_TEST_SWITCH", off)
        assert not env_bool("CLIENT_CACHE_TEST_SWITCH", True)
    monkeypatch.setenv("CLIENT_CACHE_TEST_SWITCH", "true")
    assert env_bool("CLIENT_CACHE_TEST_SWITCH", False)
