"""A low-level controller that deletes every pod it sees and prints the deleted keys.

Mirrors the package example of client-go's ``tools/cache`` (``example_test.go``): a
``DeltaFIFO`` whose known objects are a downstream store, a ``Config`` with the list-watch,
and a ``process`` function that walks each key's ``Deltas``: an object it has not seen yet
goes into the store and is deleted on the server; the ``Deleted`` delta that follows is
printed and removes it from the store.

    python examples/cache_controller.py            # embedded server with 6 pods
    python examples/cache_controller.py --kubeconfig ~/.kube/config -n scratch
        # a real cluster: prints what it *would* delete, deletes nothing
"""

from __future__ import annotations

import threading
from typing import Any

from _cluster import connect, parser, stop_on_signals
from kubernetes.client import CoreV1Api

from client_cache import DeletedFinalStateUnknown, meta_namespace_key_func, new_store
from client_cache.api.schema import GroupVersionResource
from client_cache.controller import Config, new_controller
from client_cache.delta_fifo import DeltaFIFOOptions, DeltaType, new_delta_fifo_with_options
from client_cache.listwatch import new_filtered_list_watch_from_client

PODS = GroupVersionResource("", "v1", "pods")


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("-n", "--namespace", default="default")
    cli.add_argument("--pods", type=int, default=6, help="pods to create (embedded server)")
    args = cli.parse_args()
    stop = stop_on_signals()
    with connect(args) as cluster:
        core = CoreV1Api(cluster.api_client)
        if not cluster.read_only:
            for i in range(args.pods):
                core.create_namespaced_pod(args.namespace, {
                    "metadata": {"name": f"doomed-{i}"},
                    "spec": {"containers": [{"name": "c", "image": "pause"}]}})
        downstream = new_store(meta_namespace_key_func)
        fifo = new_delta_fifo_with_options(DeltaFIFOOptions(
            known_objects=downstream, emit_delta_type_replaced=True))
        deleted: list[str] = []
        all_gone = threading.Event()

        def process(deltas: Any, is_in_initial_list: bool) -> None:
            # newest last; like Go's example, handle each delta in order
            for delta in deltas:
                obj = delta.object
                if delta.type in (DeltaType.SYNC, DeltaType.REPLACED, DeltaType.ADDED,
                                  DeltaType.UPDATED):
                    _, exists = downstream.get(obj)
                    if not exists:
                        downstream.add(obj)
                        name = obj["metadata"]["name"]
                        if cluster.read_only:
                            print(f"would delete {meta_namespace_key_func(obj)}")
                        else:  # the Deleted delta comes back through the watch
                            core.delete_namespaced_pod(name, args.namespace)
                elif delta.type == DeltaType.DELETED:
                    key = (obj.key if isinstance(obj, DeletedFinalStateUnknown)
                           else meta_namespace_key_func(obj))
                    downstream.delete(obj)
                    print(f"deleted {key}", flush=True)
                    deleted.append(key)
                    if len(deleted) == args.pods:
                        all_gone.set()

        controller = new_controller(Config(
            queue=fifo,
            lister_watcher=new_filtered_list_watch_from_client(
                cluster.api_client, PODS, args.namespace),
            object_type={"kind": "Pod", "apiVersion": "v1"},
            full_resync_period=0.1,  # resyncs go through process too (seen objects: no-op)
            retry_on_error=False,
            process=process,
        ))
        runner = threading.Thread(target=controller.run, args=(stop,), name="controller")
        runner.start()
        try:
            if cluster.read_only:
                stop.wait(5)
            else:
                all_gone.wait(30)
        finally:
            stop.set()
            runner.join()
        print(f"{len(deleted)} pods deleted; {len(downstream.list())} left in the store")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
