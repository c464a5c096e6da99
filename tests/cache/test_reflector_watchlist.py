"""reflector_watchlist_test.go: TestWatchList, case by case."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

from client_cache import meta_namespace_key_func, new_store
from client_cache.api.lists import ListOptions
from client_cache.api.watch import Event, EventType, FakeWatcher, new_fake_with_chan_size
from client_cache.errors import ApiStatusError, new_resource_expired, new_too_many_requests
from client_cache.reflector import DataInconsistencyError, Reflector, ReflectorOptions
from client_cache.util.chan import Chan
from client_cache.util.clock import RealClock
from tests.fixtures import eventually
from tests.fixtures import pod as make_pod


def pod(name: str, rv: str, **extra: Any) -> dict[str, Any]:
    return make_pod(name, "ns", rv=rv, uid=name, **extra)


def end_bookmark(rv: str, value: str = "true") -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"resourceVersion": rv, "annotations": {
        "k8s.io/initial-events-end": value}}}


class FakeListWatcher:
    """Upstream's ``fakeListWatcher``: records every request's options, hands out scripted
    watchers, optionally fails the first requests."""

    def __init__(self) -> None:
        self.options: list[ListOptions] = []
        self.list_calls = 0
        self.watch_calls = 0
        self.watch_errors: list[BaseException] = []
        self.watchers: list[Callable[[FakeWatcher], None]] = []
        self.list_response: dict[str, Any] = {"metadata": {"resourceVersion": "1"},
                                              "items": [pod("p1", "1")]}

    def list(self, options: ListOptions) -> Any:
        self.options.append(options)
        self.list_calls += 1
        return self.list_response

    def watch(self, options: ListOptions) -> FakeWatcher:
        self.options.append(options)
        self.watch_calls += 1
        if self.watch_errors:
            raise self.watch_errors.pop(0)
        w = new_fake_with_chan_size(20)
        script = self.watchers.pop(0) if self.watchers else (lambda w: None)
        script(w)
        return w


def reflector(source: FakeListWatcher, use_watch_list: bool = True) -> tuple[Reflector, Any]:
    store = new_store(meta_namespace_key_func)
    r = Reflector(source, None, store, ReflectorOptions(name="wl-test"))
    r.use_watch_list = use_watch_list
    return r, store


def is_watch_list(options: ListOptions) -> bool:
    return (options.send_initial_events is True and options.allow_watch_bookmarks
            and options.resource_version_match == "NotOlderThan"
            and options.timeout_seconds is not None)


def names(store: Any) -> list[str]:
    return sorted(o["metadata"]["name"] for o in store.list())


def run_until(r: Reflector, stop: threading.Event) -> BaseException | None:
    try:
        r.list_and_watch(stop)
    except BaseException as err:
        return err
    finally:
        stop.set()
    return None


def stop_after(stop: threading.Event, script: Callable[[FakeWatcher], None],
               until: Callable[[], bool] | None = None) -> Callable[[FakeWatcher], None]:
    """Run ``script`` on the watch, then set ``stop``: once ``until()`` holds when given
    (what the test waits for), else after 50 ms (for tests that check that nothing more
    happens)."""
    def run(w: FakeWatcher) -> None:
        script(w)
        if until is None:
            threading.Timer(0.05, stop.set).start()
            return

        def wait_then_stop() -> None:
            try:
                eventually(until, 10, "the reflector did not get there")
            finally:
                stop.set()

        threading.Thread(target=wait_then_stop, name="test-stop-after", daemon=True).start()
    return run


def test_no_bookmark_no_sync() -> None:
    """(1) Added p1 then stop: one watch-list request, the store stays empty."""
    source = FakeListWatcher()
    stop = threading.Event()
    source.watchers.append(stop_after(stop, lambda w: w.add(pod("p1", "1"))))
    r, store = reflector(source)
    assert run_until(r, stop) is None
    assert source.watch_calls == 1 and source.list_calls == 0
    assert is_watch_list(source.options[0]) and source.options[0].resource_version == ""
    assert names(store) == []


def test_disabled_uses_list_then_watch() -> None:
    """(2) use_watch_list off: LIST {RV 0, limit 500} then a plain watch from RV 1."""
    source = FakeListWatcher()
    stop = threading.Event()
    source.watchers.append(stop_after(stop, lambda w: None))
    r, store = reflector(source, use_watch_list=False)
    run_until(r, stop)
    assert (source.options[0].resource_version, source.options[0].limit) == ("0", 500)
    assert (source.options[1].resource_version, source.options[1].allow_watch_bookmarks,
            source.options[1].send_initial_events) == ("1", True, None)
    assert names(store) == ["p1"]


def test_error_falls_back_to_list() -> None:
    """(3)/(4) a failing watch-list request falls back to LIST + WATCH."""
    for error in (RuntimeError("dummy error"),
                  ApiStatusError(422, "Invalid", "sendInitialEvents is forbidden")):
        source = FakeListWatcher()
        stop = threading.Event()
        source.watch_errors.append(error)
        holder: list[Any] = []
        source.watchers.append(stop_after(stop, lambda w: w.add(pod("p2", "2")),
                                          until=lambda h=holder: names(h[0]) == ["p1", "p2"]))
        r, store = reflector(source)
        holder.append(store)
        run_until(r, stop)
        assert is_watch_list(source.options[0])
        assert (source.options[1].resource_version, source.options[1].limit) == ("0", 500)
        assert source.options[2].resource_version == "1"
        assert (source.watch_calls, source.list_calls) == (2, 1)
        assert names(store) == ["p1", "p2"]


def test_bookmark_syncs_and_modifications_apply() -> None:
    """(5)/(6) events up to the initial-events-end bookmark land in the store at once."""
    source = FakeListWatcher()
    stop = threading.Event()

    def script(w: FakeWatcher) -> None:
        w.add(pod("p1", "1"))
        w.add(pod("p2", "2"))
        w.modify(pod("p1", "3", spec={"activeDeadlineSeconds": 12}))
        w.add(pod("p3", "4"))
        w.delete(pod("p3", "5"))
        w.action(EventType.BOOKMARK, end_bookmark("5"))

    source.watchers.append(stop_after(stop, script))
    r, store = reflector(source)
    assert run_until(r, stop) is None
    assert names(store) == ["p1", "p2"] and source.watch_calls == 1
    assert store.get_by_key("ns/p1")[0]["spec"] == {"activeDeadlineSeconds": 12}
    assert r.last_sync_resource_version() == "5"


def test_429_retries_watch_list() -> None:
    """(7) two 429s, then success: three identical watch-list requests."""
    source = FakeListWatcher()
    stop = threading.Event()
    source.watch_errors = [new_too_many_requests("busy", 1), new_too_many_requests("busy", 1)]

    def script(w: FakeWatcher) -> None:
        w.add(pod("p1", "1"))
        w.action(EventType.BOOKMARK, end_bookmark("1"))

    source.watchers.append(stop_after(stop, script))
    r, store = reflector(source)
    r.backoff_manager = ZeroBackoff()  # type: ignore[assignment]
    run_until(r, stop)
    assert source.watch_calls == 3 and all(is_watch_list(o) for o in source.options)
    assert names(store) == ["p1"]


class ZeroBackoff:
    def backoff(self) -> Any:
        return RealClock().new_timer(0)


def test_closed_before_bookmark_asks_again() -> None:
    """(8) a watch closed before the bookmark makes a new watch-list request."""
    source = FakeListWatcher()
    stop = threading.Event()

    def first(w: FakeWatcher) -> None:
        w.add(pod("p1", "1"))
        w.stop()

    def second(w: FakeWatcher) -> None:
        w.add(pod("p1", "1"))
        w.action(EventType.BOOKMARK, end_bookmark("1"))

    source.watchers += [first, stop_after(stop, second)]
    r, store = reflector(source)
    run_until(r, stop)
    assert source.watch_calls == 2 and all(is_watch_list(o) for o in source.options)
    assert names(store) == ["p1"]


def test_same_watch_continues_then_regular_rewatch() -> None:
    """(9) after the bookmark the same watch goes on; once it closes, a regular watch from
    the last resourceVersion follows."""
    source = FakeListWatcher()
    stop = threading.Event()

    def first(w: FakeWatcher) -> None:
        w.add(pod("p1", "1"))
        w.add(pod("p2", "2"))
        w.action(EventType.BOOKMARK, end_bookmark("2"))
        w.add(pod("p3", "3"))
        w.stop()

    source.watchers += [first, stop_after(stop, lambda w: w.add(pod("p4", "4")))]
    r, store = reflector(source)
    run_until(r, stop)
    assert is_watch_list(source.options[0])
    regular = source.options[1]
    assert (regular.resource_version, regular.allow_watch_bookmarks,
            regular.send_initial_events) == ("3", True, None)
    assert names(store) == ["p1", "p2", "p3", "p4"]


def test_expired_regular_rewatch_returns_error() -> None:
    """(10) the regular re-watch failing with Expired ends list_and_watch with that error."""
    source = FakeListWatcher()
    stop = threading.Event()

    def first(w: FakeWatcher) -> None:
        w.add(pod("p1", "1"))
        w.action(EventType.BOOKMARK, end_bookmark("1"))
        w.add(pod("p3", "3"))
        w.stop()

    source.watchers.append(first)
    expired = new_resource_expired("rv already expired")
    r, store = reflector(source)
    original = source.watch

    def watch(options: ListOptions) -> FakeWatcher:
        if source.watch_calls == 1:
            source.watch_calls += 1
            raise expired
        return original(options)

    source.watch = watch  # type: ignore[method-assign]
    err = run_until(r, stop)
    assert err is expired and str(err) == "rv already expired"
    assert names(store) == ["p1", "p3"]


def test_bookmark_annotation_false_does_not_sync() -> None:
    """(11) an initial-events-end annotation of "false" is not the end."""
    source = FakeListWatcher()
    stop = threading.Event()

    def script(w: FakeWatcher) -> None:
        w.add(pod("p1", "1"))
        w.action(EventType.BOOKMARK, end_bookmark("1", "false"))

    source.watchers.append(stop_after(stop, script))
    r, store = reflector(source)
    run_until(r, stop)
    assert names(store) == []


def test_consistency_detector(monkeypatch: Any) -> None:
    """KUBE_WATCHLIST_INCONSISTENCY_DETECTOR: the streamed state is compared with an exact
    LIST at the same resourceVersion; a difference is fatal."""
    monkeypatch.setenv("KUBE_WATCHLIST_INCONSISTENCY_DETECTOR", "true")
    for listed, consistent in (([pod("p1", "2")], True), ([pod("p1", "2"), pod("px", "1")], False)):
        source = FakeListWatcher()
        source.list_response = {"metadata": {"resourceVersion": "2"}, "items": listed}
        stop = threading.Event()

        def script(w: FakeWatcher) -> None:
            w.add(pod("p1", "2"))
            w.action(EventType.BOOKMARK, end_bookmark("2"))

        source.watchers.append(stop_after(stop, script))
        r, _ = reflector(source)
        err = run_until(r, stop)
        exact = [o for o in source.options if o.resource_version_match == "Exact"]
        assert exact and exact[0].resource_version == "2"
        if consistent:
            assert err is None
        else:
            assert isinstance(err, DataInconsistencyError)
            assert "data inconsistency detected for wl-test" in str(err)


def test_the_collector_is_paused_over_each_attempt_not_over_backoffs() -> None:
    """As over a LIST, the cyclic collector is off while the initial events stream in and
    while they are put into the queue, and on again for the watch that goes on after the
    bookmark; it is never off while the reflector backs off between attempts."""
    assert gc.isenabled()
    seen: dict[str, list[bool]] = {"watch": [], "backoff": [], "replace": [], "add": []}

    class RecordingStore:
        def __init__(self) -> None:
            self.store = new_store(meta_namespace_key_func)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.store, name)

        def replace(self, items: Any, resource_version: str) -> None:
            seen["replace"].append(gc.isenabled())
            self.store.replace(items, resource_version)

        def add(self, obj: Any) -> None:
            seen["add"].append(gc.isenabled())
            self.store.add(obj)

    class RecordingSource(FakeListWatcher):
        def watch(self, options: ListOptions) -> FakeWatcher:
            seen["watch"].append(gc.isenabled())
            return super().watch(options)

    class RecordingBackoff:
        def backoff(self) -> Any:
            seen["backoff"].append(gc.isenabled())
            return RealClock().new_timer(0)

    source = RecordingSource()
    stop = threading.Event()
    source.watch_errors = [new_too_many_requests("busy", 1)]

    def script(w: FakeWatcher) -> None:
        w.add(pod("p1", "1"))
        w.action(EventType.BOOKMARK, end_bookmark("1"))
        w.add(pod("p2", "2"))

    source.watchers.append(stop_after(stop, script, until=lambda: seen["add"] != []))
    store = RecordingStore()
    r = Reflector(source, None, store, ReflectorOptions(name="wl-test"))
    r.use_watch_list = True
    r.backoff_manager = RecordingBackoff()  # type: ignore[assignment]
    assert run_until(r, stop) is None
    assert seen == {"watch": [False, False], "backoff": [True], "replace": [False],
                    "add": [True]}
    assert gc.isenabled()


class _BatchRecordingChan(Chan[Event]):
    """Records each ``wait_batch`` (its count, and whether the store had synced)."""

    def __init__(self, capacity: int, synced: Callable[[], bool]) -> None:
        super().__init__(capacity)
        self.synced = synced
        self.batches: list[tuple[int, bool]] = []
        self.asked = threading.Event()

    def wait_batch(self, count: int, timeout: float) -> int:
        self.batches.append((count, self.synced()))
        self.asked.set()
        return super().wait_batch(count, timeout)


def test_initial_events_are_taken_in_batches_changes_one_by_one() -> None:
    """Until the initial-events-end bookmark an empty result channel is waited on for half
    its capacity (nothing is visible before the bookmark, so nothing is late); after it,
    each change is taken as it comes."""
    source = FakeListWatcher()
    stop = threading.Event()
    store_ref: list[Any] = []
    chans: list[_BatchRecordingChan] = []

    class Watcher(FakeWatcher):
        def _new_chan(self) -> Chan[Event]:
            chan = _BatchRecordingChan(20, lambda: bool(store_ref[0].list_keys()))
            chans.append(chan)
            return chan

    def watch(options: ListOptions) -> FakeWatcher:
        source.options.append(options)
        w = Watcher(20)
        for i in range(3):
            w.add(pod(f"p{i}", str(i + 1)))

        def feed() -> None:
            try:
                chans[0].asked.wait(10)  # the three are taken: it waits for a batch
                w.action(EventType.BOOKMARK, end_bookmark("3"))
                eventually(lambda: names(store_ref[0]) == ["p0", "p1", "p2"], 10, "no sync")
                w.add(pod("p3", "4"))
                eventually(lambda: "p3" in names(store_ref[0]), 10, "p3 not applied")
            finally:
                stop.set()

        threading.Thread(target=feed, name="test-feed", daemon=True).start()
        return w

    source.watch = watch  # type: ignore[method-assign]
    r, store = reflector(source)
    store_ref.append(store)
    assert run_until(r, stop) is None
    assert names(store) == ["p0", "p1", "p2", "p3"]
    batches = chans[0].batches
    assert batches and all(b == (10, False) for b in batches), batches
