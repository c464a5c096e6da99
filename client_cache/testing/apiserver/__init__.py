"""An embedded Kubernetes API server for tests, examples and benchmarks.

:class:`EmbeddedApiServer` serves the Kubernetes HTTP protocol on 127.0.0.1 (an ephemeral
port unless one is given) from background threads, so the real ``kubernetes`` client and
this library's list-watch talk to it over loopback exactly as to a cluster::

    with EmbeddedApiServer() as server:
        api = server.api_client()              # a configured kubernetes.client.ApiClient
        CoreV1Api(api).list_namespaced_pod("default")
        server.write_kubeconfig("/tmp/kubeconfig")

What it serves (see :mod:`client_cache.testing.apiserver.store` for the storage semantics):

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
process: it prints its URL on the first line of stdout and serves until interrupted;
:class:`EmbeddedApiServerProcess` starts and controls such a process.

Modules: :mod:`.server` (the HTTP server and its lifecycle), :mod:`.handlers` (request
handling), :mod:`.faults` (fault injection), :mod:`.load` (the load generator),
:mod:`.process` (the child process and the command line).
"""

from client_cache.testing.apiserver.load import WRITTEN_AT_ANNOTATION, sample_object
from client_cache.testing.apiserver.process import EmbeddedApiServerProcess, main
from client_cache.testing.apiserver.server import EmbeddedApiServer

__all__ = ["WRITTEN_AT_ANNOTATION", "EmbeddedApiServer", "EmbeddedApiServerProcess", "main",
           "sample_object"]
