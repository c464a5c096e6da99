"""Issue 67: the test harness tells the truth. TcpProxy passes a reset on (the client's
side is shut down when the upstream resets, instead of leaving it waiting for its read
timeout), and the embedded server's freeze holds every writer (no write is acknowledged
after a frozen dump, whichever thread makes it)."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from pathlib import Path

from client_cache.testing.apiserver.store import ApiStore, StoreFrozenError
from client_cache.testing.proxy import TcpProxy

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap"}


def test_the_proxy_passes_an_upstream_reset_on_to_the_client() -> None:
    upstream = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    ready = threading.Event()

    def serve() -> None:
        conn, _ = upstream.accept()
        accepted.append(conn)
        conn.sendall(b"hello")
        ready.set()

    server = threading.Thread(target=serve, name="test-upstream", daemon=True)
    server.start()
    with TcpProxy("127.0.0.1", upstream.getsockname()[1]) as proxy:
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        assert client.recv(5) == b"hello"
        assert ready.wait(10)
        # a reset (SO_LINGER 0, then close), as a killed server's kernel sends
        accepted[0].setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        accepted[0].close()
        started = time.monotonic()
        try:
            ended = client.recv(1) == b""
        except OSError:
            ended = True
        assert ended and time.monotonic() - started < 5
        client.close()
    upstream.close()
    server.join(5)


def test_a_frozen_dump_holds_every_later_writer(tmp_path: Path) -> None:
    store = ApiStore()
    (configmaps,) = [t for t in store.resource_types() if t.plural == "configmaps"]
    store.create(configmaps, "default", {**CONFIGMAP, "metadata": {"name": "before"}})
    dumped: list[int] = []
    dumper = threading.Thread(target=lambda: dumped.append(
        store.dump(str(tmp_path / "state.json"), freeze=True)), name="test-dump")
    dumper.start()
    dumper.join(10)
    assert dumped == [2]
    acknowledged = threading.Semaphore(0)
    writers = []

    def write(name: str) -> None:
        with contextlib.suppress(StoreFrozenError):
            store.create(configmaps, "default", {**CONFIGMAP, "metadata": {"name": name}})
            acknowledged.release()
    for i in range(8):  # new threads, some given the ended dumper's id
        writer = threading.Thread(target=write, args=(f"w{i}",), name=f"test-writer-{i}",
                                  daemon=True)
        writer.start()
        writers.append(writer)
    # nothing may be acknowledged: a write that got through would be within this window
    assert not acknowledged.acquire(timeout=1.0)
    assert all(writer.is_alive() for writer in writers)
    store.close()  # as the server's stop does: each held request ends, having written nothing
    for writer in writers:
        writer.join(5)
    assert not acknowledged.acquire(blocking=False)
    assert '"resourceVersion": 2' in (tmp_path / "state.json").read_text(encoding="utf-8")
