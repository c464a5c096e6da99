"""The controller runtime against the hand-written work-queue controller, side by side.

The embedded API server (its own process) holds ``--objects`` ConfigMaps. Each contender
runs one worker and a no-op reconcile over them, in this process, alternated, medians of
``--repeats``:

* **runtime**: ``Controller(factory, configmaps)`` (``client_cache.runtime``), triggers from
  the informer, a ``reconcile_all_on`` queue (bulk) and a ``reconcile_on`` queue;
* **workqueue**: what ``examples/workqueue_controller.py`` does by hand: informer handlers
  add keys to a rate-limited work queue, a worker gets a key, reads the lister, forgets and
  marks it done.

Measured: the first pass (start to every object reconciled once: LIST, sync and
``--objects`` reconciles); a bulk pass over the warm cache (every object requested at once,
reconciles per second); and the latency from a trigger (an ObjectRef put on the
``reconcile_on`` queue / a key added to the work queue, each for a different object) to
the start of its reconcile, at ``--rate`` triggers per second for ``--seconds``.

Then the cost of ``atomic_relist`` (kube-rs's store swap): an informer's initial sync of
the same objects with the default DeltaFIFO and with the atomic RealFIFO.

Writes ``bench/results/runtime.json`` and ``bench/results/runtime.md``.

    python -m bench.bench_runtime [--objects 10000] [--rate 500] [--seconds 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import queue
import statistics
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from bench.contenders import save_results

NAMESPACE = "bench"


class Probe:
    """Counts reconciles, timestamps their start, wakes a waiter at a target count."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.target = 0
        self.reached = threading.Event()
        self.sent: dict[str, float] = {}
        self.latencies: list[float] = []

    def expect(self, more: int) -> None:
        with self.lock:
            self.target = self.count + more
            self.reached.clear()

    def hit(self, name: str) -> None:
        now = time.monotonic()
        with self.lock:
            self.count += 1
            sent = self.sent.pop(name, None)
            if sent is not None:
                self.latencies.append(now - sent)
            if self.count >= self.target:
                self.reached.set()

    def wait(self, timeout: float = 300) -> None:
        if not self.reached.wait(timeout):
            raise TimeoutError(f"only {self.count} of {self.target} reconciles")


def paced(names: list[str], rate: float, send: Callable[[str], None], probe: Probe) -> None:
    """Send one trigger per name at ``rate`` per second (monotonic deadlines)."""
    start = time.monotonic()
    for i, name in enumerate(names):
        due = start + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        with probe.lock:
            probe.sent[name] = time.monotonic()
        send(name)


def cached_names(factory: Any, count: int) -> list[str]:
    """``count`` distinct names of cached ConfigMaps (the load generator names them)."""
    from client_cache.api.schema import GroupVersionResource

    informer = factory.for_resource(GroupVersionResource("", "v1", "configmaps")).informer()
    keys = sorted(informer.get_indexer().list_keys())[:count]
    return [key.split("/", 1)[1] for key in keys]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_runtime(api: Any, objects: int, rate: float, seconds: float) -> dict[str, float]:
    from client_cache.api.schema import GroupVersionResource
    from client_cache.informers import SharedInformerFactoryOptions
    from client_cache.informers import new_shared_informer_factory_with_options as new_factory
    from client_cache.runtime import Action, Controller, ControllerConfig, ObjectRef

    probe = Probe()
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=NAMESPACE))
    bulk: queue.Queue[Any] = queue.Queue()
    refs: queue.Queue[Any] = queue.Queue()
    controller: Controller[None] = (
        Controller(factory, GroupVersionResource("", "v1", "configmaps"), kind="ConfigMap",
                   namespaced=True, config=ControllerConfig(client_qps=0, concurrency=1))
        .reconcile_all_on(bulk).reconcile_on(refs))

    def reconcile(obj: Any, ctx: Any) -> Action:
        probe.hit(obj["metadata"]["name"])
        return Action.await_change()

    probe.expect(objects)
    started = time.monotonic()
    runner = threading.Thread(target=controller.run, args=(reconcile,), daemon=True,
                              name="bench-runtime")
    runner.start()
    probe.wait()
    first = time.monotonic() - started
    probe.expect(objects)
    started = time.monotonic()
    bulk.put("all")
    probe.wait()
    bulk_rate = objects / (time.monotonic() - started)
    names = cached_names(factory, int(rate * seconds))
    probe.expect(len(names))
    paced(names, rate, lambda n: refs.put(ObjectRef(n, NAMESPACE)), probe)
    probe.wait()
    controller.shutdown()
    runner.join(30)
    return {"first_pass_s": first, "bulk_per_s": bulk_rate,
            "p50_ms": 1000 * percentile(probe.latencies, 0.5),
            "p99_ms": 1000 * percentile(probe.latencies, 0.99)}


