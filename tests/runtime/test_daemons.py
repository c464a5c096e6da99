"""Issue 70: per-object daemons (kopf ``@kopf.daemon``) and timers (``@kopf.timer``) on
the embedded server: their lifetime follows the object's, a raising daemon restarts with
backoff, the slots are bounded, the stop is prompt, ``async def`` twins, and a timer
skips while its object is reconciled."""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.informers import SharedInformerFactory, new_shared_informer_factory
from client_cache.leaderelection import LeaderElectionConfig, ResourceLockConfig
from client_cache.runtime import (
    Action,
    Context,
    Controller,
    ControllerConfig,
    DaemonContext,
    NoopControllerMetricsProvider,
    reset_controller_metrics_provider_for_tests,
    set_controller_metrics_provider,
)
from client_cache.sharding import ShardingConfig
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.runtime.test_runtime_leading import FAST, BreakableLock

NS = "default"
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


class Seen:
    """What the daemons did, under one condition the test waits on."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.started: Counter[str] = Counter()
        self.ended: dict[str, list[str | None]] = {}
        self.running: set[str] = set()
        self.threads: set[str] = set()
        self.values: list[str] = []

    def start(self, ctx: DaemonContext[Any]) -> None:
        with self.cond:
            self.started[ctx.ref.name] += 1
            self.running.add(ctx.ref.name)
            self.threads.add(threading.current_thread().name)
            self.cond.notify_all()

    def end(self, ctx: DaemonContext[Any]) -> None:
        with self.cond:
            self.running.discard(ctx.ref.name)
            self.ended.setdefault(ctx.ref.name, []).append(ctx.stop_reason)
            self.cond.notify_all()

    def wait(self, predicate: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(predicate, timeout), f"{what}: {vars(self)}"


class Gauges(NoopControllerMetricsProvider):
    """Records the daemon gauges and counters."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}
        self.cond = threading.Condition()

    def _metric(self, name: str) -> Any:
        provider = self

        class Metric:
            def set(self, value: float) -> None:
                with provider.cond:
                    provider.values[name] = value
                    provider.cond.notify_all()

            def inc(self, amount: float = 1.0) -> None:
                with provider.cond:
                    provider.values[name] = provider.values.get(name, 0) + amount
                    provider.cond.notify_all()
        return Metric()

    def new_daemons_running_metric(self, name: str) -> Any:
        return self._metric("running")

    def new_daemons_waiting_metric(self, name: str) -> Any:
        return self._metric("waiting")

    def new_daemon_failures_metric(self, name: str) -> Any:
        return self._metric("failures")

    def new_timer_ticks_metric(self, name: str, result: str) -> Any:
        return self._metric(f"ticks-{result}")

    def wait(self, predicate: Callable[[dict[str, float]], bool], what: str) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(self.values), 10), \
                f"{what}: {self.values}"


@pytest.fixture
def gauges() -> Iterator[Gauges]:
    provider = Gauges()
    set_controller_metrics_provider(provider)
    yield provider
    reset_controller_metrics_provider_for_tests()


def _cm(core: CoreV1Api, name: str, **metadata: Any) -> None:
    core.create_namespaced_config_map(NS, {"metadata": {"name": name, **metadata},
                                           "data": {"v": "0"}})


def _reconcile(obj: Any, ctx: Context[Any]) -> Action:
    return Action.await_change()


def _threads(prefix: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(prefix)]


