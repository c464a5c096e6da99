"""Chaos soak: informers, handlers and a workqueue controller under writes and faults.

The embedded API server runs in its own process. A writer thread makes random creates,
updates and deletes on ``--objects`` objects spread over configmaps, secrets and pods; a
fault injector fires a random fault every few dozen successful writes, taking the kinds in
shuffled rounds so that every kind fires about as often: a watch cut mid-stream, a 410
ERROR event, a forced compaction (every older resourceVersion expires), 429 with
Retry-After, 500, 504, a stalled watch (connections open, nothing sent), a garbled line,
every connection dropped, and the server process SIGKILLed and restarted from its state
(its watch history starts over, as a restarted API server's watch cache does).

On the consumer side: a ``SharedInformerFactory`` with the three informers (1 s watch idle
timeout), a recording handler on each (one also asks for a 3 s resync) and a workqueue
controller with four workers fed by all of them.

When the writer has made its mutations, the faults stop and the soak checks, within a
deadline:

- every informer's cache equals the server's objects (keys and resourceVersions);
- every handler saw, per key, a consistent story: an add first, updates only while the
  object exists, a delete (or tombstone) for every object that ended deleted, nothing
  after a delete but a new add; the last state it saw is the server's;
- no handler ran concurrently with itself; the workqueue never gave one key to two workers;
- after ``stop``, no thread of ours is alive and every listener buffer is empty.

It prints mutations, faults by kind, relists, watches, handler lag, divergences and lost
deletions (both must be 0). With a fault every few dozen writes the reflectors spend much
of the run in client-go's backoff (800 ms doubling up to 30 s, reset only after two minutes
without a failure), which the lag figures show; the point is that nothing is lost.

    python -m tests.soak [--mutations 50000] [--objects 2000] [--min-faults 100]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import urllib3
from kubernetes.client import ApiClient, ApiException, CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.store import DeletedFinalStateUnknown
from client_cache.testing.apiserver import WRITTEN_AT_ANNOTATION, EmbeddedApiServerProcess
from client_cache.workqueue import (
    RateLimitingQueueConfig,
    default_controller_rate_limiter,
    new_rate_limiting_queue_with_config,
)

NAMESPACE = "soak"
RESOURCES = ("configmaps", "secrets", "pods")
FAULTS = ("cut", "410", "compact", "429", "500", "504", "stall", "garble", "drop", "restart")
OUR_THREADS = ("reflector-", "informer-", "watch-", "workqueue", "soak-", "controller-")


@dataclass
class SoakConfig:
    mutations: int = 50_000
    objects: int = 2_000
    min_faults: int = 100  # of every kind
    fault_gap: tuple[int, int] = (20, 80)  # successful writes between two faults
    stall_seconds: float = 1.5
    idle_timeout: float = 1.0
    converge_seconds: float = 90.0
    seed: int = 1
    workers: int = 4


@dataclass
class Figures:
    mutations: int = 0
    write_failures: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    lists: int = 0
    watches: int = 0
    handler_events: int = 0
    max_lag_ms: float = 0.0
    p99_lag_ms: float = 0.0
    p50_lag_ms: float = 0.0
    divergences: int = 0
    lost_deletions: int = 0
    story_errors: int = 0
    concurrent_handler_calls: int = 0
    double_processing: int = 0
    keys_processed: int = 0
    leaked_threads: int = 0
    pending_notifications: int = 0
    seconds: float = 0.0
    converge_seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["faults"] = dict(sorted(self.faults.items()))
        out["problems"] = self.problems[:20]
        return out


def body(resource: str, name: str, version: int) -> dict[str, Any]:
    md = {"name": name, "labels": {"soak": "true"},
          "annotations": {WRITTEN_AT_ANNOTATION: f"{time.time():.6f}"}}
    if resource == "configmaps":
        return {"metadata": md, "data": {"v": str(version)}}
    if resource == "secrets":
        return {"metadata": md, "stringData": {"v": str(version)}}
    return {"metadata": md, "spec": {"containers": [
        {"name": "c", "image": f"busybox:{version % 7}"}]}}


class Writer:
    """Random creates, updates and deletes until ``config.mutations`` succeeded."""

    def __init__(self, api: CoreV1Api, config: SoakConfig, figures: Figures) -> None:
        self.api = api
        self.config = config
        self.figures = figures
        self.rng = random.Random(config.seed)
        self.exists: dict[tuple[str, str], bool] = {}
        self.progress = threading.Condition()
        self.done = threading.Event()
        per = max(1, config.objects // len(RESOURCES))
        self.names = [(r, f"{r[:3]}-{i}") for r in RESOURCES for i in range(per)]

    def _call(self, resource: str, verb: str, name: str, version: int) -> None:
        kind = {"configmaps": "config_map", "secrets": "secret", "pods": "pod"}[resource]
        if verb == "create":
            getattr(self.api, f"create_namespaced_{kind}")(
                NAMESPACE, body(resource, name, version), _request_timeout=5)
        elif verb == "update":
            getattr(self.api, f"replace_namespaced_{kind}")(
                name, NAMESPACE, body(resource, name, version), _request_timeout=5)
        else:
            getattr(self.api, f"delete_namespaced_{kind}")(name, NAMESPACE, _request_timeout=5)

    def run(self) -> None:
        version = 0
        while self.figures.mutations < self.config.mutations:
            key = self.rng.choice(self.names)
            resource, name = key
            if not self.exists.get(key):
                verb = "create"
            else:
                verb = "update" if self.rng.random() < 0.6 else "delete"
            version += 1
            try:
                self._call(resource, verb, name, version)
            except ApiException as err:
                self.figures.write_failures += 1
                if err.status == 409 and verb == "create":
                    self.exists[key] = True  # an earlier create went through unseen
                elif err.status == 404 and verb != "create":
                    self.exists[key] = False  # an earlier delete went through unseen
                continue
            except Exception:  # connection refused, reset, timeout: the fault's doing
                self.figures.write_failures += 1
                time.sleep(0.01)
                continue
            self.exists[key] = verb != "delete"
            with self.progress:
                self.figures.mutations += 1
                self.progress.notify_all()
        self.done.set()
        with self.progress:
            self.progress.notify_all()


class Injector:
    """Fires the faults between writes; see the module documentation."""

    def __init__(self, server: EmbeddedApiServerProcess, writer: Writer, config: SoakConfig,
                 figures: Figures, state_path: str) -> None:
        self.server = server
        self.writer = writer
        self.config = config
        self.figures = figures
        self.state_path = state_path
        self.rng = random.Random(config.seed + 1)
        self.round: list[str] = []

    def next_kind(self) -> str:
        if not self.round:
            self.round = list(FAULTS)
            self.rng.shuffle(self.round)
        return self.round.pop()

    def fire(self, kind: str) -> None:
        control = self.server.control
        if kind == "cut":
            control("abort-watches")
        elif kind == "410":
            control("watch-error", code=410)
        elif kind == "compact":
            control("compact")
            control("close-watches")  # re-watching from an expired resourceVersion
        elif kind in ("429", "500", "504"):
            control("fail", count=2, code=int(kind), retryAfter=1 if kind == "429" else 0)
        elif kind == "stall":
            control("stall", on=True)
            time.sleep(self.config.stall_seconds)
            control("stall", on=False)
        elif kind == "garble":
            control("garble")
        elif kind == "drop":
            # the server drops the connection of this very request too
            with contextlib.suppress(OSError, http.client.HTTPException):
                control("drop-connections")
        else:
            self.count_requests()
            self.server.kill_and_restart(self.state_path)
        self.figures.faults[kind] += 1

    def count_requests(self) -> None:
        state = self.server.control("state")["result"]
        self.figures.lists += state["lists"]
        self.figures.watches += state["watches"]

    def run(self) -> None:
        low, high = self.config.fault_gap
        while True:
            target = self.figures.mutations + self.rng.randint(low, high)
            with self.writer.progress:
                self.writer.progress.wait_for(
                    lambda target=target: self.figures.mutations >= target
                    or self.writer.done.is_set())
            enough = min(self.figures.faults[k] for k in FAULTS) >= self.config.min_faults
            if self.writer.done.is_set() and enough:
                return
            self.fire(self.next_kind())


class Recorder:
    """A handler that records, per key, what it was told, and checks it never runs twice
    at once."""

    def __init__(self, resource: str, figures: Figures, enqueue: Any) -> None:
        self.resource = resource
        self.figures = figures
        self.enqueue = enqueue
        self.stories: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.busy = threading.Lock()
        self.lock = threading.Lock()
        self.lags: list[float] = []
        self.calls = 0

    def _record(self, kind: str, obj: Any) -> None:
        if not self.busy.acquire(blocking=False):
            self.figures.concurrent_handler_calls += 1
            self.busy.acquire()
        try:
            if isinstance(obj, DeletedFinalStateUnknown):
                key, rv = obj.key, ""
            else:
                md = obj["metadata"]
                key, rv = f"{md['namespace']}/{md['name']}", md["resourceVersion"]
                stamp = (md.get("annotations") or {}).get(WRITTEN_AT_ANNOTATION)
                with self.lock:
                    story = self.stories.get(key)
                    fresh = not story or story[-1][1] != rv  # not a resync or relist echo
                if stamp and kind != "delete" and fresh:
                    self.lags.append(time.time() - float(stamp))
            with self.lock:
                self.stories[key].append((kind, rv))
                self.calls += 1
            self.enqueue(f"{self.resource}|{key}")
        finally:
            self.busy.release()

    def handler(self) -> ResourceEventHandlerFuncs:
        return ResourceEventHandlerFuncs(
            add_func=lambda obj: self._record("add", obj),
            update_func=lambda old, new: self._record("update", new),
            delete_func=lambda obj: self._record("delete", obj))

    def final(self) -> dict[str, str]:
        """The state the handler believes in: key -> resourceVersion of live objects."""
        with self.lock:
            return {k: s[-1][1] for k, s in self.stories.items() if s[-1][0] != "delete"}

    def story_problems(self) -> list[str]:
        problems = []
        with self.lock:
            for key, story in self.stories.items():
                present = False
                for kind, _ in story:
                    if kind == "add" and present:
                        problems.append(f"{self.resource} {key}: add while present: {story}")
                    elif kind in ("update", "delete") and not present:
                        problems.append(f"{self.resource} {key}: {kind} while absent: {story}")
                    present = kind != "delete"
        return problems


class Controller:
    """Workers that take keys from a rate-limited workqueue; checks no key is handed to two
    workers at once."""

    def __init__(self, figures: Figures, workers: int) -> None:
        self.figures = figures
        self.queue: Any = new_rate_limiting_queue_with_config(
            default_controller_rate_limiter(), RateLimitingQueueConfig(name="soak"))
        self.active: set[str] = set()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.work, name=f"soak-worker-{i}",
                                         daemon=True) for i in range(workers)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def work(self) -> None:
        while True:
            key, shutdown = self.queue.get()
            if shutdown:
                return
            with self.lock:
                if key in self.active:
                    self.figures.double_processing += 1
                self.active.add(key)
            time.sleep(0)  # let another worker race for the same key if the queue allowed it
            with self.lock:
                self.active.discard(key)
                self.figures.keys_processed += 1
            self.queue.forget(key)
            self.queue.done(key)

    def stop(self) -> None:
        self.queue.shut_down()
        for thread in self.threads:
            thread.join(2)


def server_state(api: CoreV1Api, resource: str) -> dict[str, str]:
    """The server's objects (retrying: the last injected failures may still be pending)."""
    kind = {"configmaps": "config_map", "secrets": "secret", "pods": "pod"}[resource]
    for attempt in range(50):
        try:
            listed = getattr(api, f"list_namespaced_{kind}")(NAMESPACE, _request_timeout=10)
        except (ApiException, OSError, http.client.HTTPException, urllib3.exceptions.HTTPError):
            if attempt == 49:
                raise
            time.sleep(0.1)
            continue
        return {f"{NAMESPACE}/{o.metadata.name}": o.metadata.resource_version
                for o in listed.items}
    raise AssertionError("unreachable")


