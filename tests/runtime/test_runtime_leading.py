"""runtime/leading.py and the runtime's events: two replicas of a controller on one Lease
(only the leader reconciles; the other takes over), leadership lost mid-run, and
ctx.recorder posting Events."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api, EventsV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.informers import new_shared_informer_factory
from client_cache.leaderelection import (
    LeaderElectionConfig,
    LeaseLock,
    LockError,
    ResourceLockConfig,
)
from client_cache.runtime import Action, Context, Controller, ControllerConfig, RunSummary
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.testing.proxy import TcpProxy
from client_cache.util.clock import RealClock, Timer
from tests.fixtures import HungServer, eventually

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
FAST = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.1}


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer() as srv:
        yield srv


class BreakableLock(LeaseLock):
    """A Lease lock whose writes fail while ``broken`` is set (renewals fail: the replica
    loses the lease at its renew deadline, deterministically)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.broken = threading.Event()

    def update(self, record: Any, timeout: float | None = None, **kwargs: Any) -> None:
        if self.broken.is_set():
            raise LockError("broken by the test")
        super().update(record, timeout, **kwargs)


class Replica:
    """One replica: its own client, factory and controller, run on a thread."""

    def __init__(self, server: EmbeddedApiServer, identity: str,
                 reconcile_gate: threading.Event | None = None, *,
                 leadership_lost: str = "end", warmup: bool = True,
                 **election: Any) -> None:
        self.reconcile_gate = reconcile_gate
        self.api = server.api_client()
        self.identity = identity
        self.reconciled: list[str] = []
        self.stoppings: list[threading.Event] = []
        self.summary: RunSummary | None = None
        self.lock = BreakableLock("default", "replicas", self.api,
                                  ResourceLockConfig(identity))
        config = ControllerConfig(client_qps=0, name=f"replica-{identity}",
                                  leadership_lost=leadership_lost, warmup=warmup,
                                  leader_election=LeaderElectionConfig(
                                      lock=self.lock, **{**FAST, **election}))
        self.controller: Controller[Any] = Controller(
            new_shared_informer_factory(self.api, 0), CONFIGMAPS, config=config)
        self.thread = threading.Thread(target=self._run, name=f"test-replica-{identity}",
                                       daemon=True)
        self.thread.start()

    def _run(self) -> None:
        def reconcile(obj: Any, ctx: Context[Any]) -> Action:
            self.stoppings.append(ctx.stopping)
            self.reconciled.append(obj["metadata"]["name"])
            if self.reconcile_gate is not None:
                self.reconcile_gate.wait(10)
            return Action.await_change()

        self.summary = self.controller.run(reconcile)

    def stop(self) -> RunSummary:
        self.controller.shutdown()
        self.thread.join(10)
        assert not self.thread.is_alive()
        self.api.close()
        assert self.summary is not None
        return self.summary


