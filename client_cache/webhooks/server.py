"""The webhook server: HTTPS for admission (and conversion) webhooks, with health and
metrics on the same port (controller-runtime's ``webhook.Server``; kopf's
``WebhookServer``).

::

    server = WebhookServer([validating(check_foo, Foo), mutating(default_foo, Foo)],
                           port=9443)
    with server:                   # serving until the block ends
        ...                        # server.ca_bundle: what the API server trusts

* **TLS** from a :class:`~client_cache.webhooks.certs.CertificateBundle` (by default a
  new self-signed one for loopback: :func:`~client_cache.webhooks.certs.self_signed`) or
  :class:`~client_cache.webhooks.certs.CertificateFiles` (mounted by cert-manager,
  reloaded when they change); TLS 1.2 or newer.
* **Routes**: each webhook answers POSTs of its ``path``; ``/healthz``, ``/readyz`` and
  ``/metrics`` answer GETs as :mod:`client_cache.health` does (``probes=None`` leaves
  them out, to serve them on a port of their own with :func:`client_cache.health.serve`);
  anything else is 404.
* **Bounds**: a body must say its length (411 otherwise) and be at most
  ``max_body_bytes`` (413; default 8 MiB: the API server sends objects up to its 3 MiB
  request limit, twice in an UPDATE's review); a connection that sends nothing for
  ``request_timeout`` seconds (default 10, the API server's default webhook timeout)
  is closed, idle or mid-request.
* **Answers**: a body that is not a review v1 gets 400 and a WARNING naming the path and
  what was wrong, never the body; a handler's own failure is the webhook's to answer
  (fail closed by default: :mod:`~client_cache.webhooks.admission`).
* **Threads**: ``webhook-server`` accepts; ``threads`` workers (``webhook-worker-<n>``,
  default 8) each serve one connection at a time (HTTP/1.1 keep-alive); connections
  beyond them wait in line. :meth:`WebhookServer.stop` stops accepting, closes idle
  connections at once, lets requests in flight finish within its ``timeout`` (1 s by
  default) and then closes what is left: every thread ends within it.
* **Metrics**: per path, controller-runtime's
  ``controller_runtime_webhook_requests_total{webhook,code}``,
  ``..._latency_seconds`` and ``..._requests_in_flight``
  (:mod:`~client_cache.webhooks.metrics`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import queue
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from client_cache.health.server import Probes
from client_cache.util._logs import log_visibly
from client_cache.webhooks.certs import CertificateBundle, CertificateFiles, self_signed
from client_cache.webhooks.metrics import get_webhook_metrics_provider
from client_cache.webhooks.review import MalformedReviewError

__all__ = ["DEFAULT_MAX_BODY_BYTES", "Route", "WebhookServer"]

_log = logging.getLogger("client_cache.webhooks")

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


class Route(Protocol):
    """What a webhook server serves at a path: an admission or a conversion webhook."""

    path: str
    name: str

    def answer(self, body: bytes) -> dict[str, Any]:
        """The review answering ``body``; :class:`MalformedReviewError` for a body that
        is not a review this webhook takes."""
        ...


@dataclass
class _Metrics:
    """One path's metrics (its request counters made per code as codes come)."""

    webhook: str
    latency: Any
    in_flight: Any
    requests: dict[str, Any]

    def count(self, code: int) -> None:
        counter = self.requests.get(str(code))
        if counter is None:
            counter = self.requests[str(code)] = get_webhook_metrics_provider() \
                .new_requests_metric(self.webhook, str(code))
        counter.inc()


class _Connection:
    """One accepted connection, and whether a request on it is being answered."""

    def __init__(self, sock: socket.socket, address: Any) -> None:
        self.sock = sock
        self.address = address
        self.busy = False
        self.closed = False  # shut down by stop