def cache_state(informer: Any) -> dict[str, str]:
    return {f"{o['metadata']['namespace']}/{o['metadata']['name']}":
            o["metadata"]["resourceVersion"] for o in informer.get_store().list()}


def run(config: SoakConfig) -> Figures:
    figures = Figures()
    started = time.monotonic()
    state_dir = tempfile.mkdtemp(prefix="soak-")
    state_path = os.path.join(state_dir, "state.json")
    server = EmbeddedApiServerProcess(bookmark_interval=0.5)
    server.start()
    stop = threading.Event()
    controller = Controller(figures, config.workers)
    factory = None
    try:
        api = CoreV1Api(server.api_client())
        factory = new_shared_informer_factory_with_options(
            ApiClient(server.configuration()), 0, SharedInformerFactoryOptions(
                namespace=NAMESPACE, watch_idle_timeout=config.idle_timeout,
                custom_resync={GroupVersionResource("", "v1", "configmaps"): 3.0}))
        informers = {r: factory.core().v1().resource(r).informer() for r in RESOURCES}
        recorders = {r: Recorder(r, figures, controller.queue.add) for r in RESOURCES}
        for resource, informer in informers.items():
            if resource == "configmaps":
                informer.add_event_handler_with_resync_period(recorders[resource].handler(), 3.0)
            else:
                informer.add_event_handler(recorders[resource].handler())
        factory.start(stop)
        factory.wait_for_cache_sync(stop)
        controller.start()
        writer = Writer(api, config, figures)
        injector = Injector(server, writer, config, figures, state_path)
        threads = [threading.Thread(target=writer.run, name="soak-writer", daemon=True),
                   threading.Thread(target=injector.run, name="soak-faults", daemon=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # faults have ceased; now everything must converge
        converge_start = time.monotonic()
        deadline = converge_start + config.converge_seconds
        while True:
            truth = {r: server_state(api, r) for r in RESOURCES}
            caches = {r: cache_state(informers[r]) for r in RESOURCES}
            believed = {r: recorders[r].final() for r in RESOURCES}
            if all(truth[r] == caches[r] == believed[r] for r in RESOURCES):
                break
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        figures.converge_seconds = time.monotonic() - converge_start
        for r in RESOURCES:
            for key in set(truth[r]) | set(caches[r]) | set(believed[r]):
                want = truth[r].get(key)
                if caches[r].get(key) != want or believed[r].get(key) != want:
                    figures.divergences += 1
                    figures.problems.append(f"{r} {key}: server {want} cache "
                                            f"{caches[r].get(key)} handler "
                                            f"{believed[r].get(key)}")
                if want is None and key in believed[r]:
                    figures.lost_deletions += 1
            story = recorders[r].story_problems()
            figures.story_errors += len(story)
            figures.problems.extend(story)
        injector.count_requests()
        # every listener buffer is empty once the handlers have caught up
        for informer in informers.values():
            for listener in list(informer.processor.listeners):
                figures.pending_notifications += listener.pending()
        lags = sorted(lag for rec in recorders.values() for lag in rec.lags)
        if lags:
            figures.max_lag_ms = lags[-1] * 1000
            figures.p99_lag_ms = lags[int(len(lags) * 0.99)] * 1000
            figures.p50_lag_ms = lags[len(lags) // 2] * 1000
        figures.handler_events = sum(rec.calls for rec in recorders.values())
    finally:
        stop.set()
        if factory is not None:
            factory.shutdown()
        controller.stop()
        server.stop()
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and _ours_alive():
            time.sleep(0.05)
        figures.leaked_threads = len(_ours_alive())
        if figures.leaked_threads:
            figures.problems.append(f"threads alive after stop: {_ours_alive()}")
        for name in os.listdir(state_dir):
            os.unlink(os.path.join(state_dir, name))
        os.rmdir(state_dir)
    figures.seconds = time.monotonic() - started
    return figures


def _ours_alive() -> list[str]:
    return sorted(t.name for t in threading.enumerate()
                  if t is not threading.current_thread() and t.name.startswith(OUR_THREADS))


def report(figures: Figures) -> str:
    f = figures
    faults = ", ".join(f"{k} {v}" for k, v in sorted(f.faults.items()))
    return "\n".join([
        f"chaos soak: {f.mutations:,} mutations ({f.write_failures:,} writes failed under "
        f"faults) in {f.seconds:.0f} s",
        f"faults: {sum(f.faults.values()):,} ({faults})",
        f"server saw {f.lists:,} LIST requests (pages included) and {f.watches:,} WATCH "
        "requests",
        f"handlers: {f.handler_events:,} events; lag from a write to the handler that first sees"
        f" that version: p50 {f.p50_lag_ms:,.0f} ms, p99 {f.p99_lag_ms:,.0f} ms, max "
        f"{f.max_lag_ms:,.0f} ms; workqueue: {f.keys_processed:,} keys processed",
        f"converged {f.converge_seconds:.1f} s after the last fault",
        f"divergences {f.divergences}, lost deletions {f.lost_deletions}, story errors "
        f"{f.story_errors}, concurrent handler calls {f.concurrent_handler_calls}, keys "
        f"given to two workers {f.double_processing}, threads alive after stop "
        f"{f.leaked_threads}, notifications left in buffers {f.pending_notifications}",
        *(f"  problem: {p}" for p in f.problems[:20]),
    ])


def healthy(figures: Figures, config: SoakConfig) -> bool:
    f = figures
    return (f.mutations >= config.mutations and f.divergences == 0 and f.lost_deletions == 0
            and f.story_errors == 0 and f.concurrent_handler_calls == 0
            and f.double_processing == 0 and f.leaked_threads == 0
            and f.pending_notifications == 0
            and all(f.faults[k] >= config.min_faults for k in FAULTS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mutations", type=int, default=50_000)
    parser.add_argument("--objects", type=int, default=2_000)
    parser.add_argument("--min-faults", type=int, default=100, help="of every kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", default="", help="also write the figures here")
    args = parser.parse_args(argv)
    config = SoakConfig(mutations=args.mutations, objects=args.objects,
                        min_faults=args.min_faults, seed=args.seed)
    figures = run(config)
    print(report(figures), flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(figures.as_dict(), fh, indent=2)
    return 0 if healthy(figures, config) else 1


if __name__ == "__main__":
    sys.exit(main())
