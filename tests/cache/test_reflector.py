"""reflector.go (reflector_test.go) scenario by scenario, with our own values."""

from __future__ import annotations

import errno
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import V1ObjectMeta, V1Pod, V1Service

from client_cache import FakeCustomStore, meta_namespace_key_func, new_fifo, new_store
from client_cache.api.lists import ListOptions
from client_cache.api.watch import (
    Event,
    EventType,
    FakeWatcher,
    MockWatcher,
    new_fake,
    new_fake_with_chan_size,
)
from client_cache.errors import (
    StopRequestedError,
    new_internal_error,
    new_resource_expired,
    new_timeout_error,
    new_too_many_requests,
)
from client_cache.expected_type import TypeCheck, describe_expected_type
from client_cache.fifo import pop
from client_cache.listwatch import ListWatch
from client_cache.reflector import (
    DEFAULT_EXPECTED_TYPE_NAME,
    InitialEventsEndBookmarkTicker,
    ListFailedError,
    Reflector,
    ReflectorOptions,
    VeryShortWatchError,
    WatchStalledError,
    new_namespace_keyed_indexer_and_reflector,
    new_reflector,
    new_reflector_with_options,
)
from client_cache.reflector_metrics import (
    reset_reflector_metrics_provider_for_tests,
    set_reflector_metrics_provider,
)
from client_cache.shared_informer import (
    SharedIndexInformerOptions,
    new_shared_index_informer_with_options,
)
from client_cache.util.chan import CLOSED, Chan
from client_cache.util.clock import FakeClock
from client_cache.util.wait import new_exponential_backoff_manager
from tests.fixtures import eventually
from tests.fixtures import pod as make_pod

T0 = 1_763_800_000.0


def pod(name: str, rv: str = "") -> dict[str, Any]:
    return make_pod(name, "ns", {}, rv=rv)


def pod_list(rv: str, *pods: dict[str, Any], cont: str = "") -> dict[str, Any]:
    md = {"resourceVersion": rv}
    if cont:
        md["continue"] = cont
    return {"metadata": md, "items": list(pods)}


def lw(
    list_func: Callable[[ListOptions], Any], watch_func: Callable[[ListOptions], Any]
) -> ListWatch:
    # these fakes ignore sendInitialEvents, so they say so, as client-go's
    # reflector tests wrap theirs (toListWatcherWithUnSupportedWatchListSemantics)
    return ListWatch(list_func, watch_func, unsupported_watch_list_semantics=True)


def unreachable(options: ListOptions) -> Any:
    raise AssertionError(f"unexpected call with {options}")


def reflector(lister: ListWatch, store: Any = None, **kw: Any) -> Reflector:
    return new_reflector_with_options(
        lister, None, store if store is not None else new_store(meta_namespace_key_func),
        ReflectorOptions(name="test-reflector", **kw))


def run_in_thread(target: Callable[[], Any], name: str) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []

    def body() -> None:
        try:
            result.append(target())
        except BaseException as err:
            result.append(err)

    t = threading.Thread(target=body, name=name, daemon=True)
    t.start()
    return t, result


def test_close_watch_channel_on_error() -> None:
    """TestCloseWatchChannelOnError: an ERROR event makes the reflector stop the watch."""
    fw = new_fake()
    r = reflector(lw(lambda o: pod_list("1"), lambda o: fw))
    stop = threading.Event()
    t, result = run_in_thread(lambda: r.list_and_watch(stop), "test-lw-error")
    fw.error({"kind": "Pod", "metadata": {"name": "not-a-status"}})
    t.join(5)
    stop.set()
    assert fw.is_stopped()
    assert fw.result_chan().recv(1) == (CLOSED, False)
    assert result == [None]  # as Go: the watch error is logged, the round ends cleanly


def test_run_until() -> None:
    """TestRunUntil: Run returns on stop and the watch is stopped."""
    fw = new_fake()
    store = new_store(meta_namespace_key_func)
    r = reflector(lw(lambda o: pod_list("1"), lambda o: fw), store)
    stop = threading.Event()
    t, _ = run_in_thread(lambda: r.run(stop), "test-run-until")
    fw.add(pod("bar", "2"))  # consumed synchronously (unbuffered)
    stop.set()
    t.join(1.0)
    assert not t.is_alive()
    assert fw.result_chan().recv(1) == (CLOSED, False)
    assert store.get_by_key("ns/bar")[1]


def test_resync_thread_fires() -> None:
    """TestReflectorResyncChan / TestReflectorResync: a failing resync ends the watch
    without propagating, after exactly two resync calls."""
    calls = [0]
    second = threading.Event()

    def resync() -> None:
        calls[0] += 1
        if calls[0] == 2:
            second.set()
            raise RuntimeError("resync failed")

    store = FakeCustomStore(resync_func=resync)
    r = reflector(lw(lambda o: pod_list("0"), lambda o: new_fake()), store, resync_period=0.001)
    stop = threading.Event()
    t, result = run_in_thread(lambda: r.list_and_watch(stop), "test-resync")
    assert second.wait(5)
    t.join(5)
    assert result == [None] and calls[0] == 2