def test_a_daemon_lives_as_long_as_its_object(core: CoreV1Api,
                                              factory: SharedInformerFactory) -> None:
    """One daemon per object, on a named thread, started once the workers start; it
    reads the object's latest state; deleting one object (or marking another for
    deletion: its finalizer waits) stops that one's daemon alone, with the reason; the
    run's end stops the rest and leaves no daemon thread."""
    seen = Seen()

    def watch(obj: Any, ctx: DaemonContext[Any]) -> None:
        seen.start(ctx)
        while not ctx.wait(5):
            pass
        latest = ctx.latest()
        with seen.cond:
            if latest is not None:
                seen.values.append(f"{ctx.ref.name}={latest['data']['v']}")
        seen.end(ctx)

    for name in ("a", "b"):
        _cm(core, name)
    _cm(core, "c", finalizers=["test/keep"])
    controller = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="lives", events=False)).daemon(watch)
    with controller.running(_reconcile):
        seen.wait(lambda: set(seen.running) == {"a", "b", "c"}, "every object's daemon")
        assert all(name.startswith("controller-lives-daemon-") for name in seen.threads)
        core.delete_namespaced_config_map("a", NS)
        seen.wait(lambda: "a" in seen.ended, "a's daemon did not stop on delete")
        assert seen.ended["a"] == ["deleted"] and seen.running == {"b", "c"}
        core.delete_namespaced_config_map("c", NS)  # marked: the finalizer holds it
        seen.wait(lambda: "c" in seen.ended, "c's daemon did not stop on its mark")
        assert seen.values == ["c=0"]  # it was still there, being deleted
        core.patch_namespaced_config_map("b", NS, {"data": {"v": "1"}})
        _cm(core, "d")  # added later: a daemon of its own
        seen.wait(lambda: "d" in seen.running, "a later object got no daemon")
        assert seen.started == {"a": 1, "b": 1, "c": 1, "d": 1}  # an update starts none
        core.patch_namespaced_config_map("c", NS, {"metadata": {"finalizers": None}})
    assert seen.ended["b"] == ["shutdown"] and seen.ended["d"] == ["shutdown"]
    assert "b=1" in seen.values  # latest(): the state after the update
    assert not _threads("controller-lives-daemon")


def test_a_raising_daemon_restarts_with_backoff_and_a_returning_one_does_not(
        core: CoreV1Api, factory: SharedInformerFactory, gauges: Gauges,
        caplog: pytest.LogCaptureFixture) -> None:
    """Each failure is logged at ERROR with its traceback and counted; the attempts are
    spaced by the doubling backoff; the attempt that returns ends the daemon for good."""
    attempts: list[tuple[int, float]] = []
    done = threading.Event()

    def flaky(obj: Any, ctx: DaemonContext[Any]) -> None:
        attempts.append((ctx.attempt, time.monotonic()))
        if ctx.ref.name == "a" and ctx.attempt < 3:
            raise RuntimeError(f"attempt {ctx.attempt} broke")
        if ctx.ref.name == "a":
            done.set()

    _cm(core, "a")
    controller = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="flaky", events=False)).daemon(flaky, backoff=0.05, max_backoff=0.1)
    with caplog.at_level(logging.ERROR), controller.running(_reconcile):
        assert done.wait(10)
        gauges.wait(lambda v: v.get("running") == 0, "the returned daemon still counted")
        core.patch_namespaced_config_map("a", NS, {"data": {"v": "1"}})
        _cm(core, "marker")  # the supervisor settles a, then marker, in order
        gauges.wait(lambda v: v.get("running") == 0 and len(attempts) == 5,
                    "the marker's daemon did not run")
    assert [n for n, _ in attempts[:4]] == [0, 1, 2, 3]  # not started again for a
    gaps = [later - earlier for (_, earlier), (_, later) in itertools.pairwise(attempts[:4])]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1 and gaps[2] >= 0.1  # 0.05, 0.1, capped
    assert gauges.values["failures"] == 3
    failures = [r for r in caplog.records if "daemon flaky of" in r.getMessage()]
    assert len(failures) == 3 and all(r.exc_info for r in failures)


def test_daemons_wait_in_line_for_a_slot(core: CoreV1Api, factory: SharedInformerFactory,
                                         gauges: Gauges) -> None:
    """``max_daemons=2`` with four objects: two run, two wait (the gauges say so); a
    deletion frees a slot for the next in line."""
    seen = Seen()

    def hold(obj: Any, ctx: DaemonContext[Any]) -> None:
        seen.start(ctx)
        ctx.stopping.wait()
        seen.end(ctx)

    for name in "abcd":
        _cm(core, name)
    controller = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="slots", events=False, max_daemons=2)).daemon(hold)
    with controller.running(_reconcile):
        gauges.wait(lambda v: v.get("running") == 2 and v.get("waiting") == 2,
                    "two running, two waiting")
        with seen.cond:
            first = sorted(seen.running)
        assert len(first) == 2
        core.delete_namespaced_config_map(first[0], NS)
        seen.wait(lambda: len(seen.started) == 3 and len(seen.running) == 2,
                  "the next in line did not start")
        gauges.wait(lambda v: v.get("running") == 2 and v.get("waiting") == 1, "gauges")
    gauges.wait(lambda v: v.get("running") == 0 and v.get("waiting") == 0, "after stop")


