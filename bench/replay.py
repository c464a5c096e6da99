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

import json
import os
import subprocess
import tempfile
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes.client import ApiClient

from client_cache.testing.apiserver.load import sample_object
from client_cache.testing.apiserver.server import client_configuration
from client_cache.testing.envtest import find_go

__all__ = ["ReplayServer", "build_replay", "pod"]

SOURCE = Path(__file__).resolve().parent / "replay"


def build_replay() -> Path:
    """Build the replay server (stdlib Go, no module downloads); returns the binary."""
    go = find_go()
    if go is None:
        raise RuntimeError("the replay server needs the Go toolchain")
    out = SOURCE / "bin" / "replay"
    subprocess.run([go, "build", "-o", str(out), "."], cwd=SOURCE, check=True,
                   env=dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod"))
    return out


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


class ReplayServer:
    """The replay server for ``pods`` pods in ``namespace`` and ``events`` changes (see
    the module documentation). :attr:`pod_bytes` is the mean JSON size of a pod."""

    def __init__(self, pods: int, events: int, namespace: str = "bench") -> None:
        self.pods, self.events, self.namespace = pods, events, namespace
        self.url = ""
        self.pod_bytes = 0
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[str] | None = None

    def _write_files(self, directory: Path) -> list[str]:
        lines = [_line(pod(i, self.namespace, i + 1)) for i in range(self.pods)]
        self.pod_bytes = sum(map(len, lines)) // max(1, len(lines)) - 1
        items = b",".join(line.rstrip(b"\n") for line in lines)
        (directory / "list.json").write_bytes(
            b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"'
            + str(self.pods).encode() + b'"},"items":[' + items + b"]}")
        with open(directory / "initial.jsonl", "wb") as out:
            for line in lines:
                out.write(b'{"type":"ADDED","object":' + line.rstrip(b"\n") + b"}\n")
            out.write(_line({"type": "BOOKMARK", "object": {
                "kind": "Pod", "apiVersion": "v1", "metadata": {
                    "resourceVersion": str(self.pods),
                    "annotations": {"k8s.io/initial-events-end": "true"}}}}))
        with open(directory / "events.jsonl", "wb") as out:
            for j in range(self.events):
                changed = pod(j % self.pods, self.namespace, self.pods + 1 + j, f"change {j}")
                out.write(_line({"type": "MODIFIED", "object": changed}))
        return ["-namespace", self.namespace, "-list", str(directory / "list.json"),
                "-initial", str(directory / "initial.jsonl"),
                "-events", str(directory / "events.jsonl")]

    def start(self) -> ReplayServer:
        """Write the files, build the server if needed and start it."""
        binary = SOURCE / "bin" / "replay"
        if not binary.exists() or binary.stat().st_mtime < (SOURCE / "main.go").stat().st_mtime:
            binary = build_replay()
        self._dir = tempfile.TemporaryDirectory(prefix="client-cache-replay-")
        args = self._write_files(Path(self._dir.name))
        self._proc = subprocess.Popen([str(binary), *args], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self.stop()
            raise RuntimeError("the replay server did not start")
        return self

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
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
