"""``new_informer``: a store kept in step with the server plus event handlers.

Mirrors client-go's ``ExampleNewInformer`` (``tools/cache/example_test.go``): an informer
over config maps whose add handler deletes each new object on the server and whose delete
handler prints the key; the informer's store empties as the deletions come back through
the watch. The update handler prints what changed.

    python examples/new_informer.py                 # embedded server, 5 config maps
    python examples/new_informer.py --kubeconfig ~/.kube/config -n kube-system
        # a real cluster: prints adds, updates and deletes for 5 s, changes nothing
"""

from __future__ import annotations

import threading
from typing import Any

from _cluster import connect, parser, stop_on_signals
from kubernetes.client import CoreV1Api

from client_cache import deletion_handling_meta_namespace_key_func as key_of
from client_cache import meta_namespace_key_func
from client_cache.api.schema import GroupVersionResource
from client_cache.controller import ResourceEventHandlerFuncs, new_informer
from client_cache.listwatch import new_filtered_list_watch_from_client

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("-n", "--namespace", default="default")
    cli.add_argument("--count", type=int, default=5)
    args = cli.parse_args()
    stop = stop_on_signals()
    with connect(args) as cluster:
        core = CoreV1Api(cluster.api_client)
        deletions: list[str] = []
        done = threading.Event()

        def on_add(obj: Any) -> None:
            key = meta_namespace_key_func(obj)
            print(f"added {key}", flush=True)
            if not cluster.read_only:
                core.delete_namespaced_config_map(obj["metadata"]["name"], args.namespace)

        def on_update(old: Any, new: Any) -> None:
            print(f"updated {meta_namespace_key_func(new)}: resourceVersion "
                  f"{old['metadata']['resourceVersion']} -> {new['metadata']['resourceVersion']}")

        def on_delete(obj: Any) -> None:  # obj may be a DeletedFinalStateUnknown
            key = key_of(obj)
            print(f"deleted {key}", flush=True)
            deletions.append(key)
            if len(deletions) == args.count:
                done.set()

        store, controller = new_informer(
            new_filtered_list_watch_from_client(cluster.api_client, CONFIGMAPS, args.namespace),
            {"kind": "ConfigMap", "apiVersion": "v1"},
            0,  # no resync
            ResourceEventHandlerFuncs(add_func=on_add, update_func=on_update,
                                      delete_func=on_delete),
        )
        runner = threading.Thread(target=controller.run, args=(stop,), name="informer")
        runner.start()
        try:
            if cluster.read_only:
                stop.wait(5)
            else:
                for i in range(args.count):
                    core.create_namespaced_config_map(
                        args.namespace, {"metadata": {"name": f"cm-{i}"}, "data": {"i": str(i)}})
                done.wait(30)
        finally:
            stop.set()
            runner.join()
        print(f"{len(deletions)} deletions seen; the store holds {len(store.list_keys())} keys")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
