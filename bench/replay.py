"""A replay source for benchmarks: the Go server in ``bench/replay`` serving one
namespace's pods from files written here, at the speed of the socket.

The pods are the embedded server's load-generator pods
(:func:`client_cache.testing.apiserver.load.sample_object`), with full metadata, so the
same bytes can be measured against both servers. The change stream updates the pods in
turn (each a MODIFIED event with the next resourceVersion and a new status message), so
the cache keeps its size. The server is a stdlib-only Go program built on first use.

    with ReplayServer(pods=1000, events=10_000) as replay:
        api = replay.api_client()          # list, watch, or watch-list from replay.url
        ...                                # sync an informer
        replay.start_events()              # the change events go out at socket speed
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes.client import ApiClient

from bench import go_programs
from client_cache.testing.apiserver.load import sample_object
from client_cache.testing.apiserver.server import client_configuration

__all__ = ["ReplayFiles", "ReplayServer", "build_replay", "pod"]



def build_replay() -> Path:
    """The replay server's binary (stdlib Go), built by ``make envtest`` or here once
    (:mod:`bench.go_programs`)."""
    return go_programs.build("replay")


def pod(i: int, namespace: str, resource_version: int, message: str = "") -> dict[str, Any]:
    """The ``i``-th replayed pod at ``resource_version``."""
    obj = sample_object("pods", i)
    md = obj["metadata"]
    md.pop("generateName", None)
    md.update(name=f"web-{i:06d}", namespace=namespace, uid=f"00000000-0000-0000-0000-{i:012d}",
              resourceVersion=str(resource_version),
              creationTimestamp="2026-11-22T04:00:00Z")
    obj["apiVersion"], obj["kind"] = "v1", "Pod"
    if message:
        obj["status"]["message"] = message
    return obj


def _line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


class ReplayFiles:
    """The files a replay server serves, written once for ``pods`` pods in ``namespace``
    and ``events`` changes, for any number of servers (:attr:`pod_bytes` is the mean JSON
    size of a pod). Remove them with :meth:`close`."""

    def __init__(self, pods: int, events: int, namespace: str = "bench") -> None:
        self.pods, self.events, self.namespace = pods, events, namespace
        self._dir = tempfile.TemporaryDirectory(prefix="client-cache-replay-")
        directory = Path(self._dir.name)
        lines = [_line(pod(i, namespace, i + 1)) for i in range(pods)]
        self.pod_bytes = sum(map(len, lines)) // max(1, len(lines)) - 1
        items = b",".join(line.rstrip(b"\n") for line in lines)
        (directory / "list.json").write_bytes(
            b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"'
            + str(pods).encode() + b'"},"items":[' + items + b"]}")
        with open(directory / "initial.jsonl", "wb") as out:
            for line in lines:
                out.write(b'{"type":"ADDED","object":' + line.rstrip(b"\n") + b"}\n")
            out.write(_line({"type": "BOOKMARK", "object": {
                "kind": "Pod", "apiVersion": "v1", "metadata": {
                    "resourceVersion": str(pods),
                    "annotations": {"k8s.io/initial-events-end": "true"}}}}))
        with open(directory / "events.jsonl", "wb") as out:
            for j in range(events):
                changed = pod(j % pods, namespace, pods + 1 + j, f"change {j}")
                out.write(_line({"type": "MODIFIED", "object": changed}))
        self.args = ["-namespace", namespace, "-list", str(directory / "list.json"),
                     "-initial", str(directory / "initial.jsonl"),
                     "-events", str(directory / "events.jsonl")]

    def close(self) -> None:
        """Remove the files."""
        self._dir.cleanup()


class ReplayServer:
    """The replay server for ``pods`` pods in ``namespace`` and ``events`` changes (see
    the module documentation), or for ``files`` written before (which it leaves in
    place). :attr:`pod_bytes` is the mean JSON size of a pod."""

    def __init__(self, pods: int = 0, events: int = 0, namespace: str = "bench",
                 files: ReplayFiles | None = None) -> None:
        if files is not None:
            pods, events, namespace = files.pods, files.events, files.namespace
        self.pods, self.events, self.namespace = pods, events, namespace
        self.url = ""
        self.pod_bytes = files.pod_bytes if files is not None else 0
        self._files = files
        self._own_files: ReplayFiles | None = None
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> ReplayServer:
        """Write the files (unless given), build the server if needed and start it."""
        binary = build_replay()
        files = self._files
        if files is None:
            files = self._own_files = ReplayFiles(self.pods, self.events, self.namespace)
            self.pod_bytes = files.pod_bytes
        self._proc = subprocess.Popen([str(binary), *files.args], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.stop()
            raise RuntimeError("the replay server did not start")
        return self

    @property
    def pid(self) -> int:
        """The running server's process id."""
        assert self._proc is not None, "the server is not running"
        return self._proc.pid

    def pin(self, cpus: set[int]) -> None:
        """Keep every thread of the running server on ``cpus`` (``sched_setaffinity``;
        Linux). A thread inherits its creator's CPUs, so the threads are looked up again
        until no new one has appeared: one started by a thread not yet moved is moved too.
        A thread that ends meanwhile is skipped."""
        tasks = f"/proc/{self.pid}/task"
        done: set[str] = set()
        while fresh := set(os.listdir(tasks)) - done:
            for task in fresh:
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(int(task), cpus)
            done |= fresh

    def start_events(self) -> None:
        """Let the change events go out on the first watch."""
        request = urllib.request.Request(f"{self.url}/__control/start", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            resp.read()

    def stats(self) -> dict[str, int]:
        """How many LISTs, watches and watch-lists (``sendInitialEvents``) it served."""
        with urllib.request.urlopen(f"{self.url}/__control/stats", timeout=10) as resp:
            answer: dict[str, int] = json.loads(resp.read())
            return answer

    def api_client(self) -> ApiClient:
        """A ``kubernetes.client.ApiClient`` for the server."""
        return ApiClient(client_configuration(self.url))

    def stop(self) -> None:
        """End the server and remove its files."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()  # the server exits at end-of-file
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            if proc.stdout is not None:
                proc.stdout.close()
        if self._own_files is not None:
            self._own_files.close()
            self._own_files = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
