"""One contender of the side-by-side benchmark, run in its own process (so its memory is
its own); ``bench/go/main.go`` does the same work with client-go. Results are JSON lines.

    python -m bench.contenders NAME --server URL --namespace NS --expect N \
        [--events M] [--latency-events K] [--handlers H] [--transform]
    python -m bench.contenders NAME --mode s4 [--objects 100000]
    python -m bench.contenders cc-dict --mode s5 [--keys 100000]
    python -m bench.contenders wire --mode delivery --server URL --namespace NS \
        [--sync list|watch-list] [--protobuf]

Inform mode (S1, S2, S3, S6): inform the pods of a namespace and report the initial sync;
with ``--events``, print ``READY throughput`` and report the rate at which the next M
events reach the handlers (the driver starts the server's load when it reads the line);
with ``--latency-events``, print ``READY latency`` and report p50/p99 of the delay from
the server's write (stamped in each object) to the handler for the next K events.

Contenders: ``cc-dict`` (client_cache, wire dicts), ``cc-dict-own-keys`` (the same with
``CLIENT_CACHE_COMPACT_DICTS=0``: each dict keeps its own key table), ``cc-dict-rebuilt``
(the same with ``CLIENT_CACHE_REUSE_UNCHANGED=0``: a watch event's object is built whole,
nothing taken from the object it replaces), ``cc-dict-v032`` (the same on client-go
v0.32's informer, a DeltaFIFO, beside the default v0.36 one), ``cc-model`` (client_cache,
``V1Pod`` models), ``cc-struct`` (client_cache, struct mode: msgspec structs without
managedFields), all on any ``--sync`` path (list, watch-list, paged);
``k8s-informer`` (the ``kubernetes`` package's own ``kubernetes.informer.SharedInformer``),
``watch-model`` and ``watch-raw`` (a LIST then a ``kubernetes.watch.Watch`` loop into a
dict, with models or with ``deserialize=False``), which LIST only; ``floor`` (urllib3 and
the JSON decoder, no cache), LIST or watch-list.
S4 (indexer and lister) runs for ``cc-dict`` (indexes) and ``k8s-informer`` (its
``ObjectCache`` has no index, so lookups scan); S5 (workqueue) for ``cc-dict`` only, the
Python alternatives having no workqueue. Delivery mode (:func:`delivery`, contender
``wire``) times the server's own sending of a sync path's initial data, nothing decoded.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import watch as kwatch
from kubernetes.client import ApiClient, Configuration, CoreV1Api

RESULTS = Path(__file__).resolve().parent / "results"


def save_results(stem: str, report: Any, text: str) -> None:
    """Write ``bench/results/<stem>.json`` (the numbers) and ``<stem>.md`` (the table)
    and print the table."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n",
                                          encoding="utf-8")
    (RESULTS / f"{stem}.md").write_text(text, encoding="utf-8")
    print(text)


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
    """Counts handler calls; remembers when the last one happened, when the call numbered
    :attr:`mark` happened (:attr:`marked`, stamped by the handler itself, so a main thread
    that wakes late cannot shorten the measured span) and, when asked, how long after the
    server wrote it each object reached the handler."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.last = 0.0
        self.changed = threading.Condition(self.lock)
        self.latency = False  # set while the latency phase runs
        self.latencies: list[float] = []
        self.target = sys.maxsize  # the count the main thread waits for
        self.mark = sys.maxsize  # the count whose time goes to ``marked``
        self.marked = 0.0

    def bump(self, *objs: Any) -> None:
        written = written_at(objs[-1]) if self.latency and objs else None
        with self.lock:
            self.count += 1
            self.last = time.perf_counter()
            if self.count == self.mark:
                self.marked = self.last
            if written is not None:
                self.latencies.append(time.time() - written)
            # wake the main thread only when its count is reached: a wake per event made
            # it take the interpreter lock from the contender's threads on every event
            # (5-15 % of it), which the Go contender's 1 ms poll of an atomic never did
            if self.count >= self.target:
                self.changed.notify_all()

    def wait_for(self, target: int, timeout: float = 600) -> None:
        with self.lock:
            self.target = target
            try:
                if not self.changed.wait_for(lambda: self.count >= target, timeout):
                    raise TimeoutError(f"saw {self.count} of {target} events")
            finally:
                self.target = sys.maxsize


def api_client(server: str, token: str = "embedded-token", ca_file: str = "") -> ApiClient:
    config = Configuration()
    config.host = server
    config.api_key = {"authorization": token}
    config.api_key_prefix = {"authorization": "Bearer"}
    if ca_file:
        config.ssl_ca_cert = ca_file
        config.verify_ssl = True
    return ApiClient(config)


SYNC_PATHS = ("list", "watch-list", "paged")
"""How a contender fills its cache: ``list`` is a LIST from resourceVersion 0 (served
whole by both servers, whatever the limit), ``watch-list`` a watch with
``sendInitialEvents``, ``paged`` a LIST from resourceVersion "" in pages of
:data:`PAGE_SIZE` (a tweak of the list options, as a client-go user would write it)."""
PAGE_SIZE = 500


def paged_list(options: Any) -> None:
    """The ``paged`` path's tweak: LISTs (not watches) from resourceVersion "" in pages."""
    if not options.watch:
        options.resource_version = ""
        options.limit = PAGE_SIZE


