"""Request handling of the embedded API server: routing, discovery, CRUD, LIST with its
resourceVersion rules and paging, WATCH as a chunked stream, and the ``/__control/``
endpoints that reach the fault injection from another process."""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import queue
import socket
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import yaml

from client_cache.api import fields as fieldsel
from client_cache.api import labels as labelsel
from client_cache.api.sharding import ShardSelector, ShardSelectorError, parse_shard_selector
from client_cache.codec import protobuf
from client_cache.errors import (
    ApiStatusError,
    ClientCacheError,
    new_bad_request,
    new_resource_expired,
)
from client_cache.testing.apiserver import encoding
from client_cache.testing.apiserver.faults import ABORT, GARBLE
from client_cache.testing.apiserver.gates import SHARDED_LIST_AND_WATCH
from client_cache.testing.apiserver.managed_fields import manager_of
from client_cache.testing.apiserver.resources import ResourceType
from client_cache.testing.apiserver.watchers import Watcher

if TYPE_CHECKING:
    from client_cache.testing.apiserver.server import EmbeddedApiServer

__all__ = ["META_API_VERSION", "Handler", "partial_object_metadata"]


_NOTHING = object()  # the watch queue had nothing before the next bookmark or the timeout

#: The apiVersion of the metadata-only forms (``meta.k8s.io/v1``).
META_API_VERSION = "meta.k8s.io/v1"


def _wants(accept: str | None, form: str) -> bool:
    """Whether the Accept header asks for the ``as=<form>;g=meta.k8s.io;v=v1`` form (the
    real server honours the first acceptable media type; a client that sends this form
    lists it first)."""
    for media in (accept or "").split(","):
        params = {k.strip(): v.strip() for k, _, v in
                  (p.partition("=") for p in media.split(";")[1:])}
        if params.get("as") == form and params.get("g") == "meta.k8s.io" and params.get(
                "v") == "v1":
            return True
    return False


