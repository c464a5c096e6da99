"""Issue 67: what fails is visible by default. With no logging configured, a raising event
handler (sync and async) and an object that does not fit its class each reach stderr in
one ERROR line naming the object (kind, namespace/name), with a traceback for the
handler, rate-limited (the second failure for the same reason is not printed), and never
the object's contents."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from client_cache.util._logs import FailureEpisodes, Repeat

APP = textwrap.dedent('''
    import asyncio, threading
    from kubernetes.client import CoreV1Api
    from client_cache.aio import AsyncHandler
    from client_cache.controller import ResourceEventHandlerFuncs
    from client_cache.informers import new_shared_informer_factory
    from client_cache.api.schema import GroupVersionResource
    from client_cache.testing.apiserver import EmbeddedApiServer

    with EmbeddedApiServer() as server:
        api = server.api_client()
        core = CoreV1Api(api)
        for name in ("one", "two"):
            core.create_namespaced_config_map("default", {
                "metadata": {"name": name}, "data": {"password": "hunter2"}})
        factory = new_shared_informer_factory(api, 0)
        informer = factory.for_resource(GroupVersionResource("", "v1", "configmaps")).informer()
        def added(obj):
            raise RuntimeError("sync handler broke")
        sync = informer.add_event_handler(ResourceEventHandlerFuncs(add_func=added))
        loop = asyncio.new_event_loop()
        runner = threading.Thread(target=loop.run_forever, daemon=True)
        runner.start()
        async def added_async(obj):
            raise KeyError("async handler broke")
        asynchronous = informer.add_event_handler(AsyncHandler(on_add=added_async, loop=loop))
        stop = threading.Event()
        factory.start(stop)
        while not (sync.has_synced() and asynchronous.has_synced()):
            stop.wait(0.05)
        assert informer.health().handler_errors == 4, informer.health()
        stop.set()
        factory.shutdown(5)
        loop.call_soon_threadsafe(loop.stop)
        runner.join(5)
''')


def run_app(tmp_path: Path, name: str, code: str) -> str:
    """Run ``code`` as a script with no logging configured; its stderr (it must exit 0)."""
    script = tmp_path / name
    script.write_text(code, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def test_handler_failures_reach_stderr_with_no_logging_configured(tmp_path: Path) -> None:
    err = run_app(tmp_path, "app.py", APP)
    assert err.count("RuntimeError: sync handler broke") == 2, err  # the line + traceback
    assert err.count("KeyError: 'async handler broke'") == 2, err
    assert err.count("notification (the add of ConfigMap default/") == 2, err
    assert err.count("Traceback") == 2
    assert "hunter2" not in err


def test_failure_episodes_log_the_first_then_one_line_a_period() -> None:
    now = [0.0]
    episodes = FailureEpisodes(repeat_seconds=60.0, monotonic=lambda: now[0])
    assert episodes.failed("h", "boom").first
    now[0] = 30.0
    assert episodes.failed("h", "boom") == Repeat(first=False, count=1, seconds=30.0)
    now[0] = 61.0
    assert episodes.failed("h", "boom") == Repeat(first=False, due=True, count=2,
                                                  seconds=61.0)
    assert episodes.failed("h", "other").first  # another reason: a new episode
    episodes.ended("h")
    assert episodes.failed("h", "other").first  # a success ended it
    assert episodes.failed("g", "other").first  # keys are apart


ELECTOR = textwrap.dedent('''
    import socket
    from kubernetes.client import ApiClient, Configuration
    from client_cache.leaderelection import (
        LeaderElectionConfig, LeaseLock, ResourceLockConfig, new_leader_elector)

    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    configuration = Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    configuration.retries = 0
    lock = LeaseLock("default", "app", ApiClient(configuration), ResourceLockConfig("me"))
    elector = new_leader_elector(LeaderElectionConfig(lock=lock))
    assert not any(elector.try_acquire_or_renew(timeout=2) for _ in range(3))
''')


def test_lock_failures_reach_stderr_once_per_episode(tmp_path: Path) -> None:
    """The elector's failed reads of its Lease: the first at ERROR with no logging
    configured, the two repeats within a minute not printed."""
    err = run_app(tmp_path, "elector.py", ELECTOR)
    assert err.count("error retrieving resource lock default/app") == 1, err


REFUSED_EVENTS = textwrap.dedent('''
    from client_cache.events import EventBroadcaster, EventsV1Sink
    from client_cache.testing.apiserver import EmbeddedApiServer

    with EmbeddedApiServer() as server:
        server.fail_next(3, 403, method="POST")  # no RBAC rule for events.k8s.io events
        broadcaster = EventBroadcaster(EventsV1Sink(server.api_client()))
        broadcaster.start_recording_to_sink()
        recorder = broadcaster.new_recorder("app")
        for name in ("one", "two", "three"):
            recorder.eventf({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": name, "namespace": "default", "uid": name}}, None, "Normal",
                "Synced", "Reconcile", "synced")
        assert broadcaster.shutdown(10) == []
        assert broadcaster.failed() == 3, broadcaster.failed()
''')


def test_refused_events_reach_stderr_once_per_episode(tmp_path: Path) -> None:
    """Events the server refuses (403: a missing RBAC rule refuses them all): the first
    at ERROR with no logging configured, naming the object, the repeats not printed."""
    err = run_app(tmp_path, "events.py", REFUSED_EVENTS)
    assert err.count("Server rejected event Synced") == 1, err
    assert "ConfigMap default/one" in err and "HTTP 403" in err, err
