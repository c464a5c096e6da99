"""The Reflector against the embedded API server, through the real kubernetes client.

An initial paged list (or watch-list stream) of 10k objects, 10k mixed changes, then every
injected fault in turn. After each, the store must equal the server's objects (keys and
resourceVersions) and the number of relists and WATCHes must follow the rule for that
fault. The module runs twice: on the watch-list path (client-go v0.36's default) and on the
LIST path (``WatchListClient=false``); a relist is a LIST on one and a watch with
``sendInitialEvents`` on the other.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from client_cache import meta_namespace_key_func, new_store
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import Watch
from client_cache.errors import ApiStatusError, is_not_found
from client_cache.listwatch import new_list_watch_from_client
from client_cache.reflector import Reflector, ReflectorOptions
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.testing.apiserver.store import ResourceType
from client_cache.util.clock import REAL_CLOCK
from client_cache.util.wait import new_exponential_backoff_manager
from tests.conftest import alive_threads
from tests.fixtures import eventually

OBJECTS = 10_000
CHANGES = 10_000

pytestmark = pytest.mark.threads_outlive_test


class ObservedStore:
    """A store whose every change wakes waiters (tests wait on it, not on sleeps)."""

    def __init__(self) -> None:
        self.inner = new_store(meta_namespace_key_func)
        self.changed = threading.Condition()
        self.rv_updates = 0

    def _touch(self) -> None:
        with self.changed:
            self.changed.notify_all()

    def add(self, obj: Any) -> None:
        self.inner.add(obj)
        self._touch()

    def update(self, obj: Any) -> None:
        self.inner.update(obj)
        self._touch()

    def delete(self, obj: Any) -> None:
        self.inner.delete(obj)
        self._touch()

    def replace(self, items: Any, rv: str) -> None:
        self.inner.replace(items, rv)
        self._touch()

    def resync(self) -> None:
        pass

    def update_resource_version(self, rv: str) -> None:
        self.rv_updates += 1
        self._touch()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class CountingListerWatcher:
    """Counts relists (a first-page LIST or a watch-list watch) and watches of any kind."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.relists = 0
        self.list_calls = 0
        self.watches = 0

    def list(self, options: ListOptions) -> Any:
        if not options.continue_:
            self.relists += 1
            self.list_calls += 1
        return self.inner.list(options)

    def watch(self, options: ListOptions) -> Watch:
        self.watches += 1
        if options.send_initial_events:
            self.relists += 1
        return self.inner.watch(options)