def drop_managed_fields(obj: Any) -> Any:
    """The S6 transform: managedFields are what most controllers never read."""
    if isinstance(obj, dict):
        (obj.get("metadata") or {}).pop("managedFields", None)
    return obj


def client_cache_informer(models: bool, structs: bool = False, compact: bool = True,
                          skip: tuple[str, ...] = (), reuse: bool = True,
                          v032: bool = False) -> Callable[..., Any]:
    """A factory informer of pods; ``v032``: client-go v0.32's informer (a DeltaFIFO,
    ``use_real_fifo=False``) instead of v0.36's default (an atomic RealFIFO)."""
    def start(api: ApiClient, ns: str, handlers: int, counter: Counter,
              stop: threading.Event, transform: bool = False,
              sync: str = "list", protobuf: bool = False) -> Callable[[], int]:
        from client_cache.codec import _sharing as sharing
        from client_cache.controller import ResourceEventHandlerFuncs
        if not compact:  # read when the factory makes the list-watch
            os.environ[sharing.COMPACT_DICTS_ENV] = "0"
        if not reuse:  # read when the informer starts
            os.environ[sharing.REUSE_UNCHANGED_ENV] = "0"
        from client_cache.informers import (
            SharedInformerFactoryOptions,
            new_shared_informer_factory_with_options,
        )
        factory = new_shared_informer_factory_with_options(
            api, 0, SharedInformerFactoryOptions(
                namespace=ns, transform=drop_managed_fields if transform else None,
                use_watch_list=sync == "watch-list", protobuf=protobuf,
                tweak_list_options=paged_list if sync == "paged" else None,
                skip_paths=skip, use_real_fifo=False if v032 else None))
        if structs:
            from kubernetes.client import V1Pod

            from client_cache.codec.structs import struct_type
            pods = factory.core().v1().pods(struct_type(V1Pod))
        else:
            pods = factory.core().v1().pods(models=models)
        for _ in range(handlers):
            pods.informer().add_event_handler(ResourceEventHandlerFuncs(
                add_func=counter.bump, update_func=counter.bump, delete_func=counter.bump))
        factory.start(stop)
        factory.wait_for_cache_sync(stop)
        return lambda: len(pods.informer().get_store().list_keys())
    return start


def k8s_informer(api: ApiClient, ns: str, handlers: int, counter: Counter,
                 stop: threading.Event, transform: bool = False,
                 sync: str = "list") -> Callable[[], int]:
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
              stop: threading.Event, transform: bool = False,
              sync: str = "list") -> Callable[[], int]:
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


WIRE = "wire"  # delivery mode's contender: the bytes alone
JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
WATCH_LIST_QUERY = ("watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
                    "&resourceVersionMatch=NotOlderThan")


def raw_http(api: ApiClient, ns: str, accept: str) -> tuple[Any, dict[str, str], str]:
    """A urllib3 pool with no client library above it, the request headers (the
    ``api``'s bearer token, ``Accept: accept``) and the URL of the namespace's pods."""
    config = api.configuration
    http = urllib3.PoolManager(ca_certs=config.ssl_ca_cert or None,
                               cert_reqs="CERT_REQUIRED" if config.ssl_ca_cert else None)
    headers = {"Authorization": config.get_api_key_with_prefix("authorization"),
               "Accept": accept}
    return http, headers, f"{config.host}/api/v1/namespaces/{ns}/pods"


