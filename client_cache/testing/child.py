"""A child process that prints one JSON object per line, read on a thread of its own: the
base of the test helpers that run leader-election candidates and sharded members in
processes of their own (:class:`~client_cache.testing.leader.CandidateProcess`,
:class:`~client_cache.testing.shard_worker.ShardWorkerProcess`).

Each line becomes an event in :attr:`LineProcess.events`, stamped with ``time.monotonic()``
on arrival when it carries no ``t`` (one clock for every process of the machine); the end
of the output adds an ``eof`` event. The child's standard input is a pipe only this
object writes, so closing it (:meth:`LineProcess.close`) tells a child that watches it
that its parent is gone.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LineProcess", "add_lease_arguments", "emit"]

_OUT = threading.Lock()


def add_lease_arguments(parser: argparse.ArgumentParser, retry_period: float) -> None:
    """The command-line flags every Lease-holding child takes: ``--kubeconfig``, ``--id``,
    ``--namespace`` and the three durations (seconds; lease 2, renew deadline 1.5)."""
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--id", required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--lease-duration", type=float, default=2.0)
    parser.add_argument("--renew-deadline", type=float, default=1.5)
    parser.add_argument("--retry-period", type=float, default=retry_period)


def emit(kind: str, **fields: Any) -> None:
    """In the child: print one event (``{"e": kind, "t": <monotonic>, **fields}``) as a
    whole line (threads print concurrently: a shared print could interleave two lines)."""
    line = json.dumps({"e": kind, "t": time.monotonic(), **fields}) + "\n"
    with _OUT:
        sys.stdout.write(line)
        sys.stdout.flush()


class LineProcess:
    """``argv`` running as a child; ``name`` names the reader thread."""

    def __init__(self, argv: list[str], name: str) -> None:
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self._reader = threading.Thread(target=self._read, daemon=True, name=name)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            event.setdefault("t", time.monotonic())
            with self._cond:
                self.events.append(event)
                self._cond.notify_all()
        with self._cond:
            self.events.append({"e": "eof", "t": time.monotonic()})
            self._cond.notify_all()

    def snapshot(self) -> list[dict[str, Any]]:
        """The events so far."""
        with self._cond:
            return list(self.events)

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], object],
                 timeout: float) -> bool:
        """Wait until ``predicate(events)`` holds (checked again at each new line)."""
        with self._cond:
            return bool(self._cond.wait_for(lambda: predicate(self.events), timeout))

    def signal(self, signum: int) -> float:
        """Send ``signum``; returns the monotonic time it was sent."""
        at = time.monotonic()
        self.proc.send_signal(signum)
        return at

    def kill(self) -> float:
        """SIGKILL, waiting for the process to end; returns when it was sent."""
        at = self.signal(signal.SIGKILL)
        self.proc.wait(10)
        self._reader.join(5)
        return at

    def terminate(self) -> float:
        """SIGTERM (a graceful stop); returns the monotonic time it was sent."""
        return self.signal(signal.SIGTERM)

    def close(self) -> None:
        """End the child: SIGCONT (it may be stopped), its standard input closed, SIGTERM,
        SIGKILL if it has not ended 15 s later; then its reader thread."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
