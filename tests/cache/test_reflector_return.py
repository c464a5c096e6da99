"""Issue 67: after an API server outage the reflector retries as soon as the server
answers anyone in the process (a Lease renewal, a write), not after client-go's backoff
of up to 30 s (jittered to 60 s): its cache is fresh again within about a second of the
server's return."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache import ReflectorOptions, meta_namespace_key_func, new_store
from client_cache.client.rest import RestError, request_json
from client_cache.errors import ApiStatusError, server_unreachable
from client_cache.informers import new_shared_informer_factory
from client_cache.listwatch import ListWatch
from client_cache.reflector import PROBE_PERIOD, new_reflector_with_options
from client_cache.testing.apiserver import EmbeddedApiServerProcess
from client_cache.util import _server_answers as server_answers
from client_cache.util.clock import FakeClock
from tests.fixtures import eventually


@pytest.mark.parametrize("pinged", [True, False], ids=["renewals", "alone"])
@pytest.mark.parametrize("watch_list", [False, True], ids=["list", "watch-list"])
def test_an_outage_long_enough_for_a_long_backoff_ends_at_the_server_s_return(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
        watch_list: bool, pinged: bool) -> None:
    """The wait that ended is the backoff's, cut short by the server's answer (its INFO
    line says so: what a timer that fired would not print), and the cache holds an
    object created after the return well before the backoff due (6.4 s or more; 1-2 s
    quiet, the bound leaves room for a loaded machine). With watch-list the refused
    watch-list requests wait in the same place. The answer comes from another request
    of the process (``renewals``: what a Lease renewal does) or, with nothing else
    talking to the server (``alone``: a plain controller), from the reflectors' own
    probe."""
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
        if pinged:
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


def test_one_probe_per_server_and_period() -> None:
    """The reflectors waiting on one server take turns: one claim per period."""
    assert server_answers.claim_probe("p:1", 1.0, 100.0)
    assert not server_answers.claim_probe("p:1", 1.0, 100.5)  # another waiter: not now
    assert server_answers.claim_probe("q:1", 1.0, 100.5)  # another server
    assert server_answers.claim_probe("p:1", 1.0, 101.0)


class ProbedListWatch(ListWatch):
    """A list-watch on server ``probed:1`` whose probes are counted."""

    server_host = "probed:1"

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(list_func=self._never, watch_func=self._never)
        self.clock = clock
        self.probes: queue.Queue[float] = queue.Queue()

    @staticmethod
    def _never(options: Any) -> Any:
        raise AssertionError("not called")

    def probe(self, stop: threading.Event, timeout: float) -> None:
        self.probes.put(self.clock.monotonic())


@pytest.mark.parametrize(("cause", "probed"), [
    (ConnectionRefusedError(), True),
    (ApiStatusError(429, "TooManyRequests", "slow down"), False),
    (ApiStatusError(503, "ServiceUnavailable", "starting"), False),
], ids=["refused", "429", "503"])
def test_only_a_server_that_did_not_answer_is_probed(cause: BaseException,
                                                     probed: bool) -> None:
    """A backoff after no answer at all probes the server every PROBE_PERIOD (on the
    reflector's clock); one that answered 429 or 5xx asked for the backoff: no probe."""
    clock = FakeClock(100.0)
    lw = ProbedListWatch(clock)
    r = new_reflector_with_options(lw, None, new_store(meta_namespace_key_func),
                                   ReflectorOptions(name="probed", clock=clock))
    r.backoff_manager = SimpleNamespace(backoff=lambda: clock.new_timer(1000.0))
    stop = threading.Event()
    waiting = threading.Thread(target=r.wait_backoff, args=(stop, cause),
                               name="test-wait-backoff", daemon=True)
    waiting.start()
    try:
        eventually(lambda: clock.waiter_count() == (2 if probed else 1), 5)
        for i in range(3):
            clock.step(PROBE_PERIOD)
            if probed:
                assert lw.probes.get(timeout=5) == 100.0 + (i + 1) * PROBE_PERIOD
                eventually(lambda: clock.waiter_count() == 2, 5)
        assert lw.probes.empty()
    finally:
        stop.set()
        waiting.join(5)
    assert not waiting.is_alive()


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
