"""util/rest_metrics.py: every request the library sends, and the application's calls on
an instrumented client, reach the REST client metrics with client-go's labels; the
library's own writes go without urllib3's immediate retries; Events wait on a bucket of
their own (issue 59)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api
from kubernetes.client.exceptions import ApiException

from client_cache.api.lists import ListOptions
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.client.rest import RestError, request_json
from client_cache.record import CoreV1EventSink
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.util import rest_metrics
from client_cache.util.flowcontrol import throttle_client
from client_cache.util.rest_metrics import host_of, instrument_client
from tests.client.test_transport import EMPTY_LIST, PODS, RawServer


class Recorder:
    """A provider that keeps every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def request_latency(self, verb: str, host: str, seconds: float) -> None:
        self.calls.append(("latency", verb, host))

    def rate_limiter_latency(self, verb: str, host: str, seconds: float) -> None:
        self.calls.append(("limiter", verb, host, seconds))

    def request_size(self, verb: str, host: str, size: int) -> None:
        self.calls.append(("request_size", verb, host, size))

    def response_size(self, verb: str, host: str, size: int) -> None:
        self.calls.append(("response_size", verb, host, size))

    def request_result(self, code: str, method: str, host: str) -> None:
        self.calls.append(("result", code, method, host))

    def request_retry(self, code: str, method: str, host: str) -> None:
        self.calls.append(("retry", code, method, host))

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [c[1:] for c in self.calls if c[0] == kind]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    recorder = Recorder()
    rest_metrics.set_rest_client_metrics(recorder)
    yield recorder
    rest_metrics.reset_rest_client_metrics_for_tests()


class CountingLimiter:
    def __init__(self) -> None:
        self.accepted = 0

    def accept(self) -> None:
        self.accepted += 1


def test_list_requests_and_a_retried_dead_connection_are_counted(recorder: Recorder) -> None:
    server = RawServer("serve-then-die", "serve")
    try:
        lw = ClientListerWatcher(server.client(), PODS)
        lw.list(ListOptions())
        lw.list(ListOptions())  # the pooled connection dies: one retry on a new one
        host = f"127.0.0.1:{server.port}"
        assert recorder.of("result") == [("200", "GET", host), ("<error>", "GET", host),
                                         ("200", "GET", host)]
        assert recorder.of("retry") == [("<error>", "GET", host)]
        assert recorder.of("latency") == [("GET", host)] * 3
        assert [c[2] for c in recorder.of("response_size")] == [len(EMPTY_LIST)] * 2
    finally:
        server.close()


def test_library_writes_are_not_retried_by_urllib3(recorder: Recorder) -> None:
    """The kubernetes client's pool retries a dropped connection three times at once; the
    library's own writes go once and leave the retry to their caller's backoff."""
    server = RawServer("die")
    try:
        client = server.client()
        with pytest.raises(RestError, match="POST /api/v1/namespaces/default/events failed"):
            request_json(client, "POST", "/api/v1/namespaces/default/events", {"a": 1})
        assert server.accepted == 1
        host = f"127.0.0.1:{server.port}"
        assert recorder.of("result") == [("<error>", "POST", host)]
        assert recorder.of("request_size") == [("POST", host, 7)]
    finally:
        server.close()


def test_the_applications_calls_on_an_instrumented_client_are_counted(
        recorder: Recorder) -> None:
    with EmbeddedApiServer() as server:
        api = server.api_client()
        instrument_client(api)
        instrument_client(api)  # once only: each request is counted once
        core = CoreV1Api(api)
        core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
        with pytest.raises(ApiException):
            core.read_namespaced_config_map("missing", "default")
        host = host_of(str(api.configuration.host))
        assert recorder.of("result") == [("201", "POST", host), ("404", "GET", host)]
        assert recorder.of("limiter") == []  # not throttled
        limiter = CountingLimiter()
        assert throttle_client(api, limiter) is limiter
        core.read_namespaced_config_map("cm", "default")
        assert limiter.accepted == 1
        assert [c[:2] for c in recorder.of("limiter")] == [("GET", host)]
        assert recorder.of("result")[-1] == ("200", "GET", host)
        assert recorder.of("response_size")[-1][2] > 0
        api.close()


def test_events_wait_on_their_own_bucket(recorder: Recorder) -> None:
    with EmbeddedApiServer() as server:
        api = server.api_client()
        client_bucket, events_bucket = CountingLimiter(), CountingLimiter()
        throttle_client(api, client_bucket)
        sink = CoreV1EventSink(api, limiter=events_bucket)
        stored = sink.create({"metadata": {"name": "e1", "namespace": "default"},
                              "involvedObject": {"kind": "Pod", "name": "p",
                                                 "namespace": "default"},
                              "reason": "Test", "message": "m", "type": "Normal"})
        assert stored["metadata"]["name"] == "e1"
        assert (events_bucket.accepted, client_bucket.accepted) == (1, 0)
        request_json(api, "GET", "/api/v1/namespaces/default/events/e1")
        assert (events_bucket.accepted, client_bucket.accepted) == (1, 1)
        host = host_of(str(api.configuration.host))
        assert recorder.of("result") == [("201", "POST", host), ("200", "GET", host)]
        api.close()
