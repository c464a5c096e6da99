"""The embedded API server in a child process, and its command line (``python -m
client_cache.testing.apiserver``)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Mapping
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

from kubernetes.client import ApiClient

from client_cache.errors import ClientCacheError
from client_cache.testing.apiserver.gates import check_feature_gates, parse_feature_gates
from client_cache.testing.apiserver.server import LOOPBACK, EmbeddedApiServer, client_configuration
from client_cache.util.signals import SignalRelay

__all__ = ["EmbeddedApiServerProcess", "main"]


class EmbeddedApiServerProcess:
    """The embedded API server in a child process (``python -m
    client_cache.testing.apiserver``), so that its threads and its CPU use stay out of
    the process under test. Faults are injected through its ``/__control/`` endpoints with
    :meth:`control`; :meth:`stop` ends the process (SIGTERM, then SIGKILL after 5 s).

    The child holds the read end of a pipe whose only writer is this process: when this
    process dies, however it dies (SIGKILL, a closed terminal's SIGHUP), the child reads
    end-of-file and exits within a moment, so no server outlives the program that started
    it."""

    def __init__(self, *, bookmark_interval: float = 1.0, history: int = 100_000,
                 uncached_resources: tuple[str, ...] = (), port: int = 0,
                 feature_gates: Mapping[str, bool] | None = None) -> None:
        self.bookmark_interval = bookmark_interval
        self.history = history
        self.uncached_resources = uncached_resources
        self.feature_gates = check_feature_gates(feature_gates or {})
        self.port = port
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None

    def start(self, state: str = "") -> EmbeddedApiServerProcess:
        """Start the process (on :attr:`port`; 0 picks a free one, kept for restarts),
        from the dump ``state`` when given."""
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "client_cache.testing.apiserver",
             "--port", str(self.port),
             "--bookmark-interval", str(self.bookmark_interval),
             "--history", str(self.history),
             *(f"--uncached={plural}" for plural in self.uncached_resources),
             "--feature-gates=" + ",".join(f"{name}={str(on).lower()}"
                                           for name, on in self.feature_gates.items()),
             *(["--state", state] if state else []),
             "--exit-with-parent"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True,
        )
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            self.stop()
            raise ClientCacheError("the embedded API server process did not start")
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def kill_and_restart(self, state_path: str) -> int:
        """Crash and recover: dump the store to ``state_path`` and freeze it (no write
        after the dump succeeds), SIGKILL the process, then start a new one on the same
        port from the dump. Its watch history starts over, as a restarted API server's
        watch cache does. Returns the restored resourceVersion."""
        revision = self.kill(state_path)
        self.restart(state_path)
        return revision

    def kill(self, state_path: str) -> int:
        """An outage: dump the store to ``state_path`` and freeze it, then SIGKILL the
        process (connections reset, then refused); :meth:`restart` brings it back from the
        dump. Returns the dumped resourceVersion."""
        revision = int(self.control("dump", path=state_path, freeze=True)["result"])
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait(5)
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
        return revision

    def restart(self, state_path: str) -> None:
        """Start again on the same port from the dump at ``state_path`` (the port may
        linger for a moment: tried for 10 s)."""
        deadline = time.monotonic() + 10
        while True:
            try:
                self.start(state_path)
                return
            except ClientCacheError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    @property
    def pid(self) -> int | None:
        """The server process's id (None when not running)."""
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
        """End the process: SIGTERM, then SIGKILL after 5 s."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> EmbeddedApiServerProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def configuration(self) -> Any:
        """A ``kubernetes.client.Configuration`` for the server."""
        return client_configuration(self.url)

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` configured for the server process."""
        return ApiClient(self.configuration())

    def control(self, action: str, **params: Any) -> dict[str, Any]:
        """Call ``/__control/<action>`` (compact, close-watches, abort-watches, garble,
        raw-line, bad-list, stall, watch-error, fail, latency, drop-connections, load,
        state) and return its JSON answer."""
        query = urlencode({k: str(v).lower() if isinstance(v, bool) else str(v)
                           for k, v in params.items()})
        url = f"{self.url}/__control/{action}" + (f"?{query}" if query else "")
        request = urllib.request.Request(url, data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            answer: dict[str, Any] = json.loads(resp.read())
            return answer

    def compact(self) -> int:
        """Compact the server's history; returns the compacted revision."""
        return int(self.control("compact")["result"])


def _exit_at_eof() -> None:
    """Exit the process at once when standard input ends: the parent died, nobody is
    left to talk to, and there is nothing to save (``os._exit``: no clean shutdown of
    the server's threads to wait for)."""
    fd = sys.stdin.fileno()
    with contextlib.suppress(OSError):
        # os.read, not sys.stdin: a daemon thread blocked in a buffered read would hold
        # the buffer's lock while the interpreter finalizes (a fatal error at exit)
        while os.read(fd, 4096):
            pass
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    """Run the server as a process: print the URL, optionally write a kubeconfig, serve
    until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(description="client_cache embedded API server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default=LOOPBACK,
                        help="127.0.0.1 or localhost: the server never binds anything else")
    parser.add_argument("--kubeconfig", default="")
    parser.add_argument("--bookmark-interval", type=float, default=1.0)
    parser.add_argument("--history", type=int, default=100_000)
    parser.add_argument("--uncached", action="append", default=[],
                        help="a resource (plural) served as if it had no watch cache")
    parser.add_argument("--feature-gates", default="",
                        help="Name=true,Other=false, as kube-apiserver's (the gates of "
                             "client_cache.testing.apiserver.gates)")
    parser.add_argument("--state", default="",
                        help="start from this dump (POST /__control/dump?path=...)")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="exit when standard input reaches end-of-file (the parent "
                             "holds the pipe's write end and dies with it)")
    args = parser.parse_args(argv)
    try:
        server = EmbeddedApiServer(args.port, bookmark_interval=args.bookmark_interval,
                                   history=args.history, host=args.host,
                                   uncached_resources=tuple(args.uncached),
                                   feature_gates=parse_feature_gates(args.feature_gates))
    except ValueError as err:
        parser.error(str(err))
    if args.state:
        server.store.restore(args.state)
    stop = threading.Event()
    graceful = [signal.SIGINT, signal.SIGTERM]
    if args.exit_with_parent:
        # a child of EmbeddedApiServerProcess: its parent's stop() (SIGTERM) ends it at
        # once, as the parent's death does; there is nothing to save or to shut down
        # gracefully for anyone else (the store's state is taken with the dump control)
        graceful.remove(signal.SIGTERM)
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
        threading.Thread(target=_exit_at_eof, name="apiserver-parent-watch",
                         daemon=True).start()
    with SignalRelay(lambda _: stop.set(), graceful, name="apiserver"), server:
        if args.kubeconfig:
            server.write_kubeconfig(args.kubeconfig)
        print(server.url, flush=True)
        stop.wait()
    return 0