def test_only_the_leader_reconciles_and_the_other_takes_over(
        server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    first = Replica(server, "first", release_on_cancel=True)
    eventually(lambda: first.reconciled == ["a"], 10, "the leader did not reconcile")
    second = Replica(server, "second", release_on_cancel=True)
    try:
        core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
        eventually(lambda: first.reconciled == ["a", "b"], 10)
        assert second.reconciled == []  # it does not lead
        eventually(lambda: second.controller.ready() is None, 10)  # but its caches are warm
        (health,) = second.controller.health().values()
        assert health.synced and health.lists == 1
        summary = first.stop()  # releases the lease
        assert not summary.lost_leadership
        eventually(lambda: sorted(second.reconciled) == ["a", "b"], 10,
                   "the second replica did not take over")
    finally:
        second.stop()


def test_a_cold_standby_starts_its_informers_when_it_leads(
        server: EmbeddedApiServer) -> None:
    """``warmup=False`` (controller-runtime's default): the standby lists nothing and is
    ready while it stands by; it starts its informers on taking over and reconciles all."""
    core = CoreV1Api(server.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    first = Replica(server, "first", release_on_cancel=True)
    eventually(lambda: first.reconciled == ["a"], 10, "the leader did not reconcile")
    second = Replica(server, "second", warmup=False, release_on_cancel=True)
    try:
        eventually(lambda: second.controller.ready() is None, 10,
                   "a cold standby is ready while it stands by")
        core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
        eventually(lambda: first.reconciled == ["a", "b"], 10)
        (health,) = second.controller.health().values()
        assert not health.synced and health.lists == 0  # nothing started, nothing listed
        assert second.reconciled == []
        first.stop()  # releases the lease
        eventually(lambda: sorted(second.reconciled) == ["a", "b"], 10,
                   "the cold standby did not take over")
        (health,) = second.controller.health().values()
        assert health.synced and health.lists == 1
        assert second.controller.ready() is None
    finally:
        second.stop()


def test_losing_leadership_stops_reconciling(server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    replica = Replica(server, "only")
    eventually(lambda: replica.reconciled == ["a"], 10)
    server.fail_next(10_000, 500)  # the server stops answering: renewals fail
    try:
        replica.thread.join(10)  # fenced by the renew deadline, the run ends
        assert not replica.thread.is_alive()
        assert replica.summary is not None and replica.summary.lost_leadership
    finally:
        server.clear_faults()
        replica.stop()


def test_a_follower_leads_again_with_its_caches_warm(server: EmbeddedApiServer) -> None:
    """KEP-5366, ``leadership_lost="follow"``: the replica that lost the lease keeps
    running, stops reconciling, and leads again when the other lets go, reconciling what
    changed meanwhile from the caches it kept (no relist)."""
    core = CoreV1Api(server.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    first = Replica(server, "first", leadership_lost="follow")
    eventually(lambda: first.reconciled == ["a"], 10, "the leader did not reconcile")
    second = Replica(server, "second", release_on_cancel=True)
    try:
        (health,) = first.controller.health().values()
        fills = health.lists
        first.lock.broken.set()  # its renewals fail: it loses the lease
        eventually(lambda: second.reconciled == ["a"], 10, "the second did not take over")
        first.lock.broken.clear()
        assert first.thread.is_alive()  # following: its run goes on
        core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
        eventually(lambda: second.reconciled == ["a", "b"], 10)
        assert first.reconciled == ["a"]  # a follower reconciles nothing
        second.stop()  # releases the lease
        eventually(lambda: first.reconciled == ["a", "b"], 10,
                   "the follower did not lead again")
        (health,) = first.controller.health().values()
        assert health.lists == fills  # the same caches: nothing was listed again
    finally:
        if second.thread.is_alive():
            second.stop()
    summary = first.stop()
    assert not summary.lost_leadership  # the run did not end for it


def test_a_reconcile_in_flight_when_the_lease_is_lost_is_told(
        server: EmbeddedApiServer) -> None:
    """Following, the run goes on, but the reconcile running when the lease was lost
    sees its ``ctx.stopping`` set (so it can stop writing as the old leader)."""
    CoreV1Api(server.api_client()).create_namespaced_config_map(
        "default", {"metadata": {"name": "a"}})
    gate = threading.Event()
    replica = Replica(server, "only", reconcile_gate=gate, leadership_lost="follow")
    try:
        eventually(lambda: replica.reconciled == ["a"], 10)
        (stopping,) = replica.stoppings
        assert not stopping.is_set()
        replica.lock.broken.set()
        assert stopping.wait(10)  # set at the renew deadline
        assert replica.thread.is_alive()
    finally:
        gate.set()
        replica.lock.broken.clear()
        replica.stop()


class FrozenTimers(RealClock):
    """The real clock, except that its timers never fire and :meth:`pause` moves its
    monotonic reading forward: a process resumed from a pause whose timer threads have not
    run yet."""

    def __init__(self) -> None:
        self.offset = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.offset

    def pause(self, seconds: float) -> None:
        self.offset += seconds

    def after_func(self, d: float, f: Callable[[], None]) -> Timer:
        return self.new_timer(3600.0)  # stoppable, fires long after the test


def test_no_reconcile_starts_after_a_pause_longer_than_the_renew_deadline(
        server: EmbeddedApiServer) -> None:
    """Issue 59: a replica resumed from a pause that outlasted its renew deadline starts
    no reconcile, even before the fencing timer's thread has run: the worker asks the
    lease (from the clock) before each one, and the run ends as leadership lost."""
    core = CoreV1Api(server.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})
    clock = FrozenTimers()
    in_reconcile = threading.Event()
    replica = Replica(server, "paused", reconcile_gate=in_reconcile, clock=clock)
    try:
        eventually(lambda: len(replica.reconciled) == 1, 10, "the leader did not reconcile")
        clock.pause(FAST["renew_deadline"] + 5)  # frozen during the first reconcile
        in_reconcile.set()
        replica.thread.join(10)
        assert not replica.thread.is_alive()
        assert replica.summary is not None and replica.summary.lost_leadership
        assert len(replica.reconciled) == 1  # the second object was not reconciled
    finally:
        in_reconcile.set()
        replica.stop()


@pytest.mark.parametrize("events_api", ["events.k8s.io/v1", "v1"])
def test_reconcilers_get_a_recorder(server: EmbeddedApiServer, events_api: str) -> None:
    """``ctx.recorder`` writes events.k8s.io/v1 Events by default (the action defaults to
    ``Reconcile``, ``related`` is sent) and core/v1 Events with ``events_api="v1"``, one
    call shape for both."""
    api = server.api_client()
    core = CoreV1Api(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "b"}})

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        if obj["metadata"]["name"] == "a":
            related = core.read_namespaced_config_map("b", "default")
            ctx.recorder.event(obj, "Normal", "Synced", "synced", kind="ConfigMap",
                               api_version="v1", related=related)
        return Action.await_change()

    controller: Controller[Any] = Controller(
        new_shared_informer_factory(api, 0), CONFIGMAPS,
        config=ControllerConfig(client_qps=0, name="recording", events_api=events_api))
    done = threading.Event()
    runner = threading.Thread(target=lambda: (controller.run(reconcile), done.set()),
                              name="test-recording", daemon=True)
    runner.start()
    newer = EventsV1Api(api)
    listed: Callable[[], list[Any]] = (
        (lambda: newer.list_namespaced_event("default").items) if events_api != "v1"
        else (lambda: core.list_namespaced_event("default").items))
    try:
        eventually(lambda: len(listed()) == 1, 10)
    finally:
        controller.shutdown()
        assert done.wait(10)
    (event,) = listed()
    if events_api == "v1":
        assert (event.reason, event.source.component, event.involved_object.name) == \
            ("Synced", "recording", "a")
    else:
        assert (event.reason, event.reporting_controller, event.regarding.name,
                event.action, event.related.name, event.note) == \
            ("Synced", "recording", "a", "Reconcile", "b", "synced")
    api.close()


def _stopped_within_a_second(controller: Controller[Any], runner: threading.Thread,
                             name: str) -> float:
    """Shut ``controller`` down; how long run() took to return. Every thread of the
    controller (its election among them) is gone by then."""
    stopped = time.monotonic()
    controller.shutdown()
    runner.join(5)
    took = time.monotonic() - stopped
    assert not runner.is_alive()
    alive = [t.name for t in threading.enumerate() if t.name.startswith(f"controller-{name}")]
    assert alive == [], alive
    return took


@pytest.mark.parametrize("warmup", [True, False])
def test_a_leader_elected_controller_stops_within_a_second_on_a_hung_server(
        warmup: bool) -> None:
    """Issue 67: no Lease ever held, the server accepts and never answers: run() returned
    5 s after shutdown() and the election thread lived 9-11 s (the lock's 10 s request
    timeout). The stop now abandons the request in flight; a cold standby (no informer
    started) stops as promptly."""
    with HungServer() as hung:
        api = hung.api_client()
        lock = LeaseLock("default", "hung", api, ResourceLockConfig("only"))
        config = ControllerConfig(client_qps=0, events=False, name="hung-elected",
                                  warmup=warmup, leader_election=LeaderElectionConfig(
                                      lock=lock, release_on_cancel=True, **FAST))
        controller: Controller[Any] = Controller(
            new_shared_informer_factory(api, 0), CONFIGMAPS, config=config)
        runner = threading.Thread(target=controller.run,
                                  args=(lambda obj, ctx: Action.await_change(),),
                                  name="test-hung-elected", daemon=True)
        runner.start()
        assert hung.connected.wait(5)
        assert _stopped_within_a_second(controller, runner, "hung-elected") < 1.0
        lock.close()
        api.close()


def test_a_leader_stops_within_a_second_when_its_server_hangs(
        server: EmbeddedApiServer) -> None:
    """Issue 67, the Lease held: the server goes silent (a black hole: nothing answers,
    nothing closes); the stop abandons the renewal in flight and the release is best
    effort within the budget."""
    with TcpProxy("127.0.0.1", server.port) as proxy:
        api = server.api_client()
        api.configuration.host = f"http://{proxy.url_host}"
        lock = LeaseLock("default", "silent", api, ResourceLockConfig("leader"))
        config = ControllerConfig(client_qps=0, events=False, name="silent-leader",
                                  leader_election=LeaderElectionConfig(
                                      lock=lock, release_on_cancel=True,
                                      lease_duration=15.0, renew_deadline=10.0,
                                      retry_period=0.2))
        leading = threading.Event()
        controller: Controller[Any] = Controller(
            new_shared_informer_factory(api, 0), CONFIGMAPS, config=config)

        def reconcile(obj: Any, ctx: Context[Any]) -> Action:
            leading.set()  # only the leader reconciles
            return Action.await_change()
        CoreV1Api(server.api_client()).create_namespaced_config_map(
            "default", {"metadata": {"name": "a"}})
        controller_run = threading.Thread(target=controller.run, args=(reconcile,),
                                          name="test-silent-leader", daemon=True)
        controller_run.start()
        assert leading.wait(10), "never led"
        proxy.blackhole()
        assert proxy.swallowed.wait(5)  # a renewal (every 0.2 s) is in flight, unanswered
        assert _stopped_within_a_second(controller, controller_run, "silent-leader") < 1.0
        lock.close()
        api.close()