def test_watch_stopped_before() -> None:
    """TestReflectorWatchStoppedBefore: neither list nor watch is called."""
    stop = threading.Event()
    stop.set()
    r = reflector(lw(unreachable, unreachable))
    assert r._watch(None, stop, Chan(1)) is None


def test_watch_stopped_after() -> None:
    """TestReflectorWatchStoppedAfter: the single watcher gets stopped."""
    watchers: list[FakeWatcher] = []
    stop = threading.Event()

    def watch(options: ListOptions) -> FakeWatcher:
        w = new_fake()
        watchers.append(w)
        threading.Timer(0.01, stop.set).start()
        return w

    r = reflector(lw(unreachable, watch))
    r._watch(None, stop, Chan(1))
    assert len(watchers) == 1 and watchers[0].is_stopped()


def mock_watcher(chan: Chan[Event]) -> tuple[MockWatcher, list[str]]:
    calls: list[str] = []

    def result_chan() -> Chan[Event]:
        calls.append("ResultChan")
        return chan

    return MockWatcher(stop_func=lambda: calls.append("Stop"), result_chan_func=result_chan), calls


def test_handle_watch_stopped_before() -> None:
    """TestReflectorHandleWatchStoppedBefore / TestReflectorStopWatch."""
    stop = threading.Event()
    stop.set()
    w, calls = mock_watcher(Chan(1))
    r = reflector(lw(unreachable, unreachable))
    with pytest.raises(Exception) as info:
        r._handle_watch(time.time(), w, stop, Chan(1), idle=60)
    assert isinstance(info.value, StopRequestedError) and str(info.value) == "stop requested"
    assert calls == ["ResultChan"]


def test_handle_watch_stopped_after() -> None:
    """TestReflectorHandleWatchStoppedAfter."""
    stop = threading.Event()
    w, calls = mock_watcher(Chan(1))
    threading.Timer(0.01, stop.set).start()
    r = reflector(lw(unreachable, unreachable))
    with pytest.raises(Exception) as info:
        r._handle_watch(time.time(), w, stop, Chan(1), idle=60)
    assert isinstance(info.value, StopRequestedError) and calls == ["ResultChan"]


@pytest.mark.parametrize("delay", [0.0, 0.01])
def test_handle_watch_result_chan_closed(delay: float) -> None:
    """TestReflectorHandleWatchResultChanClosedBefore/After: a very short watch."""
    chan: Chan[Event] = Chan(1)
    if delay:
        threading.Timer(delay, chan.close).start()
    else:
        chan.close()
    w, calls = mock_watcher(chan)
    r = reflector(lw(unreachable, unreachable))
    with pytest.raises(VeryShortWatchError, match="very short watch: test-reflector: "
                       "Unexpected watch close - watch lasted less than a second and no items "
                       "received"):
        r._handle_watch(r.clock.now(), w, threading.Event(), Chan(1), idle=60)
    assert calls == ["ResultChan"]


def test_watch_handler() -> None:
    """TestReflectorWatchHandler: wrong types are skipped, events applied, RV tracked."""
    store = new_store(meta_namespace_key_func)
    foo = V1Pod(metadata=V1ObjectMeta(name="foo", namespace="ns", resource_version="1"))
    bar = V1Pod(metadata=V1ObjectMeta(name="bar", namespace="ns", resource_version="1"))
    store.add(foo)
    store.add(bar)
    r = new_reflector_with_options(lw(unreachable, unreachable), V1Pod, store,
                                   ReflectorOptions(name="typed"))
    fw = new_fake_with_chan_size(10)
    fw.add(V1Service(metadata=V1ObjectMeta(name="rejected", namespace="ns",
                                           resource_version="99")))
    fw.delete(foo)
    fw.modify(V1Pod(metadata=V1ObjectMeta(name="bar", namespace="ns", resource_version="55")))
    fw.add(V1Pod(metadata=V1ObjectMeta(name="baz", namespace="ns", resource_version="32")))
    fw.stop()
    r._handle_watch(r.clock.now(), fw, threading.Event(), Chan(1), idle=60)
    assert not store.get_by_key("ns/foo")[1] and not store.get_by_key("ns/rejected")[1]
    assert store.get_by_key("ns/bar")[0].metadata.resource_version == "55"
    assert store.get_by_key("ns/baz")[0].metadata.resource_version == "32"
    assert r.last_sync_resource_version() == "32"


