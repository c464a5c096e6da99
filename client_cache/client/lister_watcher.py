"""The HTTP lister-watcher: LIST and WATCH of one resource on a real API server through a
``kubernetes.client.ApiClient`` (what Go's ``NewListWatchFromClient`` builds on a REST
client; :mod:`client_cache.listwatch` has the constructors).

It uses the client's configuration (host, TLS, proxy, tokens - refreshed per request -
and client certificates, however the ``kubernetes`` package loaded them) and its urllib3
connection pool. Any group/version/resource works, built-in or custom, namespaced or
cluster-scoped. LIST decodes the JSON body once and returns the list as a wire dict;
WATCH streams with :class:`~client_cache.client.stream_watcher.StreamWatcher`. Objects
stay wire dicts unless an ``object_type`` (e.g. ``V1Pod``) is given, in which case each
object is built with the installed ``kubernetes`` package's own deserializer. Failed
requests raise :class:`~client_cache.api.errors.ApiStatusError` built from the server's
``Status``; network errors propagate as urllib3 raises them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlencode

from client_cache.api.errors import ApiStatusError, from_status
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import Event, Watch
from client_cache.client.rest import request_headers, resource_path
from client_cache.client.stream_watcher import EVENT_TYPES, StreamWatcher
from client_cache.client.transport import Transport, socket_of
from client_cache.codec import _wire as wire
from client_cache.codec import protobuf
from client_cache.codec._decoding import ObjectDecoding
from client_cache.codec._wire import Loads
from client_cache.codec.skip_paths import SkipPath
from client_cache.util.chan import NEVER_STOP
from client_cache.util.rest_metrics import host_of

__all__ = [
    "DEFAULT_REQUEST_TIMEOUT",
    "METADATA_LIST_ACCEPT",
    "METADATA_WATCH_ACCEPT",
    "PROTOBUF_ACCEPT",
    "WATCH_HEADER_TIMEOUT",
    "ClientListerWatcher",
]

#: How long a LIST waits for data and a WATCH for its headers unless the lister-watcher is
#: given its own ``request_timeout`` (the server's own default request timeout).
DEFAULT_REQUEST_TIMEOUT = 60.0
WATCH_HEADER_TIMEOUT = DEFAULT_REQUEST_TIMEOUT


#: The Accept headers of Go's metadata client, JSON only (its protobuf answers are not read).
METADATA_LIST_ACCEPT = ("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                        "application/json")
METADATA_WATCH_ACCEPT = ("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                         "application/json")

#: The Accept header of a lister-watcher asked for protobuf (Go's typed clients' default,
#: ``rest.Config.ContentType``): protobuf for the built-in kinds, JSON for the others.
PROTOBUF_ACCEPT = f"{protobuf.CONTENT_TYPE},application/json"

_log = logging.getLogger(__name__)


class ClientListerWatcher:
    """The HTTP :class:`~client_cache.listwatch.ListerWatcher` behind
    :func:`~client_cache.listwatch.new_filtered_list_watch_from_client`.

    ``request_timeout`` (default :data:`DEFAULT_REQUEST_TIMEOUT`, 60 s, as the server's
    own) bounds how long a LIST waits for data and a WATCH for its response headers;
    ``idle_timeout`` is the client-side idle timeout of watches (seconds without any data,
    not even a bookmark, after which the watch ends; None: none). Requests go through a
    :class:`~client_cache.client.transport.Transport` of its own: ``list_with_context`` and
    ``watch_with_context`` are interrupted by their stop event, a dead pooled connection
    is retried once, connections get TCP keepalive. ``loads`` decodes JSON (orjson when
    installed, else stdlib ``json``). With ``metadata_only`` the server is asked for the
    metadata-only forms (Go's ``metadata`` client): a LIST returns a
    ``PartialObjectMetadataList``, watch events carry ``PartialObjectMetadata`` objects
    (kind, apiVersion ``meta.k8s.io/v1``, ``metadata``; nothing of spec or status).
    ``share_strings`` (default: :func:`client_cache.codec._sharing.shared_by_default`, on
    where the C walker is installed) replaces each decoded object's short repeated strings
    with copies already held (:mod:`client_cache.codec._sharing`), before any model
    decoding; False leaves them as decoded. ``untrack`` (default:
    :func:`client_cache.codec._sharing.untracked_by_default`, on where the C walker is installed)
    takes each decoded object's dicts and lists out of the cyclic garbage collector's
    sight in the same walk (:func:`client_cache.codec._sharing.untrack` says what that means for
    objects put into cached ones); False leaves them tracked. ``compact_dicts`` (default:
    :func:`client_cache.codec._sharing.compacted_by_default`, on where the C walker is installed)
    puts in place of each decoded dict an equal one sharing its key table with the dicts
    of the same keys (:func:`client_cache.codec._sharing.compact`: about 40 % less memory per
    cached pod, for about 8 us more per object decoded); it applies to objects cached as
    dicts or structs, never to those decoded into ``kubernetes`` models. All three are
    port additions. With the default ``loads`` and any of the three asked, objects cached
    as dicts are decoded and walked in one pass by the C decoder
    (:func:`client_cache.codec._sharing.decoder`, which hands what it declines to ``loads``);
    a ``loads`` of the caller's own is always the one used. With ``protobuf`` the server
    is asked for protobuf for the built-in kinds (``Accept:`` :data:`PROTOBUF_ACCEPT`, as
    Go's typed clients ask; a custom resource's server answers JSON): each answer is
    decoded as its ``Content-Type`` says, protobuf into the same dicts its JSON gives
    (:mod:`client_cache.codec.protobuf`), then into models as asked, or straight into the
    same structs its JSON gives (:mod:`client_cache.codec._protobuf_structs`; where the C
    part is not built, or the class is of no built-in kind, struct objects ask for
    JSON); it has no effect with ``metadata_only`` (JSON, as Go's metadata client).
    ``skip_paths`` (a port addition; dotted paths or sequences of keys) leaves the
    members they name out of every object while decoding it, for dict and model objects
    (:mod:`client_cache.codec.skip_paths`; a struct class leaves out its own fields, and is
    refused them with ValueError). :attr:`decoding` (an
    :class:`~client_cache.codec._decoding.ObjectDecoding`) decodes each answer;
    :meth:`set_previous_objects` lets watch events share what they leave unchanged.
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
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        loads: Loads = wire.loads,
        metadata_only: bool = False,
        share_strings: bool | None = None,
        untrack: bool | None = None,
        compact_dicts: bool | None = None,
        protobuf: bool = False,
        skip_paths: Iterable[SkipPath] | None = None,
    ) -> None:
        if request_timeout is not None and request_timeout <= 0:
            raise ValueError(f"request_timeout must be positive, not {request_timeout}")
        self.api_client = api_client
        self.gvr = gvr
        self.namespace = namespace
        self.options_modifier = options_modifier
        self.object_type = object_type
        self.idle_timeout = idle_timeout
        self.request_timeout = request_timeout
        self.metadata_only = metadata_only
        self.decoding = ObjectDecoding(
            api_client, gvr, object_type=object_type, loads=loads, metadata_only=metadata_only,
            share_strings=share_strings, untrack=untrack, compact_dicts=compact_dicts,
            protobuf=protobuf, skip_paths=skip_paths)
        self.share_strings = self.decoding.share_strings
        self.untrack = self.decoding.untrack
        self.compact_dicts = self.decoding.compact_dicts
        self.protobuf = self.decoding.protobuf
        # the paths as keys (a generator given is read once, by the decoding)
        self.skip_paths = self.decoding.skip.paths if self.decoding.skip else ()
        self._path = resource_path(gvr, namespace)
        self.transport = Transport(api_client)
        # the (401/403 code, verb) of the current episode, hinted once: a refused watch
        # (a watch-list) and a refused LIST are told apart, the hint names the verb
        self._auth_failing: tuple[int, str] | None = None
        self._previous: Callable[[str], Any] | None = None
        self._held: Callable[[], int] | None = None

    def __repr__(self) -> str:
        return f"<ClientListerWatcher {self.gvr} namespace={self.namespace!r}>"

    def set_previous_objects(self, lookup: Callable[[str], Any] | None,
                             held: Callable[[], int] | None = None) -> None:
        """Where the watches started and LISTs made from now on find the object an
        event or a LIST item replaces: ``lookup`` takes a cache key (``namespace/name``,
        or ``name``) and gives the cached object or None; None stops it. Each JSON
        event's object, and each JSON LIST item, then takes the parts equal to that
        object's as they are (shared, not built again: see
        :func:`client_cache.codec._sharing.decoder`); a LIST item equal to the cached object is
        that object, so a relist builds only what changed. ``held`` (optional) says how
        many objects the cache holds: a LIST made while it gives 0 (an initial sync)
        asks ``lookup`` nothing, and a watch-list started while it gives more (a relist)
        looks up the objects of its ``ADDED`` events as well. For dict objects read by the C
        decoder; other objects, and protobuf, are decoded as before. A port addition:
        shared informers set it to their indexer unless a transform is set (a transform
        changes the new object in place, and must not reach the old one through a shared
        part), or ``CLIENT_CACHE_REUSE_UNCHANGED=0``."""
        for name, given in (("lookup", lookup), ("held", held)):
            if given is not None and not callable(given):
                raise TypeError(f"{name} must be callable or None, not {type(given).__name__}")
        self._previous = lookup
        self._held = held

    def _cache_held(self) -> bool:
        """Whether the lookup's cache holds objects (so a LIST or watch-list now is a
        relist, not an initial sync); true without ``held``."""
        return self._previous is not None and (self._held is None or self._held() > 0)

    # -- HTTP ---------------------------------------------------------------------------------
    def _headers(self, watch: bool) -> dict[str, str]:
        headers = request_headers(self.api_client)
        if self.metadata_only:
            headers["Accept"] = METADATA_WATCH_ACCEPT if watch else METADATA_LIST_ACCEPT
        elif self.protobuf:  # custom resources have no protobuf form: JSON for them
            headers["Accept"] = PROTOBUF_ACCEPT
        return headers

    def _url(self, options: ListOptions) -> str:
        host = str(self.api_client.configuration.host).rstrip("/")
        query = urlencode(options.to_query())
        return f"{host}{self._path}?{query}" if query else f"{host}{self._path}"

    def reset_connections(self) -> None:
        """Close the idle pooled connections (the reflector calls this when a watch went
        silent: the network path may be dead, and a request sent on another connection of
        that path would hang instead of failing). Connections in use are not touched; new
        requests dial again."""
        self.transport.reset_connections()

    def _raise_for_status(self, response: Any, body: bytes | None, verb: str) -> None:
        if 200 <= response.status < 300:
            self._auth_failing = None
            return
        hint = self._auth_failed(response.status, verb) if response.status in (401, 403) \
            else ""
        if body is None:
            body = response.read()
            response.release_conn()
        status: dict[str, Any] = {}
        parsed: Any
        try:
            if response.headers.get("Content-Type", "").startswith(protobuf.CONTENT_TYPE):
                parsed = protobuf.decode(body)
            else:
                parsed = self.decoding.loads(body) if body else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("kind") == "Status":
            status = parsed
        else:
            status = {"message": body.decode("utf-8", "replace")[:1000] or response.reason}
        status["code"] = status.get("code") or response.status
        error = from_status(status, dict(response.headers))
        error.hint = hint
        raise error

    def _auth_failed(self, code: int, verb: str) -> str:
        """A 401 or 403: give the client's refresh hook a chance before the next attempt
        (401), and return, once per episode, what is wrong and what to check (the
        reflector's report of the failure carries it; "" for the repeats, at every retry,
        until a request succeeds). The hint is logged at DEBUG here."""
        config = self.api_client.configuration
        hook = getattr(config, "refresh_api_key_hook", None)
        if code == 401 and callable(hook):
            try:
                hook(config)
            except Exception as err:
                _log.warning("%s %s: the configuration's refresh_api_key_hook failed: %s",
                             verb, self._describe(), type(err).__name__)
        if self._auth_failing == (code, verb):
            _log.debug("%s %s: %d again", verb, self._describe(), code)
            return ""
        self._auth_failing = (code, verb)
        if code == 401:
            hint = ("the server rejected the credentials (an expired or wrong token, client "
                    "certificate or exec-plugin credential); " + (
                        "the configuration's refresh hook was called" if callable(hook)
                        else "the configuration has no refresh hook (refresh_api_key_hook) "
                             "to renew them"))
        else:
            scope = f"namespace {self.namespace!r}" if self.namespace else "all namespaces"
            hint = (f"the credentials are valid, but RBAC does not allow verb {verb!r} on "
                    f"resource {self.gvr.resource!r} (API group {self.gvr.group!r}) in "
                    f"{scope} for this identity; an informer needs 'list' and 'watch' "
                    "(grant them with a Role or ClusterRole)")
        hint = f"{verb} {self._describe()}: {hint}"
        _log.debug("%d: %s", code, hint)
        return hint

    def _describe(self) -> str:
        """The resource as log lines name it (``pods in ns``, ``apps/v1/deployments``)."""
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.gvr.label()}{where}"

    def _options(self, options: ListOptions, watch: bool) -> ListOptions:
        options = options.copy()
        options.watch = watch
        if self.options_modifier is not None:
            self.options_modifier(options)
        return options

    @property
    def server_host(self) -> str:
        """The server's ``host:port`` (the label its requests are measured under; a
        reflector waits on it answering again: :mod:`client_cache.util._server_answers`)."""
        return host_of(str(self.api_client.configuration.host))

    def probe(self, stop: threading.Event, timeout: float) -> None:
        """Ask the server for ``/version``, for its answer's sake only: any HTTP answer
        wakes the reflectors waiting for this server (the request is measured like any
        other: :mod:`client_cache.util._server_answers`); failures are ignored. Bounded
        by ``timeout`` and ended at once by ``stop``."""
        host = str(self.api_client.configuration.host).rstrip("/")
        try:
            self.transport.get(f"{host}/version", request_headers(self.api_client), timeout,
                               stop, read_body=True)
        except Exception as err:  # a probe only looks for an answer
            _log.debug("probe of %s: %s", self.server_host, type(err).__name__)

    # -- ListerWatcher --------------------------------------------------------------------------
    def list(self, options: ListOptions) -> Any:
        """LIST the collection; returns the list as a wire dict (items converted to
        ``object_type`` when one was given)."""
        return self.list_with_context(NEVER_STOP, options)

    def watch(self, options: ListOptions) -> Watch:
        """Start a WATCH; a :class:`~client_cache.client.stream_watcher.StreamWatcher` delivers its
        events."""
        return self.watch_with_context(NEVER_STOP, options)

    def list_with_context(self, stop: threading.Event, options: ListOptions) -> Any:
        """:meth:`list`, interrupted by ``stop`` at any point
        (:class:`~client_cache.errors.StopRequestedError`)."""
        _, result = self.transport.get(
            self._url(self._options(options, False)), self._headers(False), self.request_timeout,
            stop, read_body=True, reader=self._read_list)
        if not isinstance(result, dict) or "items" not in result:
            raise ApiStatusError(500, "InternalError", "LIST did not return a list")
        if self.decoding.decode is not None:
            decode = self.decoding.decode_model
            result["items"] = [decode(item) for item in result["items"] or []]
        elif result["items"] is None:
            result["items"] = []
        return result

    def _read_list(self, response: Any) -> Any:
        """A LIST response's body, decoded (:class:`~client_cache.codec._list_body.ListBodyReader`)
        after its status is checked."""
        self._raise_for_status(response, None, "list")
        return self.decoding.list_body.read(
            response, self.decoding.item_loads_reusing(
                self._previous if self._cache_held() else None))

    def watch_with_context(self, stop: threading.Event, options: ListOptions) -> Watch:
        """:meth:`watch`; ``stop`` interrupts the wait for the response headers (after
        that, ``Watch.stop()`` ends the stream)."""
        # The response headers come at once (the events follow); a connection that gives
        # nothing within the request timeout is dead. Then the idle timeout takes over.
        response, _ = self.transport.get(
            self._url(self._options(options, True)), self._headers(True), self.request_timeout,
            stop, read_body=False)
        self._raise_for_status(response, None, "watch")
        sock = socket_of(response)
        if sock is not None:
            sock.settimeout(self.idle_timeout)
        # a watch-list's initial events are ADDED: looked up when the cache holds
        # objects (a relist), not when it is empty (an initial sync)
        relist = bool(options.send_initial_events) and self._cache_held()
        decoder = self.decoding.watch_decoder(
            self._previous, added=relist, event_class=Event, types=EVENT_TYPES,
            protobuf=response.headers.get("Content-Type", "").startswith(
                protobuf.CONTENT_TYPE))
        return StreamWatcher(response, decoder, name=self.gvr.label())
