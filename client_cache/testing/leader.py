"""Leader-election candidates in processes of their own, for tests and benchmarks.

``python -m client_cache.testing.leader --kubeconfig PATH --id ID ...`` runs one elector
on a Lease and prints one JSON line per thing that happens, stamped with
``time.monotonic()`` (one clock for every process on the machine, so timelines of several
candidates compare): ``wrote`` (a successful create or update of the Lease), ``leading``
(``on_started_leading`` ran), ``stopped`` (its stop event was set: it no longer acts),
``leader`` (the observed leader changed), ``exit``; with ``--sample``, ``believe`` each
time :meth:`~client_cache.leaderelection.LeaderElector.holds_lease`, sampled every 10 ms,
changes (``v`` true or false; a false one carries ``last``, the last sample that was
true: a frozen process takes no samples). With ``--rejoin`` a candidate that lost the
lease runs for it again instead of exiting. SIGTERM or SIGINT stops it
gracefully (with ``--release``, releasing the Lease), and so does the end of its standard
input: :class:`CandidateProcess` holds the only writer, so a candidate never outlives the
process that started it, however that one dies.

:class:`CandidateProcess` starts one and collects its lines.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from client_cache.testing.child import LineProcess, add_lease_arguments
from client_cache.testing.child import emit as _emit

__all__ = ["CandidateProcess", "Timing", "main"]


@dataclass(frozen=True)
class Timing:
    """An elector's durations (seconds)."""

    lease_duration: float = 2.0
    renew_deadline: float = 1.5
    retry_period: float = 0.25


class CandidateProcess(LineProcess):
    """A candidate in a child process; :attr:`events` fills as it prints. ``program`` runs
    another candidate taking the same flags (client-go's, for the Go/Python handover),
    whose lines are stamped when they arrive if they carry no time; ``flags`` are added
    to its command line (``--sample``, ``--rejoin``)."""

    def __init__(self, kubeconfig: str, identity: str, lease: str, namespace: str,
                 timing: Timing, release: bool = False,
                 program: list[str] | None = None, flags: tuple[str, ...] = ()) -> None:
        self.identity = identity
        go_style = program is not None
        seconds = (lambda v: f"{v}s") if go_style else str
        super().__init__(
            [*(program or [sys.executable, "-m", "client_cache.testing.leader"]),
             "--kubeconfig", kubeconfig, "--id", identity, "--lease", lease,
             "--namespace", namespace,
             "--lease-duration", seconds(timing.lease_duration),
             "--renew-deadline", seconds(timing.renew_deadline),
             "--retry-period", seconds(timing.retry_period),
             *(["--release"] if release else []), *flags],
            name=f"candidate-reader-{identity}")

    def first(self, kind: str, after: float = 0.0, timeout: float = 30.0,
              ) -> dict[str, Any] | None:
        """The first ``kind`` event stamped after ``after``, waiting up to ``timeout``."""
        def find() -> dict[str, Any] | None:
            return next((e for e in self.events if e["e"] == kind and e["t"] > after), None)
        with self._cond:
            self._cond.wait_for(lambda: find() is not None or any(
                e["e"] == "eof" for e in self.events), timeout)
            return find()

    def last(self, kind: str, before: float = float("inf")) -> dict[str, Any] | None:
        """The last event of ``kind`` at or before ``before`` (monotonic seconds), or None."""
        with self._cond:
            return next((e for e in reversed(self.events)
                         if e["e"] == kind and e["t"] <= before), None)

    def leading(self) -> bool:
        """Leading now: a ``leading`` event not followed by ``stopped``."""
        with self._cond:
            kinds = [e["e"] for e in self.events if e["e"] in ("leading", "stopped")]
        return bool(kinds) and kinds[-1] == "leading"


def main(argv: list[str] | None = None) -> int:
    """Run one candidate (``python -m client_cache.testing.leader``): elect, print each
    event as a JSON line, exit on SIGTERM or when the parent goes away."""
    from kubernetes import config as kube_config  # noqa: PLC0415 - the child's imports

    from client_cache.leaderelection import (  # noqa: PLC0415
        LeaderCallbacks,
        LeaderElectionConfig,
        LeaderElectionRecord,
        LeaseLock,
        ResourceLockConfig,
        new_leader_elector,
    )
    from client_cache.util.signals import SignalRelay  # noqa: PLC0415
    from client_cache.util.stop import on_stop  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__)
    add_lease_arguments(parser, retry_period=0.25)
    parser.add_argument("--lease", default="candidates")
    parser.add_argument("--release", action="store_true")
    parser.add_argument("--sample", action="store_true")
    parser.add_argument("--rejoin", action="store_true")
    args = parser.parse_args(argv)

    class Recording(LeaseLock):
        def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, bytes]:
            found = super().get(timeout)
            record = found[0]
            _emit("read", holder=record.holder_identity,
                  renew=record.renew_time.isoformat() if record.renew_time else "")
            return found

        def create(self, record: LeaderElectionRecord, timeout: float | None = None, *,
                   annotations: Mapping[str, str] | None = None) -> None:
            _emit("writing", holder=record.holder_identity)
            super().create(record, timeout, annotations=annotations)
            _emit("wrote", holder=record.holder_identity)

        def update(self, record: LeaderElectionRecord, timeout: float | None = None, *,
                   annotations: Mapping[str, str] | None = None) -> None:
            _emit("writing", holder=record.holder_identity)
            super().update(record, timeout, annotations=annotations)
            _emit("wrote", holder=record.holder_identity)

    def lead(stop: threading.Event) -> None:
        _emit("leading")
        # stamped by the thread that sets the stop event, as it does (the elector's
        # fence): the moment the candidate stops acting, not when a waiter wakes to it
        stamped = on_stop(stop, lambda: _emit("stopped"))
        stop.wait()
        stamped.cancel()

    api = kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=args.kubeconfig)
    lock = Recording(args.namespace, args.lease, api, ResourceLockConfig(args.id))
    elector = new_leader_elector(LeaderElectionConfig(
        lock=lock, callbacks=LeaderCallbacks(
            on_started_leading=lead, on_stopped_leading=lambda: None,
            on_new_leader=lambda leader: _emit("leader", leader=leader)),
        lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
        retry_period=args.retry_period, release_on_cancel=args.release, name=args.lease))
    stop = threading.Event()
    relay = SignalRelay(lambda _: stop.set(), name="candidate").start()

    def orphaned() -> None:  # our stdin's only writer is the parent: EOF means it is gone
        sys.stdin.read()
        stop.set()

    threading.Thread(target=orphaned, name="candidate-parent-watch", daemon=True).start()
    finished = threading.Event()

    def elect() -> None:
        try:
            elector.run(stop)
            while args.rejoin and not stop.is_set():
                elector.run(stop)
        finally:
            finished.set()

    def sample() -> None:
        believed, last = False, 0.0
        while not stop.wait(0.01):  # the sampling period, not a synchronisation
            now, holds = time.monotonic(), elector.holds_lease()
            if holds and not believed:
                _emit("believe", v=True)
            elif believed and not holds:
                _emit("believe", v=False, last=last)
            believed = holds
            if holds:
                last = now

    if args.sample:
        threading.Thread(target=sample, name="candidate-sampler", daemon=True).start()
    # a SIGTERM is acted on by the relay's thread, whichever thread took it: nothing
    # waits for the main thread to run a handler while the lease is renewed on
    try:
        runner = threading.Thread(target=elect, daemon=True, name="candidate-elector")
        runner.start()
        finished.wait()
    finally:
        relay.close()
    runner.join()
    _emit("exit")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