def test_list_and_watch_rewatches_without_relist() -> None:
    """TestReflectorListAndWatch."""
    requested: list[str] = []
    watchers: list[FakeWatcher] = []
    fifo = new_fifo(meta_namespace_key_func)
    stop = threading.Event()

    def watch(options: ListOptions) -> FakeWatcher:
        requested.append(options.resource_version)
        w = new_fake()
        watchers.append(w)
        return w

    r = reflector(lw(lambda o: pod_list("1"), watch), fifo)
    t, result = run_in_thread(lambda: r.list_and_watch(stop), "test-lw")
    eventually(lambda: len(watchers) >= 1, 5)
    watchers[0].add(pod("foo", "2"))
    watchers[0].add(pod("bar", "3"))
    watchers[0].stop()
    eventually(lambda: len(watchers) >= 2, 5)
    for name, rv in (("baz", "4"), ("qux", "5"), ("zoo", "6")):
        watchers[1].add(pod(name, rv))
    popped = [pop(fifo)["metadata"]["resourceVersion"] for _ in range(5)]
    assert popped == ["2", "3", "4", "5", "6"]
    stop.set()
    t.join(5)
    assert requested == ["1", "3"] and result == [None]


def test_list_and_watch_with_errors() -> None:
    """TestReflectorListAndWatchWithErrors: a list or watch error is returned wrapped."""
    list_error = RuntimeError("a list error")
    r = reflector(lw(lambda o: (_ for _ in ()).throw(list_error), unreachable))
    with pytest.raises(Exception) as info:
        r.list_and_watch(threading.Event())
    assert str(info.value) == "failed to list <unspecified>: a list error"
    assert info.value.__cause__ is list_error
    watch_error = RuntimeError("a watch error")
    r = reflector(lw(lambda o: pod_list("5", pod("bar", "3")),
                     lambda o: (_ for _ in ()).throw(watch_error)))
    with pytest.raises(RuntimeError) as info2:
        r.list_and_watch(threading.Event())
    assert info2.value is watch_error


def conn_backoff_elapsed(failures: int, max_backoff: float | None = None,
                         ) -> tuple[float, list[Any], int]:
    """Refuse the first ``failures`` watches; after each refusal, once the backoff timer is
    set, step the fake clock by twice the unjittered backoff (enough for any jitter) and
    wait for the next attempt: one step per refusal, never more. The backoff is 1 ms
    doubling to 50 ms, or with ``max_backoff`` the reflector's own, capped by that option
    (each step then twice the cap)."""
    clock = FakeClock(T0)
    stop = threading.Event()
    attempts: queue.Queue[int] = queue.Queue()
    calls = [0]
    lists = [0]

    def watch(options: ListOptions) -> Any:
        calls[0] += 1
        attempts.put(calls[0])
        if calls[0] > failures:
            stop.set()
            return new_fake()
        raise ConnectionRefusedError(errno.ECONNREFUSED, "connection refused")

    def list_func(options: ListOptions) -> Any:
        lists[0] += 1
        return pod_list("1")

    if max_backoff is None:
        r = reflector(lw(list_func, watch), clock=clock)
        r.backoff_manager = new_exponential_backoff_manager(0.001, 0.05, 0.1, 2.0, 1.0, clock)
    else:
        r = reflector(lw(list_func, watch), clock=clock, max_backoff=max_backoff)
    t, result = run_in_thread(lambda: r.list_and_watch(stop), "test-conn-backoff")
    for i in range(failures):
        assert attempts.get(timeout=10) == i + 1  # refused; the reflector backs off
        eventually(clock.has_waiters, message="no backoff timer")
        clock.step(min(2 ** (i + 1) / 1000, 0.1) if max_backoff is None else 2 * max_backoff)
    assert attempts.get(timeout=10) == failures + 1  # the attempt after the last backoff
    t.join(10)
    assert not t.is_alive()
    return clock.now() - T0, result, lists[0]


@pytest.mark.parametrize(("failures", "low", "high"), [(5, 0.032, 0.064), (40, 3.5, 4.0)])
def test_init_conn_backoff_on_fake_clock(failures: int, low: float, high: float) -> None:
    """TestReflectorListAndWatchInitConnBackoff: connection refused backs off without
    relisting; the elapsed fake time follows the backoff."""
    elapsed, result, lists = conn_backoff_elapsed(failures)
    assert result == [None] and lists == 1
    assert low <= elapsed <= high, (failures, elapsed)


def test_max_backoff_caps_every_wait_between_failed_rounds() -> None:
    """Port addition (``ReflectorOptions.max_backoff``): with the cap at 50 ms, twelve
    refusals in a row each wait at most twice the cap (client-go's reflector would wait
    0.8 s at first and 30 s at last); a cap that is not positive is refused."""
    elapsed, result, lists = conn_backoff_elapsed(12, max_backoff=0.05)
    assert result == [None] and lists == 1
    assert elapsed == pytest.approx(12 * 0.1)
    for bad in (0.0, -1.0):
        with pytest.raises(ValueError, match="max_backoff"):
            reflector(lw(unreachable, unreachable), max_backoff=bad)
        with pytest.raises(ValueError, match="max_backoff"):  # at once, not when it runs
            new_shared_index_informer_with_options(
                lw(unreachable, unreachable), None, SharedIndexInformerOptions(max_backoff=bad))


class CountingBackoff:
    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.calls = clock, 0

    def backoff(self) -> Any:
        self.calls += 1
        timer = self.clock.new_timer(0)
        self.clock.step(0)
        return timer


