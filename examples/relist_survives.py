"""An informer that survives broken watches, expired history and missed deletions.

The guarantees client-go's Reflector gives (and this port keeps), shown by injecting
faults into the embedded API server while a SharedIndexInformer watches pods:

1. a watch cut mid-stream: the informer re-watches from its last resourceVersion, with no
   relist;
2. a 410 Expired error event: it relists, and the cache stays right;
3. a pod deleted while the watch is down and the next watch attempt fails: after the
   relist the handler gets the deletion as a ``DeletedFinalStateUnknown`` tombstone;
   (after any relist, every object still there is delivered again as an update, as in
   client-go: handlers compare resourceVersions when they care);
4. a compaction: the re-watch from a compacted resourceVersion gets 410 and relists.

A relist (a "fill") is a watch-list stream, client-go v0.36's default, or a LIST where the
server or ``KUBE_FEATURE_WatchListClient=false`` says so; a refused watch-list falls back
to a LIST at once. After each fault it checks that the cache equals the server, and at the
end prints how many fills and WATCHes that took. Faults need the embedded server; with
``--kubeconfig`` it only reports what it sees.

    python examples/relist_survives.py
"""

from __future__ import annotations

import threading
import time
from typing import Any

from _cluster import connect, parser, stop_on_signals
from kubernetes.client import CoreV1Api

from client_cache import DeletedFinalStateUnknown
from client_cache import deletion_handling_meta_namespace_key_func as key_of
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import Watch
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.listwatch import new_filtered_list_watch_from_client
from client_cache.shared_informer import new_shared_informer

PODS = GroupVersionResource("", "v1", "pods")


class CountingListerWatcher:
    """Counts the fills (first-page LISTs and watch-list watches) and the WATCH requests
    (of both kinds) the informer makes."""

    def __init__(self, inner: ClientListerWatcher) -> None:
        self.inner = inner
        self.fills = 0
        self.watches = 0

    def list(self, options: ListOptions) -> Any:
        if not options.continue_:
            self.fills += 1
        return self.inner.list(options)

    def watch(self, options: ListOptions) -> Watch:
        self.watches += 1
        if options.send_initial_events:
            self.fills += 1
        return self.inner.watch(options)


def pod(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "p"}]}}


def main() -> int:
    args = parser(__doc__).parse_args()
    stop = stop_on_signals()
    with connect(args, bookmark_interval=0.2) as cluster:
        core = CoreV1Api(cluster.api_client)
        counting = CountingListerWatcher(new_filtered_list_watch_from_client(
            cluster.api_client, PODS, "default"))
        informer = new_shared_informer(counting, {"kind": "Pod", "apiVersion": "v1"}, 0)
        changed = threading.Condition()
        tombstones: list[str] = []

        def saw(kind: str) -> Any:
            def handler(*objs: Any) -> None:
                obj = objs[-1]
                if isinstance(obj, DeletedFinalStateUnknown):
                    kind_seen = "delete (tombstone: the watch missed it)"
                    tombstones.append(obj.key)
                else:
                    kind_seen = kind
                print(f"  {kind_seen} {key_of(obj)}", flush=True)
                with changed:
                    changed.notify_all()
            return handler

        informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=saw("add"), update_func=saw("update"), delete_func=saw("delete")))
        runner = threading.Thread(target=informer.run, args=(stop,), name="informer")
        runner.start()

        def converged(what: str) -> None:
            deadline = time.monotonic() + 20
            with changed:
                while time.monotonic() < deadline and not stop.is_set():
                    truth = {f"default/{p.metadata.name}": p.metadata.resource_version
                             for p in core.list_namespaced_pod("default").items}
                    cached = {key_of(o): o["metadata"]["resourceVersion"]
                              for o in informer.get_store().list()}
                    if cached == truth:
                        print(f"{what}: cache matches the server ({len(truth)} pods; "
                              f"{counting.fills} fills, {counting.watches} WATCHes so far)")
                        return
                    changed.wait(0.1)
            raise SystemExit(f"{what}: the cache did not converge")

        try:
            if cluster.embedded is None:
                print("faults need the embedded server; watching for 5 s")
                stop.wait(5)
                return 0
            server = cluster.embedded
            for i in range(4):
                core.create_namespaced_pod("default", pod(f"web-{i}"))
            while not informer.has_synced() and not stop.is_set():
                time.sleep(0.01)
            converged("initial sync")

            # a watch that ends within a second without delivering anything counts as
            # "very short" and is followed by a relist (by design), so let one event through
            core.patch_namespaced_pod("web-3", "default", {"metadata": {"labels": {"v": "1"}}})
            converged("an update through the watch")

            print("fault 1: the watch is cut mid-stream")
            server.abort_watches()
            core.create_namespaced_pod("default", pod("web-4"))
            converged("after the cut (re-watch, no relist)")

            print("fault 2: the server sends 410 Expired")
            server.send_watch_error(410)
            core.patch_namespaced_pod("web-1", "default", {"metadata": {"labels": {"v": "2"}}})
            converged("after 410 (relist)")

            print("fault 3: a pod is deleted while the watch is down")
            server.fail_next(1, 500, watch_only=True)
            server.abort_watches()
            core.delete_namespaced_pod("web-0", "default")
            deadline = time.monotonic() + 20
            with changed:
                changed.wait_for(lambda: bool(tombstones) or time.monotonic() > deadline, 20)
            converged("after the missed deletion (relist, tombstone)")

            print("fault 4: the history is compacted while the watch is down")
            server.compact()
            server.close_watches()
            core.create_namespaced_pod("default", pod("web-5"))
            converged("after compaction")
        finally:
            stop.set()
            runner.join()
        print(f"done: {counting.fills} fills, {counting.watches} WATCHes, "
              f"tombstones {tombstones}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
