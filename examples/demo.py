"""``make demo``: the workqueue controller against the embedded API server, with a live view.

It starts the embedded API server in its own process, loads it with pods, runs the
controller from ``workqueue_controller.py`` (shared informer factory -> rate-limited
workqueue -> worker threads) and drives a scripted workload: creates, updates, deletes and
a forced relist (a 410 Expired sent to the watch). A status line shows, as it happens, the
events each handler received, the queue depth, the cache size and the resync ticks (the
informer resyncs every 6 s, the stats handler asks for 2 s), with a progress line while the
initial list syncs, and the informer's health (see ``informer.health()``). It ends, once
the workers have stopped, with a final status line and a summary that agree (and a check
that the cache equals the server) and exits 0. Ctrl-C stops everything within a second or two.

    python examples/demo.py                      # what make demo runs
    python examples/demo.py --kubeconfig PATH    # a real cluster: read-only, no workload
"""

from __future__ import annotations

import sys

if __name__ == "__main__":  # something on the screen before the slow imports (~1 s)
    print("client_cache demo: starting ...", flush=True)

import functools
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from _cluster import connect, parser, stop_on_signals
from kubernetes.client import CoreV1Api
from workqueue_controller import Controller

from client_cache import deletion_handling_meta_namespace_key_func as key_of
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.testing.apiserver import EmbeddedApiServerProcess

NAMESPACE = "demo"