@pytest.fixture(scope="module", params=["watch-list", "list"])
def env(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    threads_before = alive_threads()
    server = EmbeddedApiServer(bookmark_interval=0.2)
    server.start()
    pods = server.store.lookup("", "v1", "pods")
    assert pods is not None
    for i in range(OBJECTS):
        server.store.create(pods, f"ns-{i % 20}", {
            "metadata": {"name": f"pod-{i:05d}", "labels": {"app": f"a{i % 7}"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    store = ObservedStore()
    source = CountingListerWatcher(new_list_watch_from_client(
        server.api_client(), GroupVersionResource("", "v1", "pods")))
    reflector = Reflector(source, None, store, ReflectorOptions(name="it-pods",
                                                               idle_timeout=1.5))
    reflector.use_watch_list = request.param == "watch-list"
    # The upstream backoff (0.8 s doubling to 30 s, reset after 2 min) escalates across the
    # consecutive relisting faults below; its timing is tested on the fake clock elsewhere.
    reflector.backoff_manager = new_exponential_backoff_manager(0.05, 0.5, 120, 2.0, 1.0,
                                                                REAL_CLOCK)
    stop = threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,), name="it-reflector",
                              daemon=True)
    started = time.monotonic()
    thread.start()
    state = {"server": server, "store": store, "source": source, "reflector": reflector,
             "pods": pods, "rnd": random.Random(11), "started": started,
             "path": request.param}
    try:
        yield state
    finally:
        stop.set()
        thread.join(1.0)
        assert not thread.is_alive(), "reflector did not stop within 1 s"
        server.stop()
        deadline = time.monotonic() + 1.0
        for leftover in alive_threads() - threads_before:
            leftover.join(max(0.0, deadline - time.monotonic()))
        assert not {t.name for t in alive_threads() - threads_before}


def server_state(server: EmbeddedApiServer, pods: ResourceType) -> dict[str, str]:
    objs, _ = server.store.snapshot(pods, None)
    return {meta_namespace_key_func(o): o["metadata"]["resourceVersion"] for o in objs}


def store_state(store: ObservedStore) -> dict[str, str]:
    return {meta_namespace_key_func(o): o["metadata"]["resourceVersion"]
            for o in store.inner.list()}


def wait_converged(env: dict[str, Any], timeout: float = 15.0) -> None:
    """Wait until the reflector has reached the server's current revision (every event
    and bookmark wakes the store's condition), then compare the whole content once."""
    store: ObservedStore = env["store"]
    reflector: Reflector = env["reflector"]
    target = env["server"].store.resource_version

    def caught_up() -> bool:
        rv = reflector.last_sync_resource_version()
        return rv.isdigit() and int(rv) >= target

    with store.changed:
        ok = store.changed.wait_for(caught_up, timeout)
    assert ok, f"the reflector did not reach revision {target}"
    assert store_state(store) == server_state(env["server"], env["pods"])


def churn(env: dict[str, Any], count: int) -> None:
    server: EmbeddedApiServer = env["server"]
    pods = env["pods"]
    rnd: random.Random = env["rnd"]
    for _ in range(count):
        objs, _ = server.store.snapshot(pods, None)
        roll = rnd.random()
        if roll < 0.3 or not objs:
            server.store.create(pods, f"ns-{rnd.randrange(20)}",
                                {"metadata": {"generateName": "churn-"}})
        elif roll < 0.7:
            victim = rnd.choice(objs)
            victim["metadata"].setdefault("labels", {})["touched"] = str(rnd.random())
            server.store.update(pods, victim["metadata"]["namespace"],
                                victim["metadata"]["name"], victim)
        else:
            victim = rnd.choice(objs)
            server.store.delete(pods, victim["metadata"]["namespace"], victim["metadata"]["name"])


def counts(env: dict[str, Any]) -> tuple[int, int]:
    """(relists, watches) so far."""
    source: CountingListerWatcher = env["source"]
    return source.relists, source.watches


def wait_for_watch(env: dict[str, Any]) -> None:
    server: EmbeddedApiServer = env["server"]
    eventually(lambda: server.open_watch_count() > 0, 10, "no watch was established")


def test_01_initial_paged_list(env: dict[str, Any]) -> None:
    wait_converged(env, timeout=60)
    elapsed = time.monotonic() - env["started"]
    assert counts(env) == (1, 1)
    # the watch-list path fills the store from the stream, with no LIST at all
    assert env["source"].list_calls == (0 if env["path"] == "watch-list" else 1)
    assert len(env["store"].inner.list_keys()) == OBJECTS
    print(f"\ninitial list+sync of {OBJECTS} pods: {elapsed:.2f}s")


def test_02_mixed_changes(env: dict[str, Any]) -> None:
    before = counts(env)
    start = time.monotonic()
    server: EmbeddedApiServer = env["server"]
    pods = env["pods"]
    rnd: random.Random = env["rnd"]
    names = [f"pod-{i:05d}" for i in range(OBJECTS)]
    for i in range(CHANGES):
        name = names[rnd.randrange(OBJECTS)]
        ns = f"ns-{int(name[4:]) % 20}"
        try:
            if i % 10 == 9:
                server.store.delete(pods, ns, name)
            else:
                current = server.store.get(pods, ns, name)
                current["metadata"].setdefault("labels", {})["gen"] = str(i)
                server.store.update(pods, ns, name, current)
        except ApiStatusError as err:
            assert is_not_found(err)
            server.store.create(pods, ns, {"metadata": {"name": name}})
    wait_converged(env, timeout=60)
    elapsed = time.monotonic() - start
    assert counts(env) == before  # a healthy watch: no relist, no re-watch
    print(f"\n{CHANGES} changes applied through the watch in {elapsed:.2f}s "
          f"({CHANGES / elapsed:,.0f}/s end to end)")


FaultCase = tuple[str, Callable[[EmbeddedApiServer], None], int, bool]

FAULTS: list[FaultCase] = [
    # name, injection, expected extra relists, whether the watch is re-established
    ("clean close", lambda s: s.close_watches(), 0, True),
    ("mid-stream cut", lambda s: s.abort_watches(), 0, True),
    ("410 error event", lambda s: s.send_watch_error(410), 1, True),
    ("compaction", lambda s: (s.compact(), s.close_watches()), 0, True),
    ("429 on re-watch", lambda s: (s.fail_next(1, 429, retry_after=1, watch_only=True),
                                   s.close_watches()), 0, True),
    ("500 on re-watch", lambda s: (s.fail_next(1, 500, watch_only=True), s.close_watches()),
     1, True),
    ("504 on re-watch", lambda s: (s.fail_next(1, 504, watch_only=True), s.close_watches()),
     1, True),
    ("stalled watch", lambda s: s.stall_watches(), 0, True),
    ("garbled line", lambda s: s.send_garbled_line(), 1, True),
    ("drop all connections", lambda s: s.drop_all_connections(), 0, True),
]


@pytest.mark.parametrize("case", FAULTS, ids=[f[0] for f in FAULTS])
def test_03_fault(env: dict[str, Any], case: FaultCase) -> None:
    name, inject, extra_lists, _ = case
    server: EmbeddedApiServer = env["server"]
    wait_for_watch(env)
    # Wait for an event on the open watch, so that cutting it is not a "very short watch"
    # (which would relist by design). Bookmarks only come after a change, as from the real
    # watch cache, so make one.
    store: ObservedStore = env["store"]
    with store.changed:
        seen = store.rv_updates
    churn(env, 1)
    with store.changed:
        assert store.changed.wait_for(lambda: store.rv_updates > seen, 10)
    lists, watches = counts(env)
    inject(server)
    churn(env, 50)
    if name == "stalled watch":
        # the stalled connection swallows everything; the reflector's 1.5 s idle timeout
        # abandons it and re-watches from its last resourceVersion
        eventually(lambda: counts(env)[1] != watches, 10, "the stalled watch was kept")
        server.stall_watches(False)
    wait_converged(env)
    new_lists, new_watches = counts(env)
    assert new_lists - lists == extra_lists, name
    assert new_watches > watches, name


@pytest.mark.parametrize("state", ["listing", "stalled"])
def test_04_run_stops_within_a_second(env: dict[str, Any], state: str) -> None:
    """A second reflector on the same server is stopped mid-list and mid-stall."""
    server: EmbeddedApiServer = env["server"]
    source = new_list_watch_from_client(server.api_client(),
                                        GroupVersionResource("", "v1", "pods"))
    store = ObservedStore()
    reflector = Reflector(source, None, store, ReflectorOptions(name=f"stop-{state}"))
    stop = threading.Event()
    if state == "listing":
        server.latency = 0.6  # the LIST request takes a while
    requests_before = server.requests
    thread = threading.Thread(target=reflector.run, args=(stop,), name=f"stop-{state}",
                              daemon=True)
    thread.start()
    try:
        if state == "stalled":
            with store.changed:
                assert store.changed.wait_for(lambda: len(store.inner.list_keys()) > 0, 30)
            eventually(lambda: server.open_watch_count() >= 1)
            server.stall_watches()
        else:
            eventually(lambda: server.requests > requests_before)  # the LIST is in flight
            assert not store.inner.list_keys()  # still listing
        start = time.monotonic()
        stop.set()
        thread.join(1.0)
        assert not thread.is_alive(), f"run did not return within 1 s while {state}"
        assert time.monotonic() - start < 1.0
    finally:
        server.latency = 0
        server.stall_watches(False)
        stop.set()