def delivery(api: ApiClient, ns: str, sync: str = "list",
             protobuf: bool = False) -> dict[str, Any]:
    """The server's own delivery of a sync path's initial data: seconds from sending the
    request until its last byte arrived, read 1 MiB at a time and nothing decoded (so
    no client on that path, in that encoding, can sync faster). ``list``: a LIST from
    resourceVersion 0, until the body ends; ``watch-list``: a watch with
    ``sendInitialEvents``, until the bookmark that ends the initial events (found by its
    annotation's key in the bytes, which both encodings carry as is). With ``protobuf``
    the server is asked for protobuf only, and a server that answers anything else is
    an error (SystemExit), so a JSON answer is never reported as protobuf."""
    from client_cache.api.lists import INITIAL_EVENTS_ANNOTATION_KEY
    accept = PROTOBUF if protobuf else JSON
    http, headers, base = raw_http(api, ns, accept)
    url = f"{base}?{WATCH_LIST_QUERY}" if sync == "watch-list" else f"{base}?resourceVersion=0"
    marker = INITIAL_EVENTS_ANNOTATION_KEY.encode()
    started = time.perf_counter()
    resp = http.request("GET", url, headers=headers, preload_content=False,
                        timeout=urllib3.Timeout(connect=10, read=60))
    try:
        content_type = resp.headers.get("Content-Type", "")
        if resp.status != 200 or not content_type.startswith(accept):
            raise SystemExit(f"delivery {sync}: asked for {accept}, got {resp.status} "
                             f"{content_type!r}")
        received, tail, ended = 0, b"", sync != "watch-list"
        keep = len(marker) - 1  # the stream's last bytes, for a marker across two reads
        while chunk := resp.read1(1 << 20):
            received += len(chunk)
            if not ended:
                if marker in chunk or marker in tail + chunk[:keep]:
                    ended = True
                    break
                tail = (tail + chunk[-keep:])[-keep:]  # never a copy of the whole read
        seconds = time.perf_counter() - started
    finally:
        resp.close()
        http.clear()  # the pool's connections end with the measurement
    if not ended:
        raise SystemExit("delivery watch-list: the stream ended before the bookmark")
    return {"scenario": "delivery", "seconds": seconds, "bytes": received,
            "content_type": content_type}


def floor(api: ApiClient, ns: str, handlers: int, counter: Counter,
          stop: threading.Event, transform: bool = False,
          sync: str = "list") -> Callable[[], int]:
    """The floor: what reading the same bytes costs with no client library and no cache,
    decoded by the JSON decoder the library uses (:func:`client_cache.codec._wire.loads`: orjson,
    collector paused for big bodies), every object counted. ``list``: one LIST
    (resourceVersion 0), then a watch from its resourceVersion, each line decoded.
    ``watch-list``: one watch with ``sendInitialEvents``, synced at the bookmark that ends
    the initial events, read on for the changes. Lines are handed on as soon as they
    arrive (``read1``), so the latency column is the floor's too."""
    from client_cache.api.lists import INITIAL_EVENTS_ANNOTATION_KEY
    from client_cache.codec._wire import loads
    http, headers, base = raw_http(api, ns, JSON)
    seen = [0]

    def bump(obj: Any) -> None:
        for _ in range(handlers):
            counter.bump(obj)

    def run() -> None:
        if sync == "watch-list":
            query = WATCH_LIST_QUERY
        else:
            listed = loads(http.request("GET", base + "?resourceVersion=0",
                                        headers=headers).data)
            for item in listed["items"]:
                bump(item)
            seen[0] = len(listed["items"])
            query = f"watch=true&resourceVersion={listed['metadata']['resourceVersion']}"
        resp = http.request("GET", f"{base}?{query}", headers=headers, preload_content=False,
                            timeout=urllib3.Timeout(connect=10))
        rest = b""
        synced = sync != "watch-list"
        while not stop.is_set() and (chunk := resp.read1(1 << 16)):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if not line:
                    continue
                event = loads(line)
                obj = event["object"]
                if event["type"] != "BOOKMARK":
                    if not synced:
                        seen[0] += 1
                    bump(obj)
                elif (obj["metadata"].get("annotations") or {}).get(
                        INITIAL_EVENTS_ANNOTATION_KEY) == "true":
                    synced = True
        resp.release_conn()

    threading.Thread(target=run, daemon=True, name="floor").start()
    return lambda: seen[0]


