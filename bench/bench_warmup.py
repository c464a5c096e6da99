"""Warm and cold standbys: how long after it wins the lease a standby replica starts its
first reconcile, with ``--objects`` ConfigMaps, on the embedded server and on the real
kube-apiserver (when `make envtest` has built it).

Two replicas of one controller (each its own ``ApiClient``, factory and ``Controller``
with leader election on one Lease), in this process. Each round: the leader ``A`` runs
and has reconciled every object; the standby ``B`` runs with ``warmup=True`` (its
informers started and synced before it leads, the default) or ``warmup=False`` (started
once it leads, controller-runtime's default) and is ready; ``A`` is stopped, releasing
the lease. Measured on the monotonic clock: from ``B``'s ``on_started_leading`` to the
start of its first reconcile, and the process CPU seconds over that interval; modes
alternated, ``--rounds`` each, medians reported.

Writes ``bench/results/warmup.json`` and ``.md``.

    python -m bench.bench_warmup [--objects 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubernetes.client import CoreV1Api

from bench.contenders import api_servers, save_results
from client_cache.api.schema import GroupVersionResource
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    LeaseLock,
    ResourceLockConfig,
)
from client_cache.runtime import Action, Context, Controller, ControllerConfig

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
NAMESPACE = "warmup-bench"
TIMING = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.2}


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


class Replica:
    """One replica on a thread: counts its reconciles, stamps its leading and its first
    reconcile."""

    def __init__(self, api: Any, identity: str, lease: str, warmup: bool) -> None:
        self.api = api
        self.leading_at: float | None = None
        self.cpu_at_leading = 0.0
        self.first_at: float | None = None
        self.cpu_at_first = 0.0
        self.reconciled = 0
        self.count_lock = threading.Lock()
        self.first = threading.Event()

        def started(stop: threading.Event) -> None:
            self.leading_at, self.cpu_at_leading = time.monotonic(), cpu_seconds()

        callbacks = LeaderCallbacks(started, lambda: None)
        lock = LeaseLock(NAMESPACE, lease, api, ResourceLockConfig(identity))
        config = ControllerConfig(name=f"warmup-{identity}", events=False, warmup=warmup,
                                  leader_election=LeaderElectionConfig(
                                      lock=lock, callbacks=callbacks,
                                      release_on_cancel=True, **TIMING))
        self.controller: Controller[Any] = Controller(
            new_shared_informer_factory_with_options(
                api, 0, SharedInformerFactoryOptions(namespace=NAMESPACE)), CONFIGMAPS,
            config=config)
        self.thread = threading.Thread(target=self.controller.run, args=(self.reconcile,),
                                       name=f"bench-replica-{identity}", daemon=True)
        self.thread.start()

    def reconcile(self, obj: Any, ctx: Context[Any]) -> Action:
        if self.first_at is None:
            self.first_at, self.cpu_at_first = time.monotonic(), cpu_seconds()
            self.first.set()
        with self.count_lock:
            self.reconciled += 1
        return Action.await_change()

    def stop(self) -> None:
        self.controller.shutdown()
        self.thread.join(30)
        if self.thread.is_alive():
            raise RuntimeError("a replica did not stop")


def wait_until(test: Callable[[], bool], timeout: float, what: str) -> None:
    """The harness's own wait between rounds (not part of what is measured)."""
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


def one_round(api_client: Callable[[], Any], objects: int, lease: str,
              warmup: bool) -> dict[str, float]:
    leader = Replica(api_client(), "a", lease, True)
    standby: Replica | None = None
    try:
        wait_until(lambda: leader.reconciled >= objects, 300, "the leader did not finish")
        standby = Replica(api_client(), "b", lease, warmup)
        wait_until(lambda: standby is not None and standby.controller.ready() is None, 300,
                   "the standby is not ready")
        leader.stop()
        if not standby.first.wait(300):
            raise TimeoutError("the standby did not take over")
        assert standby.leading_at is not None and standby.first_at is not None
        return {"leading_to_first_s": standby.first_at - standby.leading_at,
                "cpu_s": standby.cpu_at_first - standby.cpu_at_leading}
    finally:
        for replica in (leader, standby):
            if replica is not None:
                if replica.thread.is_alive():
                    replica.stop()
                replica.api.close()


def populate(api: Any, objects: int) -> None:
    core = CoreV1Api(api)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    data = {"payload": "x" * 512}

    def create(i: int) -> None:
        core.create_namespaced_config_map(NAMESPACE, {"metadata": {"name": f"cm-{i:05d}"},
                                                      "data": data})

    with ThreadPoolExecutor(8, thread_name_prefix="bench-populate") as pool:
        list(pool.map(create, range(objects)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    machine = f"{os.cpu_count()} cores, Python {platform.python_version()}"
    report: dict[str, Any] = {"machine": machine, "objects": args.objects,
                              "rounds": args.rounds, "timing": TIMING, "servers": {}}
    rows = []
    leases = itertools.count()
    with api_servers() as found:
        for name, api_client in found:
            api = api_client()
            populate(api, args.objects)
            api.close()
            runs: dict[str, list[dict[str, float]]] = {"warm": [], "cold": []}
            for _ in range(args.rounds):
                for mode, values in runs.items():
                    values.append(one_round(api_client, args.objects,
                                            f"warmup-{next(leases)}", mode == "warm"))
            report["servers"][name] = runs
            for mode, values in runs.items():
                waits = [v["leading_to_first_s"] for v in values]
                cpu = statistics.median(v["cpu_s"] for v in values)
                rows.append(f"| {name} | {mode} | {statistics.median(waits) * 1000:,.1f} | "
                            f"{min(waits) * 1000:,.1f} | {max(waits) * 1000:,.1f} | "
                            f"{cpu:.2f} |")
    text = "\n".join([
        "# Warm and cold standbys: takeover to first reconcile", "",
        f"{args.objects:,} ConfigMaps (512 B of data each); two replicas of one controller "
        "on one Lease, in one process; the leader is stopped (releasing the lease) once "
        "it has reconciled everything and the standby is ready. Time from the standby's "
        "`on_started_leading` to the start of its first reconcile, and the process's CPU "
        "over it; warm (`ControllerConfig(warmup=True)`, the default) and cold "
        f"(`warmup=False`) alternated, {args.rounds} rounds each (`make bench`, "
        f"bench/bench_warmup.py). Machine: {machine}.", "",
        "| server | standby | median ms | min ms | max ms | CPU s (median) |",
        "|---|---|---|---|---|---|", *rows, ""])
    save_results("warmup", report, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