def test_backoff_on_too_many_requests() -> None:
    """TestBackoffOnTooManyRequests: a 429 on the request and a 429 ERROR event each
    back off once; no relist."""
    clock = FakeClock(T0)
    calls = [0]

    def watch(options: ListOptions) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise new_too_many_requests("slow down", 1)
        w = new_fake_with_chan_size(2)
        if calls[0] == 2:
            w.error(new_too_many_requests("slow down", 1).status())
            w.stop()
            return w
        w.stop()
        return w

    r = reflector(lw(lambda o: pod_list("1"), watch), clock=clock)
    backoff = CountingBackoff(clock)
    r.backoff_manager = backoff  # type: ignore[assignment]
    r.list_and_watch(threading.Event())
    assert backoff.calls == 2


def test_no_relist_on_too_many_requests() -> None:
    """TestNoRelistOnTooManyRequests: 4 x 429 then a stopped watcher: 1 list, 5 watches."""
    clock = FakeClock(T0)
    lists, watches = [0], [0]

    def list_func(options: ListOptions) -> Any:
        lists[0] += 1
        return pod_list("1")

    def watch(options: ListOptions) -> Any:
        watches[0] += 1
        if watches[0] <= 4:
            raise new_too_many_requests("slow down", 1)
        w = new_fake_with_chan_size(1)
        w.stop()
        return w

    r = reflector(lw(list_func, watch), clock=clock)
    r.backoff_manager = CountingBackoff(clock)  # type: ignore[assignment]
    r.list_and_watch(threading.Event())
    assert (lists[0], watches[0]) == (1, 5)


@pytest.mark.parametrize(("max_duration", "reset_at", "retries"),
                         [(0.0, None, 0), (30.0, None, 31), (30.0, 10, 40)])
def test_retry_internal_error(max_duration: float, reset_at: int | None, retries: int) -> None:
    """TestRetryInternalError: internal errors are retried at once within the window."""
    clock = FakeClock(T0)
    calls = [0]

    def watch(options: ListOptions) -> Any:
        calls[0] += 1
        clock.step(1)
        if reset_at is not None and calls[0] == reset_at:
            clock.step(60)
        w = new_fake_with_chan_size(2)
        w.error(new_internal_error("etcdserver: no leader").status())
        w.stop()
        return w

    r = reflector(lw(lambda o: pod_list("1"), watch), clock=clock)
    r.max_internal_error_retry_duration = max_duration
    r.backoff_manager = CountingBackoff(clock)  # type: ignore[assignment]
    r.list_and_watch(threading.Event())
    assert calls[0] - 1 == retries


def list_recorder(
    responses: dict[tuple[str, str, int], Any]
) -> tuple[Callable[[ListOptions], Any], list[tuple[str, str, int]]]:
    seen: list[tuple[str, str, int]] = []

    def list_func(options: ListOptions) -> Any:
        key = (options.resource_version, options.continue_, options.limit)
        seen.append(key)
        response = responses[key]
        if isinstance(response, BaseException):
            raise response
        return response() if callable(response) else response

    return list_func, seen


def closing_watch(stop: threading.Event) -> Callable[[ListOptions], Any]:
    def watch(options: ListOptions) -> Any:
        stop.set()
        w = new_fake_with_chan_size(1)
        return w

    return watch


def pods(n: int, rv: str) -> list[dict[str, Any]]:
    return [pod(f"p{i}", rv) for i in range(n)]


def test_watch_list_page_size_and_no_paging_for_exact_reads() -> None:
    """TestReflectorWatchListPageSize / TestReflectorNotPaginatingNotConsistentReads."""
    stop = threading.Event()
    list_func, seen = list_recorder({
        ("10", "", 4): pod_list("10", *pods(4, "10"), cont="C1"),
        ("", "C1", 4): pod_list("10", *[pod(f"q{i}", "10") for i in range(4)], cont="C2"),
        ("", "C2", 4): pod_list("10", pod("r0", "10"), pod("r1", "10")),
    })
    store = new_store(meta_namespace_key_func)
    r = reflector(lw(list_func, closing_watch(stop)), store)
    r.set_last_sync_resource_version("10")
    r.watch_list_page_size = 4
    r.list_and_watch(stop)
    assert len(store.list()) == 10
    stop = threading.Event()
    list_func, seen = list_recorder({("10", "", 0): pod_list("10", *pods(10, "10"))})
    r = reflector(lw(list_func, closing_watch(stop)), new_store(meta_namespace_key_func))
    r.set_last_sync_resource_version("10")
    r.list_and_watch(stop)
    assert seen == [("10", "", 0)]


def test_paginating_latched_for_rv0() -> None:
    """TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled."""
    responses = {
        ("0", "", 500): pod_list("10", *pods(4, "10"), cont="C1"),
        ("", "C1", 500): pod_list("10", *[pod(f"q{i}", "10") for i in range(6)]),
        ("10", "", 500): pod_list("10", *pods(10, "10")),
    }
    list_func, seen = list_recorder(responses)
    store = new_store(meta_namespace_key_func)
    stop = threading.Event()
    r = reflector(lw(list_func, closing_watch(stop)), store)
    r.list_and_watch(stop)
    assert len(store.list()) == 10
    stop.clear()
    r.list_and_watch(stop)
    assert seen == [("0", "", 500), ("", "C1", 500), ("10", "", 500)]


