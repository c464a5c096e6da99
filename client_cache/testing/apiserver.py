"""An embedded Kubernetes API server for tests, examples and benchmarks.

:class:`EmbeddedApiServer` serves the Kubernetes HTTP protocol on 127.0.0.1 (an ephemeral
port unless one is given) from background threads, so the real ``kubernetes`` client and
this library's list-watch talk to it over loopback exactly as to a cluster::

    with EmbeddedApiServer() as server:
        api = server.api_client()              # a configured kubernetes.client.ApiClient
        CoreV1Api(api).list_namespaced_pod("default")
        server.write_kubeconfig("/tmp/kubeconfig")

What it serves (see :mod:`client_cache.testing.apistore` for the storage semantics):

* discovery: ``/api``, ``/apis``, ``/api/v1``, ``/apis/<group>/<version>``, ``/version``;
  built-in resources and custom resources added with :meth:`EmbeddedApiServer.register`;
* create (POST), get, update (PUT, 409 Conflict on a stale resourceVersion), patch (merge
  and strategic-merge bodies applied as JSON merge patches), delete and delete-collection;
* LIST: ``limit``/``continue`` (items in key order, consistent pages, tokens that expire
  with compaction), ``resourceVersion`` ""/"0"/N with ``resourceVersionMatch``
  (NotOlderThan, Exact), the real server's answer to a too-large resourceVersion, label and
  field selectors; like the watch cache, ``resourceVersion=0`` ignores ``limit``;
* WATCH: ``resourceVersion`` unset/"0" (current state as ADDED first) or N (changes after
  N; 410 ERROR event when compacted; a future N waits for it), ``allowWatchBookmarks`` (a
  bookmark every ``bookmark_interval`` seconds once the resource changed after the watch's
  start, at the resource's last change, like the watch cache), ``timeoutSeconds``,
  ``sendInitialEvents`` with the ``k8s.io/initial-events-end`` bookmark, selectors;
* errors as ``Status`` bodies with the real codes and reasons.

Fault injection (thread-safe; also reachable over HTTP under ``/__control/`` when the
server runs in its own process): :meth:`~EmbeddedApiServer.close_watches`,
:meth:`~EmbeddedApiServer.send_watch_error`, :meth:`~EmbeddedApiServer.fail_next`
(429 with Retry-After, 500, 504...), :meth:`~EmbeddedApiServer.stall_watches`,
:meth:`~EmbeddedApiServer.send_garbled_line`, ``latency``,
:meth:`~EmbeddedApiServer.compact` and :meth:`~EmbeddedApiServer.drop_all_connections`.

``python -m client_cache.testing.apiserver [--port P] [--kubeconfig PATH]`` runs it as a
process: it prints its URL on the first line of stdout and serves until interrupted.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import itertools
import json
import os
import queue
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from kubernetes.client import ApiClient, Configuration

from client_cache import fields as fieldsel
from client_cache import labels as labelsel
from client_cache.errors import (
    ApiStatusError,
    ClientCacheError,
    new_bad_request,
    new_resource_expired,
)
from client_cache.testing.apistore import ApiStore, ResourceType, Watcher, encode_event

__all__ = ["WRITTEN_AT_ANNOTATION", "EmbeddedApiServer", "EmbeddedApiServerProcess", "main",
           "sample_object"]

#: The annotation in which the load generator stores when it wrote an object.
WRITTEN_AT_ANNOTATION = "bench.client-cache.io/written-at"

_LOOPBACK = "127.0.0.1"
_LOOPBACK_NAMES = (_LOOPBACK, "localhost")  # it has no authentication: never anything else
_GARBLE = "garble"
_BAD_LISTS = ("html", "truncated", "cut")
_ABORT = "abort"


def _client_configuration(url: str) -> Any:
    config = Configuration()
    config.host = url
    config.api_key = {"authorization": "embedded-token"}
    config.api_key_prefix = {"authorization": "Bearer"}
    return config


class _Fault:
    def __init__(self, count: int, status: ApiStatusError, watch_only: bool) -> None:
        self.count = count
        self.status = status
        self.watch_only = watch_only


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
        super().__init__((_LOOPBACK, port), _Handler)

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


class EmbeddedApiServer:
    """See the module documentation."""

    def __init__(
        self,
        port: int = 0,
        *,
        bookmark_interval: float = 1.0,
        history: int = 100_000,
        store: ApiStore | None = None,
        uncached_resources: tuple[str, ...] = (),
        host: str = _LOOPBACK,
    ) -> None:
        if host not in _LOOPBACK_NAMES:
            raise ValueError(f"the embedded API server binds only to loopback "
                             f"({', '.join(_LOOPBACK_NAMES)}), not {host!r}")
        self.store = store or ApiStore(history, uncached_resources)
        self.bookmark_interval = bookmark_interval
        self.latency = 0.0
        self._faults: list[_Fault] = []
        self._bad_lists: list[str] = []
        self._fault_lock = threading.Lock()
        self._stalled = False
        self._stall_changed = threading.Condition()
        self._httpd = _Server(self, port)
        address = self._httpd.server_address
        self.host: str = str(address[0])
        self.port: int = int(address[1])
        self._thread: threading.Thread | None = None
        #: Requests served so far: all, LIST (each page counts) and WATCH.
        self.requests = 0
        self.list_requests = 0
        self.watch_requests = 0
        self._count_lock = threading.Lock()

    # -- lifecycle ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> EmbeddedApiServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1},
            name="apiserver-listener", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, end every watch and close every connection."""
        self._httpd.shutdown()
        self._end_all_watches(None)
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
        return _client_configuration(self.url)

    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` configured for this server."""
        return ApiClient(self.configuration())

    def kubeconfig(self) -> dict[str, Any]:
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

    def _count(self, counter: str) -> None:
        """Add one to a request counter (handler threads run concurrently)."""
        with self._count_lock:
            setattr(self, counter, getattr(self, counter) + 1)

    # -- faults ------------------------------------------------------------------------------------
    def fail_next(
        self, count: int, code: int = 500, *, retry_after: int = 0, watch_only: bool = False,
        message: str = "injected failure",
    ) -> None:
        """Answer the next ``count`` requests (only watches with ``watch_only``) with
        ``code``: 429 TooManyRequests (with Retry-After), 500 InternalError, 504 Timeout,
        or any other code as a plain Status."""
        reasons = {429: "TooManyRequests", 500: "InternalError", 504: "Timeout",
                   503: "ServiceUnavailable", 410: "Expired", 403: "Forbidden"}
        details = {"retryAfterSeconds": retry_after} if retry_after else {}
        status = ApiStatusError(code, reasons.get(code, ""), message, details)
        with self._fault_lock:
            self._faults.append(_Fault(count, status, watch_only))

    def _take_fault(self, is_watch: bool) -> ApiStatusError | None:
        with self._fault_lock:
            for fault in self._faults:
                if fault.watch_only and not is_watch:
                    continue
                fault.count -= 1
                if fault.count <= 0:
                    self._faults.remove(fault)
                return fault.status
        return None

    def close_watches(self) -> None:
        """End every open watch stream cleanly (as a server-side timeout would)."""
        self._end_all_watches(None)

    def abort_watches(self) -> None:
        """Cut every open watch mid-stream (the connection drops without a clean end)."""
        self._end_all_watches(_ABORT)

    def send_watch_error(self, code: int = 410, message: str = "") -> None:
        """Send every open watch an ERROR event (410 Expired by default) and end it."""
        if code == 410:
            status = new_resource_expired(
                message or f"too old resource version: 1 ({self.store.resource_version})"
            ).status()
        else:
            status = ApiStatusError(code, "InternalError", message or "injected").status()
        line = encode_event("ERROR", status)
        for watcher in self.store.watchers():
            watcher.queue.put(line)
            watcher.queue.put(None)

    def stall_watches(self, stalled: bool = True) -> None:
        """Keep watch connections (open ones and new ones) open but send nothing, not even
        bookmarks, until called with ``False``; events are held back, not lost."""
        with self._stall_changed:
            self._stalled = stalled
            self._stall_changed.notify_all()

    def send_garbled_line(self) -> None:
        """Write a line that is not JSON to every open watch."""
        for watcher in self.store.watchers():
            watcher.queue.put(_GARBLE)

    def send_raw_line(self, line: bytes | str) -> None:
        """Write ``line`` (a newline is added) to every open watch, as it is: for tests of
        what a client does with a well-formed stream carrying a bad event."""
        data = (line.encode() if isinstance(line, str) else line).rstrip(b"\n") + b"\n"
        for watcher in self.store.watchers():
            watcher.queue.put(data)

    def corrupt_next_lists(self, mode: str, count: int = 1) -> None:
        """Answer the next ``count`` LIST requests with a broken body: ``html`` (200 with an
        HTML page, as a misconfigured proxy would), ``truncated`` (200 with the JSON cut in
        half and a matching Content-Length) or ``cut`` (the full Content-Length announced,
        half the body sent, then the connection closed)."""
        if mode not in _BAD_LISTS:
            raise ValueError(f"mode must be one of {sorted(_BAD_LISTS)}, not {mode!r}")
        with self._fault_lock:
            self._bad_lists.extend([mode] * count)

    def _take_bad_list(self) -> str | None:
        with self._fault_lock:
            return self._bad_lists.pop(0) if self._bad_lists else None

    def compact(self) -> int:
        """Drop the change history: older resourceVersions and continue tokens expire."""
        return self.store.compact()

    def drop_all_connections(self) -> None:
        """Close every client connection at once (watches and keep-alive ones)."""
        self._end_all_watches(_ABORT)
        with self._httpd.conn_lock:
            conns = list(self._httpd.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def _end_all_watches(self, marker: Any) -> None:
        for watcher in self.store.watchers():
            watcher.ending = True
            if marker is not None:
                watcher.queue.put(marker)
            watcher.queue.put(None)
        with self._stall_changed:
            self._stall_changed.notify_all()

    def _wait_while_stalled(self, watcher: Watcher) -> None:
        with self._stall_changed:
            while self._stalled and not watcher.ending:
                self._stall_changed.wait()

    def start_load(self, count: int, namespace: str = "bench", kind: str = "configmaps",
                   rate: float = 0.0, mix: str = "create") -> None:
        """Make ``count`` changes in ``namespace`` from a background thread
        (``apiserver-load``): a load generator for benchmarks that keeps the writer inside
        the server's process. ``kind`` is ``configmaps`` (small) or ``pods`` (about 3 KB of
        JSON each, shaped like real pods). With ``mix="create"`` every change creates an
        object; with ``mix="mixed"`` the changes cycle create, update, update, delete (the
        updates change a random existing object's status, the delete removes the oldest),
        so the number of objects stays the same after every multiple of four. New objects
        are built first, then the changes are written as fast as the store takes them, or
        ``rate`` per second; each written or deleted object carries the time of the write
        (``time.time()``) in the annotation :data:`WRITTEN_AT_ANNOTATION`, so a client on
        the same machine can measure the delay to its handler."""
        if mix not in ("create", "mixed"):
            raise ValueError(f"mix must be 'create' or 'mixed', not {mix!r}")
        rtype = self.store.lookup("", "v1", kind)
        assert rtype is not None
        store = self.store

        def run() -> None:
            creates = count if mix == "create" else (count + 3) // 4
            objects = [sample_object(kind, i) for i in range(creates)]
            names = deque(store.names(rtype, namespace))
            rng = random.Random(count)
            started = time.monotonic()
            for i in range(count):
                if rate > 0:
                    delay = started + i / rate - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                step = i % 4 if mix == "mixed" else 0
                stamp = {WRITTEN_AT_ANNOTATION: f"{time.time():.6f}"}
                if step == 0:
                    obj = objects[i // 4 if mix == "mixed" else i]
                    obj["metadata"].setdefault("annotations", {}).update(stamp)
                    names.append(store.insert(rtype, namespace, obj)["metadata"]["name"])
                elif step == 3:
                    store.remove(rtype, namespace, names.popleft(), stamp)
                else:
                    name = names[rng.randrange(len(names))]
                    current = store.peek(rtype, namespace, name)
                    md = current["metadata"]
                    changed = dict(current, metadata=dict(
                        md, annotations={**(md.get("annotations") or {}), **stamp}))
                    if isinstance(current.get("status"), dict):
                        changed["status"] = dict(current["status"], message=f"change {i}")
                    store.replace(rtype, namespace, name, changed)

        threading.Thread(target=run, name="apiserver-load", daemon=True).start()

    def open_watch_count(self) -> int:
        return len(self.store.watchers())


def sample_object(kind: str, i: int) -> dict[str, Any]:
    """The ``i``-th object the load generator writes: for ``pods`` about 3 KB of JSON
    shaped like a real pod (labels, annotations, an owner reference, managedFields,
    twelve environment variables, status with conditions), on node ``node-{i % 50}``;
    otherwise a small configmap. It has ``generateName`` and no namespace."""
    if kind != "pods":
        return {"metadata": {"generateName": "load-", "labels": {"load": "true"}},
                "data": {"index": str(i)}}
    return {
        "metadata": {
            "generateName": "web-",
            "labels": {"app": "web", "tier": "frontend", "pod-template-hash": "7d9f8c6b5d",
                       "load": "true"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-7d9f8c6b5d", "uid": "8b7c6d5e-1111-2222",
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}},
                                            "f:spec": {"f:containers": {}}}}],
        },
        "spec": {
            "nodeName": f"node-{i % 50}",
            "containers": [{
                "name": "web", "image": "registry.example.com/web:1.25.3",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": f"VAR_{k}", "value": f"value-{k}-{i}"} for k in range(12)],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
            }],
        },
        "status": {
            "phase": "Running", "podIP": f"10.0.{i % 250}.{i % 200}",
            "conditions": [{"type": t, "status": "True",
                            "lastTransitionTime": "2026-11-22T04:00:03Z"}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0,
                                   "image": "registry.example.com/web:1.25.3",
                                   "imageID": "registry.example.com/web@sha256:" + "ab" * 32,
                                   "containerID": "containerd://" + "cd" * 32}],
        },
    }


# --- request handling ------------------------------------------------------------------------


def _status_bytes(err: ApiStatusError) -> bytes:
    return json.dumps(err.status()).encode()


def _encode_continue(revision: int, start_after: str) -> str:
    raw = json.dumps({"rv": revision, "start": start_after}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error) as err:
        raise new_bad_request(f"continue key is not valid: {err}") from err


def _object_key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet

    # -- plumbing ----------------------------------------------------------------------------------
    @property
    def owner(self) -> EmbeddedApiServer:
        return self.server.owner

    def _send_json(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _send_obj(self, code: int, obj: Any) -> None:
        self._send_json(code, json.dumps(obj, separators=(",", ":")).encode())

    def _send_error(self, err: ApiStatusError) -> None:
        headers = {}
        retry = err.details.get("retryAfterSeconds")
        if retry:
            headers["Retry-After"] = str(retry)
        self._send_json(err.code or 500, _status_bytes(err), headers)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError as err:
            raise new_bad_request(f"invalid JSON body: {err}") from err

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        owner = self.owner
        owner._count("requests")
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [p for p in url.path.split("/") if p]
        try:
            if parts and parts[0] == "__control":
                self._control(method, parts[1:], query)
                return
            if owner.latency:
                time.sleep(owner.latency)
            is_watch = query.get("watch") in ("true", "1")
            fault = owner._take_fault(is_watch)
            if fault is not None:
                self._send_error(fault)
                return
            self._route(method, parts, query, is_watch)
        except ApiStatusError as err:
            self._send_error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except ClientCacheError as err:
            self._send_error(new_bad_request(str(err)))

    # -- discovery and routing ---------------------------------------------------------------------
    def _route(self, method: str, parts: list[str], query: dict[str, str], watch: bool) -> None:
        store = self.owner.store
        if method == "GET" and parts == ["version"]:
            self._send_obj(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-embedded",
                                 "platform": "linux/amd64"})
            return
        if method == "GET" and parts == ["api"]:
            self._send_obj(200, {"kind": "APIVersions", "versions": ["v1"],
                                 "serverAddressByClientCIDRs": [
                                     {"clientCIDR": "0.0.0.0/0",
                                      "serverAddress": f"{self.owner.host}:{self.owner.port}"}]})
            return
        if method == "GET" and parts == ["apis"]:
            groups: dict[str, list[str]] = {}
            for rtype in store.resource_types():
                if rtype.group:
                    versions = groups.setdefault(rtype.group, [])
                    if rtype.version not in versions:
                        versions.append(rtype.version)
            self._send_obj(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}
                                         for v in vs],
                 "preferredVersion": {"groupVersion": f"{g}/{vs[0]}", "version": vs[0]}}
                for g, vs in groups.items()]})
            return
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiStatusError(404, "NotFound", "the server could not find the requested "
                                 "resource")
        if not rest:
            if method != "GET":
                raise ApiStatusError(405, "MethodNotAllowed", "method not allowed")
            gv = f"{group}/{version}" if group else version
            resources = [r.discovery() for r in store.resource_types()
                         if r.group == group and r.version == version]
            if not resources:
                raise ApiStatusError(404, "NotFound", f"no resources in {gv}")
            self._send_obj(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                 "groupVersion": gv, "resources": resources})
            return
        namespace, plural, name, sub = "", "", "", ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, plural = rest[1], rest[2]
            name = rest[3] if len(rest) > 3 else ""
            sub = rest[4] if len(rest) > 4 else ""
        else:
            plural = rest[0]
            name = rest[1] if len(rest) > 1 else ""
            sub = rest[2] if len(rest) > 2 else ""
        found = store.lookup(group, version, plural)
        if found is None:
            raise ApiStatusError(404, "NotFound", "the server could not find the requested "
                                 "resource")
        rtype = found
        if sub not in ("", "status", "scale"):
            raise ApiStatusError(404, "NotFound", f"unknown subresource {sub}")
        if rtype.namespaced is False:
            namespace = ""
        if not name:
            self._collection(method, rtype, namespace, query, watch)
        else:
            self._item(method, rtype, namespace, name)

    def _item(self, method: str, rtype: ResourceType, namespace: str, name: str) -> None:
        store = self.owner.store
        if method == "GET":
            self._send_obj(200, store.get(rtype, namespace, name))
        elif method == "PUT":
            self._send_obj(200, store.update(rtype, namespace, name, self._body()))
        elif method == "PATCH":
            self._send_obj(200, store.patch(rtype, namespace, name, self._body()))
        elif method == "DELETE":
            self._body()
            self._send_obj(200, store.delete(rtype, namespace, name))
        else:
            raise ApiStatusError(405, "MethodNotAllowed", "method not allowed")

    def _collection(
        self, method: str, rtype: ResourceType, namespace: str, query: dict[str, str],
        watch: bool,
    ) -> None:
        store = self.owner.store
        if method == "POST":
            self._send_obj(201, store.create(rtype, namespace, self._body()))
        elif method == "DELETE":
            self._body()
            store.delete_collection(rtype, namespace, labelsel.parse(query.get("labelSelector",
                                                                               "")))
            self._send_obj(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                 "status": "Success"})
        elif method == "GET" and watch:
            self._watch(rtype, namespace, query)
        elif method == "GET":
            self._list(rtype, namespace, query)
        else:
            raise ApiStatusError(405, "MethodNotAllowed", "method not allowed")

    # -- LIST --------------------------------------------------------------------------------------
    def _selectors(self, query: dict[str, str]) -> tuple[labelsel.Selector, fieldsel.Selector]:
        return (labelsel.parse(query.get("labelSelector", "")),
                fieldsel.parse_selector(query.get("fieldSelector", "")))

    def _list(self, rtype: ResourceType, namespace: str, query: dict[str, str]) -> None:
        store = self.owner.store
        self.owner._count("list_requests")
        label_sel, field_sel = self._selectors(query)
        probe = Watcher(rtype, namespace, label_sel, field_sel)
        rv_param = query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        token = query.get("continue", "")
        limit = int(query.get("limit") or 0)
        start_after = ""
        if token:
            if rv_param:
                raise new_bad_request("specifying resource version is not allowed when using "
                                      "continue")
            revision, start_after = _decode_continue(token)
            if revision < store.compacted_revision:
                raise new_resource_expired(
                    "The provided continue parameter is too old to display a consistent list "
                    "result. You can start a new list without the continue parameter."
                )
            objs, served = store.snapshot(rtype, revision)
        elif match == "Exact":
            if not rv_param or rv_param == "0":
                raise new_bad_request("resourceVersionMatch=Exact needs a non-zero "
                                      "resourceVersion")
            objs, served = store.snapshot(rtype, int(rv_param))
        elif match not in ("", "NotOlderThan"):
            raise new_bad_request(f"unknown resourceVersionMatch {match!r}")
        else:
            if rv_param not in ("", "0"):
                try:
                    wanted = int(rv_param)
                except ValueError as err:
                    raise new_bad_request(f"invalid resourceVersion {rv_param!r}") from err
                store.snapshot(rtype, wanted if wanted > store.resource_version else None)
            if rv_param == "0":
                limit = 0  # the watch cache ignores limit for resourceVersion=0
            objs, served = store.snapshot(rtype, None)
        selected = [o for o in objs if probe.matches(o)]
        if start_after:
            selected = [o for o in selected if _object_key(o) > start_after]
        md: dict[str, Any] = {"resourceVersion": str(served)}
        if limit and len(selected) > limit:
            page = selected[:limit]
            md["continue"] = _encode_continue(served, _object_key(page[-1]))
            md["remainingItemCount"] = len(selected) - limit
            selected = page
        body = {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version,
                "metadata": md, "items": selected}
        bad = self.owner._take_bad_list()
        if bad is None:
            self._send_obj(200, body)
        else:
            self._send_bad_list(bad, json.dumps(body, separators=(",", ":")).encode())

    def _send_bad_list(self, mode: str, body: bytes) -> None:
        self.send_response(200)
        if mode == "html":
            page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
            return
        half = body[: len(body) // 2]
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(half) if mode == "truncated" else len(body)))
        self.end_headers()
        self.wfile.write(half)
        if mode == "cut":
            self.wfile.flush()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    # -- WATCH -------------------------------------------------------------------------------------
    def _watch(self, rtype: ResourceType, namespace: str, query: dict[str, str]) -> None:
        owner = self.owner
        owner._count("watch_requests")
        store = owner.store
        label_sel, field_sel = self._selectors(query)
        watcher = Watcher(rtype, namespace, label_sel, field_sel)
        rv_param = query.get("resourceVersion", "")
        send_initial = query.get("sendInitialEvents") == "true"
        bookmarks = query.get("allowWatchBookmarks") == "true"
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        if send_initial and query.get("resourceVersionMatch") != "NotOlderThan":
            raise ApiStatusError(422, "Invalid", "sendInitialEvents requires "
                                 "resourceVersionMatch=NotOlderThan")
        if rv_param in ("", "0"):
            revision = None
        else:
            try:
                revision = int(rv_param)
            except ValueError as err:
                raise new_bad_request(f"invalid resourceVersion {rv_param!r}") from err
        store.open_watch(watcher, revision, send_initial, send_initial and bookmarks)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        deadline = None if timeout is None else time.monotonic() + timeout
        next_bookmark = time.monotonic() + owner.bookmark_interval
        try:
            while True:
                owner._wait_while_stalled(watcher)
                now = time.monotonic()
                waits = [next_bookmark - now] if bookmarks else []
                if deadline is not None:
                    waits.append(deadline - now)
                wait = max(0.0, min(waits)) if waits else None
                try:
                    item = watcher.queue.get(timeout=wait)
                except queue.Empty:
                    item = ""
                owner._wait_while_stalled(watcher)  # hold what we have while stalled
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    self._end_chunks()
                    return
                if item is None:
                    self._end_chunks()
                    return
                if item == _ABORT:
                    self.close_connection = True
                    return
                if item == _GARBLE:
                    self._chunk(b"{this is not a watch event\n")
                    continue
                if item == "":
                    if bookmarks and now >= next_bookmark:
                        mark = store.bookmark(watcher)
                        if mark is not None:
                            self._chunk(mark)
                        next_bookmark = now + owner.bookmark_interval
                    continue
                batch = [item]
                while len(batch) < 256:
                    try:
                        more = watcher.queue.get_nowait()
                    except queue.Empty:
                        break
                    if not isinstance(more, bytes):
                        watcher.queue.put(more)  # handle control items in order next time
                        break
                    batch.append(more)
                self._chunk(b"".join(batch))
        except OSError:
            self.close_connection = True
        finally:
            store.close_watch(watcher)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_chunks(self) -> None:
        with contextlib.suppress(OSError):
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    # -- control endpoints (for a server in another process) ---------------------------------------
    def _control(self, method: str, parts: list[str], query: dict[str, str]) -> None:
        owner = self.owner
        actions: dict[str, Callable[[], Any]] = {
            "compact": owner.compact,
            "close-watches": owner.close_watches,
            "abort-watches": owner.abort_watches,
            "garble": owner.send_garbled_line,
            "raw-line": lambda: owner.send_raw_line(query.get("line", "")),
            "bad-list": lambda: owner.corrupt_next_lists(query.get("mode", ""),
                                                         int(query.get("count", "1"))),
            "stall": lambda: owner.stall_watches(query.get("on", "true") == "true"),
            "watch-error": lambda: owner.send_watch_error(int(query.get("code", "410"))),
            "fail": lambda: owner.fail_next(
                int(query.get("count", "1")), int(query.get("code", "500")),
                retry_after=int(query.get("retryAfter", "0")),
                watch_only=query.get("watchOnly") == "true"),
            "latency": lambda: setattr(owner, "latency", float(query.get("seconds", "0"))),
            "drop-connections": owner.drop_all_connections,
            "load": lambda: owner.start_load(int(query.get("count", "1000")),
                                             query.get("namespace", "bench"),
                                             query.get("kind", "configmaps"),
                                             float(query.get("rate", "0")),
                                             query.get("mix", "create")),
            "state": lambda: {"lists": owner.list_requests, "watches": owner.watch_requests,
                              "requests": owner.requests},
            "dump": lambda: owner.store.dump(query["path"], query.get("freeze") == "true"),
        }
        name = parts[0] if parts else ""
        action = actions.get(name)
        if action is None or method not in ("POST", "GET"):
            raise ApiStatusError(404, "NotFound", f"unknown control {name!r}")
        self._body()
        try:
            result = action()
        except ValueError as err:
            raise ApiStatusError(400, "BadRequest", f"control {name}: {err}") from err
        self._send_obj(200, {"ok": True, "result": result,
                             "resourceVersion": owner.store.resource_version,
                             "watches": owner.open_watch_count()})


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
                 uncached_resources: tuple[str, ...] = (), port: int = 0) -> None:
        self.bookmark_interval = bookmark_interval
        self.history = history
        self.uncached_resources = uncached_resources
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
        revision = int(self.control("dump", path=state_path, freeze=True)["result"])
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait(5)
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()
        deadline = time.monotonic() + 10
        while True:  # the port may linger for a moment
            try:
                self.start(state_path)
                return revision
            except ClientCacheError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    @property
    def pid(self) -> int | None:
        """The server process's id (None when not running)."""
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
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
        return _client_configuration(self.url)

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
    parser.add_argument("--host", default=_LOOPBACK,
                        help="127.0.0.1 or localhost: the server never binds anything else")
    parser.add_argument("--kubeconfig", default="")
    parser.add_argument("--bookmark-interval", type=float, default=1.0)
    parser.add_argument("--history", type=int, default=100_000)
    parser.add_argument("--uncached", action="append", default=[],
                        help="a resource (plural) served as if it had no watch cache")
    parser.add_argument("--state", default="",
                        help="start from this dump (POST /__control/dump?path=...)")
    parser.add_argument("--exit-with-parent", action="store_true",
                        help="exit when standard input reaches end-of-file (the parent "
                             "holds the pipe's write end and dies with it)")
    args = parser.parse_args(argv)
    try:
        server = EmbeddedApiServer(args.port, bookmark_interval=args.bookmark_interval,
                                   history=args.history, host=args.host,
                                   uncached_resources=tuple(args.uncached))
    except ValueError as err:
        parser.error(str(err))
    if args.state:
        server.store.restore(args.state)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    if args.exit_with_parent:
        threading.Thread(target=_exit_at_eof, name="apiserver-parent-watch",
                         daemon=True).start()
    with server:
        if args.kubeconfig:
            server.write_kubeconfig(args.kubeconfig)
        print(server.url, flush=True)
        stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
