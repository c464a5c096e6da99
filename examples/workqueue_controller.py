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

import random
import threading
from typing import Any

from _cluster import connect, parser, stop_on_signals
from kubernetes.client import ApiClient, CoreV1Api

from client_cache import ResourceEventHandlerFuncs, meta_namespace_key_func
from client_cache.errors import is_not_found
from client_cache.informers import new_shared_informer_factory
from client_cache.workqueue import (
    RateLimitingQueueConfig,
    default_controller_rate_limiter,
    new_rate_limiting_queue_with_config,
)

MAX_RETRIES = 5


class Controller:
    def __init__(self, api_client: ApiClient, workers: int, fail_rate: float, *,
                 resync: float = 30.0, verbose: bool = True) -> None:
        self.factory = new_shared_informer_factory(api_client, resync)
        self.verbose = verbose
        self.retries = 0
        self.synced = threading.Event()
        self.pods = self.factory.core().v1().pods()
        self.queue = new_rate_limiting_queue_with_config(
            default_controller_rate_limiter(), RateLimitingQueueConfig(name="pods"))
        self.workers = workers
        self.fail_rate = fail_rate
        self.processed = 0
        self.lock = threading.RLock()
        enqueue = self.enqueue
        self.pods.informer().add_event_handler(ResourceEventHandlerFuncs(
            add_func=enqueue,
            update_func=lambda old, new: enqueue(new),
            delete_func=enqueue,
        ))

    def say(self, line: str) -> None:
        """Print one whole line (workers print concurrently)."""
        with self.lock:
            print(line, flush=True)

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
                if self.verbose:
                    self.say(f"pod {key} is gone")
                return
            raise
        if self.verbose:
            self.say(f"pod {key} at resourceVersion {pod['metadata']['resourceVersion']}")

    def worker(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown:
                return
            try:
                self.sync(str(key))
            except Exception as err:
                with self.lock:
                    self.retries += 1
                if self.queue.num_requeues(key) < MAX_RETRIES:
                    if self.verbose:
                        self.say(f"retrying {key}: {err}")
                    self.queue.add_rate_limited(key)
                else:
                    self.say(f"dropping {key} after {MAX_RETRIES} retries: {err}")
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
            self.factory.shutdown()
            return
        self.synced.set()
        if self.verbose:
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
    cli = parser(__doc__)
    cli.add_argument("--workers", type=int, default=4)
    cli.add_argument("--seconds", type=float, default=3.0, help="how long to run")
    cli.add_argument("--fail-rate", type=float, default=0.2,
                     help="fraction of syncs that fail, to show retries")
    args = cli.parse_args()
    stop = stop_on_signals()
    with connect(args) as cluster:
        controller = Controller(cluster.api_client, args.workers, args.fail_rate)
        runner = threading.Thread(target=controller.run, args=(stop,), name="controller")
        runner.start()
        try:
            # wait for the caches, so that every change below arrives through the watch
            while not controller.synced.wait(0.1):
                if stop.is_set() or not runner.is_alive():
                    return 1
            if not cluster.read_only:  # a small workload on the embedded server
                core = CoreV1Api(cluster.api_client)
                for i in range(5):
                    core.create_namespaced_pod("default", {"metadata": {"name": f"web-{i}"}})
                core.patch_namespaced_pod("web-0", "default",
                                          {"metadata": {"labels": {"v": "2"}}})
                core.delete_namespaced_pod("web-4", "default")
            stop.wait(args.seconds)
        finally:
            stop.set()
            runner.join()
    print(f"processed {controller.processed} keys")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