def test_resync_with_resource_version_and_expired_exact() -> None:
    """TestReflectorResyncWithResourceVersion / TestReflectorExpiredExactResourceVersion."""
    list_func, seen = list_recorder({
        ("0", "", 500): pod_list("10", *pods(4, "10")),
        ("10", "", 0): new_resource_expired("rv 10 expired"),
        ("", "", 0): pod_list("11", *pods(8, "11")),  # same pager: page size stays 0
    })
    store = new_store(meta_namespace_key_func)
    stop = threading.Event()
    r = reflector(lw(list_func, closing_watch(stop)), store)
    r.list_and_watch(stop)
    assert len(store.list()) == 4
    stop.clear()
    r.list_and_watch(stop)
    assert len(store.list()) == 8
    assert [rv for rv, _, _ in seen] == ["0", "10", ""]


def test_full_list_if_expired() -> None:
    """TestReflectorFullListIfExpired: the pager falls back at the original RV."""
    list_func, seen = list_recorder({
        ("0", "", 4): pod_list("10", *pods(4, "10")),
        ("10", "", 4): pod_list("11", *pods(4, "11"), cont="C1"),
        ("", "C1", 4): new_resource_expired("continue expired"),
        ("10", "", 0): pod_list("11", *pods(8, "11")),
    })
    store = new_store(meta_namespace_key_func)
    stop = threading.Event()
    r = reflector(lw(list_func, closing_watch(stop)), store)
    r.watch_list_page_size = 4
    r.list_and_watch(stop)
    stop.clear()
    r.list_and_watch(stop)
    assert len(store.list()) == 8
    assert [rv for rv, _, _ in seen] == ["0", "10", "", "10"]


def test_full_list_if_too_large() -> None:
    """TestReflectorFullListIfTooLarge: the three shapes of "too large" relist with ""."""
    too_large_cause = new_timeout_error("x", 1)
    too_large_cause.details["causes"] = [{"reason": "ResourceVersionTooLarge",
                                          "message": "Too large resource version"}]
    too_large_message_cause = new_timeout_error("x", 1)
    too_large_message_cause.details["causes"] = [{"message": "Too large resource version"}]
    too_large_status = new_timeout_error("Too large resource version", 1)
    consistent = iter(["30", "40", "50"])
    list_func, seen = list_recorder({
        ("0", "", 500): pod_list("20"),
        ("20", "", 0): too_large_cause,
        ("30", "", 0): too_large_message_cause,
        ("40", "", 0): too_large_status,
        ("", "", 0): lambda: pod_list(next(consistent)),
    })
    stop = threading.Event()
    r = reflector(lw(list_func, closing_watch(stop)))
    for _ in range(4):
        stop.clear()
        r.list_and_watch(stop)
    assert [rv for rv, _, _ in seen] == ["0", "20", "", "30", "", "40", ""]


def test_type_description_and_expected_gvk() -> None:
    """TestGetTypeDescriptionFromObject / TestGetExpectedGVKFromObject."""
    noop = lw(unreachable, unreachable)
    store = new_store(meta_namespace_key_func)
    assert new_reflector(noop, None, store, 0).type_description == DEFAULT_EXPECTED_TYPE_NAME
    typed = new_reflector(noop, V1Pod, store, 0)
    assert typed.type_description == "V1Pod" and typed.expected_gvk is None
    example = new_reflector(noop, V1Pod(), store, 0)
    assert example.type_description == "V1Pod"
    unstructured = new_reflector(noop, {}, store, 0)
    assert unstructured.type_description == "dict" and unstructured.expected_gvk is None
    with_gvk = new_reflector(noop, {"apiVersion": "mygroup/v1", "kind": "MyKind"}, store, 0)
    assert with_gvk.type_description == "mygroup/v1, Kind=MyKind"
    assert with_gvk.expected_gvk == ("mygroup/v1", "MyKind")


def test_name_defaults_to_callsite() -> None:
    r = new_reflector(lw(unreachable, unreachable), None, new_store(meta_namespace_key_func), 0)
    line = test_name_defaults_to_callsite.__code__.co_firstlineno + 1
    assert r.name.endswith(f"test_reflector.py:{line}")
    indexer, r2 = new_namespace_keyed_indexer_and_reflector(lw(unreachable, unreachable), None, 0)
    assert "test_reflector.py" in r2.name and indexer.get_indexers()


@pytest.mark.parametrize(("minimum", "low", "high"),
                         [(0.0, 300, 600), (1.0, 300, 600), (1800.0, 1800, 3600)])
