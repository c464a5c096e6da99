"""Issue 67: after an API server outage the reflector retries as soon as the server
answers anyone in the process (a Lease renewal, a write), not after client-go's backoff
of up to 30 s (jittered to 60 s): its cache is fresh again within about a second of the
server's return."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.errors import server_unreachable
from client_cache.informers import new_shared_informer_factory
from client_cache.rest import RestError, request_json
from client_cache.testing.apiserver import EmbeddedApiServerProcess
from client_cache.util import server_answers
from tests.fixtures import eventually


@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "watch-list"])
def test_an_outage_long_enough_for_a_long_backoff_ends_at_the_server_s_return(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
        watch_list: bool) -> None:
    """The wait that ended is the backoff's, cut short by the server's answer (its INFO
    line says so: what a timer that fired would not print), and the cache holds an
    object created after the return well before the backoff due (6.4 s or more; 1-2 s
    quiet, the bound leaves room for a loaded machine). With watch-list the refused
    watch-list requests wait in the same place."""
    if watch_list:
        monkeypatch.setenv("KUBE_FEATURE_WatchListClient", "true")
    caplog.set_level(logging.INFO, "client_cache.reflector")
    server = EmbeddedApiServerProcess(bookmark_interval=0.5).start()
    api = server.api_client()
    stop = threading.Event()
    factory = new_shared_informer_factory(api, 0)
    informer = factory.core().v1().config_maps().informer()
    pinging = threading.Event()

    def ping() -> None:  # what a Lease renewal every retry period does
        while not pinging.wait(0.3):
            with contextlib.suppress(RestError):
                request_json(api, "GET", "/api/v1/namespaces/default/configmaps?limit=1",
                             timeout=1.0)
    pinger = threading.Thread(target=ping, name="test-pinger", daemon=True)
    try:
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=20)
        pinger.start()
        server.kill(str(tmp_path / "state.json"))
        # failures back off 0.8, 1.6, 3.2, 6.4 s (each up to twice that, jittered)
        eventually(lambda: informer.health().consecutive_failures >= 4, 40,
                   "the informer did not fail four times")
        server.restart(str(tmp_path / "state.json"))
        back = time.monotonic()
        CoreV1Api(server.api_client()).create_namespaced_config_map(
            "default", {"metadata": {"name": "after"}})
        eventually(lambda: informer.get_indexer().get_by_key("default/after")[1], 10,
                   "the cache did not come back")
        assert time.monotonic() - back < 6.0  # the backoff due was 6.4-12.8 s or more
        assert any("the server answers again; retrying now" in r.getMessage()
                   for r in caplog.records)
    finally:
        pinging.set()
        if pinger.ident is not None:
            pinger.join(5)
        stop.set()
        factory.shutdown(5)
        api.close()
        server.stop()


def test_only_a_serving_answer_wakes_and_what_counts_as_unreachable() -> None:
    woken: list[str] = []
    registration = server_answers.on_answer("h:1", lambda: woken.append("h"))
    server_answers.answered("h:1", 503)
    server_answers.answered("other:1", 200)
    assert woken == []
    server_answers.answered("h:1", 403)  # answered: the server serves
    server_answers.answered("h:1", 200)  # once only
    assert woken == ["h"]
    registration.cancel()
    assert server_unreachable(ConnectionRefusedError())
    assert not server_unreachable(ValueError("bad json"))
    err = RestError("GET failed")
    err.__cause__ = TimeoutError()
    assert server_unreachable(err)


@contextlib.contextmanager
def synced_config_maps(api: Any) -> Iterator[tuple[Any, threading.Event]]:
    """A running, synced informer of ConfigMaps on ``api`` and its stop; stopped after."""
    stop = threading.Event()
    factory = new_shared_informer_factory(api, 0)
    informer = factory.core().v1().config_maps().informer()
    try:
        factory.start(stop)
        assert factory.wait_for_cache_sync(stop, timeout=20)
        yield informer, stop
    finally:
        stop.set()
        factory.shutdown(5)


def test_reconnect_ends_a_backoff_wait_at_once(tmp_path: Path,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """Reflector.reconnect (what a shard member asks after a lapse): a reflector waiting
    out its backoff after an outage retries at once, nobody else having talked to the
    server (no "answers again" line), and wait_connected tells when it is back."""
    caplog.set_level(logging.INFO, "client_cache.reflector")
    server = EmbeddedApiServerProcess(bookmark_interval=0.5).start()
    api = server.api_client()
    try:
        with synced_config_maps(api) as (informer, stop):
            server.kill(str(tmp_path / "state.json"))
            # failures back off 0.8, 1.6, 3.2, 6.4 s (each up to twice that, jittered)
            eventually(lambda: informer.health().consecutive_failures >= 4, 40,
                       "the informer did not fail four times")
            failed = time.monotonic()  # its next attempt is due 6.4 s from here at least
            server.restart(str(tmp_path / "state.json"))
            # written on a client of its own: the informer's is instrumented, and its
            # answer would end the wait too (server_answers)
            writer = server.api_client()
            try:
                CoreV1Api(writer).create_namespaced_config_map(
                    "default", {"metadata": {"name": "after"}})
            finally:
                writer.close()
            asked = informer.reconnect("a test asks")
            assert informer.status.wait_connected(asked, stop, 10)
            eventually(lambda: informer.get_indexer().get_by_key("default/after")[1], 5,
                       "the cache did not come back")
            assert time.monotonic() - failed < 6.4
    finally:
        api.close()
        server.stop()
    messages = [r.getMessage() for r in caplog.records]
    assert "configmaps: re-establishing the watch: a test asks" in messages
    assert not any("answers again" in m for m in messages)


def test_reconnect_of_a_live_watch_watches_again_without_a_relist(
        embedded_server: Any) -> None:
    api = embedded_server.api_client()
    core = CoreV1Api(api)
    try:
        with synced_config_maps(api) as (informer, stop):
            core.create_namespaced_config_map("default", {"metadata": {"name": "before"}})
            eventually(lambda: informer.get_indexer().get_by_key("default/before")[1], 5,
                       "the watch did not deliver")
            restarts = informer.health().watch_restarts
            asked = informer.reconnect("a test asks")
            assert informer.status.wait_connected(asked, stop, 10)
            health = informer.health()
            assert (health.lists, health.relists, health.watch_restarts) == \
                (1, 0, restarts + 1)
            core.create_namespaced_config_map("default", {"metadata": {"name": "after"}})
            eventually(lambda: informer.get_indexer().get_by_key("default/after")[1], 5,
                       "the new watch did not deliver")
    finally:
        api.close()