class Stats:
    """A second handler on the same informer: counts what it is told."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self.last_unchanged = 0.0

    def bump(self, kind: str) -> None:
        with self.lock:
            self.counts[kind] += 1

    def handler(self) -> ResourceEventHandlerFuncs:
        def on_update(old: Any, new: Any) -> None:
            if old["metadata"]["resourceVersion"] != new["metadata"]["resourceVersion"]:
                self.bump("update")
                return
            # an update without a change: a resync tick (or a relist) re-delivers every
            # object at once; a pause of 0.5 s starts a new round
            now = time.monotonic()
            with self.lock:
                if now - self.last_unchanged > 0.5:
                    self.counts["resync"] += 1
                self.last_unchanged = now
                self.counts["unchanged"] += 1

        return ResourceEventHandlerFuncs(
            add_func=lambda obj: self.bump("add"), update_func=on_update,
            delete_func=lambda obj: self.bump("delete"))

    def snapshot(self) -> Counter[str]:
        with self.lock:
            return Counter(self.counts)


class View:
    """The live status, two lines of at most 79 characters (it fits an 80-column
    terminal): on a terminal redrawn in place, otherwise printed at each tick."""

    WIDTH = 79

    def __init__(self, controller: Controller, stats: Stats, enqueued: Counter[str]) -> None:
        self.controller = controller
        self.stats = stats
        self.enqueued = enqueued
        self.started = time.monotonic()
        self.tty = sys.stdout.isatty()
        self.phase = "starting"
        self.drawn = False

    def lines(self) -> tuple[str, str]:
        c = self.stats.snapshot()
        informer = self.controller.pods.informer()
        health = informer.health()
        state = "healthy" if health.healthy else "UNHEALTHY"
        first = (f"[{time.monotonic() - self.started:5.1f}s] {self.phase[:26]:<26} "
                 f"cache {len(informer.get_store().list_keys()):>5} queue "
                 f"{self.controller.queue.len():>4} done {self.controller.processed:>5} "
                 f"retry {self.controller.retries:>3}")
        second = (f"  {state}, lists {health.lists}, events {health.watch_events} | "
                  f"ctl {sum(self.enqueued.values())} | stats +{c['add']} ~{c['update']} "
                  f"-{c['delete']} ={c['unchanged']} | resyncs {c['resync']}")
        return first[:self.WIDTH], second[:self.WIDTH]

    def show(self, final: bool = False) -> None:
        first, second = self.lines()
        if not self.tty:
            print(first, second, sep="\n", flush=True)
            return
        # back to the first line drawn last time, then both lines, each erased to its end
        up = "\x1b[1A\r" if self.drawn else "\r"
        print(f"{up}{first}\x1b[K\n{second}\x1b[K", end="\n" if final else "", flush=True)
        self.drawn = not final


def pod(name: str, version: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"app": "demo", "version": version}},
            "spec": {"containers": [{"name": "c", "image": "pause"}]}}


def run_phase(view: View, stop: threading.Event, name: str, work: Any) -> None:
    """Run ``work(i)`` for each step while refreshing the view every 0.2 s."""
    view.phase = name
    last = 0.0
    for step in work:
        if stop.is_set():
            return
        step()
        if time.monotonic() - last > 0.2:
            view.show()
            last = time.monotonic()
    view.show()


def wait_until(view: View, stop: threading.Event, name: str, done: Any,
               timeout: float = 60.0) -> bool:
    view.phase = name
    deadline = time.monotonic() + timeout
    while not stop.is_set() and time.monotonic() < deadline:
        if done():
            view.show()
            return True
        view.show()
        stop.wait(0.2)
    return False


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--pods", type=int, default=2000, help="pods loaded before the start")
    cli.add_argument("--changes", type=int, default=300, help="creates/updates/deletes each")
    cli.add_argument("--seconds", type=float, default=10.0, help="read-only run time")
    args = cli.parse_args()
    stop = stop_on_signals()
    finished = threading.Event()
    server: EmbeddedApiServerProcess | None = None
    try:
        if args.kubeconfig or args.in_cluster:
            with connect(args) as cluster:
                return demo(args, stop, finished, cluster.api_client, None)
        server = EmbeddedApiServerProcess(bookmark_interval=1.0).start()
        print(f"embedded API server (pid {server.pid}) at {server.url}", flush=True)
        server.control("load", count=args.pods, namespace=NAMESPACE, kind="pods")
        return demo(args, stop, finished, server.api_client(), server)
    except KeyboardInterrupt:
        stop.set()
        return 0
    finally:
        if server is not None:
            server.stop()
        if not finished.is_set():
            print("\ninterrupted; everything stopped", flush=True)


def demo(args: Any, stop: threading.Event, finished: threading.Event, api_client: Any,
         server: EmbeddedApiServerProcess | None) -> int:
    core = CoreV1Api(api_client)
    if server is not None:  # the load runs in the server; wait for all of it
        def loaded() -> int:
            listed = core.list_namespaced_pod(NAMESPACE, limit=1)
            return len(listed.items) + (listed.metadata.remaining_item_count or 0)
        while not stop.is_set() and loaded() < args.pods:
            stop.wait(0.1)
    controller = Controller(api_client, workers=4, fail_rate=0.02, resync=6.0, verbose=False)
    stats = Stats()
    # keys made up front: handler threads only bump them while the view sums them
    enqueued: Counter[str] = Counter(add=0, delete=0)
    informer = controller.pods.informer()
    informer.add_event_handler(ResourceEventHandlerFuncs(
        add_func=lambda obj: enqueued.update(["add"]),
        delete_func=lambda obj: enqueued.update(["delete"])))
    informer.add_event_handler_with_resync_period(stats.handler(), 2.0)
    view = View(controller, stats, enqueued)
    runner = threading.Thread(target=controller.run, args=(stop,), name="controller")
    runner.start()
    try:
        total = args.pods if server is not None else None
        view.phase = "initial list"
        def progress_row() -> None:
            # the LIST fills the cache at once; its pods reach the handlers one by one
            delivered = enqueued["add"]
            progress = f"{delivered}/{total}" if total else f"{delivered}"
            print(f"{chr(13) if view.tty else ''}syncing the initial list: {progress} pods "
                  "delivered", end="" if view.tty else "\n", flush=True)

        while not stop.is_set() and not controller.synced.is_set():
            progress_row()
            stop.wait(0.2)
        if stop.is_set():
            return 0
        progress_row()  # the row ends on the count at sync, not on the last tick's
        if view.tty:
            print()
        view.show()
        if server is None:
            view.phase = "watching (read-only)"
            end = time.monotonic() + args.seconds
            while not stop.is_set() and time.monotonic() < end:
                view.show()
                stop.wait(0.5)
        else:
            scripted(args, stop, core, server, view, stats)
        if stop.is_set():
            return 0
        # stop the workers first: the last status line and the summary then read the same
        # final numbers (nothing is processed in between)
        stop.set()
        runner.join()
        view.phase = "done"
        view.show(final=True)
        summary(core, controller, stats, enqueued, server is not None)
        finished.set()
        return 0
    finally:
        stop.set()
        runner.join()


def scripted(args: Any, stop: threading.Event, core: CoreV1Api,
             server: EmbeddedApiServerProcess, view: View, stats: Stats) -> None:
    names = [f"demo-{i:04d}" for i in range(args.changes)]
    phases: list[tuple[str, Callable[[str], Any], list[str]]] = [
        (f"creating {len(names)} pods",
         lambda n: core.create_namespaced_pod(NAMESPACE, pod(n)), names),
        (f"updating {len(names)} pods", lambda n: core.patch_namespaced_pod(
            n, NAMESPACE, {"metadata": {"labels": {"version": "2"}}}), names),
        (f"deleting {len(names) // 2} pods",
         lambda n: core.delete_namespaced_pod(n, NAMESPACE), names[: len(names) // 2]),
    ]
    for title, change, targets in phases:
        # steps made one at a time: a signal ends the run without building the rest
        run_phase(view, stop, title, (functools.partial(change, n) for n in targets))
        if stop.is_set():
            return
    rounds = stats.snapshot()["resync"]
    server.control("watch-error", code=410)
    core.create_namespaced_pod(NAMESPACE, pod("after-relist"))
    wait_until(view, stop, "relist (410 Expired)",
               lambda: stats.snapshot()["resync"] > rounds, timeout=10)
    rounds = stats.snapshot()["resync"]
    wait_until(view, stop, "waiting for a resync tick",
               lambda: stats.snapshot()["resync"] > rounds, timeout=10)
    wait_until(view, stop, "draining the queue",
               lambda: view.controller.queue.len() == 0, timeout=30)


def summary(core: CoreV1Api, controller: Controller, stats: Stats, enqueued: Counter[str],
            check: bool) -> None:
    c = stats.snapshot()
    cache = {key_of(o): o["metadata"]["resourceVersion"]
             for o in controller.pods.informer().get_store().list()}
    print("summary:")
    print(f"  cache: {len(cache)} pods; keys processed {controller.processed}, "
          f"retried {controller.retries}")
    print(f"  controller handler: {dict(enqueued)}")
    health = controller.pods.informer().health()
    print(f"  informer: {'healthy' if health.healthy else 'UNHEALTHY: ' + health.reason}; "
          f"lists {health.lists} (relists {health.relists}),")
    print(f"    watch restarts {health.watch_restarts}, watch events "
          f"{health.watch_events}, handled {health.handled}, handler errors "
          f"{health.handler_errors}")
    print(f"  stats handler: add {c['add']}, update {c['update']}, delete {c['delete']}, "
          f"unchanged {c['unchanged']},")
    print(f"    in {c['resync']} resync/relist rounds")
    if check:
        truth = {f"{p.metadata.namespace}/{p.metadata.name}": p.metadata.resource_version
                 for p in core.list_pod_for_all_namespaces().items}
        verdict = "equals" if truth == cache else "DIFFERS FROM"
        print(f"  the cache {verdict} the server's {len(truth)} pods")


if __name__ == "__main__":
    raise SystemExit(main())