def partial_object_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as the real server sends it in metadata-only form: kind
    ``PartialObjectMetadata``, apiVersion ``meta.k8s.io/v1``, its ``metadata`` only."""
    return {"kind": "PartialObjectMetadata", "apiVersion": META_API_VERSION,
            "metadata": obj.get("metadata") or {}}


def _metadata_line(line: bytes) -> bytes:
    """A watch line with its object in metadata-only form (ERROR Status lines unchanged)."""
    try:
        event = json.loads(line)
    except ValueError:
        return line  # an injected garbled line stays garbled
    obj = event.get("object") if isinstance(event, dict) else None
    if not isinstance(obj, dict) or obj.get("kind") == "Status":
        return line
    event["object"] = partial_object_metadata(obj)
    return json.dumps(event, separators=(",", ":")).encode() + b"\n"


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


class Handler(BaseHTTPRequestHandler):
    """One client connection's requests (HTTP/1.1 keep-alive)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet

    # -- plumbing ----------------------------------------------------------------------------------
    @property
    def owner(self) -> EmbeddedApiServer:
        """The server this handler serves."""
        owner: EmbeddedApiServer = getattr(self.server, "owner")  # noqa: B009
        return owner

    def _send_json(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self._send_warnings()
        self.end_headers()
        self.wfile.write(body)

    def _send_warnings(self) -> None:
        """The admission webhooks' warnings of this request, as the real server sends
        them (``Warning: 299 - "<text>"``)."""
        for warning in self.owner.store.admission.take_warnings():
            text = warning.replace("\\", "\\\\").replace('"', '\\"')
            self.send_header("Warning", f'299 - "{text}"')

    def _send_obj(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        if self._protobuf and isinstance(obj, dict) and obj.get("kind") in (
                self._protobuf, f"{self._protobuf}List", "Status"):
            body = encoding.body_bytes(obj)
            self.send_response(code)
            self.send_header("Content-Type", protobuf.CONTENT_TYPE)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self._send_warnings()
            self.end_headers()
            self.wfile.write(body)
            return
        self._send_json(code, json.dumps(obj, separators=(",", ":")).encode(), headers)

    def _send_error(self, err: ApiStatusError) -> None:
        headers = {}
        retry = err.details.get("retryAfterSeconds")
        if retry:
            headers["Retry-After"] = str(retry)
        if self._protobuf:
            self._send_obj(err.code or 500, err.status(), headers)
            return
        self._send_json(err.code or 500, _status_bytes(err), headers)

    def _apply_body(self) -> Any:
        """An apply body: JSON, or YAML (which JSON is a subset of)."""
        try:
            body = yaml.safe_load(self._raw_body or b"{}")
        except yaml.YAMLError as err:
            raise new_bad_request(f"invalid YAML body: {err}") from err
        if not isinstance(body, dict):
            raise new_bad_request("an apply body must be an object")
        return body

    def _body(self) -> Any:
        raw = self._raw_body
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError as err:
            raise new_bad_request(f"invalid JSON body: {err}") from err

    def do_GET(self) -> None:
        """Serve a GET: discovery, a read, a list or a watch."""
        self._dispatch("GET")

    def do_POST(self) -> None:
        """Serve a POST: a create, or a fault-injection control."""
        self._dispatch("POST")

    def do_PUT(self) -> None:
        """Serve a PUT: a replace (``/status`` for the status subresource)."""
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        """Serve a PATCH: merge, strategic-merge or JSON patch."""
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        """Serve a DELETE of one object or of a collection."""
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        owner = self.owner
        owner.count_request("requests")
        self._protobuf = ""  # the kind answered in protobuf; "": JSON
        # Read the body first, whatever the answer: one left unread on a kept-alive
        # connection would be taken for the next request (a 400 for the client's next call).
        length = int(self.headers.get("Content-Length") or 0)
        self._raw_body = self.rfile.read(length) if length else b""
        if len(self._raw_body) < length:
            # the client went away mid-body (an abandoned request): nothing is applied,
            # as the real server fails such a request on the unexpected EOF (a short
            # body read as empty would have been a PUT of ``{}``)
            owner.count_request("truncated_bodies")
            self.close_connection = True
            return
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        parts = [p for p in url.path.split("/") if p]
        try:
            if parts and parts[0] == "__control":
                self._control(method, parts[1:], query)
                return
            owner.authenticate(self.headers.get("Authorization"))
            if owner.latency:
                time.sleep(owner.latency)
            is_watch = query.get("watch") in ("true", "1")
            fault = owner.take_fault(is_watch, method)
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
        if not _wants(self.headers.get("Accept"), "PartialObjectMetadata") and \
                not _wants(self.headers.get("Accept"), "PartialObjectMetadataList") and \
                encoding.answers_protobuf(self.headers.get("Accept"), rtype.api_version,
                                          rtype.kind):
            self._protobuf = rtype.kind
        if sub not in ("", "status", "scale"):
            raise ApiStatusError(404, "NotFound", f"unknown subresource {sub}")
        if rtype.namespaced is False:
            namespace = ""
        if not name:
            self._collection(method, rtype, namespace, query, watch)
        else:
            self._item(method, rtype, namespace, name, query)

    def _manager(self, query: dict[str, str]) -> str:
        """Who writes: ``fieldManager``, else the User-Agent's first part."""
        return manager_of(query.get("fieldManager", ""), self.headers.get("User-Agent", ""))

    def _item(self, method: str, rtype: ResourceType, namespace: str, name: str,
              query: dict[str, str]) -> None:
        store = self.owner.store
        if method != "GET":
            _dry_run(query, create=False)
        if method == "GET":
            obj = store.get(rtype, namespace, name)
            if _wants(self.headers.get("Accept"), "PartialObjectMetadata"):
                obj = partial_object_metadata(obj)
            self._send_obj(200, obj)
        elif method == "PUT":
            self._send_obj(200, store.update(rtype, namespace, name, self._body(),
                                             self._manager(query)))
        elif method == "PATCH" and _is_apply(self.headers.get("Content-Type")):
            if not query.get("fieldManager"):
                raise _invalid_patch_options("fieldManager", "FieldValueRequired",
                                             "Required value: is required for apply patch")
            obj, created = store.apply(rtype, namespace, name, self._apply_body(),
                                       query["fieldManager"], query.get("force") == "true")
            self._send_obj(201 if created else 200, obj)
        elif method == "PATCH":
            if "force" in query:
                raise _invalid_patch_options("force", "FieldValueForbidden",
                                             "Forbidden: may not be specified for non-apply "
                                             "patch")
            self._send_obj(200, store.patch(rtype, namespace, name, self._body(),
                                            self._manager(query)))
        elif method == "DELETE":
            options = self._body()
            preconditions = options.get("preconditions") if isinstance(options, dict) else None
            self._send_obj(200, store.delete(rtype, namespace, name,
                                             preconditions if isinstance(preconditions, dict)
                                             else None))
        else:
            raise ApiStatusError(405, "MethodNotAllowed", "method not allowed")

    def _collection(
        self, method: str, rtype: ResourceType, namespace: str, query: dict[str, str],
        watch: bool,
    ) -> None:
        store = self.owner.store
        if method == "POST":
            self._send_obj(201, store.create(rtype, namespace, self._body(),
                                             self._manager(query),
                                             dry_run=_dry_run(query, create=True)))
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

    def _shard_selector(self, query: dict[str, str]) -> ShardSelector | None:
        """The request's ``shardSelector`` when the ``ShardedListAndWatch`` gate is on
        (ignored otherwise, as by a real server); a bad one is refused as kube-apiserver
        refuses it: 500 with ``invalid shard selector: ...`` (the registry's plain error,
        which its handler turns into an InternalError status)."""
        text = query.get("shardSelector", "")
        if not text or not self.owner.feature_gates[SHARDED_LIST_AND_WATCH]:
            return None
        try:
            return parse_shard_selector(text)
        except ShardSelectorError as err:
            raise ApiStatusError(500, "", f"invalid shard selector: {err}") from err

    def _list(self, rtype: ResourceType, namespace: str, query: dict[str, str]) -> None:
        store = self.owner.store
        self.owner.count_request("list_requests")
        label_sel, field_sel = self._selectors(query)
        shards = self._shard_selector(query)
        probe = Watcher(rtype, namespace, label_sel, field_sel, shard_selector=shards)
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
        if shards is not None:
            md["shardInfo"] = {"selector": str(shards)}
        if limit and len(selected) > limit:
            page = selected[:limit]
            md["continue"] = _encode_continue(served, _object_key(page[-1]))
            md["remainingItemCount"] = len(selected) - limit
            selected = page
        body = {"kind": f"{rtype.kind}List", "apiVersion": rtype.api_version,
                "metadata": md, "items": selected}
        if _wants(self.headers.get("Accept"), "PartialObjectMetadataList"):
            body = {"kind": "PartialObjectMetadataList", "apiVersion": META_API_VERSION,
                    "metadata": md, "items": [partial_object_metadata(o) for o in selected]}
        bad = self.owner.take_bad_list()
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
        owner.count_request("watch_requests")
        store = owner.store
        label_sel, field_sel = self._selectors(query)
        watcher = Watcher(rtype, namespace, label_sel, field_sel,
                          shard_selector=self._shard_selector(query))
        rv_param = query.get("resourceVersion", "")
        send_initial = query.get("sendInitialEvents") == "true"
        if send_initial:
            owner.count_request("watch_list_requests")
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
        metadata_only = _wants(self.headers.get("Accept"), "PartialObjectMetadata")
        store.open_watch(watcher, revision, send_initial, send_initial and bookmarks)
        self.send_response(200)
        self.send_header("Content-Type", protobuf.WATCH_CONTENT_TYPE if self._protobuf
                         else "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        deadline = None if timeout is None else time.monotonic() + timeout
        next_bookmark = time.monotonic() + owner.bookmark_interval
        try:
            while True:
                owner.wait_while_stalled(watcher)
                now = time.monotonic()
                waits = [next_bookmark - now] if bookmarks else []
                if deadline is not None:
                    waits.append(deadline - now)
                wait = max(0.0, min(waits)) if waits else None
                try:
                    item = watcher.queue.get(timeout=wait)
                except queue.Empty:
                    item = _NOTHING
                owner.wait_while_stalled(watcher)  # hold what we have while stalled
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    self._end_chunks()
                    return
                if item is None:
                    self._end_chunks()
                    return
                if item is ABORT:
                    self.close_connection = True
                    return
                if item is GARBLE:
                    self._chunk(encoding.GARBLED_FRAME if self._protobuf
                                else b"{this is not a watch event\n")
                    continue
                if item is _NOTHING:
                    if bookmarks and now >= next_bookmark:
                        mark = store.bookmark(watcher)
                        if mark is not None:
                            self._chunk(self._watch_bytes([mark], metadata_only))
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
                self._chunk(self._watch_bytes(batch, metadata_only))
        except OSError:
            self.close_connection = True
        finally:
            store.close_watch(watcher)

    def _watch_bytes(self, lines: list[bytes], metadata_only: bool) -> bytes:
        """Watch events the store holds as JSON lines, as this watch sends them."""
        if metadata_only:
            return b"".join(_metadata_line(line) for line in lines)
        if self._protobuf:
            return encoding.watch_bytes(lines)
        return b"".join(lines)

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
                watch_only=query.get("watchOnly") == "true", method=query.get("method", "")),
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
            "tokens": lambda: owner.accept_tokens(
                *[t for t in query.get("accept", "").split(",") if t]),
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


def _dry_run(query: dict[str, str], *, create: bool) -> bool:
    """Whether the write is a dry run (``dryRun=All``; any other value is refused, as
    the real server refuses it). Only a create can be: the embedded server refuses a
    dry run of any other write rather than write."""
    value = query.get("dryRun")
    if value is None:
        return False
    if value != "All":
        raise ApiStatusError(400, "BadRequest", f'Unsupported value: "{value}": supported '
                             'values: "All"')
    if not create:
        raise ApiStatusError(400, "BadRequest", "the embedded API server supports dryRun "
                             "on create only")
    return True


def _is_apply(content_type: str | None) -> bool:
    """Whether a PATCH is a server-side apply (``application/apply-patch+yaml``)."""
    return (content_type or "").split(";", 1)[0].strip() == "application/apply-patch+yaml"


def _invalid_patch_options(field: str, reason: str, message: str) -> ApiStatusError:
    """The real server's 422 for bad ``PatchOptions`` query parameters."""
    return ApiStatusError(422, "Invalid", f'PatchOptions.meta.k8s.io "" is invalid: {field}: '
                          f"{message}", {"group": "meta.k8s.io", "kind": "PatchOptions",
                                         "causes": [{"reason": reason, "message": message,
                                                     "field": field}]})