def test_the_stop_is_prompt_and_names_a_stubborn_daemon(
        core: CoreV1Api, factory: SharedInformerFactory,
        caplog: pytest.LogCaptureFixture) -> None:
    """A daemon ignoring its stop does not hold the run: after its second of grace it is
    named at WARNING and the run ends; a cooperative one is gone by then."""
    release = threading.Event()
    seen = Seen()

    def cooperative(obj: Any, ctx: DaemonContext[Any]) -> None:
        seen.start(ctx)
        ctx.stopping.wait()
        seen.end(ctx)

    def stubborn(obj: Any, ctx: DaemonContext[Any]) -> None:
        seen.start(ctx)
        release.wait(30)

    _cm(core, "a")
    controller = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="stubborn", events=False)).daemon(cooperative).daemon(stubborn)
    try:
        with caplog.at_level(logging.WARNING), controller.running(_reconcile):
            seen.wait(lambda: seen.started["a"] == 2, "both daemons")
            began = time.monotonic()
        took = time.monotonic() - began
        assert took < 3.0, took
        assert seen.ended == {"a": ["shutdown"]}
        (warning,) = [r for r in caplog.records if "still running" in r.getMessage()]
        assert "stubborn of ConfigMap.v1 default/a" in warning.getMessage()
    finally:
        release.set()


def test_an_async_daemon_sleeps_until_stopped_and_a_stubborn_one_is_cancelled(
        core: CoreV1Api, factory: SharedInformerFactory) -> None:
    """``async def`` daemons run on the controller's loop: ``await ctx.sleep`` wakes at
    the object's deletion; one that ignores the stop is cancelled at the end of its
    grace."""
    seen = Seen()
    cancelled = threading.Event()

    async def polite(obj: Any, ctx: DaemonContext[Any]) -> None:
        seen.start(ctx)
        while not await ctx.sleep(5):
            pass
        seen.end(ctx)

    async def deaf(obj: Any, ctx: DaemonContext[Any]) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    _cm(core, "a")
    _cm(core, "b")
    controller = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="async", events=False)).daemon(polite).daemon(deaf, name="deaf")
    with controller.running(_reconcile):
        seen.wait(lambda: seen.running == {"a", "b"}, "both async daemons")
        assert not _threads("controller-async-daemon-")  # no thread held
        core.delete_namespaced_config_map("a", NS)
        seen.wait(lambda: seen.ended.get("a") == ["deleted"], "a's sleep did not wake")
        began = time.monotonic()
    assert cancelled.wait(5)
    assert time.monotonic() - began < 3.0
    assert seen.ended["b"] == ["shutdown"]


def test_a_timer_ticks_skips_while_its_object_is_reconciled_and_stops_on_delete(
        core: CoreV1Api, factory: SharedInformerFactory, gauges: Gauges) -> None:
    """Ticks come every ``interval`` after the previous one (in order, never closer);
    while a reconcile of the object runs, ticks are skipped (counted) and none runs;
    after the deletion none comes; the timer threads end with the run."""
    ticks: list[tuple[str, int, float]] = []
    cond = threading.Condition()
    holding = threading.Event()
    release = threading.Event()

    def tick(obj: Any, ctx: DaemonContext[Any]) -> None:
        with cond:
            ticks.append((ctx.ref.name, ctx.attempt, time.monotonic()))
            cond.notify_all()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        if obj["data"]["v"] == "hold":
            holding.set()
            release.wait(10)
        return Action.await_change()

    def wait_ticks(n: int) -> None:
        with cond:
            assert cond.wait_for(lambda: len(ticks) >= n, 10), ticks

    _cm(core, "a")
    controller = Controller(factory, CONFIGMAPS, config=ControllerConfig(
        name="ticking", events=False)).timer(tick, interval=0.05, initial_delay=0.1)
    with controller.running(reconcile):
        wait_ticks(3)
        with cond:
            first = list(ticks[:3])
        assert [(name, n) for name, n, _ in first] == [("a", 0), ("a", 1), ("a", 2)]
        assert all(b[2] - a[2] >= 0.05 for a, b in itertools.pairwise(first))
        core.patch_namespaced_config_map("a", NS, {"data": {"v": "hold"}})
        assert holding.wait(10)
        with cond:
            before = len(ticks)
        gauges.wait(lambda v: v.get("ticks-skipped", 0) >= 2, "no tick was skipped")
        with cond:
            assert len(ticks) <= before + 1  # one may have begun before the reconcile
            during = len(ticks)
        release.set()
        wait_ticks(during + 1)  # ticking again once the reconcile ended
        core.delete_namespaced_config_map("a", NS)
        with cond:
            a_ticks = sum(t[0] == "a" for t in ticks)
        _cm(core, "marker")  # its ticks come; a's do not any more
        with cond:
            assert cond.wait_for(lambda: sum(t[0] == "marker" for t in ticks) >= 3, 10)
            # at most one tick of a was under way when the deletion reached the cache
            assert sum(t[0] == "a" for t in ticks) <= a_ticks + 1, ticks
    assert not _threads("controller-ticking-timer-")