def run_workqueue(api: Any, objects: int, rate: float, seconds: float) -> dict[str, float]:
    from client_cache import ResourceEventHandlerFuncs, meta_namespace_key_func
    from client_cache.api.labels import everything
    from client_cache.api.schema import GroupVersionResource
    from client_cache.informers import SharedInformerFactoryOptions
    from client_cache.informers import new_shared_informer_factory_with_options as new_factory
    from client_cache.workqueue import (
        RateLimitingQueueConfig,
        default_controller_rate_limiter,
        new_rate_limiting_queue_with_config,
    )

    probe = Probe()
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=NAMESPACE))
    generic = factory.for_resource(GroupVersionResource("", "v1", "configmaps"))
    lister = generic.lister()
    work: Any = new_rate_limiting_queue_with_config(
        default_controller_rate_limiter(), RateLimitingQueueConfig(name="bench"))

    def enqueue(obj: Any) -> None:
        work.add(meta_namespace_key_func(obj))

    generic.informer().add_event_handler(ResourceEventHandlerFuncs(
        add_func=enqueue, update_func=lambda old, new: enqueue(new)))

    def worker() -> None:
        while True:
            key, shutdown = work.get()
            if shutdown:
                return
            try:
                namespace, name = key.split("/")
                lister.by_namespace(namespace).get(name)
                probe.hit(name)
                work.forget(key)
            finally:
                work.done(key)

    stop = threading.Event()
    probe.expect(objects)
    started = time.monotonic()
    factory.start(stop)
    thread = threading.Thread(target=worker, daemon=True, name="bench-workqueue")
    thread.start()
    probe.wait()
    first = time.monotonic() - started
    probe.expect(objects)
    started = time.monotonic()
    for obj in lister.list(everything()):
        enqueue(obj)
    probe.wait()
    bulk_rate = objects / (time.monotonic() - started)
    names = cached_names(factory, int(rate * seconds))
    probe.expect(len(names))
    paced(names, rate, lambda n: work.add(f"{NAMESPACE}/{n}"), probe)
    probe.wait()
    work.shut_down()
    thread.join(10)
    stop.set()
    factory.shutdown(10)
    return {"first_pass_s": first, "bulk_per_s": bulk_rate,
            "p50_ms": 1000 * percentile(probe.latencies, 0.5),
            "p99_ms": 1000 * percentile(probe.latencies, 0.99)}


def informer_sync(api: Any, atomic: bool) -> float:
    from client_cache.api.schema import GroupVersionResource
    from client_cache.informers import SharedInformerFactoryOptions
    from client_cache.informers import new_shared_informer_factory_with_options as new_factory

    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=NAMESPACE,
                                                               atomic_relist=atomic))
    indexer = factory.for_resource(GroupVersionResource("", "v1", "configmaps")) \
        .informer().get_indexer()
    stop = threading.Event()
    started = time.monotonic()
    factory.start(stop)
    assert indexer.wait_until_ready(timeout=300)
    seconds = time.monotonic() - started
    stop.set()
    factory.shutdown(10)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from client_cache.testing.apiserver import EmbeddedApiServerProcess

    contenders = {"runtime": run_runtime, "workqueue": run_workqueue}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in contenders}
    syncs: dict[str, list[float]] = {"default": [], "atomic_relist": []}
    load_before = os.getloadavg()[0]
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        server.control("load", count=args.objects, namespace=NAMESPACE, kind="configmaps")
        while server.control("state")["resourceVersion"] < args.objects:
            time.sleep(0.2)
        for _ in range(args.repeats):
            for name, contender in contenders.items():
                api = server.api_client()
                runs[name].append(contender(api, args.objects, args.rate, args.seconds))
                api.close()
            for mode, times in syncs.items():
                api = server.api_client()
                times.append(informer_sync(api, mode == "atomic_relist"))
                api.close()
    report: dict[str, Any] = {
        name: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
        for name, rs in runs.items()}
    report["sync_s"] = {mode: statistics.median(values) for mode, values in syncs.items()}
    report["settings"] = vars(args)
    report["load_average_before"] = load_before
    rows = "".join(
        f"| {name} | {r['first_pass_s']:.2f} | {r['bulk_per_s']:,.0f} | "
        f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} |\n"
        for name, r in ((name, report[name]) for name in contenders))
    sync = report["sync_s"]
    text = (
        "# Controller runtime vs a hand-written work-queue controller\n\n"
        f"{args.objects:,} ConfigMaps on the embedded server (own process); one worker, a "
        "no-op reconcile; contenders alternated in one run, medians of "
        f"{args.repeats} (`make bench`, bench/bench_runtime.py); load average "
        f"{load_before:.2f} before the run (2 cores). Latency: "
        f"{int(args.rate * args.seconds):,} triggers at {args.rate:.0f}/s, each for another "
        "object, from the trigger to the start of its reconcile.\n\n"
        "| contender | first pass s (LIST + sync + all reconciled) | bulk reconciles/s | "
        "trigger→reconcile p50 ms | p99 ms |\n|---|---|---|---|---|\n" + rows +
        "\n## atomic_relist\n\n"
        f"Initial sync of one informer on the same {args.objects:,} objects (LIST, then "
        "the cache filled and ready):\n\n| queue | sync s |\n|---|---|\n"
        f"| DeltaFIFO (default) | {sync['default']:.2f} |\n"
        f"| RealFIFO, atomic_relist | {sync['atomic_relist']:.2f} |\n")
    save_results("runtime", report, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
