"""Fault injection for the embedded API server: what can go wrong between a client and a
real API server, on demand.

:class:`FaultInjection` is a mixin of :class:`~client_cache.testing.apiserver.server.
EmbeddedApiServer`; its methods are thread-safe and are also reachable over HTTP under
``/__control/`` when the server runs in its own process. Markers put into a watch's queue
are sentinel objects (:data:`ABORT`, :data:`GARBLE`), never strings a real event could
equal.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from client_cache.errors import ApiStatusError, new_resource_expired
from client_cache.testing.apiserver.store import ApiStore
from client_cache.testing.apiserver.watchers import Watcher, encode_event

__all__ = ["ABORT", "BAD_LISTS", "GARBLE", "FaultInjection", "Marker"]


class Marker:
    """A control item in a watch's queue (not an event)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<watch marker {self.name}>"


#: Cut the watch: the connection drops without the stream's clean end.
ABORT = Marker("abort")
#: Write a line that is not JSON.
GARBLE = Marker("garble")

#: The broken LIST bodies :meth:`FaultInjection.corrupt_next_lists` can send.
BAD_LISTS = ("html", "truncated", "cut")


class _Fault:
    def __init__(self, count: int, status: ApiStatusError, watch_only: bool,
                 method: str) -> None:
        self.count = count
        self.status = status
        self.watch_only = watch_only
        self.method = method


class FaultInjection:
    """The fault-injection half of the embedded server (see the module documentation).
    The host class sets :attr:`store` and calls :meth:`init_faults`; it provides
    ``connections()`` (the open client sockets)."""

    store: ApiStore

    def init_faults(self) -> None:
        """Set up the fault switches (all off)."""
        self._faults: list[_Fault] = []
        self._bad_lists: list[str] = []
        self._fault_lock = threading.Lock()
        self._stalled = False
        self._stall_changed = threading.Condition()

    def connections(self) -> list[socket.socket]:
        """The client connections open now."""
        raise NotImplementedError

    def fail_next(
        self, count: int, code: int = 500, *, retry_after: int = 0, watch_only: bool = False,
        message: str = "injected failure", method: str = "",
    ) -> None:
        """Answer the next ``count`` requests (only watches with ``watch_only``; only
        requests of the HTTP ``method`` when given, e.g. ``"PATCH"`` for the writes a
        reconcile makes) with ``code``: 429 TooManyRequests (with Retry-After), 409
        Conflict, 500 InternalError, 504 Timeout, or any other code as a plain Status."""
        reasons = {429: "TooManyRequests", 500: "InternalError", 504: "Timeout", 409: "Conflict",
                   503: "ServiceUnavailable", 410: "Expired", 403: "Forbidden"}
        details = {"retryAfterSeconds": retry_after} if retry_after else {}
        status = ApiStatusError(code, reasons.get(code, ""), message, details)
        with self._fault_lock:
            self._faults.append(_Fault(count, status, watch_only, method.upper()))

    def clear_faults(self) -> None:
        """Forget the injected failures not served yet (:meth:`fail_next`)."""
        with self._fault_lock:
            self._faults.clear()

    def take_fault(self, is_watch: bool, method: str = "GET") -> ApiStatusError | None:
        """The injected error the next request (a watch or not, of ``method``) must get,
        if any."""
        with self._fault_lock:
            for fault in self._faults:
                if (fault.watch_only and not is_watch) or fault.method not in ("", method):
                    continue
                fault.count -= 1
                if fault.count <= 0:
                    self._faults.remove(fault)
                return fault.status
        return None

    def close_watches(self) -> None:
        """End every open watch stream cleanly (as a server-side timeout would)."""
        self.end_all_watches(None)

    def abort_watches(self) -> None:
        """Cut every open watch mid-stream (the connection drops without a clean end)."""
        self.end_all_watches(ABORT)

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
            watcher.queue.put(GARBLE)

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
        if mode not in BAD_LISTS:
            raise ValueError(f"mode must be one of {sorted(BAD_LISTS)}, not {mode!r}")
        with self._fault_lock:
            self._bad_lists.extend([mode] * count)

    def take_bad_list(self) -> str | None:
        """How the next LIST body must be broken (a :data:`BAD_LISTS` mode), if at all."""
        with self._fault_lock:
            return self._bad_lists.pop(0) if self._bad_lists else None

    def compact(self) -> int:
        """Drop the change history: older resourceVersions and continue tokens expire."""
        return self.store.compact()

    def drop_all_connections(self) -> None:
        """Close every client connection open now, at once (watches and keep-alive ones).
        The connections are taken before anything is cut, so a client that reconnects
        at once is not cut again (that would make its new watch a "very short" one)."""
        connections = list(self.connections())
        watchers = list(self.store.watchers())
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self.end_watches(watchers, ABORT)

    def end_all_watches(self, marker: Marker | None) -> None:
        """End every open watch: cleanly (``None``) or with ``marker`` first."""
        self.end_watches(list(self.store.watchers()), marker)

    def end_watches(self, watchers: list[Watcher], marker: Marker | None) -> None:
        """End ``watchers``: cleanly (``None``) or with ``marker`` first."""
        for watcher in watchers:
            watcher.ending = True
            if marker is not None:
                watcher.queue.put(marker)
            watcher.queue.put(None)
        with self._stall_changed:
            self._stall_changed.notify_all()

    def wait_while_stalled(self, watcher: Watcher) -> None:
        """Block a watch's writer while watches are stalled (until it ends)."""
        with self._stall_changed:
            while self._stalled and not watcher.ending:
                self._stall_changed.wait()