CONTENDERS: dict[str, Callable[..., Any]] = {
    "cc-dict": client_cache_informer(models=False),
    "cc-dict-own-keys": client_cache_informer(models=False, compact=False),
    "cc-dict-v032": client_cache_informer(models=False, v032=True),
    "cc-dict-rebuilt": client_cache_informer(models=False, reuse=False),
    "cc-model": client_cache_informer(models=True),
    "cc-dict-skip": client_cache_informer(models=False, skip=("metadata.managedFields",)),
    "cc-struct": client_cache_informer(models=False, structs=True),
    "k8s-informer": k8s_informer,
    "watch-model": watch_loop(deserialize=True),
    "watch-raw": watch_loop(deserialize=False),
    "floor": floor,
}
#: The contenders that can take each sync path; the rest LIST only.
SYNC_CAPABLE = {"cc-dict", "cc-dict-skip", "cc-dict-v032", "cc-model", "cc-struct", "floor"}
# and wire, in delivery mode
PROTOBUF_CAPABLE = {"cc-dict", "cc-dict-skip", "cc-model", "cc-struct"}


def measure(op: Callable[[Any], Any], args: Iterator[Any], seconds: float) -> float:
    """Calls of ``op`` per second, calling it with the next of ``args`` for at least
    ``seconds``."""
    calls = 0
    started = time.perf_counter()
    deadline = started + seconds
    while True:
        for _ in range(50):
            op(next(args))
        calls += 50
        now = time.perf_counter()
        if now >= deadline:
            return calls / (now - started)


def sample_pods(count: int) -> list[dict[str, Any]]:
    """S4's objects: the load generator's pods, 100 namespaces, nodes ``node-{i % 500}``,
    labels ``app=web-{i % 10}``. Each is decoded from JSON on its own (distinct objects,
    as a cache holds them); the JSON comes from 500 templates, which is quicker to build."""
    from client_cache.codec._wire import gc_paused, loads
    from client_cache.testing.apiserver import sample_object
    templates = []
    for i in range(500):
        pod = sample_object("pods", i)
        pod["spec"]["nodeName"] = f"node-{i}"
        del pod["metadata"]["generateName"]
        templates.append(json.dumps(pod).encode())
    pods = []
    with gc_paused():  # setup, not measured: millions of acyclic objects
        for i in range(count):
            pod = loads(templates[i % 500])
            md = pod["metadata"]
            md.update(name=f"pod-{i}", namespace=f"ns-{i % 100}", uid=f"uid-{i}",
                      resourceVersion=str(i + 1))
            md["labels"]["app"] = f"web-{i % 10}"
            pods.append(pod)
    gc.collect()
    return pods


def updated(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(p, metadata=dict(p["metadata"], resourceVersion=str(len(pods) + i + 1)))
            for i, p in enumerate(pods)]


def cycle(values: list[Any]) -> Iterator[Any]:
    rng = random.Random(7)
    while True:
        yield values[rng.randrange(len(values))]


