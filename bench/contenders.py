"""One contender of the side-by-side benchmark, run in its own process (so its memory is
its own): inform the pods of a namespace, report the initial sync, then (with ``--events``)
the watch throughput, as JSON lines; ``bench/go/main.go`` does the same with client-go.

    python -m bench.contenders NAME --server URL --namespace NS --expect N [--events M]

Contenders: ``cc-dict`` (client_cache, wire dicts), ``cc-model`` (client_cache,
``V1Pod`` models), ``k8s-informer`` (the ``kubernetes`` package's own
``kubernetes.informer.SharedInformer``), ``watch-model`` and ``watch-raw`` (a LIST then a
``kubernetes.watch.Watch`` loop into a dict, with models or with ``deserialize=False``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes import watch as kwatch
from kubernetes.client import ApiClient, Configuration, CoreV1Api


def rss_kb(field: str = "VmRSS") -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


WRITTEN_AT = "bench.client-cache.io/written-at"


def written_at(obj: Any) -> float | None:
    """When the server's load generator wrote ``obj`` (dict or model), if it says."""
    md = obj.get("metadata") if isinstance(obj, dict) else getattr(obj, "metadata", None)
    if md is None:
        return None
    annotations = md.get("annotations") if isinstance(md, dict) else md.annotations
    value = (annotations or {}).get(WRITTEN_AT)
    return float(value) if value else None


class Counter:
    """Counts handler calls; remembers when the last one happened and, when asked, how
    long after the server wrote it each object reached the handler."""

    def __init__(self, latency: bool = False) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.last = 0.0
        self.changed = threading.Condition(self.lock)
        self.latency = latency
        self.latencies: list[float] = []

    def bump(self, *objs: Any) -> None:
        written = written_at(objs[-1]) if self.latency and objs else None
        with self.lock:
            self.count += 1
            self.last = time.perf_counter()
            if written is not None:
                self.latencies.append(time.time() - written)
            self.changed.notify_all()

    def wait_for(self, target: int, timeout: float = 600) -> None:
        with self.lock:
            if not self.changed.wait_for(lambda: self.count >= target, timeout):
                raise TimeoutError(f"saw {self.count} of {target} events")


def api_client(server: str) -> ApiClient:
    config = Configuration()
    config.host = server
    config.api_key = {"authorization": "embedded-token"}
    config.api_key_prefix = {"authorization": "Bearer"}
    return ApiClient(config)


def drop_managed_fields(obj: Any) -> Any:
    """The S6 transform: managedFields are what most controllers never read."""
    if isinstance(obj, dict):
        (obj.get("metadata") or {}).pop("managedFields", None)
    return obj


def client_cache_informer(models: bool) -> Callable[..., Any]:
    def start(api: ApiClient, ns: str, handlers: int, counter: Counter,
              stop: threading.Event, transform: bool = False) -> Callable[[], int]:
        from client_cache.controller import ResourceEventHandlerFuncs
        from client_cache.informers import (
            SharedInformerFactoryOptions,
            new_shared_informer_factory_with_options,
        )
        factory = new_shared_informer_factory_with_options(
            api, 0, SharedInformerFactoryOptions(
                namespace=ns, transform=drop_managed_fields if transform else None))
        pods = factory.core().v1().pods(models=models)
        for _ in range(handlers):
            pods.informer().add_event_handler(ResourceEventHandlerFuncs(
                add_func=counter.bump, update_func=counter.bump, delete_func=counter.bump))
        factory.start(stop)
        factory.wait_for_cache_sync(stop)
        return lambda: len(pods.informer().get_store().list_keys())
    return start


def k8s_informer(api: ApiClient, ns: str, handlers: int, counter: Counter,
                 stop: threading.Event, transform: bool = False) -> Callable[[], int]:
    from kubernetes.informer import ADDED, DELETED, MODIFIED, SharedInformer
    informer = SharedInformer(CoreV1Api(api).list_namespaced_pod, namespace=ns)
    for _ in range(handlers):
        for kind in (ADDED, MODIFIED, DELETED):
            informer.add_event_handler(kind, counter.bump)
    informer.start()
    threading.Thread(target=lambda: (stop.wait(), informer.stop()), daemon=True,
                     name="k8s-informer-stopper").start()
    return lambda: len(informer.cache.list_keys())


