"""A loopback TCP proxy that can turn into a black hole (for leader election and stall
tests).

:class:`TcpProxy` forwards every connection to ``target`` byte for byte (TLS passes through
untouched). :meth:`TcpProxy.blackhole` makes it swallow everything from then on, in both
directions, on open connections and new ones alike, without closing anything: the client
sees no FIN, no RST, no answer, as when a network path silently drops packets.
:meth:`TcpProxy.blackhole` with ``False`` forwards again (for new bytes). ``latency``
seconds delay every chunk on its way to the target (a slow server as the client sees it:
each request arrives that much later). A connection that breaks on one side (the target
resets it, as a restarting API server does) is shut down on the other, as a real path
passes a reset on. :meth:`TcpProxy.hang_open` makes the connections open at that moment
half-dead for good, new ones forwarding. Only loopback addresses are accepted.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from types import TracebackType

from client_cache.testing.apiserver.server import LOOPBACK_NAMES

__all__ = ["TcpProxy"]


class TcpProxy:
    """See the module documentation. ``port`` 0 picks a free one."""

    def __init__(self, target_host: str, target_port: int, port: int = 0,
                 latency: float = 0.0) -> None:
        if target_host not in LOOPBACK_NAMES:
            raise ValueError(f"the proxy only forwards to loopback, not {target_host!r}")
        self.target = (target_host, target_port)
        self.latency = latency
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port: int = self._listener.getsockname()[1]
        self._holed = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._hung: set[socket.socket] = set()
        self.swallowed = threading.Event()
        """Set when bytes were swallowed (a request sent into the black hole or a hung
        connection); cleared by :meth:`blackhole`."""
        self._threads: list[threading.Thread] = []

    @property
    def url_host(self) -> str:
        """``127.0.0.1:port`` of the proxy."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> TcpProxy:
        """Start forwarding on a thread of its own; returns the proxy."""
        with self._lock:
            self._spawn_locked(self._accept, "proxy-accept")
        return self

    def _spawn_locked(self, target: Callable[..., None], name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._stopped.is_set():  # stop() ran meanwhile: it will not see these
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
                self._spawn_locked(self._pump, "proxy-up", client, upstream, self.latency)
                self._spawn_locked(self._pump, "proxy-down", upstream, client)

    def _pump(self, source: socket.socket, sink: socket.socket, latency: float = 0.0) -> None:
        """Forward ``source`` to ``sink`` until one of them ends: a clean end (FIN) is
        passed on as a FIN, a reset or any other failure on either side ends both (the
        other side sees its connection end, as through a real network path), except in
        a black hole, which closes nothing."""
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                self._end_both(source, sink)
                return
            if not data:
                if not self._holed.is_set() and source not in self._hung:
                    with contextlib.suppress(OSError):
                        sink.shutdown(socket.SHUT_WR)
                return
            if self._holed.is_set() or source in self._hung:
                self.swallowed.set()
                continue  # swallowed
            if latency > 0 and self._stopped.wait(latency):  # the emulated network delay
                return
            try:
                sink.sendall(data)
            except OSError:
                self._end_both(source, sink)
                return

    def _end_both(self, source: socket.socket, sink: socket.socket) -> None:
        """A connection broke: both sides are shut down (a reset seen by neither end
        would leave the other waiting for bytes that never come)."""
        if self._holed.is_set() or source in self._hung:
            return
        for sock in (sink, source):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def hang_open(self) -> None:
        """Make every connection open now half-dead: its bytes are swallowed both ways
        and nothing is closed, for good; new connections forward as before (a watch
        stuck on a dead path while the client's new requests get through)."""
        with self._lock:
            self._hung.update(self._sockets)

    def blackhole(self, on: bool = True) -> None:
        """Swallow all traffic from now on (``on``), or forward again."""
        if on:
            self.swallowed.clear()
            self._holed.set()
        else:
            self._holed.clear()

    def stop(self) -> None:
        """Close the listener and every connection; the proxy's threads end."""
        with self._lock:
            self._stopped.set()
        with contextlib.suppress(OSError):  # on Linux only this wakes a blocked accept()
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
            threads = list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for thread in threads:
            thread.join(1.0)

    def __enter__(self) -> TcpProxy:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
