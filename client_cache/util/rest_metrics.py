"""Metrics of every HTTP request sent to the API server (Go ``k8s.io/client-go/tools/metrics``
and the REST client's calls into it), through a provider, no-op by default.

The provider is called with client-go's labels: ``verb`` is the HTTP method, ``host`` the
URL's ``host:port``, ``code`` the status as text or ``"<error>"`` when no answer came (a
refused connection, a reset, a timeout). The Prometheus adapter
(:mod:`client_cache.metrics.prometheus`) turns them into ``rest_client_requests_total``,
``rest_client_request_duration_seconds``, ``rest_client_rate_limiter_duration_seconds``,
``rest_client_request_size_bytes``, ``rest_client_response_size_bytes`` and
``rest_client_request_retries_total``.

What feeds it, so that every request the library sends is counted:

* :func:`measure`, around each request the library sends itself (LIST, WATCH and
  discovery on its own connections, and :func:`client_cache.client.rest.request_json`'s writes of
  Leases, Events and finalizers);
* :func:`instrument_client`, which wraps a ``kubernetes`` ``ApiClient``'s
  ``rest_client.request`` once, so the application's own calls through the generated API
  classes on that client (a reconcile's creates and patches) are counted too, as
  client-go's REST client counts every request of its ``rest.Config``. The factory and the
  runtime instrument the client they are given.

Choices where Go's are implicit: the duration runs from the start of the request to its
answer's headers and body (a LIST's decoding included, as Go's ``Do`` includes reading
the body), including any wait for the client-side rate limiter (Go starts its clock
before the throttle too); a WATCH counts its result but no duration (a watch lasts for
minutes; the reflector's ``reflector_watch_duration_seconds`` measures it); sizes are
observed when they are known without re-encoding (the library's own bodies, a response
read whole or with a ``Content-Length``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from client_cache.util._server_answers import answered
from client_cache.util.provider import ProviderSlot

__all__ = [
    "ERROR_CODE",
    "NoopRestClientMetrics",
    "RateLimiter",
    "RestClientMetrics",
    "client_limiter",
    "get_rest_client_metrics",
    "host_of",
    "instrument_client",
    "measure",
    "reset_rest_client_metrics_for_tests",
    "retried",
    "set_client_limiter",
    "set_rest_client_metrics",
]

ERROR_CODE = "<error>"
"""The ``code`` label of a request that got no HTTP answer (Go's ``"<error>"``)."""

_LIMITER = "_client_cache_rate_limiter"
_WRAPPED = "_client_cache_instrumented"

T = TypeVar("T")


class RateLimiter(Protocol):
    """What throttles a client: ``accept()`` blocks until the request may go (Go
    ``flowcontrol.RateLimiter.Accept``)."""

    def accept(self) -> None:
        """Wait for a token."""
        ...


class RestClientMetrics(Protocol):
    """The metrics client-go's REST client reports (Go ``tools/metrics``' global hooks)."""

    def request_latency(self, verb: str, host: str, seconds: float) -> None:
        """A request took ``seconds`` (Go ``RequestLatency``)."""
        ...

    def rate_limiter_latency(self, verb: str, host: str, seconds: float) -> None:
        """A request waited ``seconds`` for the client-side rate limiter (Go
        ``RateLimiterLatency``)."""
        ...

    def request_size(self, verb: str, host: str, size: int) -> None:
        """A request body of ``size`` bytes was sent (Go ``RequestSize``)."""
        ...

    def response_size(self, verb: str, host: str, size: int) -> None:
        """A response body of ``size`` bytes came back (Go ``ResponseSize``)."""
        ...

    def request_result(self, code: str, method: str, host: str) -> None:
        """A request ended with ``code`` (Go ``RequestResult``)."""
        ...

    def request_retry(self, code: str, method: str, host: str) -> None:
        """A request is sent again after ``code`` (Go ``RequestRetry``)."""
        ...


class NoopRestClientMetrics:
    """Records nothing (the default)."""

    def request_latency(self, verb: str, host: str, seconds: float) -> None:
        """Nothing."""

    def rate_limiter_latency(self, verb: str, host: str, seconds: float) -> None:
        """Nothing."""

    def request_size(self, verb: str, host: str, size: int) -> None:
        """Nothing."""

    def response_size(self, verb: str, host: str, size: int) -> None:
        """Nothing."""

    def request_result(self, code: str, method: str, host: str) -> None:
        """Nothing."""

    def request_retry(self, code: str, method: str, host: str) -> None:
        """Nothing."""


_slot: ProviderSlot[RestClientMetrics] = ProviderSlot(NoopRestClientMetrics())


def set_rest_client_metrics(provider: RestClientMetrics) -> None:
    """Report every request from now on to ``provider`` (Go ``metrics.Register``; here the
    last call wins, as the other providers of the runtime)."""
    _slot.set(provider)


def get_rest_client_metrics() -> RestClientMetrics:
    """The provider requests report to now."""
    return _slot.get()


def reset_rest_client_metrics_for_tests() -> None:
    """Back to the no-op provider."""
    _slot.reset()


def host_of(url: str) -> str:
    """The ``host`` label of ``url``: its ``host:port`` as written (Go ``url.Host``)."""
    return urlsplit(url).netloc


def _status_of(err: BaseException) -> int | None:
    status = getattr(err, "status", None)
    return status if isinstance(status, int) and status > 0 else None


def _response_size(response: Any) -> int | None:
    """The body size of ``response`` when known without reading it: a urllib3 response's
    body once read whole, a ``kubernetes`` REST response's ``data``, else its
    ``Content-Length``."""
    body = getattr(response, "_body", None)  # urllib3: set once the body was read whole
    if body is None and not hasattr(response, "_fp"):  # not urllib3: a REST response
        body = getattr(response, "data", None)
    if isinstance(body, (bytes, bytearray, str)):
        return len(body)
    headers = getattr(response, "headers", None)
    length = headers.get("Content-Length") if headers is not None else None
    try:
        return int(length) if length is not None else None
    except (TypeError, ValueError):
        return None


def measure(verb: str, url: str, send: Callable[[], T], *, request_bytes: int | None = None,
            limiter: RateLimiter | None = None, streaming: bool = False) -> T:
    """Send a request through ``send()`` and report it (see the module documentation):
    first wait for ``limiter`` (timed), then record the answer's status (an exception with
    an HTTP ``status``, as ``ApiException``, counts as that status; any other as
    ``"<error>"``, and is re-raised), the duration unless ``streaming`` (a WATCH), and the
    sizes that are known. Returns what ``send`` returned."""
    metrics = _slot.get()
    host = host_of(url)
    started = time.monotonic()
    if limiter is not None:
        limiter.accept()
        metrics.rate_limiter_latency(verb, host, time.monotonic() - started)
    if request_bytes is not None:
        metrics.request_size(verb, host, request_bytes)
    try:
        response = send()
    except BaseException as err:
        status = _status_of(err)
        metrics.request_result(ERROR_CODE if status is None else str(status), verb, host)
        if status is not None:
            answered(host, status)
        if not streaming:
            metrics.request_latency(verb, host, time.monotonic() - started)
        raise
    status = getattr(response, "status", None)
    metrics.request_result(str(status) if isinstance(status, int) else ERROR_CODE, verb, host)
    if isinstance(status, int):
        answered(host, status)
    if not streaming:
        metrics.request_latency(verb, host, time.monotonic() - started)
        size = _response_size(response)
        if size is not None:
            metrics.response_size(verb, host, size)
    return response


def retried(verb: str, url: str, code: str = ERROR_CODE) -> None:
    """Report that a request is sent again after ``code`` (Go ``RequestRetry``)."""
    _slot.get().request_retry(code, verb, host_of(url))


def client_limiter(api_client: Any) -> RateLimiter | None:
    """The rate limiter :func:`set_client_limiter` put on ``api_client``, if any."""
    limiter: RateLimiter | None = getattr(api_client.rest_client, _LIMITER, None)
    return limiter


def set_client_limiter(api_client: Any, limiter: RateLimiter) -> RateLimiter:
    """Throttle every request ``api_client`` sends with ``limiter`` (and instrument it);
    a client throttled already keeps its limiter, which is returned."""
    rest = api_client.rest_client
    current = client_limiter(api_client)
    if current is not None:
        return current
    setattr(rest, _LIMITER, limiter)
    instrument_client(api_client)
    return limiter


def instrument_client(api_client: Any) -> None:
    """Wrap ``api_client.rest_client.request`` (once; later calls do nothing) so that each
    request it sends waits for the client's limiter, if one is set, and is reported by
    :func:`measure`: the application's own calls through the ``kubernetes`` API classes
    on this client are measured and throttled like the library's."""
    rest = getattr(api_client, "rest_client", None)
    if rest is None or getattr(rest, _WRAPPED, False):
        return
    send: Callable[..., Any] = rest.request

    def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        body = kwargs.get("body")
        size = (len(body) if isinstance(body, bytes) else
                len(body.encode()) if isinstance(body, str) else None)
        return measure(str(method).upper(), str(url), lambda: send(method, url, *args, **kwargs),
                       request_bytes=size, limiter=getattr(rest, _LIMITER, None))

    rest.request = request
    setattr(rest, _WRAPPED, True)
