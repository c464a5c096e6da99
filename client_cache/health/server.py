"""Liveness, readiness and metrics over HTTP for a process built on this library, as
controller-runtime's probe and metrics endpoints answer them.

::

    with serve(8081, host="0.0.0.0", factory=factory, elector=elector) as server:
        ...   # /healthz, /readyz, /metrics until the block ends

* ``GET /healthz`` (liveness) and ``GET /readyz`` (readiness) run every check of that
  endpoint: all pass: 200 ``ok`` (with ``?verbose``, one ``[+]name ok`` line per check
  and ``healthz check passed``); one fails: 500, a line per check (``[-]name failed:
  <reason>``, on one line and at most 300 characters: the library's checks name a
  resource and the error's type and message, never a credential or an object; Kubernetes
  withholds reasons, a port choice for operators who curl the probe) and ``healthz check
  failed``. ``?exclude=name`` leaves a check out.
  ``GET /healthz/<name>`` runs one check: 200 ``ok`` or 500 ``internal server error:
  <reason>``; an unknown name is 404.
* ``GET /metrics``: the ``prometheus_client`` registry in the text exposition format
  (needs the ``[prometheus]`` extra; 404 without it).

A check is a function taking nothing: it passes when it returns None or True; it fails
when it returns False or a string (the reason) or raises. Checks run on the request's
thread and must not block: the ones made here only read counters, so the endpoint answers
while a LIST hangs. :func:`serve` adds ``ping`` to both endpoints, and, given a factory,
``informers`` (liveness and readiness: no informer unhealthy, see
:meth:`~client_cache.shared_informer.SharedIndexInformer.health`: one whose server has
been failing for longer than its threshold is) and ``caches`` (readiness: every started
informer synced; one requested but not started is not ready); given a controller,
``controller`` (readiness: running, caches synced, its shard membership ready); given a
leader elector, ``leader-election`` (liveness: the
elector's ``check``). The server binds to loopback by default: in a pod, pass
``host="0.0.0.0"`` so that the kubelet can probe it. Threads: ``health-server`` (accepts)
and one ``health-request`` per request; :meth:`HealthServer.stop` ends them within a
second.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "Check",
    "HealthServer",
    "Probes",
    "caches_synced_check",
    "controller_ready_check",
    "informers_check",
    "leader_election_check",
    "serve",
    "sharding_check",
]

_log = logging.getLogger(__name__)

Check = Callable[[], Any]
"""Passes on None or True; fails on False, a string (the reason) or an exception."""


def _run_check(check: Check) -> str | None:
    """None when ``check`` passes, else why it failed."""
    try:
        result = check()
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    if result is None or result is True:
        return None
    return str(result) if result is not False else "check failed"


def _one_line(reason: str, limit: int = 300) -> str:
    """A check's reason on one line, at most ``limit`` characters."""
    text = " ".join(reason.split())
    return text if len(text) <= limit else text[:limit] + "..."


def informers_check(factory: Any) -> Check:
    """Liveness: no started informer of ``factory`` is unhealthy (failing past its
    threshold, or a silent watch)."""
    def check() -> str | None:
        sick = [h for h in factory.health().values() if not h.healthy]
        return "; ".join(f"{h.resource}: {h.reason}" for h in sick) or None
    return check


def caches_synced_check(factory: Any) -> Check:
    """Readiness: every informer requested from ``factory`` has started and synced (its
    ``not_ready()``; for anything with only ``health()``, every informer it reports has
    synced). An informer requested but not started yet is not ready: a probe asked
    before the factory starts fails."""
    def check() -> str | None:
        not_ready = getattr(factory, "not_ready", None)
        if callable(not_ready):
            waiting = list(not_ready())
        else:
            waiting = [h.resource for h in factory.health().values() if not h.synced]
        return f"not synced: {', '.join(waiting)}" if waiting else None
    return check


def controller_ready_check(controller: Any) -> Check:
    """Readiness: a runtime ``Controller`` is running with its caches synced, and, when
    sharded, its membership ready (its ``ready()``)."""
    def check() -> str | None:
        reason: str | None = controller.ready()
        return reason
    return check