def watch_loop(deserialize: bool) -> Callable[..., Any]:
    def start(api: ApiClient, ns: str, handlers: int, counter: Counter,
              stop: threading.Event, transform: bool = False) -> Callable[[], int]:
        core = CoreV1Api(api)
        cache: dict[str, Any] = {}

        def key(obj: Any) -> str:
            if isinstance(obj, dict):
                return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            return f"{obj.metadata.namespace}/{obj.metadata.name}"

        def run() -> None:
            if deserialize:
                listed = core.list_namespaced_pod(ns)
                items, rv = listed.items, listed.metadata.resource_version
            else:
                raw = json.loads(core.list_namespaced_pod(ns, _preload_content=False).data)
                items, rv = raw["items"], raw["metadata"]["resourceVersion"]
            for item in items:
                cache[key(item)] = item
                for _ in range(handlers):
                    counter.bump(item)
            w = kwatch.Watch()
            for event in w.stream(core.list_namespaced_pod, ns, resource_version=rv,
                                  deserialize=deserialize):
                obj = event["object"]  # a model, or the plain dict without deserialize
                if event["type"] == "DELETED":
                    cache.pop(key(obj), None)
                else:
                    cache[key(obj)] = obj
                for _ in range(handlers):
                    counter.bump(obj)
                if stop.is_set():
                    w.stop()

        threading.Thread(target=run, daemon=True, name="watch-loop").start()
        return lambda: len(cache)
    return start


CONTENDERS: dict[str, Callable[..., Any]] = {
    "cc-dict": client_cache_informer(models=False),
    "cc-model": client_cache_informer(models=True),
    "k8s-informer": k8s_informer,
    "watch-model": watch_loop(deserialize=True),
    "watch-raw": watch_loop(deserialize=False),
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=sorted(CONTENDERS))
    parser.add_argument("--server", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--expect", type=int, required=True)
    parser.add_argument("--events", type=int, default=0)
    parser.add_argument("--handlers", type=int, default=1)
    parser.add_argument("--latency", action="store_true",
                        help="report the delay from the server's write to the handler")
    parser.add_argument("--transform", action="store_true",
                        help="drop managedFields before caching (client_cache only)")
    args = parser.parse_args()

    def die(hook: Any) -> None:  # a contender whose thread failed must not hang the run
        print(f"{args.name}: {hook.exc_type.__name__}: {hook.exc_value}", file=sys.stderr)
        os._exit(1)

    threading.excepthook = die
    gc.collect()
    baseline = rss_kb()
    counter = Counter(latency=args.latency)
    stop = threading.Event()
    api = api_client(args.server)
    started = time.perf_counter()
    if args.transform and args.name not in ("cc-dict", "cc-model"):
        parser.error(f"{args.name} has no transform")
    size = CONTENDERS[args.name](api, args.namespace, args.handlers, counter, stop,
                                 transform=args.transform)
    counter.wait_for(args.expect * args.handlers)
    seconds = time.perf_counter() - started
    peak = rss_kb("VmHWM")
    gc.collect()
    print(json.dumps({"scenario": "sync", "seconds": seconds, "objects": size(),
                      "rss_kb": rss_kb(), "peak_rss_kb": peak,
                      "baseline_rss_kb": baseline}), flush=True)
    if args.events:
        with counter.lock:
            counter.latencies.clear()  # only the objects written after the sync count
        print("SYNCED", flush=True)
        synced = args.expect * args.handlers
        counter.wait_for(synced + 1)
        with counter.lock:
            first = counter.last
        counter.wait_for(synced + args.events * args.handlers)
        elapsed = counter.last - first
        result: dict[str, Any] = {"scenario": "watch", "events": args.events,
                                  "seconds": elapsed, "events_per_second": args.events / elapsed}
        if args.latency:
            with counter.lock:
                delays = sorted(counter.latencies)
            result["latency_p50_ms"] = delays[len(delays) // 2] * 1000
            result["latency_p99_ms"] = delays[int(len(delays) * 0.99)] * 1000
        print(json.dumps(result), flush=True)
    stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
