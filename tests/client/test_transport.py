"""transport.py: requests that stop interrupts, the request timeout, one retry on a dead
pooled connection; and what that gives the reflector and the factory (issue 16, item 3)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes.client import ApiClient, Configuration

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.errors import StopRequestedError
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.reflector import Reflector, ReflectorOptions
from client_cache.store import meta_namespace_key_func, new_store
from tests.fixtures import eventually

PODS = GroupVersionResource("", "v1", "pods")
EMPTY_LIST = (b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},'
              b'"items":[]}')


class RawServer:
    """A loopback TCP server with a scripted behaviour per accepted connection:
    ``"stall"`` reads and never answers; ``"headers"`` answers a LIST's headers and half
    its body, then stalls; ``"serve-then-die"`` answers one request with keep-alive, then
    closes on the next without answering; ``"die"`` closes on the first request;
    ``"serve"`` answers every request."""

    def __init__(self, *behaviours: str) -> None:
        self.behaviours = list(behaviours)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.requests = 0
        self._conns: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = threading.Event()
        self._acceptor = threading.Thread(target=self._accept, name="test-raw-server",
                                          daemon=True)
        self._acceptor.start()

    def client(self) -> ApiClient:
        config = Configuration()
        config.host = f"http://127.0.0.1:{self.port}"
        return ApiClient(config)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            behaviour = self.behaviours[min(self.accepted, len(self.behaviours) - 1)]
            self.accepted += 1
            self._conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn, behaviour),
                                      name="test-raw-conn", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _read_request(self, conn: socket.socket) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                return False
            data += chunk
        self.requests += 1
        return True

    def _serve(self, conn: socket.socket, behaviour: str) -> None:
        try:
            served = 0
            while self._read_request(conn):
                if behaviour == "die" or (behaviour == "serve-then-die" and served == 1):
                    conn.close()
                    return
                if behaviour == "stall":
                    self._closed.wait()
                    return
                if behaviour == "headers":
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                 b"Content-Length: %d\r\n\r\n" % len(EMPTY_LIST)
                                 + EMPTY_LIST[:20])
                    self._closed.wait()
                    return
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(EMPTY_LIST) + EMPTY_LIST)
                served += 1
        except OSError:
            pass

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (Linux)
        self.sock.close()
        for conn in self._conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        self._acceptor.join(2)
        for thread in self._threads:
            thread.join(2)


@pytest.fixture
def stalled() -> Iterator[RawServer]:
    server = RawServer("stall")
    yield server
    server.close()


def stop_after(stop: threading.Event, predicate: Any) -> threading.Thread:
    """Set ``stop`` once ``predicate()`` holds (the request is in flight)."""
    def body() -> None:
        deadline = time.monotonic() + 10
        while not predicate() and time.monotonic() < deadline:
            time.sleep(0.005)
        stop.set()
    thread = threading.Thread(target=body, name="test-stopper", daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("verb", ["list", "watch"])
def test_stop_interrupts_a_request_waiting_for_headers(stalled: RawServer, verb: str) -> None:
    lw = ClientListerWatcher(stalled.client(), PODS, request_timeout=60)
    stop = threading.Event()
    stopper = stop_after(stop, lambda: stalled.requests == 1)
    call = lw.list_with_context if verb == "list" else lw.watch_with_context
    with pytest.raises(StopRequestedError):
        call(stop, ListOptions())
    returned = time.monotonic()
    stopper.join()
    assert stop.is_set() and time.monotonic() - returned < 1.0


def test_stop_interrupts_a_list_body_in_flight() -> None:
    server = RawServer("headers")
    try:
        lw = ClientListerWatcher(server.client(), PODS, request_timeout=60)
        stop = threading.Event()
        stopper = stop_after(stop, lambda: server.requests == 1)
        started = time.monotonic()
        with pytest.raises(StopRequestedError):
            lw.list_with_context(stop, ListOptions())
        stopper.join()
        assert time.monotonic() - started < 10  # not the 60 s read timeout
    finally:
        server.close()


def test_request_timeout_bounds_a_stalled_list(stalled: RawServer) -> None:
    lw = ClientListerWatcher(stalled.client(), PODS, request_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.ReadTimeoutError):
        lw.list(ListOptions())
    assert 0.5 <= time.monotonic() - started < 5
    with pytest.raises(ValueError, match="request_timeout"):
        ClientListerWatcher(stalled.client(), PODS, request_timeout=0)


def test_a_dead_pooled_connection_is_retried_once_on_a_new_one() -> None:
    """The server closes a kept-alive connection as the next request arrives (as after an
    apiserver restart): the GET goes again on a fresh connection; a fresh connection that
    dies is not retried."""
    server = RawServer("serve-then-die", "serve")
    try:
        lw = ClientListerWatcher(server.client(), PODS)
        assert lw.list(ListOptions())["metadata"]["resourceVersion"] == "7"
        assert lw.list(ListOptions())["metadata"]["resourceVersion"] == "7"
        assert server.accepted == 2 and server.requests == 3
    finally:
        server.close()
    dying = RawServer("serve-then-die", "die")
    try:
        lw = ClientListerWatcher(dying.client(), PODS)
        lw.list(ListOptions())  # connection 1 serves one request
        with pytest.raises(urllib3.exceptions.ProtocolError):
            lw.list(ListOptions())  # 1 dies, retried on 2, which dies too: no third try
        assert dying.accepted == 2
    finally:
        dying.close()


@pytest.mark.parametrize("state", ["listing", "watch-headers"])
def test_reflector_ends_within_a_second_of_stop_in_flight(state: str) -> None:
    server = RawServer("stall") if state == "listing" else RawServer("serve", "stall")
    try:
        lw = ClientListerWatcher(server.client(), PODS)
        reflector = Reflector(lw, None, new_store(meta_namespace_key_func),
                              ReflectorOptions(name="stalled"))
        stop = threading.Event()
        thread = threading.Thread(target=reflector.run, args=(stop,), name="reflector-pods")
        thread.start()
        # listing: the LIST is in flight; watch-headers: the LIST was served, the WATCH
        # waits for headers on a second connection
        stopper = stop_after(stop, lambda: server.requests == (1 if state == "listing" else 2))
        stopper.join()
        set_at = time.monotonic()
        thread.join(5)
        assert not thread.is_alive() and time.monotonic() - set_at < 1.0
    finally:
        server.close()


def test_factory_shutdown_waits_in_parallel_and_reports(stalled: RawServer) -> None:
    """The issue's reproduction: informers against a socket that never answers; after
    ``stop.set()`` every thread ends within a second, and ``shutdown`` says so."""
    factory = new_shared_informer_factory_with_options(
        stalled.client(), 0, SharedInformerFactoryOptions())
    for accessor in ("pods", "configmaps", "secrets"):
        factory.core().v1().resource(accessor).informer()
    stop = threading.Event()
    factory.start(stop)
    eventually(lambda: stalled.requests >= 3, 10)
    stop.set()
    started = time.monotonic()
    assert factory.shutdown(timeout=5) == []
    assert time.monotonic() - started < 1.0
    names = {t.name for t in threading.enumerate()}
    assert not {n for n in names if n.startswith(("informer-", "reflector-"))}


def test_factory_shutdown_names_threads_that_outlive_it() -> None:
    """A thread that will not end (here: an informer whose stop was never set) is
    reported, after ``timeout`` for all of them together."""
    server = RawServer("serve")
    stop = threading.Event()
    factory = new_shared_informer_factory_with_options(
        server.client(), 0, SharedInformerFactoryOptions())
    try:
        for accessor in ("pods", "configmaps"):
            factory.core().v1().resource(accessor).informer()
        factory.start(stop)
        started = time.monotonic()
        alive = factory.shutdown(timeout=0.3)
        assert sorted(alive) == ["informer-configmaps", "informer-pods"]
        assert time.monotonic() - started < 1.0  # 0.3 s for both together
    finally:
        stop.set()
        assert factory.shutdown(timeout=5) == []
        server.close()