class WebhookServer:
    """See the module documentation."""

    def __init__(self, webhooks: Iterable[Route] = (), *, port: int = 9443,
                 host: str = "127.0.0.1",
                 certificate: CertificateBundle | CertificateFiles | None = None,
                 threads: int = 8, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 request_timeout: float = 10.0, probes: Probes | None = None,
                 health: bool = True) -> None:
        if threads < 1 or max_body_bytes < 1 or not request_timeout > 0:
            raise ValueError("threads and max_body_bytes must be positive, request_timeout "
                             "positive seconds")
        self.certificate = certificate if certificate is not None else self_signed()
        self._context = self.certificate.context() if isinstance(
            self.certificate, CertificateBundle) else None
        self.max_body_bytes = max_body_bytes
        self.request_timeout = request_timeout
        self.probes = (probes or Probes(healthz={"ping": lambda: None},
                                        readyz={"ping": lambda: None})) if health else None
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # a connection idled or closed
        self._routes: dict[str, Route] = {}
        self._metrics: dict[str, _Metrics] = {}
        for webhook in webhooks:
            self.add(webhook)
        self._listener = socket.create_server((host, port), backlog=128)
        self.host = host
        self.port = int(self._listener.getsockname()[1])
        self._line: queue.Queue[_Connection | None] = queue.Queue()
        self._open: set[_Connection] = set()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._workers = threads
        self._numbers = itertools.count()

    def __repr__(self) -> str:
        return f"<WebhookServer {self.url} {sorted(self._routes)}>"

    @property
    def url(self) -> str:
        """``https://host:port`` (its port when 0 was asked for)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"

    @property
    def ca_bundle(self) -> bytes | None:
        """The CA (PEM) that signed a self-made certificate: the ``caBundle`` of the
        webhook configurations; None for certificate files (their CA is cert-manager's)."""
        return self.certificate.ca_pem if isinstance(self.certificate, CertificateBundle) \
            else None

    def routes(self) -> list[Route]:
        """The webhooks served, by path."""
        with self._lock:
            return [self._routes[path] for path in sorted(self._routes)]

    def add(self, webhook: Route) -> WebhookServer:
        """Serve ``webhook`` at its path (ValueError when the path is taken)."""
        with self._lock:
            if webhook.path in self._routes:
                raise ValueError(f"two webhooks at {webhook.path}")
            self._routes[webhook.path] = webhook
            provider = get_webhook_metrics_provider()
            self._metrics[webhook.path] = _Metrics(
                webhook.path, provider.new_latency_metric(webhook.path),
                provider.new_in_flight_metric(webhook.path), {})
        return self

    # -- running -----------------------------------------------------------------------------
    def start(self) -> WebhookServer:
        """Accept and answer on threads of the server's own (see the module
        documentation)."""
        with self._lock:
            if self._threads:
                raise RuntimeError("the webhook server is already started")
            self._threads = [threading.Thread(target=self._accept, name="webhook-server",
                                              daemon=True)]
            self._threads += [threading.Thread(target=self._work, daemon=True,
                                               name=f"webhook-worker-{next(self._numbers)}")
                              for _ in range(self._workers)]
        for thread in self._threads:
            thread.start()
        _log.info("webhook server: serving %d webhooks at %s", len(self._routes), self.url)
        return self

    def __enter__(self) -> WebhookServer:
        return self if self._threads else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept(self) -> None:
        while True:
            try:
                sock, address = self._listener.accept()
            except OSError:
                return  # closed by stop
            if self._stopping.is_set():
                sock.close()
                return
            self._line.put(_Connection(sock, address))

    def _work(self) -> None:
        while True:
            conn = self._line.get()
            if conn is None:
                return
            with self._lock:
                self._open.add(conn)
            try:
                self._serve(conn)
            except Exception:  # a connection's failure is its own
                _log.debug("webhook server: connection from %s failed", conn.address,
                           exc_info=True)
            finally:
                with self._lock:
                    self._open.discard(conn)
                    self._settled.notify_all()
                with contextlib.suppress(OSError):
                    conn.sock.close()

    def _serve(self, conn: _Connection) -> None:
        if self._stopping.is_set():
            return
        conn.sock.settimeout(self.request_timeout)
        context = self._context or self.certificate.context()
        try:
            tls = context.wrap_socket(conn.sock, server_side=True)
        except (OSError, ssl.SSLError) as err:
            _log.debug("webhook server: TLS handshake from %s failed: %s", conn.address, err)
            return
        conn.sock = tls
        _Handler(tls, conn.address, self, conn)

    # -- answering ---------------------------------------------------------------------------
    def answer_post(self, path: str, body: bytes) -> tuple[int, bytes]:
        """(HTTP code, JSON body) for a POST of ``body`` to ``path``."""
        with self._lock:
            route = self._routes.get(path.split("?", 1)[0])
            metrics = None if route is None else self._metrics[route.path]
        if route is None or metrics is None:
            return 404, b'{"message": "no webhook at this path"}'
        started = time.monotonic()
        metrics.in_flight.inc()
        try:
            try:
                code, data = 200, _json(route.answer(body))
            except MalformedReviewError as err:
                log_visibly(_log, logging.WARNING, "webhook %s: a malformed request: %s",
                            route.name, err)
                code, data = 400, _json({"message": str(err)})
            except Exception as err:  # the route's own bug: answered, never hangs
                log_visibly(_log, logging.ERROR, "webhook %s: answering failed", route.name,
                            exc_info=err)
                code, data = 500, _json({"message": f"internal error "
                                                    f"({type(err).__name__})"})
        finally:
            metrics.in_flight.dec()
        metrics.latency.observe(time.monotonic() - started)
        metrics.count(code)
        return code, data

    # -- stopping ----------------------------------------------------------------------------
    def stop(self, timeout: float = 1.0) -> bool:
        """Stop accepting, close idle connections, give requests in flight what is left
        of ``timeout`` seconds, then close the rest; True when every thread ended."""
        deadline = time.monotonic() + timeout
        self._stopping.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for _ in range(self._workers):
            self._line.put(None)
        with self._settled:  # idle connections close now; busy ones after their request
            while True:
                late = time.monotonic() >= deadline
                for conn in self._open:
                    if (late or not conn.busy) and not conn.closed:
                        conn.closed = True
                        with contextlib.suppress(OSError):
                            conn.sock.shutdown(socket.SHUT_RDWR)
                if not self._open or late:
                    break
                self._settled.wait(max(0.0, deadline - time.monotonic()))
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()) + 0.2)
        while True:  # connections accepted but never served
            try:
                pending = self._line.get_nowait()
            except queue.Empty:
                break
            if pending is not None:
                pending.sock.close()
        return not any(thread.is_alive() for thread in self._threads)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 on one TLS connection, answering through the server."""

    protocol_version = "HTTP/1.1"
    server_version = "client_cache-webhook"
    sys_version = ""

    def __init__(self, sock: Any, address: Any, owner: WebhookServer,
                 conn: _Connection) -> None:
        self.owner = owner
        self.conn = conn
        self.timeout = owner.request_timeout  # type: ignore[misc]  # per server, not class
        super().__init__(sock, address, None)  # type: ignore[arg-type]

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("webhook server: " + format, *args)

    def _send(self, code: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        if self.owner._stopping.is_set():
            self.close_connection = True
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _idle(self) -> None:
        with self.owner._settled:
            self.conn.busy = False
            self.owner._settled.notify_all()

    def do_POST(self) -> None:
        self.conn.busy = True
        try:
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                self.close_connection = True
                self._send(411, b'{"message": "a Content-Length is required"}')
                return
            if int(length) > self.owner.max_body_bytes:
                self.close_connection = True
                self._discard(int(length))  # so that the client reads the answer
                self._send(413, b'{"message": "the body is too large"}')
                return
            body = self.rfile.read(int(length))
            if len(body) < int(length):
                self.close_connection = True
                return
            code, data = self.owner.answer_post(self.path, body)
            self._send(code, data)
        finally:
            self._idle()

    def _discard(self, length: int) -> None:
        """Read and drop up to four times the largest body a refused request sends (a
        connection closed with unread data is reset, and its answer lost)."""
        left = min(length, 4 * self.owner.max_body_bytes)
        while left > 0:
            chunk = self.rfile.read(min(left, 65536))
            if not chunk:
                return
            left -= len(chunk)

    def do_GET(self) -> None:
        self.conn.busy = True
        try:
            probes = self.owner.probes
            if probes is None or not probes.serves(self.path):
                self._send(404, b"404 page not found\n", "text/plain; charset=utf-8")
                return
            code, body, content_type = probes.answer(self.path)
            self._send(code, body.encode() if isinstance(body, str) else body, content_type)
        finally:
            self._idle()