def leader_election_check(elector: Any, max_tolerable_expired_lease: float = 20.0) -> Check:
    """Liveness: the elector is not stuck holding an expired lease (its ``check``, as
    client-go's ``HealthzAdaptor``)."""
    def check() -> None:
        elector.check(max_tolerable_expired_lease)
    return check


def sharding_check(member: Any, max_tolerable_expired_lease: float = 20.0) -> Check:
    """Liveness: a sharded replica's membership Lease is being renewed (its ``check``:
    not renewed for ``lease_duration`` plus ``max_tolerable_expired_lease`` means the
    others have taken its keys and it is stuck). ``member`` is a
    :class:`~client_cache.sharding.ShardMember` or a runtime ``Controller``, whose
    ``shard_member`` is read at each check (None before its run: healthy)."""
    def check() -> None:
        current = getattr(member, "shard_member", member)
        if current is not None:
            current.check(max_tolerable_expired_lease)
    return check


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self.process_request_thread,
                                  args=(request, client_address), name="health-request",
                                  daemon=True)
        thread.start()


class Probes:
    """The checks of ``/healthz`` and ``/readyz`` and the ``/metrics`` registry, and the
    answer to a GET of any of them (see the module documentation); a :class:`HealthServer`
    serves them, and so can another server (the webhook server, on its own port).
    ``registry``: the ``prometheus_client`` registry ``/metrics`` shows (its default
    registry when None)."""

    def __init__(self, *, healthz: Mapping[str, Check] | None = None,
                 readyz: Mapping[str, Check] | None = None, registry: Any = None) -> None:
        self._lock = threading.Lock()
        self._checks: dict[str, dict[str, Check]] = {
            "healthz": dict(healthz or {}), "readyz": dict(readyz or {})}
        self.registry = registry

    def add_healthz_check(self, name: str, check: Check) -> None:
        """Add a liveness check (controller-runtime ``AddHealthzCheck``)."""
        with self._lock:
            self._checks["healthz"][name] = check

    def add_readyz_check(self, name: str, check: Check) -> None:
        """Add a readiness check (controller-runtime ``AddReadyzCheck``)."""
        with self._lock:
            self._checks["readyz"][name] = check

    def serves(self, path: str) -> bool:
        """Whether a GET of ``path`` is one of these endpoints."""
        first = urlsplit(path).path.strip("/").split("/")[0]
        return first in ("healthz", "readyz", "metrics")

    def answer(self, path: str) -> tuple[int, str | bytes, str]:
        """(status, body, content type) for a GET of ``path``."""
        url = urlsplit(path)
        query = parse_qs(url.query, keep_blank_values=True)
        parts = [p for p in url.path.split("/") if p]
        if parts == ["metrics"]:
            return self._metrics()
        if not parts or parts[0] not in self._checks or len(parts) > 2:
            return 404, "404 page not found\n", "text/plain; charset=utf-8"
        with self._lock:
            checks = dict(self._checks[parts[0]])
        if len(parts) == 2:
            check = checks.get(parts[1])
            if check is None:
                return 404, "404 page not found\n", "text/plain; charset=utf-8"
            failure = _run_check(check)
            if failure is None:
                return 200, "ok", "text/plain; charset=utf-8"
            return 500, f"internal server error: {failure}\n", "text/plain; charset=utf-8"
        excluded = set(query.get("exclude", []))
        lines, failed = [], False
        for name in sorted(set(checks) - excluded):
            failure = _run_check(checks[name])
            failed = failed or failure is not None
            lines.append(f"[+]{name} ok" if failure is None
                         else f"[-]{name} failed: {_one_line(failure)}")
            if failure is not None:
                _log.info("%s check %s failed: %s", parts[0], name, failure)
        if failed:
            return 500, "\n".join([*lines, f"{parts[0]} check failed"]) + "\n", \
                "text/plain; charset=utf-8"
        if "verbose" in query:
            return 200, "\n".join([*lines, f"{parts[0]} check passed"]) + "\n", \
                "text/plain; charset=utf-8"
        return 200, "ok", "text/plain; charset=utf-8"

    def _metrics(self) -> tuple[int, str | bytes, str]:
        try:
            from prometheus_client import (  # noqa: PLC0415 - optional extra
                CONTENT_TYPE_LATEST,
                REGISTRY,
                generate_latest,
            )
        except ImportError:
            return 404, "metrics need the [prometheus] extra (prometheus_client)\n", \
                "text/plain; charset=utf-8"
        return 200, generate_latest(self.registry or REGISTRY), CONTENT_TYPE_LATEST