def s4(name: str, count: int, seconds: float) -> dict[str, Any]:
    """S4: fill a cache with ``count`` pods, update them all, then look up by namespace,
    by node (a custom index) and list one namespace by label selector."""
    pods = sample_pods(count)
    again = updated(pods)
    namespaces = [f"ns-{i}" for i in range(100)]
    nodes = [f"node-{i}" for i in range(500)]
    selector_app = "web-3"
    if name == "cc-dict":
        from client_cache.api import labels
        from client_cache.api.schema import GroupResource
        from client_cache.index import NAMESPACE_INDEX, meta_namespace_index_func
        from client_cache.listers import new_generic_lister
        from client_cache.store import meta_namespace_key_func, new_indexer

        def by_node(obj: Any) -> list[str]:
            return [obj["spec"].get("nodeName", "")]

        indexer = new_indexer(meta_namespace_key_func,
                              {NAMESPACE_INDEX: meta_namespace_index_func, "node": by_node})
        lister = new_generic_lister(indexer, GroupResource("", "pods"))
        selector = labels.parse(f"app={selector_app}")
        add, update = indexer.add, indexer.update

        def ns_lookup(ns: str) -> Any:
            return indexer.by_index(NAMESPACE_INDEX, ns)

        def node_lookup(node: str) -> Any:
            return indexer.by_index("node", node)

        def select(ns: str) -> Any:
            return lister.by_namespace(ns).list(selector)
    elif name == "k8s-informer":
        from kubernetes.informer.cache import ObjectCache
        cache = ObjectCache()
        add = update = cache._put  # what its informer calls on ADDED and MODIFIED

        def ns_lookup(ns: str) -> Any:
            return [o for o in cache.list() if o["metadata"]["namespace"] == ns]

        def node_lookup(node: str) -> Any:
            return [o for o in cache.list() if o["spec"].get("nodeName") == node]

        def select(ns: str) -> Any:
            return [o for o in cache.list() if o["metadata"]["namespace"] == ns
                    and (o["metadata"].get("labels") or {}).get("app") == selector_app]
    else:
        raise SystemExit(f"{name}: no S4 (it has no store with lookups)")
    started = time.perf_counter()
    for pod in pods:
        add(pod)
    adds = count / (time.perf_counter() - started)
    started = time.perf_counter()
    for pod in again:
        update(pod)
    updates = count / (time.perf_counter() - started)
    assert len(ns_lookup("ns-3")) == count // 100
    assert len(select("ns-3")) == len([p for p in again if p["metadata"]["namespace"] == "ns-3"
                                       and p["metadata"]["labels"]["app"] == selector_app])
    return {"scenario": "s4", "objects": count, "add_per_second": adds,
            "update_per_second": updates,
            "namespace_lookups_per_second": measure(ns_lookup, cycle(namespaces), seconds),
            "index_lookups_per_second": measure(node_lookup, cycle(nodes), seconds),
            "selector_lists_per_second": measure(select, cycle(namespaces), seconds)}


def s5(keys: int) -> dict[str, Any]:
    """S5: ``keys`` distinct keys through add, get, done on client_cache's workqueue with
    1 and with 8 worker threads."""
    from bench.bench_workqueue import run_pool
    from client_cache import workqueue
    return {"scenario": "s5", "keys": keys,
            "workers_1_per_second": run_pool(workqueue.new(), keys, 1),
            "workers_8_per_second": run_pool(workqueue.new(), keys, 8)}