class Overlaps:
    """Where each key's daemon runs now, by member; an overlap is a test failure."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.where: dict[str, str] = {}
        self.overlaps: list[tuple[str, str, str]] = []
        self.stops: Counter[str] = Counter()

    def __call__(self, obj: Any, ctx: DaemonContext[Any]) -> None:
        key = ctx.ref.name
        with self.cond:
            other = self.where.get(key)
            if other is not None:
                self.overlaps.append((key, other, ctx.shard))
            self.where[key] = ctx.shard
            self.cond.notify_all()
        ctx.stopping.wait()
        with self.cond:
            if self.where.get(key) == ctx.shard:
                del self.where[key]
            self.stops[str(ctx.stop_reason)] += 1
            self.cond.notify_all()

    def wait(self, predicate: Callable[[dict[str, str]], bool], what: str) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: predicate(dict(self.where)), 20), \
                f"{what}: {self.where}"


@pytest.mark.parametrize("mode", ["hash", "labels", "server"])
def test_a_sharded_daemon_moves_with_its_key_and_never_runs_twice(mode: str) -> None:
    """Members of a ring: every key's daemon runs on one member; when a second member
    joins, the keys it takes have their daemons stopped (``shard moved``: in label mode
    the sharder's drain) before they start there; when it leaves, they come back. Never
    two at once."""
    gates = {"ShardedListAndWatch": True} if mode == "server" else {}
    with EmbeddedApiServer(feature_gates=gates) as server:
        _sharded_daemons(server, mode)


def _sharded_daemons(server: EmbeddedApiServer, mode: str) -> None:
    core = CoreV1Api(server.api_client())
    for i in range(16):
        _cm(core, f"cm-{i}")
    overlaps = Overlaps()

    def member(identity: str) -> Controller[Any]:
        return Controller(
            new_shared_informer_factory(server.api_client(), 0), CONFIGMAPS,
            config=ControllerConfig(name="sharded", events=False, sharding=ShardingConfig(
                NS, "daemons", identity, mode=mode, lease_duration=2.0,
                renew_deadline=1.5, retry_period=0.5))).daemon(overlaps)

    a, b = member("a"), member("b")
    with a.running(_reconcile):
        overlaps.wait(lambda w: len(w) == 16 and set(w.values()) == {"a"}, "a runs all")
        with b.running(_reconcile):
            overlaps.wait(lambda w: len(w) == 16 and set(w.values()) == {"a", "b"},
                          "b took its share")
            assert overlaps.stops["shard moved"] > 0
        overlaps.wait(lambda w: len(w) == 16 and set(w.values()) == {"a"},
                      "the keys came back to a")
    assert not overlaps.overlaps


def test_a_follower_stops_its_daemons_and_starts_them_when_it_leads_again(
        server: EmbeddedApiServer, core: CoreV1Api) -> None:
    """``leadership_lost="follow"``: the term's end stops the daemons (``lost lease``);
    leading again starts them again, on the same warm caches."""
    seen = Seen()

    def watch(obj: Any, ctx: DaemonContext[Any]) -> None:
        seen.start(ctx)
        ctx.stopping.wait()
        seen.end(ctx)

    _cm(core, "a")
    api = server.api_client()
    lock = BreakableLock(NS, "daemons", api, ResourceLockConfig("only"))
    controller = Controller(new_shared_informer_factory(api, 0), CONFIGMAPS,
                            config=ControllerConfig(
                                name="follower", events=False, leadership_lost="follow",
                                leader_election=LeaderElectionConfig(lock=lock, **FAST)),
                            ).daemon(watch)
    with controller.running(_reconcile):
        seen.wait(lambda: seen.started["a"] == 1, "the leader's daemon")
        lock.broken.set()
        seen.wait(lambda: seen.ended.get("a") == ["lost lease"], "the term's end")
        lock.broken.clear()
        seen.wait(lambda: seen.started["a"] == 2 and "a" in seen.running,
                  "leading again")
    assert seen.ended["a"] == ["lost lease", "shutdown"]
