"""A ``SharedInformerFactory`` with two resources, their listers and a custom index.

The common controller setup (as in kube-controller-manager and sample-controller): one
factory shares an informer per resource; here nodes and pods. The pod informer gets an
extra index, pods by ``spec.nodeName`` (client-go users write the same ``IndexFunc``), and
the program answers "which pods run on node X?" from the cache, plus label-selector lists
through the listers.

    python examples/factory_with_index.py
    python examples/factory_with_index.py --kubeconfig ~/.kube/config   # read-only
"""

from __future__ import annotations

import threading
from typing import Any

from _cluster import connect, parser, stop_on_signals
from kubernetes.client import CoreV1Api

from client_cache import meta_namespace_key_func
from client_cache.api.labels import everything, parse
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers import new_shared_informer_factory

BY_NODE = "byNode"


def pods_by_node(pod: Any) -> list[str]:
    """The custom index function: a pod is indexed under its node (none if unscheduled)."""
    node = (pod.get("spec") or {}).get("nodeName")
    return [node] if node else []


def main() -> int:
    args = parser(__doc__).parse_args()
    stop = stop_on_signals()
    with connect(args) as cluster:
        core = CoreV1Api(cluster.api_client)
        if not cluster.read_only:
            for n in range(3):
                core.create_node({"metadata": {"name": f"node-{n}",
                                               "labels": {"zone": "a" if n < 2 else "b"}}})
            for i in range(7):
                core.create_namespaced_pod("shop" if i % 2 else "blog", {
                    "metadata": {"name": f"web-{i}", "labels": {"app": "web", "i": str(i)}},
                    "spec": {"nodeName": f"node-{i % 3}",
                             "containers": [{"name": "c", "image": "pause"}]}})
        factory = new_shared_informer_factory(cluster.api_client, 0)
        nodes = factory.core().v1().nodes()
        pods = factory.core().v1().pods()
        pods.informer().add_indexers({BY_NODE: pods_by_node})  # before start
        added = threading.Semaphore(0)
        pods.informer().add_event_handler(ResourceEventHandlerFuncs(
            add_func=lambda obj: added.release()))
        factory.start(stop)
        try:
            synced = factory.wait_for_cache_sync(stop)
            print("synced:", ", ".join(f"{gvr.resource}={ok}" for gvr, ok in synced.items()))
            indexer = pods.informer().get_indexer()
            for node in sorted(nodes.lister().list(everything()),
                               key=lambda n: n["metadata"]["name"]):
                name = node["metadata"]["name"]
                on_node = sorted(meta_namespace_key_func(p)
                                 for p in indexer.by_index(BY_NODE, name))
                print(f"{name} (zone {node['metadata'].get('labels', {}).get('zone', '?')}): "
                      f"{on_node}")
            zone_a = [n["metadata"]["name"] for n in nodes.lister().list(parse("zone=a"))]
            print(f"nodes in zone a: {sorted(zone_a)}")
            shop = pods.lister().by_namespace("shop").list(parse("app=web"))
            print(f"web pods in shop: {sorted(p['metadata']['name'] for p in shop)}")
            if not cluster.read_only:
                # move web-0 to node-2: the index follows the cache
                core.delete_namespaced_pod("web-0", "blog")
                core.create_namespaced_pod("blog", {
                    "metadata": {"name": "web-0", "labels": {"app": "web"}},
                    "spec": {"nodeName": "node-2",
                             "containers": [{"name": "c", "image": "pause"}]}})
                for _ in range(8):  # 7 initial adds + the re-created pod
                    added.acquire(timeout=10)
                moved = sorted(meta_namespace_key_func(p)
                               for p in indexer.by_index(BY_NODE, "node-2"))
                print(f"after moving blog/web-0, node-2 runs {moved}")
        finally:
            stop.set()
            factory.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