def inform(args: argparse.Namespace) -> None:
    gc.collect()
    baseline = rss_kb()
    counter = Counter()
    stop = threading.Event()
    api = api_client(args.server, args.token, args.ca_file)
    started = time.perf_counter()
    encoding = {"protobuf": True} if args.protobuf else {}
    size = CONTENDERS[args.name](api, args.namespace, args.handlers, counter, stop,
                                 transform=args.transform, sync=args.sync, **encoding)
    counter.wait_for(args.expect * args.handlers)
    seconds = time.perf_counter() - started
    peak = rss_kb("VmHWM")
    gc.collect()
    print(json.dumps({"scenario": "sync", "seconds": seconds, "objects": size(),
                      "rss_kb": rss_kb(), "peak_rss_kb": peak,
                      "baseline_rss_kb": baseline}), flush=True)
    seen = args.expect * args.handlers
    if args.events:
        with counter.lock:
            if counter.count > seen:  # the mark would never be hit: the span would be wrong
                raise SystemExit(f"{args.name}: {counter.count - seen} handler calls more "
                                 "than the sync's before the throughput phase began")
            counter.mark = seen + 1
        print("READY throughput", flush=True)
        seen += args.events * args.handlers
        counter.wait_for(seen)
        with counter.lock:
            elapsed = counter.last - counter.marked
        print(json.dumps({"scenario": "throughput", "events": args.events, "seconds": elapsed,
                          "events_per_second": args.events / elapsed}), flush=True)
    if args.latency_events:
        with counter.lock:
            counter.latencies.clear()
            counter.latency = True
        print("READY latency", flush=True)
        seen += args.latency_events * args.handlers
        counter.wait_for(seen)
        with counter.lock:
            delays = sorted(counter.latencies)
        print(json.dumps({"scenario": "latency", "events": len(delays),
                          "latency_p50_ms": delays[len(delays) // 2] * 1000,
                          "latency_p99_ms": delays[int(len(delays) * 0.99)] * 1000}),
              flush=True)
    stop.set()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("name", choices=sorted([*CONTENDERS, WIRE]))
    parser.add_argument("--mode", choices=("inform", "delivery", "s4", "s5"),
                        default="inform")
    parser.add_argument("--protobuf", action="store_true",
                        help="ask the server for protobuf (client_cache informers, delivery)")
    parser.add_argument("--server")
    parser.add_argument("--namespace")
    parser.add_argument("--expect", type=int, default=0)
    parser.add_argument("--events", type=int, default=0)
    parser.add_argument("--latency-events", type=int, default=0)
    parser.add_argument("--handlers", type=int, default=1)
    parser.add_argument("--sync", choices=SYNC_PATHS, default="list",
                        help="initial-sync path (cc-dict and cc-model; the others LIST)")
    parser.add_argument("--token", default="embedded-token", help="bearer token")
    parser.add_argument("--ca-file", default="", help="the server's CA (https servers)")
    parser.add_argument("--transform", action="store_true",
                        help="drop managedFields before caching (client_cache only)")
    parser.add_argument("--objects", type=int, default=100_000, help="S4: cached pods")
    parser.add_argument("--seconds", type=float, default=1.0, help="S4: time per lookup kind")
    parser.add_argument("--keys", type=int, default=100_000, help="S5: keys")
    args = parser.parse_args()

    def die(hook: Any) -> None:  # a contender whose thread failed must not hang the run
        print(f"{args.name}: {hook.exc_type.__name__}: {hook.exc_value}", file=sys.stderr)
        os._exit(1)

    threading.excepthook = die
    if (args.name == WIRE) != (args.mode == "delivery"):
        parser.error(f"delivery mode runs the {WIRE} contender only, and {WIRE} runs in "
                     "delivery mode only")
    if args.protobuf and args.mode == "inform" and args.name not in PROTOBUF_CAPABLE:
        parser.error(f"--protobuf: {args.name} reads JSON only")
    if args.mode == "delivery":
        if not (args.server and args.namespace) or args.sync == "paged":
            parser.error("delivery mode needs --server, --namespace and a list or "
                         "watch-list --sync")
        print(json.dumps(delivery(api_client(args.server, args.token, args.ca_file),
                                  args.namespace, args.sync, args.protobuf)), flush=True)
    elif args.mode == "s4":
        print(json.dumps(s4(args.name, args.objects, args.seconds)), flush=True)
    elif args.mode == "s5":
        if args.name != "cc-dict":
            parser.error("S5 runs for cc-dict only")
        print(json.dumps(s5(args.keys)), flush=True)
    else:
        if not (args.server and args.namespace):
            parser.error("inform mode needs --server and --namespace")
        if args.transform and args.name not in ("cc-dict", "cc-dict-skip", "cc-model"):
            parser.error(f"{args.name} has no transform")
        if args.sync != "list" and args.name not in SYNC_CAPABLE:
            parser.error(f"{args.name} syncs with a LIST only")
        inform(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())


@contextlib.contextmanager
def api_servers() -> Iterator[list[tuple[str, Callable[[], Any]]]]:
    """``(name, api client factory)`` of each server run: the embedded server in a process
    of its own, and the kube-apiserver of `make envtest` when it is built."""
    from client_cache.testing.apiserver import EmbeddedApiServerProcess
    from client_cache.testing.envtest import ControlPlane, find_binaries

    with contextlib.ExitStack() as stack:
        embedded = stack.enter_context(EmbeddedApiServerProcess(bookmark_interval=60))
        found: list[tuple[str, Callable[[], Any]]] = [("embedded", embedded.api_client)]
        binaries = find_binaries()
        if binaries is not None:
            plane = stack.enter_context(ControlPlane(binaries))
            found.append(("kube-apiserver", plane.api_client))
        else:
            print("real server skipped: run `make envtest` first", file=sys.stderr)
        yield found
