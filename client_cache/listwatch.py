"""List and watch functions for the Reflector (Go ``tools/cache/listwatch.go``).

:class:`ListWatch` pairs a list function and a watch function. The constructors
:func:`new_list_watch_from_client` and :func:`new_filtered_list_watch_from_client` talk to a
real API server through a ``kubernetes.client.ApiClient``: its configuration (host, TLS,
proxy, tokens - refreshed per request - and client certificates, however the ``kubernetes``
package loaded them) and its urllib3 connection pool. Any group/version/resource works,
built-in or custom, namespaced or cluster-scoped.

LIST decodes the JSON body once and returns the list as a wire dict; WATCH streams with
:class:`~client_cache.watch.StreamWatcher`. Objects stay wire dicts unless an
``object_type`` (e.g. ``V1Pod``) is given, in which case each object is built with the
installed ``kubernetes`` package's own deserializer. Failed requests raise
:class:`~client_cache.errors.ApiStatusError` built from the server's ``Status``; network
errors propagate as urllib3 raises them.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable
from urllib.parse import quote, urlencode

import urllib3

from client_cache import _json
from client_cache.apis import ListOptions
from client_cache.errors import ApiStatusError, from_status
from client_cache.fields import Selector as FieldSelector
from client_cache.fields import everything as everything_fields
from client_cache.schema import GroupVersionResource
from client_cache.watch import StreamWatcher, Watch

__all__ = [
    "KEEPALIVE_IDLE",
    "KEEPALIVE_INTERVAL",
    "KEEPALIVE_PROBES",
    "WATCH_HEADER_TIMEOUT",
    "ClientListerWatcher",
    "ListFunc",
    "ListWatch",
    "Lister",
    "ListerWatcher",
    "WatchFunc",
    "Watcher",
    "keep_alive",
    "model_decoder",
    "new_filtered_list_watch_from_client",
    "new_list_watch_from_client",
    "resource_path",
]

ListFunc = Callable[[ListOptions], Any]
WatchFunc = Callable[[ListOptions], Watch]
Loads = Callable[[bytes], Any]


@runtime_checkable
class Lister(Protocol):
    """Lists objects (Go ``Lister``); returns a list object (see :mod:`client_cache.apis`)."""

    def list(self, options: ListOptions) -> Any: ...


@runtime_checkable
class Watcher(Protocol):
    """Starts watches (Go ``Watcher``)."""

    def watch(self, options: ListOptions) -> Watch: ...


@runtime_checkable
class ListerWatcher(Lister, Watcher, Protocol):
    """Both (Go ``ListerWatcher``)."""


@dataclass
class ListWatch:
    """A :class:`ListerWatcher` made of two functions (Go ``ListWatch``).

    ``disable_chunking`` is kept for parity; as in client-go v0.32 nothing reads it (the
    Reflector decides about paging).
    """

    list_func: ListFunc
    watch_func: WatchFunc
    disable_chunking: bool = False

    def list(self, options: ListOptions) -> Any:
        return self.list_func(options)

    def watch(self, options: ListOptions) -> Watch:
        return self.watch_func(options)


def resource_path(gvr: GroupVersionResource, namespace: str = "") -> str:
    """The collection URL path of ``gvr`` (``/api/v1/namespaces/ns/pods``,
    ``/apis/apps/v1/deployments``...)."""
    prefix = f"/apis/{gvr.group}/{gvr.version}" if gvr.group else f"/api/{gvr.version}"
    if namespace:
        return f"{prefix}/namespaces/{quote(namespace, safe='')}/{gvr.resource}"
    return f"{prefix}/{gvr.resource}"


def model_decoder(api_client: Any, object_type: Any) -> Callable[[Any], Any]:
    """A function turning a wire dict into ``object_type`` with the client's own
    deserializer (both the classic and the pydantic client generations)."""
    deserialize = getattr(api_client, "_ApiClient__deserialize", None)
    if callable(deserialize):
        return lambda data: deserialize(data, object_type)
    from_dict = getattr(object_type, "from_dict", None)
    if callable(from_dict):
        return cast(Callable[[Any], Any], from_dict)
    raise TypeError(f"cannot build a decoder for {object_type!r}")


class ClientListerWatcher:
    """The HTTP :class:`ListerWatcher` behind :func:`new_filtered_list_watch_from_client`.

    ``idle_timeout`` is the client-side idle timeout of watches (seconds without any
    data, not even a bookmark, after which the watch ends); ``request_timeout`` bounds a
    LIST request and a WATCH's wait for its response headers (for a WATCH without it:
    :data:`WATCH_HEADER_TIMEOUT`). Connections get TCP keepalive (:func:`keep_alive`).
    ``loads`` decodes JSON (orjson when installed, else stdlib ``json``).
    """

    def __init__(
        self,
        api_client: Any,
        gvr: GroupVersionResource,
        namespace: str = "",
        options_modifier: Callable[[ListOptions], None] | None = None,
        *,
        object_type: Any = None,
        idle_timeout: float | None = None,
        request_timeout: float | None = None,
        loads: Loads = _json.loads,
    ) -> None:
        self.api_client = api_client
        self.gvr = gvr
        self.namespace = namespace
        self.options_modifier = options_modifier
        self.object_type = object_type
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self._loads = loads
        self._decode = model_decoder(api_client, object_type) if object_type else None
        self._path = resource_path(gvr, namespace)

    # -- HTTP ---------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        default = getattr(self.api_client, "default_headers", None) or {}
        headers.update(default)
        auth = self.api_client.configuration.auth_settings() or {}
        for setting in auth.values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def _url(self, options: ListOptions) -> str:
        host = str(self.api_client.configuration.host).rstrip("/")
        query = urlencode(options.to_query())
        return f"{host}{self._path}?{query}" if query else f"{host}{self._path}"

    def reset_connections(self) -> None:
        """Close the idle pooled connections of the client (the reflector calls this when
        a watch went silent: the network path may be dead, and a request sent on another
        connection of that path would hang instead of failing). Connections in use are not
        touched; new requests dial again."""
        self.api_client.rest_client.pool_manager.clear()

    def _request(self, options: ListOptions, timeout: urllib3.Timeout) -> Any:
        pool = self.api_client.rest_client.pool_manager
        return pool.request(
            "GET",
            self._url(options),
            headers=self._headers(),
            preload_content=False,
            timeout=timeout,
            retries=False,
        )

    def _raise_for_status(self, response: Any) -> None:
        if 200 <= response.status < 300:
            return
        body = response.read()
        response.release_conn()
        status: dict[str, Any] = {}
        try:
            parsed = self._loads(body) if body else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("kind") == "Status":
            status = parsed
        else:
            status = {"message": body.decode("utf-8", "replace")[:1000] or response.reason}
        status["code"] = status.get("code") or response.status
        raise from_status(status, dict(response.headers))

    def _options(self, options: ListOptions, watch: bool) -> ListOptions:
        options = options.copy()
        options.watch = watch
        if self.options_modifier is not None:
            self.options_modifier(options)
        return options

    # -- ListerWatcher --------------------------------------------------------------------------
    def list(self, options: ListOptions) -> Any:
        """LIST the collection; returns the list as a wire dict (items converted to
        ``object_type`` when one was given)."""
        response = self._request(
            self._options(options, False),
            urllib3.Timeout(connect=30, read=self.request_timeout),
        )
        keep_alive(response, self.api_client)
        self._raise_for_status(response)
        try:
            body = response.read()
        finally:
            response.release_conn()
        result = self._loads(body)
        if not isinstance(result, dict) or "items" not in result:
            raise ApiStatusError(500, "InternalError", "LIST did not return a list")
        if self._decode is not None:
            result["items"] = [self._decode(item) for item in result["items"] or []]
        elif result["items"] is None:
            result["items"] = []
        return result

    def watch(self, options: ListOptions) -> Watch:
        """Start a WATCH; the :class:`~client_cache.watch.StreamWatcher` delivers events."""
        options = self._options(options, True)
        # The response headers come at once (the events follow); a connection that gives
        # nothing within the header timeout is dead. Then the idle timeout takes over.
        header_timeout = self.request_timeout or WATCH_HEADER_TIMEOUT
        response = self._request(options, urllib3.Timeout(connect=30, read=header_timeout))
        keep_alive(response, self.api_client)
        self._raise_for_status(response)
        sock = _socket_of(response)
        if sock is not None:
            sock.settimeout(self.idle_timeout)
        return StreamWatcher(
            response, self._decode, name=self.gvr.resource, loads=self._loads
        )


#: How long a WATCH request waits for the response headers when the lister-watcher has no
#: ``request_timeout`` (the server sends them at once).
WATCH_HEADER_TIMEOUT = 60.0

#: TCP keepalive of the client's connections, as client-go dials them: the first probe
#: after :data:`KEEPALIVE_IDLE` idle seconds, then one every :data:`KEEPALIVE_INTERVAL`
#: seconds, the connection dropped after :data:`KEEPALIVE_PROBES` unanswered probes.
KEEPALIVE_IDLE = 30
KEEPALIVE_INTERVAL = 15
KEEPALIVE_PROBES = 9


def _socket_of(response: Any) -> Any:
    """The socket under a urllib3 response, or None when it cannot be reached."""
    return getattr(getattr(response, "connection", None), "sock", None)


def keep_alive(response: Any, api_client: Any = None) -> None:
    """Turn on TCP keepalive for the connection of ``response`` (it stays on when the
    connection goes back to the pool), unless the client's configuration chose its own
    socket options or its own keepalive.

    A watch can be silent for minutes, and a peer that vanished without a FIN or RST (a
    rebooted node, a dropped NAT entry) would otherwise go unnoticed until the watch's
    timeout, or for ever for a request waiting on a pooled connection. Go's client dials
    with a 30 s keepalive (and pings HTTP/2 connections); these are the timings it asks the
    kernel for. Platforms without the TCP_KEEP* options get plain SO_KEEPALIVE; a response
    without a reachable socket is left alone.
    """
    config = getattr(api_client, "configuration", None)
    if getattr(config, "socket_options", None) is not None or getattr(config, "keep_alive",
                                                                       False):
        return
    sock = _socket_of(response)
    if sock is None:
        return
    with contextlib.suppress(OSError, AttributeError, ValueError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE),
                            ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
                            ("TCP_KEEPCNT", KEEPALIVE_PROBES)):
            option = getattr(socket, name, None)
            if option is not None:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)


def new_filtered_list_watch_from_client(
    api_client: Any,
    gvr: GroupVersionResource,
    namespace: str = "",
    options_modifier: Callable[[ListOptions], None] | None = None,
    *,
    object_type: Any = None,
    idle_timeout: float | None = None,
) -> ClientListerWatcher:
    """A ListerWatcher for ``gvr`` in ``namespace`` (``""``: all namespaces, or a
    cluster-scoped resource); ``options_modifier`` edits the options of every request (Go
    ``NewFilteredListWatchFromClient``)."""
    return ClientListerWatcher(
        api_client,
        gvr,
        namespace,
        options_modifier,
        object_type=object_type,
        idle_timeout=idle_timeout,
    )


def new_list_watch_from_client(
    api_client: Any,
    gvr: GroupVersionResource,
    namespace: str = "",
    field_selector: FieldSelector | None = None,
    *,
    object_type: Any = None,
    idle_timeout: float | None = None,
) -> ClientListerWatcher:
    """A ListerWatcher for ``gvr`` filtered by ``field_selector`` (Go
    ``NewListWatchFromClient``)."""
    selector = field_selector if field_selector is not None else everything_fields()

    def modifier(options: ListOptions) -> None:
        options.field_selector = str(selector)

    return new_filtered_list_watch_from_client(
        api_client, gvr, namespace, modifier, object_type=object_type, idle_timeout=idle_timeout
    )