def test_watch_timeout(minimum: float, low: int, high: int) -> None:
    """TestWatchTimeout."""
    stop = threading.Event()
    seen: list[int | None] = []

    def watch(options: ListOptions) -> Any:
        seen.append(options.timeout_seconds)
        assert options.allow_watch_bookmarks and options.resource_version == "1"
        stop.set()
        return new_fake_with_chan_size(1)

    r = reflector(lw(lambda o: pod_list("1"), watch), min_watch_timeout=minimum)
    r.list_and_watch(stop)
    assert seen and seen[0] is not None and low <= seen[0] <= high


class UpdaterStore:
    def __init__(self) -> None:
        self.inner = new_store(meta_namespace_key_func)
        self.versions: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def update_resource_version(self, rv: str) -> None:
        self.versions.append(rv)


def test_resource_version_updater() -> None:
    """TestReflectorResourceVersionUpdate: bookmarks included, list excluded."""
    store = UpdaterStore()
    stop = threading.Event()
    fw = new_fake_with_chan_size(10)
    fw.add(pod("a", "10"))
    fw.modify(pod("a", "20"))
    fw.action(EventType.BOOKMARK, {"kind": "Pod", "metadata": {"resourceVersion": "30"}})
    fw.delete(pod("a", "40"))

    def watch(options: ListOptions) -> Any:
        threading.Timer(0.05, stop.set).start()
        return fw

    r = reflector(lw(lambda o: pod_list("10"), watch), store)
    r.list_and_watch(stop)
    assert store.versions == ["10", "20", "30", "40"]


def test_replaces_store_on_unsafe_delete() -> None:
    """TestReflectorReplacesStoreOnUnsafeDelete: a non-internal watch error relists."""
    lists = iter([pod_list("3", pod("foo-1", "1"), pod("foo-2", "2"), pod("foo-3", "3")),
                  pod_list("5", pod("foo-1", "1"), pod("foo-2", "2"), pod("foo-3", "3"))])
    watches = [0]
    stop = threading.Event()
    store = new_store(meta_namespace_key_func)

    def watch(options: ListOptions) -> Any:
        watches[0] += 1
        w = new_fake_with_chan_size(3)
        if watches[0] == 1:
            w.add(pod("corrupt", "4"))
            w.error({"kind": "Status", "code": 500, "reason": "StoreReadError",
                     "message": "corrupt object has been deleted"})
        else:
            stop.set()
        return w

    r = reflector(lw(lambda o: next(lists), watch), store)
    r.backoff_manager = CountingBackoff(FakeClock(T0))  # type: ignore[assignment]
    r.run(stop)
    assert sorted(store.list_keys()) == ["ns/foo-1", "ns/foo-2", "ns/foo-3"]
    assert r.last_sync_resource_version() == "5"


def test_stalled_watch_is_reestablished_on_fake_clock() -> None:
    """Port addition: nothing for the idle timeout ends the watch, which is re-established
    from the last resourceVersion without relisting."""
    clock = FakeClock(T0)
    stop = threading.Event()
    requested: list[str] = []
    watchers: list[FakeWatcher] = []

    def watch(options: ListOptions) -> Any:
        requested.append(options.resource_version)
        w = new_fake_with_chan_size(2)
        if not watchers:
            w.add(pod("a", "7"))
        else:
            stop.set()
        watchers.append(w)
        return w

    r = reflector(lw(lambda o: pod_list("5"), watch), clock=clock, idle_timeout=30)
    t, result = run_in_thread(lambda: r.list_and_watch(stop), "test-stall")
    eventually(lambda: r.last_sync_resource_version() == "7" and clock.has_waiters(), 5)
    clock.step(31)
    t.join(5)
    assert requested == ["5", "7"] and result == [None]
    assert watchers[0].is_stopped()
    assert WatchStalledError.__mro__


def test_run_returns_promptly_while_backing_off() -> None:
    stop = threading.Event()

    def failing_list(options: ListOptions) -> Any:
        raise RuntimeError("apiserver down")

    clock = FakeClock(T0)
    r = reflector(lw(failing_list, unreachable), clock=clock)
    t, _ = run_in_thread(lambda: r.run(stop), "test-backoff-stop")
    eventually(clock.has_waiters)  # it failed and waits for its backoff timer
    start = time.monotonic()
    stop.set()
    t.join(1.0)
    assert not t.is_alive() and time.monotonic() - start < 1.0


