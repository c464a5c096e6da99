"""HTTP requests that ``stop`` can interrupt (the transport under the client list-watch).

Go cancels an in-flight request through its context: the transport closes the
connection and the blocked read returns at once. urllib3 has no such hook, so
:class:`Transport` keeps a urllib3 pool of its own, built from the ``kubernetes`` client's
configuration exactly as the client builds its own (TLS, client certificates, proxy), whose
connections report to the *request scope* of the thread that uses them. While a request is
in its scope (sending it, waiting for the headers, reading a LIST body), setting ``stop``
shuts the connection's socket down from the setting thread (an
:func:`~client_cache.util.stop.on_stop` callback), so the blocked ``recv`` ends at once and
the request raises :class:`~client_cache.errors.StopRequestedError`. No thread polls and
no thread is left behind.

Port choices, documented here because Go's transport makes them implicitly:

* **Dead pooled connections.** A GET that fails before its response headers, on a connection
  that had already served a request (the server closed it as the request went out, as
  after an apiserver restart), is retried once on a fresh connection, as Go's transport
  retries idempotent requests. A fresh connection's failure is never retried.
* **Keepalive.** Every connection gets TCP keepalive with client-go's timings
  (:func:`keep_alive`), unless the configuration sets ``socket_options`` or ``keep_alive``.
* **Limits.** A TLS handshake that stalls cannot be interrupted (the socket is not
  reachable until the handshake ends); it is bounded by the connect timeout, at most 30 s.
  A SOCKS proxy's pool is used as it is (its requests are not interruptible).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ProtocolError

from client_cache.util.errors import StopRequestedError
from client_cache.util.rest_metrics import measure, retried
from client_cache.util.stop import on_stop

__all__ = [
    "KEEPALIVE_IDLE",
    "KEEPALIVE_INTERVAL",
    "KEEPALIVE_PROBES",
    "Transport",
    "keep_alive",
    "socket_of",
]

_log = logging.getLogger(__name__)

#: TCP keepalive of the client's connections, as client-go dials them: the first probe
#: after :data:`KEEPALIVE_IDLE` idle seconds, then one every :data:`KEEPALIVE_INTERVAL`
#: seconds, the connection dropped after :data:`KEEPALIVE_PROBES` unanswered probes.
KEEPALIVE_IDLE = 30
KEEPALIVE_INTERVAL = 15
KEEPALIVE_PROBES = 9

#: The connect timeout of list and watch requests (a stalled TLS handshake waits this
#: long at most; see the module documentation).
CONNECT_TIMEOUT = 30.0


def socket_of(response: Any) -> Any:
    """The socket under a urllib3 response, or None when it cannot be reached."""
    return getattr(getattr(response, "connection", None), "sock", None)


def _shut(sock: Any) -> None:
    """Shut ``sock`` down for reading and writing (a blocked ``recv`` returns at once);
    errors (already closed) are ignored."""
    with contextlib.suppress(OSError, AttributeError, ValueError):
        sock.shutdown(socket.SHUT_RDWR)


def keep_alive(response: Any, api_client: Any = None) -> None:
    """Turn on TCP keepalive for the connection of ``response`` (it stays on when the
    connection goes back to the pool), unless the client's configuration chose its own
    socket options or its own keepalive.

    A watch can be silent for minutes, and a peer that vanished without a FIN or RST (a
    rebooted node, a dropped NAT entry) would otherwise go unnoticed until the watch's
    timeout, or for ever for a request waiting on a pooled connection. Go's client dials
    with a 30 s keepalive (and pings HTTP/2 connections); these are the timings it asks the
    kernel for. Platforms without the TCP_KEEP* options get plain SO_KEEPALIVE; a response
    without a reachable socket is left alone.
    """
    config = getattr(api_client, "configuration", None)
    if getattr(config, "socket_options", None) is not None or getattr(config, "keep_alive",
                                                                       False):
        return
    sock = socket_of(response)
    if sock is None:
        return
    with contextlib.suppress(OSError, AttributeError, ValueError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE),
                            ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
                            ("TCP_KEEPCNT", KEEPALIVE_PROBES)):
            option = getattr(socket, name, None)
            if option is not None:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)


# --- request scopes ------------------------------------------------------------------------

_current = threading.local()


class _RequestScope:
    """The connections one request of this thread uses, shut down when ``stop`` is set."""

    def __init__(self, stop: threading.Event) -> None:
        self.stop = stop
        self._lock = threading.Lock()
        self._conns: list[Any] = []
        self.cancelled = False
        self.reused = False  # the last connection attached had served a request before

    def __enter__(self) -> _RequestScope:
        self._outer = getattr(_current, "scope", None)
        _current.scope = self
        self._registration = on_stop(self.stop, self.cancel)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._registration.cancel()
        _current.scope = self._outer

    def cancel(self) -> None:
        """Shut every attached connection down (runs inside ``stop.set()``)."""
        with self._lock:
            self.cancelled = True
            conns = list(self._conns)
        for conn in conns:
            _shut(conn.sock)

    def attach(self, conn: Any, served: int) -> None:
        """``conn`` is about to send a request (it has served ``served`` before)."""
        with self._lock:
            self._conns.append(conn)
            self.reused = served > 0
            cancelled = self.cancelled
        if cancelled:
            _shut(conn.sock)

    def connected(self, conn: Any) -> None:
        """``conn`` has just connected (a stop during the connect shuts it now)."""
        with self._lock:
            if conn not in self._conns:
                self._conns.append(conn)
            cancelled = self.cancelled
        if cancelled:
            _shut(conn.sock)


class _Tracked:
    """Connection mixin: report to the current thread's request scope."""

    sock: Any
    _served = 0

    def connect(self) -> None:
        super().connect()  # type: ignore[misc]
        scope: _RequestScope | None = getattr(_current, "scope", None)
        if scope is not None:
            scope.connected(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        scope: _RequestScope | None = getattr(_current, "scope", None)
        if scope is not None:
            scope.attach(self, self._served)
        self._served += 1
        super().request(*args, **kwargs)  # type: ignore[misc]


class _TrackedHTTPConnection(_Tracked, HTTPConnection):
    pass


class _TrackedHTTPSConnection(_Tracked, HTTPSConnection):
    pass


class _TrackedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


# --- the transport ---------------------------------------------------------------------------


class Transport:
    """GET requests on a pool of its own, interruptible by ``stop`` (see the module
    documentation). ``api_client`` is a ``kubernetes.client.ApiClient``; its configuration
    is read at construction (TLS, proxy) and the pool is built as its ``rest_client``'s."""

    def __init__(self, api_client: Any) -> None:
        self.api_client = api_client
        self._lock = threading.Lock()
        self._scopes: set[_RequestScope] = set()
        rest_client_type = type(api_client.rest_client)
        self.pool_manager: Any = rest_client_type(api_client.configuration).pool_manager
        classes = getattr(self.pool_manager, "pool_classes_by_scheme", None)
        if classes is not None and classes.get("http") is HTTPConnectionPool:
            self.pool_manager.pool_classes_by_scheme = {
                "http": _TrackedHTTPConnectionPool, "https": _TrackedHTTPSConnectionPool}

    def reset_connections(self) -> None:
        """Close the idle pooled connections (connections in use are not touched; new
        requests dial again)."""
        self.pool_manager.clear()

    def close(self) -> None:
        """Close every pooled connection."""
        self.pool_manager.clear()

    def get(self, url: str, headers: dict[str, str], read_timeout: float | None,
            stop: threading.Event, read_body: bool,
            reader: Callable[[Any], Any] | None = None) -> tuple[Any, Any]:
        """GET ``url``; returns ``(response, body)``: with ``read_body`` the body is read
        (and the connection released) inside the interruptible scope, else the response
        is returned unread (a watch; its reader owns it). ``reader``, when given, reads it
        (it is called with the urllib3 response, and what it returns is ``body``; a LIST
        decodes its items as they arrive), else it is read whole, as bytes. ``stop``
        interrupts the request at any point until then (:class:`StopRequestedError`)."""
        return self.request("GET", url, headers, read_timeout, stop, read_body=read_body,
                            reader=reader)

    def request(self, method: str, url: str, headers: dict[str, str],
                read_timeout: float | None, stop: threading.Event, *,
                body: bytes | None = None, read_body: bool = True,
                reader: Callable[[Any], Any] | None = None,
                limiter: Any = None) -> tuple[Any, Any]:
        """Send ``method`` to ``url`` with ``body`` (see :meth:`get` for the rest);
        ``stop`` or :meth:`abort` interrupts it at any point until its body is read
        (:class:`StopRequestedError`). Only a GET is retried on a dead pooled connection
        (the others may have been applied). ``limiter`` (a client rate limiter) is waited
        for first, as the ``kubernetes`` client's requests wait."""
        timeout = urllib3.Timeout(connect=min(CONNECT_TIMEOUT, read_timeout or CONNECT_TIMEOUT),
                                  read=read_timeout)
        for attempt in (1, 2):
            if stop.is_set():
                raise StopRequestedError()
            answered = False
            data: Any = None

            def send() -> Any:
                nonlocal answered, data
                response = self.pool_manager.request(
                    method, url, body=body, headers=headers, preload_content=False,
                    timeout=timeout, retries=False)
                answered = True
                keep_alive(response, self.api_client)
                if read_body:
                    try:
                        data = response.read() if reader is None else reader(response)
                    finally:
                        response.release_conn()
                return response

            with _RequestScope(stop) as scope:
                with self._lock:
                    self._scopes.add(scope)
                try:
                    response = measure(method, url, send, streaming=not read_body,
                                       request_bytes=None if body is None else len(body),
                                       limiter=limiter)
                except Exception as err:
                    if scope.cancelled or stop.is_set():
                        raise StopRequestedError() from err
                    # nothing was received: a dead pooled connection is worth one more try
                    if (method == "GET" and attempt == 1 and not answered and scope.reused
                            and _is_dead_connection(err)):
                        _log.debug("GET %s: the pooled connection was dead (%s), retrying on a "
                                   "new one", _path_of(url), type(err).__name__)
                        retried("GET", url)
                        continue
                    raise
                finally:
                    with self._lock:
                        self._scopes.discard(scope)
                return response, data
        raise AssertionError("unreachable")  # pragma: no cover

    def abort(self) -> None:
        """Interrupt every request in flight on this transport now (their connections are
        shut down; each raises :class:`StopRequestedError`); later requests go on as
        usual. What a stop with a budget calls once the budget is spent."""
        with self._lock:
            scopes = list(self._scopes)
        for scope in scopes:
            scope.cancel()


def _is_dead_connection(err: BaseException) -> bool:
    """The server closed or reset the connection before answering (urllib3's
    ``ProtocolError``: "Connection aborted", a reset, a remote disconnect)."""
    return isinstance(err, (ProtocolError, ConnectionError))


def _path_of(url: str) -> str:
    """The URL without its query (logged: a query may name objects but holds no secret,
    still, keep lines short)."""
    return url.split("?", 1)[0]
