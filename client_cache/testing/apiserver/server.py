"""The embedded API server itself: an HTTP server on loopback, its lifecycle, the clients
configured for it and its request counters (see the package documentation)."""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import Any

from kubernetes.client import ApiClient, Configuration

from client_cache.errors import ApiStatusError
from client_cache.testing.apiserver.coordinator import LeaseCoordinator
from client_cache.testing.apiserver.faults import FaultInjection
from client_cache.testing.apiserver.gates import COORDINATED_LEADER_ELECTION, check_feature_gates
from client_cache.testing.apiserver.handlers import Handler
from client_cache.testing.apiserver.load import start_load
from client_cache.testing.apiserver.resources import ResourceType
from client_cache.testing.apiserver.store import ApiStore, StoreFrozenError

__all__ = ["LOOPBACK", "LOOPBACK_NAMES", "EmbeddedApiServer", "client_configuration"]

LOOPBACK = "127.0.0.1"
LOOPBACK_NAMES = (LOOPBACK, "localhost")  # it has no authentication: never anything else


def client_configuration(url: str) -> Any:
    """A ``kubernetes.client.Configuration`` for the server at ``url`` (with the token
    the server accepts by default)."""
    config = Configuration()
    config.host = url
    config.api_key = {"authorization": "embedded-token"}
    config.api_key_prefix = {"authorization": "Bearer"}
    return config


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, owner: EmbeddedApiServer, port: int) -> None:
        self.owner = owner
        self._conn_ids = itertools.count(1)
        self.connections: set[socket.socket] = set()
        self.threads: set[threading.Thread] = set()
        self.conn_lock = threading.Lock()
        super().__init__((LOOPBACK, port), Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # The handler writes headers and body separately; with Nagle's algorithm on, the
        # client's delayed ACK would hold every small response back by ~40 ms.
        with contextlib.suppress(OSError):
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        thread = threading.Thread(
            target=self._serve_connection,
            args=(request, client_address),
            name=f"apiserver-conn-{next(self._conn_ids)}",
            daemon=True,
        )
        with self.conn_lock:
            self.connections.add(request)
            self.threads.add(thread)
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self.conn_lock:
                self.threads.discard(threading.current_thread())

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that resets or drops its connection (as the fault injection and the
        # informers' stop do) is normal here; anything else keeps the default report.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)


class EmbeddedApiServer(FaultInjection):
    """See the module documentation."""

    def __init__(
        self,
        port: int = 0,
        *,
        bookmark_interval: float = 1.0,
        history: int = 100_000,
        store: ApiStore | None = None,
        uncached_resources: tuple[str, ...] = (),
        host: str = LOOPBACK,
        feature_gates: Mapping[str, bool] | None = None,
    ) -> None:
        if host not in LOOPBACK_NAMES:
            raise ValueError(f"the embedded API server binds only to loopback "
                             f"({', '.join(LOOPBACK_NAMES)}), not {host!r}")
        self.store = store or ApiStore(history, uncached_resources)
        self.bookmark_interval = bookmark_interval
        self.feature_gates = check_feature_gates(feature_gates or {})
        self._coordinator: LeaseCoordinator | None = None
        """The server's feature gates (``--feature-gates``): ``ShardedListAndWatch``
        (KEP-5866, alpha, off as on a real v1.36 server) applies LIST and WATCH
        ``shardSelector``s."""
        self.latency = 0.0
        self.init_faults()
        self._httpd = _Server(self, port)
        address = self._httpd.server_address
        self.host: str = str(address[0])
        self.port: int = int(address[1])
        self._thread: threading.Thread | None = None
        #: Requests served so far: all, LIST (each page counts), WATCH, the watches that
        #: asked for a watch-list stream (``sendInitialEvents=true``, counted in
        #: ``watch_requests`` too); and those dropped because the client went away before
        #: its whole body arrived.
        self.requests = 0
        self.list_requests = 0
        self.watch_requests = 0
        self.watch_list_requests = 0
        self.truncated_bodies = 0
        self._count_lock = threading.Lock()
        self._tokens: frozenset[str] = frozenset()

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The server's ``http://127.0.0.1:port``."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> EmbeddedApiServer:
        """Start serving on a thread of its own; returns the server."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
            name="apiserver-listener", daemon=True,
        )
        self._thread.start()
        if self.feature_gates[COORDINATED_LEADER_ELECTION]:
            self._coordinator = LeaseCoordinator(self.store)
            self._coordinator.start()
        return self

    def stop(self) -> None:
        """Stop serving, end every watch and close every connection."""
        if self._coordinator is not None:
            self._coordinator.stop()
            self._coordinator = None
        self._httpd.shutdown()
        self.store.close()  # requests a frozen dump holds end, touching nothing
        with contextlib.suppress(StoreFrozenError):
            self.end_all_watches(None)
        self.drop_all_connections()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(2)
        deadline = time.monotonic() + 2.0
        with self._httpd.conn_lock:
            threads = list(self._httpd.threads)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> EmbeddedApiServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def register(self, rtype: ResourceType) -> None:
        """Serve a custom resource (also listed in discovery)."""
        self.store.register(rtype)

    # -- clients -----------------------------------------------------------------------------------
    def configuration(self) -> Any:
        """A ``kubernetes.client.Configuration`` for the server."""
        return client_configuration(self.url)

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` configured for this server."""
        return ApiClient(self.configuration())

    def kubeconfig(self) -> dict[str, Any]:
        """A kubeconfig dict pointing at the server."""
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "embedded", "cluster": {"server": self.url}}],
            "users": [{"name": "embedded", "user": {"token": "embedded-token"}}],
            "contexts": [{"name": "embedded",
                          "context": {"cluster": "embedded", "user": "embedded"}}],
            "current-context": "embedded",
        }

    def write_kubeconfig(self, path: str) -> str:
        """Write a kubeconfig (JSON, which YAML loaders read) and return its path."""
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.kubeconfig(), fh, indent=2)
        return path

    def accept_tokens(self, *tokens: str) -> None:
        """Authenticate requests as the real server does with bearer tokens: from now on
        only ``Authorization: Bearer <t>`` with ``t`` among ``tokens`` is served, anything
        else gets 401 Unauthorized (open watches stay open, as on a real server whose
        token file changed). No tokens: every request is served (the default)."""
        with self._count_lock:
            self._tokens = frozenset(tokens)

    def authenticate(self, authorization: str | None) -> None:
        """Raise 401 Unauthorized (the real server's Status) unless ``authorization``
        carries an accepted token (see :meth:`accept_tokens`)."""
        with self._count_lock:
            tokens = self._tokens
        if not tokens:
            return
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or token.strip() not in tokens:
            raise ApiStatusError(401, "Unauthorized", "Unauthorized")

    def count_request(self, counter: str) -> None:
        """Add one to a request counter (handler threads run concurrently)."""
        with self._count_lock:
            setattr(self, counter, getattr(self, counter) + 1)

    def start_load(self, count: int, namespace: str = "bench", kind: str = "configmaps",
                   rate: float = 0.0, mix: str = "create") -> None:
        """See :func:`~client_cache.testing.apiserver.load.start_load`."""
        start_load(self.store, count, namespace, kind, rate, mix)

    def listening_address(self) -> tuple[str, int]:
        """The address the server's listening socket is bound to."""
        host, port = self._httpd.socket.getsockname()[:2]
        return str(host), int(port)

    def connections(self) -> list[socket.socket]:
        """The open client connections."""
        with self._httpd.conn_lock:
            return list(self._httpd.connections)

    def open_watch_count(self) -> int:
        """How many watches are open now."""
        return len(self.store.watchers())


