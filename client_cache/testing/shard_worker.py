"""Members of a sharded controller in processes of their own, for tests and benchmarks.

``python -m client_cache.testing.shard_worker --kubeconfig PATH --namespace NS --id ID``
runs a runtime :class:`~client_cache.runtime.Controller` over the ConfigMaps of ``NS``
with ``ControllerConfig(sharding=...)`` and prints one JSON line per thing that happens,
stamped with ``time.monotonic()`` (one clock for every process on the machine, so the
lines of several members compare): ``s`` when a reconcile of key ``k`` starts (``v``: the
object's ``data.value`` as the cache gave it) and ``f`` when it finishes; ``members``
(``n``), ``owned`` (``n``), ``handover`` (``n``) and ``drain`` (``sec``) as the member
reports its metrics; ``exit`` (with ``cpu``, the
process's CPU seconds). ``--work N`` makes each reconcile run ``N`` iterations of a pure
Python loop (a fixed amount of work, counted, never calibrated by a clock: a member
started while the machine is busy does the same work per reconcile as one started on a
quiet machine), ``--sleep-ms`` makes it wait that long (a reconcile waiting on the network: long
enough to be in flight when a key moves), ``--concurrency`` sets the workers. SIGTERM or
SIGINT stops it gracefully (its keys handed over), and so does the end of its standard
input, so a member never outlives the process that started it. With ``--label-selector``
the informer lists only the matching ConfigMaps; ``--mode labels`` runs the label-assigned
mode (a lost Lease then ends the process: ``exit`` carries ``lost``), ``--mode server``
the server-assigned one (the server needs ``ShardedListAndWatch``). With ``--wait-go``
it prints ``waiting`` and starts its controller when a line arrives on its standard
input (:meth:`ShardWorkerProcess.go`), so the members of a benchmark start together; in
hash mode its ConfigMap cache is listed and synced before ``waiting`` (the controller
then reads that cache), so what follows the go is the ring's start and the reconciles,
not a LIST of every object.

:class:`ShardWorkerProcess` starts one and collects its lines.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any

from client_cache.testing.child import LineProcess, add_lease_arguments
from client_cache.testing.child import emit as _emit
from client_cache.testing.leader import Timing

__all__ = ["ShardWorkerProcess", "busy", "main"]


class ShardWorkerProcess(LineProcess):
    """A member in a child process; :attr:`events` fills as it prints."""

    def __init__(self, kubeconfig: str, identity: str, namespace: str, timing: Timing,
                 ring: str = "shards", flags: tuple[str, ...] = ()) -> None:
        self.identity = identity
        super().__init__(
            [sys.executable, "-m", "client_cache.testing.shard_worker",
             "--kubeconfig", kubeconfig, "--id", identity, "--namespace", namespace,
             "--ring", ring, "--lease-duration", str(timing.lease_duration),
             "--renew-deadline", str(timing.renew_deadline),
             "--retry-period", str(timing.retry_period), *flags],
            name=f"shard-worker-reader-{identity}")

    def __repr__(self) -> str:
        return f"<ShardWorkerProcess {self.identity} pid {self.proc.pid}>"

    def go(self) -> None:
        """Send the start line a ``--wait-go`` member waits for."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def rss(self) -> int:
        """The member's resident memory now (bytes, from ``/proc``)."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0


def busy(iterations: int) -> int:
    """Pure-Python work: a loop of integer arithmetic (a reconcile's ``--work``)."""
    total = 0
    for i in range(iterations):
        total = (total * 31 + i) % 1_000_003
    return total


class _Reporter:
    """The sharding metrics provider of the worker: each report becomes a line."""

    def set_members(self, ring: str, count: int) -> None:
        _emit("members", n=count)

    def set_keys_owned(self, ring: str, count: int) -> None:
        _emit("owned", n=count)

    def add_handovers(self, ring: str, count: int) -> None:
        _emit("handover", n=count)

    def observe_drain(self, ring: str, seconds: float) -> None:
        _emit("drain", sec=seconds)


def main(argv: list[str] | None = None) -> int:
    """Run one member (``python -m client_cache.testing.shard_worker``)."""
    from kubernetes import config as kube_config  # noqa: PLC0415 - the child's imports

    from client_cache.api.schema import GroupVersionResource  # noqa: PLC0415
    from client_cache.informers.factory import (  # noqa: PLC0415
        SharedInformerFactoryOptions,
        new_shared_informer_factory_with_options,
    )
    from client_cache.runtime import Action, Context, Controller, ControllerConfig  # noqa: PLC0415
    from client_cache.sharding import (  # noqa: PLC0415
        ShardingConfig,
        set_sharding_metrics_provider,
    )
    from client_cache.util.signals import SignalRelay  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__)
    add_lease_arguments(parser, retry_period=0.5)
    parser.add_argument("--ring", default="shards")
    parser.add_argument("--work", type=int, default=0,
                        help="iterations of the busy loop per reconcile (a fixed amount)")
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--label-selector", default="")
    parser.add_argument("--mode", default="hash", choices=("hash", "labels", "server"))
    parser.add_argument("--wait-go", action="store_true")
    args = parser.parse_args(argv)

    if args.work < 0:
        parser.error("--work must not be negative")
    iterations = args.work
    set_sharding_metrics_provider(_Reporter())
    api = kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=args.kubeconfig)
    selector = args.label_selector

    def tweak(options: Any) -> None:
        options.label_selector = selector

    factory = new_shared_informer_factory_with_options(api, 0, SharedInformerFactoryOptions(
        namespace=args.namespace, tweak_list_options=tweak if selector else None))
    config = ControllerConfig(name=args.ring, events=False, concurrency=args.concurrency,
                              shutdown_timeout=10.0, sharding=ShardingConfig(
                                  namespace=args.namespace, ring=args.ring, identity=args.id,
                                  lease_duration=args.lease_duration,
                                  renew_deadline=args.renew_deadline,
                                  retry_period=args.retry_period, mode=args.mode))
    controller = Controller(factory, GroupVersionResource("", "v1", "configmaps"),
                            kind="ConfigMap", namespaced=True, config=config)

    def reconcile(obj: Any, ctx: Context[None]) -> Action:
        key = ctx.obj_ref.key()
        data = obj.get("data") if isinstance(obj, dict) else None
        _emit("s", k=key, v=(data or {}).get("value", ""))
        busy(iterations)
        if args.sleep_ms:
            time.sleep(args.sleep_ms / 1000)
        _emit("f", k=key)
        return Action.await_change()

    go = threading.Event()
    warm = threading.Event()  # set: the informers started before the go end

    def orphaned() -> None:  # our stdin's only writer is the parent: EOF means it is gone
        if args.wait_go:
            sys.stdin.readline()
            go.set()
        sys.stdin.read()
        go.set()
        controller.shutdown()
        warm.set()

    threading.Thread(target=orphaned, name="shard-worker-parent-watch", daemon=True).start()
    if args.wait_go:  # a start line for benchmarks: every member begins at once
        if args.mode == "hash":  # the cache the controller reads, listed and synced now
            factory.for_resource(GroupVersionResource("", "v1", "configmaps")).informer()
            factory.start(warm)
            factory.wait_for_cache_sync(warm)
        _emit("waiting")
        go.wait()
    with SignalRelay(lambda _: controller.shutdown(), name="shard-worker"):
        summary = controller.run(reconcile)
    warm.set()
    _emit("exit", lost=summary.lost_shard, cpu=time.process_time())
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
