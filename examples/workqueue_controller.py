"""A pod controller: informer -> rate-limited workqueue -> worker threads.

Mirrors client-go's ``examples/workqueue`` (and the sample-controller pattern): a pod
informer enqueues ``namespace/name`` keys, N workers process them, a failed key is retried
with ``add_rate_limited`` and forgotten on success, and Ctrl-C / SIGTERM shuts everything
down gracefully (``shut_down_with_drain`` waits for the keys in flight).

By default it starts the embedded API server and makes a few pods itself; with
``--kubeconfig PATH`` (or ``--in-cluster``) it watches a real cluster, read-only.

    python examples/workqueue_controller.py                # embedded server, a short demo
    python examples/workqueue_controller.py --kubeconfig ~/.kube/config --seconds 60
"""

from __future__ import annotations

import argparse
import random
import signal
import threading
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client import ApiClient, CoreV1Api

from client_cache import ResourceEventHandlerFuncs, meta_namespace_key_func
from client_cache.errors import is_not_found
from client_cache.informers import new_shared_informer_factory
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.workqueue import (
    RateLimitingQueueConfig,
    default_controller_rate_limiter,
    new_rate_limiting_queue_with_config,
)

MAX_RETRIES = 5


class Controller:
    def __init__(self, api_client: ApiClient, workers: int, fail_rate: float) -> None:
        self.factory = new_shared_informer_factory(api_client, 30.0)
        self.pods = self.factory.core().v1().pods()
        self.queue = new_rate_limiting_queue_with_config(
            default_controller_rate_limiter(), RateLimitingQueueConfig(name="pods"))
        self.workers = workers
        self.fail_rate = fail_rate
        self.processed = 0
        self.lock = threading.Lock()
        enqueue = self.enqueue
        self.pods.informer().add_event_handler(ResourceEventHandlerFuncs(
            add_func=enqueue,
            update_func=lambda old, new: enqueue(new),
            delete_func=enqueue,
        ))

    def enqueue(self, obj: Any) -> None:
        self.queue.add(meta_namespace_key_func(obj) if isinstance(obj, dict) else obj.key)

    def sync(self, key: str) -> None:
        """The business logic: here, report the pod's state from the cache."""
        if random.random() < self.fail_rate:
            raise RuntimeError(f"transient failure syncing {key}")
        namespace, _, name = key.rpartition("/")
        try:
            pod = self.pods.lister().by_namespace(namespace).get(name)
        except Exception as err:
            if is_not_found(err):
                print(f"pod {key} is gone")
                return
            raise
        print(f"pod {key} at resourceVersion {pod['metadata']['resourceVersion']}")

    def worker(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown:
                return
            try:
                self.sync(str(key))
            except Exception as err:
                if self.queue.num_requeues(key) < MAX_RETRIES:
                    print(f"retrying {key}: {err}")
                    self.queue.add_rate_limited(key)
                else:
                    print(f"dropping {key} after {MAX_RETRIES} retries: {err}")
                    self.queue.forget(key)
            else:
                self.queue.forget(key)
                with self.lock:
                    self.processed += 1
            finally:
                self.queue.done(key)

    def run(self, stop: threading.Event) -> None:
        self.factory.start(stop)
        if not all(self.factory.wait_for_cache_sync(stop).values()):
            return
        print("caches synced; starting workers")
        threads = [threading.Thread(target=self.worker, name=f"pod-worker-{i}", daemon=True)
                   for i in range(self.workers)]
        for thread in threads:
            thread.start()
        stop.wait()
        self.queue.shut_down_with_drain()
        for thread in threads:
            thread.join()
        self.factory.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", help="watch a real cluster (read-only)")
    parser.add_argument("--in-cluster", action="store_true")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0, help="how long to run")
    parser.add_argument("--fail-rate", type=float, default=0.2,
                        help="fraction of syncs that fail, to show retries")
    args = parser.parse_args()

    server = None
    if args.in_cluster:
        kube_config.load_incluster_config()
        api_client = ApiClient()
    elif args.kubeconfig:
        api_client = kube_config.new_client_from_config(config_file=args.kubeconfig)
    else:
        server = EmbeddedApiServer().start()
        api_client = server.api_client()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    controller = Controller(api_client, args.workers, args.fail_rate)
    runner = threading.Thread(target=controller.run, args=(stop,), name="controller")
    runner.start()
    try:
        if server is not None:  # a small workload on the embedded server
            core = CoreV1Api(server.api_client())
            for i in range(5):
                core.create_namespaced_pod("default", {"metadata": {"name": f"web-{i}"}})
            core.patch_namespaced_pod("web-0", "default", {"metadata": {"labels": {"v": "2"}}})
            core.delete_namespaced_pod("web-4", "default")
        stop.wait(args.seconds)
    finally:
        stop.set()
        runner.join()
        if server is not None:
            server.stop()
    print(f"processed {controller.processed} keys")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