def test_initial_events_end_bookmark_ticker() -> None:
    """TestInitialEventsEndBookmarkTicker."""
    clock = FakeClock(T0)
    quiet = InitialEventsEndBookmarkTicker("testName", clock, clock.now(), 1.0, False)
    clock.step(30)
    assert not quiet.c().ready() and quiet.produce_warning_if_expired() is None
    quiet.observe_last_event_time(clock.now())
    assert quiet.produce_warning_if_expired() is None
    quiet.stop()

    clock = FakeClock(T0)
    ticker = InitialEventsEndBookmarkTicker("testName", clock, clock.now(), 1.0, True)
    clock.step(0.5)
    assert not ticker.c().ready()
    clock.step(0.5)
    assert ticker.c().recv(0)[1]
    assert ticker.produce_warning_if_expired() == (
        "testName: awaiting required bookmark event for initial events stream, no events "
        "received for 1s")
    clock.step(1)
    assert ticker.c().recv(0)[1]
    assert ticker.produce_warning_if_expired().endswith("no events received for 2s")  # type: ignore[union-attr]
    ticker.observe_last_event_time(clock.now())
    clock.step(0.5)
    assert not ticker.c().ready() and ticker.produce_warning_if_expired() is None
    clock.step(0.5)
    assert ticker.c().recv(0)[1]
    assert ticker.produce_warning_if_expired() == (
        "testName: hasn't received required bookmark event marking the end of initial events "
        "stream, received last event 1s ago")
    clock.step(1)
    assert ticker.produce_warning_if_expired().endswith("received last event 2s ago")  # type: ignore[union-attr]
    ticker.stop()


class FailingStore:
    """Every write fails; the reflector must log and carry on."""

    def __init__(self) -> None:
        self.inner = new_store(meta_namespace_key_func)
        self.attempts = 0

    def add(self, obj: Any) -> None:
        self.attempts += 1
        raise RuntimeError("user store exploded")

    update = add
    delete = add

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_store_errors_never_kill_the_reflector(caplog: pytest.LogCaptureFixture) -> None:
    store = FailingStore()
    fw = new_fake_with_chan_size(5)
    fw.add(pod("a", "2"))
    fw.modify(pod("a", "3"))
    fw.delete(pod("a", "4"))
    fw.stop()
    stop = threading.Event()
    calls = [0]

    def watch(options: ListOptions) -> Any:
        calls[0] += 1
        if calls[0] > 1:
            stop.set()
            return new_fake_with_chan_size(1)
        return fw

    r = reflector(lw(lambda o: pod_list("1"), watch), store)
    r.list_and_watch(stop)
    assert store.attempts == 3 and r.last_sync_resource_version() == "4"
    for what in ("add watch event object (Pod ns/a (resourceVersion 2)) to store",
                 "update watch event object (Pod ns/a (resourceVersion 3)) to store",
                 "delete watch event object (Pod ns/a (resourceVersion 4)) from store"):
        assert f"unable to {what}: " in caplog.text


class RecordingMetrics:
    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {}

    def _metric(self, name: str) -> Any:
        values = self.values.setdefault(name, [])

        class Metric:
            def inc(self) -> None:
                values.append(1)

            def observe(self, value: float) -> None:
                values.append(value)

            def set(self, value: float) -> None:
                values.append(value)

        return Metric()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("new_") and attr.endswith("_metric"):
            return lambda name: self._metric(attr[4:-7])
        raise AttributeError(attr)


def test_metrics_are_recorded() -> None:
    provider = RecordingMetrics()
    set_reflector_metrics_provider(provider)  # type: ignore[arg-type]
    try:
        stop = threading.Event()
        fw = new_fake_with_chan_size(3)
        fw.add(pod("a", "7"))
        fw.stop()
        calls = [0]

        def watch(options: ListOptions) -> Any:
            calls[0] += 1
            if calls[0] > 1:
                stop.set()
                return new_fake_with_chan_size(1)
            return fw

        r = reflector(lw(lambda o: pod_list("5", pod("a", "5"), pod("b", "5")), watch))
        r.list_and_watch(stop)
    finally:
        reset_reflector_metrics_provider_for_tests()
    values = provider.values
    assert values["lists"] == [1] and values["items_in_list"] == [2]
    assert values["watches"] == [1, 1] and values["items_in_watch"][0] == 1
    assert values["last_resource_version"][-1] == 7.0


def test_typed_reflector_checks_list_items_too(caplog: pytest.LogCaptureFixture) -> None:
    """With an expected apiVersion/kind, LIST items of another kind are skipped and
    reported like watch objects (items without TypeMeta are typed by their list); a list
    of another kind fails the LIST."""
    bare = {"metadata": {"name": "bare", "namespace": "ns", "resourceVersion": "1"}}
    stranger = {**pod("stranger", "2"), "kind": "ConfigMap"}
    listed = {**pod_list("5", pod("good", "3"), bare, stranger), "apiVersion": "v1",
              "kind": "PodList"}
    store = new_store(meta_namespace_key_func)
    r = new_reflector_with_options(lw(lambda o: listed, unreachable),
                                   {"apiVersion": "v1", "kind": "Pod"}, store,
                                   ReflectorOptions(name="typed"))
    assert r._list(threading.Event())
    assert sorted(store.list_keys()) == ["ns/bare", "ns/good"]
    assert any("LIST item had gvk ('v1', 'ConfigMap')" in rec.getMessage()
               for rec in caplog.records)
    wrong = {**pod_list("6", pod("x", "4")), "apiVersion": "v1", "kind": "ConfigMapList"}
    r2 = new_reflector_with_options(lw(lambda o: wrong, unreachable),
                                    {"apiVersion": "v1", "kind": "Pod"},
                                    new_store(meta_namespace_key_func),
                                    ReflectorOptions(name="typed"))
    with pytest.raises(ListFailedError, match="expected a PodList of v1"):
        r2._list(threading.Event())


