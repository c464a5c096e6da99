"""A dead network path: connections that stop carrying bytes without a FIN or RST.

A loopback TCP proxy sits between the informer and the embedded API server; ``blackhole()``
freezes every connection open at that moment (nothing is forwarded any more in either
direction, both sockets stay open), as a dropped NAT entry or a vanished peer would. The
informer's watch idle timeout notices the silence, the reflector drops its idle pooled
connections (they lead into the same dead path) and watches again, from its
resourceVersion, over a new connection: the changes made meanwhile arrive, with no relist.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration, CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.client.transport import KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_PROBES
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.index import NAMESPACE_INDEX, meta_namespace_index_func
from client_cache.shared_informer import (
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
)
from client_cache.testing.apiserver import EmbeddedApiServer

PODS = GroupVersionResource("", "v1", "pods")
NAMESPACE = "dead"


class BlackholeProxy:
    """A TCP proxy on loopback to ``port``, with ``blackhole()`` (see the module doc)."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.links: list[tuple[socket.socket, socket.socket, threading.Event]] = []
        self.threads: list[threading.Thread] = []
        self.closed = threading.Event()
        self.forwarded = 0.0  # monotonic: when bytes were last sent on toward a client
        self._spawn(self._accept, "proxy-accept")

    def _spawn(self, target: Any, name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self.threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        self.listener.settimeout(0.1)
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.create_connection(("127.0.0.1", self.target))
            frozen = threading.Event()
            with self.lock:
                self.links.append((client, upstream, frozen))
            self._spawn(self._pump, "proxy-up", client, upstream, frozen, False)
            self._spawn(self._pump, "proxy-down", upstream, client, frozen, True)

    def _pump(self, src: socket.socket, dst: socket.socket, frozen: threading.Event,
              down: bool) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if frozen.is_set():
                self.closed.wait()  # swallow: never forward, never close until the end
                return
            if not data:
                with contextlib.suppress(OSError):
                    dst.shutdown(socket.SHUT_WR)
                return
            if down:
                with self.lock:
                    self.forwarded = time.monotonic()
            try:
                dst.sendall(data)
            except OSError:
                return

    def blackhole(self) -> None:
        with self.lock:
            for _, _, frozen in self.links:
                frozen.set()

    def close(self) -> None:
        self.closed.set()
        self.threads[0].join(2)  # the accept loop
        self.listener.close()
        with self.lock:
            for client, upstream, _ in self.links:
                for sock in (client, upstream):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                    sock.close()
        for thread in self.threads:
            thread.join(2)


@pytest.fixture
def path() -> Iterator[tuple[EmbeddedApiServer, BlackholeProxy]]:
    server = EmbeddedApiServer(bookmark_interval=60).start()
    proxy = BlackholeProxy(server.port)
    try:
        yield server, proxy
    finally:
        proxy.close()
        server.stop()


def client_for(port: int) -> ApiClient:
    config = Configuration()
    config.host = f"http://127.0.0.1:{port}"
    return ApiClient(config)


def test_dead_path_is_left_by_the_idle_timeout_without_a_relist(
        path: tuple[EmbeddedApiServer, BlackholeProxy]) -> None:
    server, proxy = path
    direct = CoreV1Api(server.api_client())
    for i in range(3):
        direct.create_namespaced_pod(NAMESPACE, {"metadata": {"name": f"p{i}"}})
    lw = ClientListerWatcher(client_for(proxy.port), PODS, NAMESPACE, request_timeout=2.0)
    informer = new_shared_index_informer_with_options(lw, None, SharedIndexInformerOptions(
        indexers={NAMESPACE_INDEX: meta_namespace_index_func}, watch_idle_timeout=1.5))
    seen: list[str] = []
    changed = threading.Condition()

    def on_add(obj: Any) -> None:
        with changed:
            seen.append(obj["metadata"]["name"])
            changed.notify_all()

    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add))
    stop = threading.Event()
    runner = threading.Thread(target=informer.run, args=(stop,), name="dead-informer",
                              daemon=True)
    runner.start()
    try:
        with changed:
            assert changed.wait_for(lambda: len(seen) == 3, 10)
        # an event through the watch: its stream flows through the proxy
        direct.create_namespaced_pod(NAMESPACE, {"metadata": {"name": "p3"}})
        with changed:
            assert changed.wait_for(lambda: len(seen) == 4, 10)
        lists, watches = server.list_requests, server.watch_requests
        proxy.blackhole()
        with proxy.lock:  # the informer read its last bytes no earlier than this
            silent_since = proxy.forwarded
        # made while the path is dead: the frozen watch swallows them
        for i in range(4, 7):
            direct.create_namespaced_pod(NAMESPACE, {"metadata": {"name": f"p{i}"}})
        with changed:
            assert changed.wait_for(lambda: len(seen) == 7, 15), seen
        recovered = time.monotonic() - silent_since
        assert sorted(seen) == [f"p{i}" for i in range(7)]  # each exactly once
        assert server.list_requests == lists  # no relist: the resourceVersion was valid
        assert server.watch_requests > watches
        # the idle timeout counted from the watch's last bytes, not a lucky event (the
        # changes were made up to a few tenths of a second into the silence)
        assert 1.5 <= recovered < 10
        keys = sorted(informer.get_store().list_keys())
        assert keys == [f"{NAMESPACE}/p{i}" for i in range(7)]
    finally:
        stop.set()
        runner.join(5)
    assert not runner.is_alive()


def test_watch_and_list_connections_have_tcp_keepalive(
        path: tuple[EmbeddedApiServer, BlackholeProxy]) -> None:
    server, _ = path
    lw = ClientListerWatcher(server.api_client(), PODS, NAMESPACE)
    w = lw.watch(ListOptions(resource_version="0"))
    try:
        sock = w._response.connection.sock  # type: ignore[attr-defined]
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) \
                == KEEPALIVE_INTERVAL
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == KEEPALIVE_PROBES
        assert sock.gettimeout() is None  # after the headers: the idle timeout (none here)
    finally:
        w.stop()


def test_user_socket_options_are_left_alone(
        path: tuple[EmbeddedApiServer, BlackholeProxy]) -> None:
    """A configuration with socket options of its own gets exactly those (the transport's
    pool is built from the configuration as the client builds its own): no keepalive is
    added behind the user's back."""
    server, _ = path
    api = server.api_client()
    api.configuration.socket_options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
    lw = ClientListerWatcher(api, PODS, NAMESPACE)
    w = lw.watch(ListOptions(resource_version="0"))
    try:
        sock = w._response.connection.sock  # type: ignore[attr-defined]
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 0
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        w.stop()
