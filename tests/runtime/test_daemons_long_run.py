"""Issue 70, the long run: daemons and timers of 50 objects past bookmarks (every 0.2 s),
resyncs (every second) and an API server crash and restart from its dump (the watch
resumes, or lists again). None of these changes an object: no daemon restarts, none
stops, and the timers tick on after the server's return."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.informers import new_shared_informer_factory
from client_cache.runtime import Action, Context, Controller, ControllerConfig, DaemonContext
from client_cache.testing.apiserver import EmbeddedApiServerProcess

pytestmark = pytest.mark.slow

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
OBJECTS = 50


@pytest.mark.timeout(180)
def test_daemons_and_timers_outlive_bookmarks_resyncs_and_a_server_restart(
        tmp_path: Path) -> None:
    cond = threading.Condition()
    started: Counter[str] = Counter()
    stopped: list[tuple[str, str | None]] = []
    ticks: Counter[str] = Counter()

    def daemon(obj: Any, ctx: DaemonContext[Any]) -> None:
        with cond:
            started[ctx.ref.name] += 1
            cond.notify_all()
        ctx.stopping.wait()
        with cond:
            stopped.append((ctx.ref.name, ctx.stop_reason))

    def tick(obj: Any, ctx: DaemonContext[Any]) -> None:
        with cond:
            ticks[ctx.ref.name] += 1
            cond.notify_all()

    def reconcile(obj: Any, ctx: Context[Any]) -> Action:
        return Action.await_change()

    def ticked_everywhere(past: Counter[str], more: int) -> bool:
        return all(ticks[f"cm-{i}"] >= past[f"cm-{i}"] + more for i in range(OBJECTS))

    server = EmbeddedApiServerProcess(bookmark_interval=0.2).start()
    try:
        api = server.api_client()
        core = CoreV1Api(api)
        for i in range(OBJECTS):
            core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
        factory = new_shared_informer_factory(api, 1.0)  # a resync every second
        controller = (Controller(factory, CONFIGMAPS, config=ControllerConfig(
            name="long", events=False, concurrency=2))
            .daemon(daemon).timer(tick, interval=0.5))
        with controller.running(reconcile):
            with cond:
                assert cond.wait_for(lambda: len(started) == OBJECTS, 30), started
                # ten seconds: 50 bookmarks, ten resyncs, about 20 ticks of each object
                assert cond.wait_for(lambda: ticked_everywhere(Counter(), 20), 60), ticks
            server.kill(str(tmp_path / "state.json"))
            time.sleep(2.0)  # the outage: the server is away this long
            server.restart(str(tmp_path / "state.json"))
            # the watch is back once an object created now gets its daemon
            CoreV1Api(server.api_client()).create_namespaced_config_map(
                "default", {"metadata": {"name": "after"}})
            with cond:
                assert cond.wait_for(lambda: started["after"] == 1, 60), started
                past = Counter(ticks)
                assert cond.wait_for(lambda: ticked_everywhere(past, 4), 60), ticks
                assert set(started.values()) == {1} and not stopped, (started, stopped)
        everyone = [f"cm-{i}" for i in range(OBJECTS)] + ["after"]
        assert sorted(stopped) == sorted((name, "shutdown") for name in everyone)
    finally:
        server.stop()