@pytest.mark.parametrize(("obj", "accepted"), [
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, True),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, False),
    ({"apiVersion": "v2", "kind": "Pod", "metadata": {}}, False),
    ({"metadata": {}}, False),  # a watch object says its kind
    ({"apiVersion": "v1", "kind": 7, "metadata": {}}, False),
    (V1Pod(api_version="v1", kind="Pod"), True),
    (V1Service(api_version="v1", kind="Service"), False),
])
def test_a_gvk_typed_check_takes_what_says_its_kind_and_reports_the_rest(
        obj: Any, accepted: bool, caplog: pytest.LogCaptureFixture) -> None:
    """The check of a reflector typed by an apiVersion and kind alone: a wire dict or
    model of that kind passes quietly; anything else is refused and reported."""
    check = TypeCheck("typed", "v1, Kind=Pod", None, ("v1", "Pod"))
    assert check.accept(obj) is accepted
    reported = [rec for rec in caplog.records if "expected gvk" in rec.getMessage()]
    assert len(reported) == (0 if accepted else 1)


@pytest.mark.parametrize(("obj", "accepted", "message"), [
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {}}, True, ""),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, False, "expected gvk"),
    (V1Pod(api_version="v1", kind="Pod"), False, "expected type"),
])
def test_a_dict_example_checks_the_type_and_then_the_kind(
        obj: Any, accepted: bool, message: str, caplog: pytest.LogCaptureFixture) -> None:
    """A dict example (an informer of wire dicts: ``describe_expected_type`` gives the
    dict type and the example's apiVersion and kind) takes only dicts of its kind."""
    _, expected_type, gvk = describe_expected_type({"apiVersion": "v1", "kind": "Pod"})
    check = TypeCheck("typed", "v1, Kind=Pod", expected_type, gvk)
    assert check.accept(obj) is accepted
    reported = [rec.getMessage() for rec in caplog.records if "expected" in rec.getMessage()]
    assert len(reported) == (0 if accepted else 1)
    assert all(message in text for text in reported)


def test_model_typed_reflector_checks_list_items() -> None:
    store = new_store(meta_namespace_key_func)
    good = V1Pod(metadata=V1ObjectMeta(name="p", namespace="ns", resource_version="1"))
    svc = V1Service(metadata=V1ObjectMeta(name="s", namespace="ns", resource_version="2"))
    r = new_reflector_with_options(lw(lambda o: pod_list("3", good, svc), unreachable),
                                   V1Pod, store, ReflectorOptions(name="models"))
    assert r._list(threading.Event())
    assert store.list_keys() == ["ns/p"]


def test_a_burst_records_its_last_resource_version_when_a_later_event_ends_the_watch() -> None:
    """The reflector records the resourceVersion once per burst of buffered events: when
    an ERROR event ends the watch inside a burst, the events before it are applied and
    the last of their resourceVersions is recorded all the same, and every event of the
    burst is counted as received."""
    fw = new_fake_with_chan_size(10)
    fw.add(pod("a", "10"))
    fw.modify(pod("a", "20"))
    fw.error({"kind": "Pod", "metadata": {"name": "not-a-status"}})
    store = new_store(meta_namespace_key_func)
    r = reflector(lw(lambda o: pod_list("5"), lambda o: fw), store)
    r.list_and_watch(threading.Event())
    assert store.get_by_key("ns/a")[0]["metadata"]["resourceVersion"] == "20"
    assert r.last_sync_resource_version() == "20"
    assert r.status.watch_events == 3


TABLE = {"apiVersion": "meta.k8s.io/v1", "kind": "Table", "metadata": {"resourceVersion": "7"},
         "columnDefinitions": [], "rows": []}


def test_a_table_list_is_refused() -> None:
    """client-go v0.36: a LIST answered in the Table format fails, whatever the
    expected type ("unsupported list gvk")."""
    r = reflector(lw(lambda o: dict(TABLE), unreachable))
    with pytest.raises(ListFailedError) as failed:
        r.list_and_watch(threading.Event())
    assert "unsupported list gvk meta.k8s.io/v1, Kind=Table: the server answered in the " \
        "Table format" in str(failed.value)


def test_a_table_watch_event_is_reported_and_skipped(
        caplog: pytest.LogCaptureFixture) -> None:
    store = new_store(meta_namespace_key_func)
    r = reflector(lw(unreachable, unreachable), store)
    fw = new_fake_with_chan_size(10)
    fw.add({**TABLE, "metadata": {"name": "t", "namespace": "ns", "resourceVersion": "8"}})
    fw.add(pod("after", "9"))
    fw.stop()
    r._handle_watch(r.clock.now(), fw, threading.Event(), Chan(1), idle=60)
    assert store.list_keys() == ["ns/after"]
    assert any("unsupported watch event object gvk ('meta.k8s.io/v1', 'Table')"
               in rec.getMessage() for rec in caplog.records)