class HealthServer:
    """See the module documentation: :class:`Probes` served on ``host:port``."""

    def __init__(self, port: int = 0, host: str = "127.0.0.1", *,
                 healthz: Mapping[str, Check] | None = None,
                 readyz: Mapping[str, Check] | None = None, registry: Any = None) -> None:
        self._lock = threading.Lock()
        self.probes = Probes(healthz=healthz, readyz=readyz, registry=registry)
        probes = self.probes

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                code, body, content_type = probes.answer(self.path)
                data = body.encode() if isinstance(body, str) else body
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("X-Content-Type-Options", "nosniff")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                _log.debug("health endpoint: " + format, *args)

        self._httpd = _Server((host, port), Handler)
        self.host, self.port = str(self._httpd.server_address[0]), int(
            self._httpd.server_address[1])
        self._thread: threading.Thread | None = None

    @property
    def registry(self) -> Any:
        """The registry ``/metrics`` shows."""
        return self.probes.registry

    def add_healthz_check(self, name: str, check: Check) -> None:
        """Add a liveness check (controller-runtime ``AddHealthzCheck``)."""
        self.probes.add_healthz_check(name, check)

    def add_readyz_check(self, name: str, check: Check) -> None:
        """Add a readiness check (controller-runtime ``AddReadyzCheck``)."""
        self.probes.add_readyz_check(name, check)

    def answer(self, path: str) -> tuple[int, str | bytes, str]:
        """(status, body, content type) for a GET of ``path``."""
        return self.probes.answer(path)

    @property
    def url(self) -> str:
        """The server's ``http://host:port`` (its port when 0 was asked for)."""
        return f"http://{self.host}:{self.port}"

    def start(self) -> HealthServer:
        """Serve on the ``health-server`` thread (it blocks in accept: nothing polls)."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("the health server is already started")
            self._thread = threading.Thread(target=self._serve, name="health-server",
                                            daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        sock = self._httpd.socket
        while True:
            try:
                request, address = sock.accept()
            except OSError:
                return  # closed by stop
            try:
                self._httpd.process_request(request, address)
            except Exception:
                _log.exception("health endpoint failed to start a request")
                request.close()

    def stop(self, timeout: float = 1.0) -> bool:
        """Stop accepting and close the socket; True when the accepting thread ended
        within ``timeout`` (requests in flight finish on their own threads)."""
        sock = self._httpd.socket
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept
        self._httpd.server_close()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def __enter__(self) -> HealthServer:
        return self if self._thread is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve(port: int = 0, host: str = "127.0.0.1", *, factory: Any = None,
          elector: Any = None, controller: Any = None,
          healthz: Mapping[str, Check] | None = None,
          readyz: Mapping[str, Check] | None = None, registry: Any = None) -> HealthServer:
    """A started :class:`HealthServer` with the standard checks (see the module
    documentation) plus ``healthz``/``readyz``; use it as a context manager or call
    ``stop``. ``controller`` (a runtime ``Controller``) adds ``controller`` to readiness
    (:func:`controller_ready_check`) and its informers to liveness."""
    live: dict[str, Check] = {"ping": lambda: None}
    ready: dict[str, Check] = {"ping": lambda: None}
    if factory is not None:
        live["informers"] = ready["informers"] = informers_check(factory)
        ready["caches"] = caches_synced_check(factory)
    if controller is not None:
        live.setdefault("informers", informers_check(controller))
        ready["controller"] = controller_ready_check(controller)
    if elector is not None:
        live["leader-election"] = leader_election_check(elector)
    live.update(healthz or {})
    ready.update(readyz or {})
    return HealthServer(port, host, healthz=live, readyz=ready, registry=registry).start()
