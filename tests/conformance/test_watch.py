"""WATCH semantics: ordering, replay from a list's resourceVersion, bookmarks, timeouts,
410 on expired history, streaming initial events, selectors."""

from __future__ import annotations

import re
import time
from typing import Any

from kubernetes.client import CoreV1Api

from client_cache.api.lists import ListOptions
from client_cache.api.watch import Event, EventType
from tests.conformance.util import (
    PODTEMPLATES,
    Backend,
    changes,
    collect,
    configmap,
    create_configmaps,
    initial_events_ended,
    list_all,
    lister_watcher,
    name_of,
    rv,
)


def write_script(core: CoreV1Api, ns: str) -> list[tuple[str, str]]:
    """Sequential creates, updates and deletes; returns the (type, name) a watch must see."""
    expected: list[tuple[str, str]] = []
    for i in range(8):
        core.create_namespaced_config_map(ns, configmap(f"w-{i}"))
        expected.append(("ADDED", f"w-{i}"))
    for i in range(4):
        core.patch_namespaced_config_map(f"w-{i}", ns, {"data": {"value": "1"}})
        expected.append(("MODIFIED", f"w-{i}"))
    for i in range(4, 8):
        core.delete_namespaced_config_map(f"w-{i}", ns)
        expected.append(("DELETED", f"w-{i}"))
    core.patch_namespaced_config_map("w-0", ns, {"data": {"value": "2"}})
    expected.append(("MODIFIED", "w-0"))
    return expected


def non_bookmarks(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type != EventType.BOOKMARK]


def assert_increasing(events: list[Event]) -> None:
    versions = [rv(e.object) for e in non_bookmarks(events)]
    assert versions == sorted(versions) and len(set(versions)) == len(versions), versions


def test_watch_from_list_rv_sees_every_change_in_order(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    lw = lister_watcher(api, ns)
    start = list_all(lw)["metadata"]["resourceVersion"]
    watch = lw.watch(ListOptions(resource_version=start))
    expected = write_script(core, ns)
    events, _ = collect(watch, lambda evs: len(non_bookmarks(evs)) >= len(expected))
    assert changes(events) == expected
    assert_increasing(events)
    assert all(rv(e.object) > int(start) for e in non_bookmarks(events))


def test_watch_replays_changes_made_before_it_started(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    lw = lister_watcher(api, ns)
    start = list_all(lw)["metadata"]["resourceVersion"]
    expected = write_script(core, ns)
    events, _ = collect(lw.watch(ListOptions(resource_version=start)),
                        lambda evs: len(non_bookmarks(evs)) >= len(expected))
    assert changes(events) == expected
    assert_increasing(events)
    # a delete carries the object's last state with the delete's resourceVersion
    deleted = [e.object for e in events if e.type == EventType.DELETED]
    assert [o["data"] for o in deleted] == [{"value": "0"}] * 4


def test_bookmarks_only_when_asked_and_timeout_ends_the_stream(api: Any, ns: str) -> None:
    """A bookmark carries the resource's newest resourceVersion and is only sent once that
    is newer than the watch's start: here a change in another namespace, which the watch
    itself does not see. The real server sends it 2 s before the watch's deadline."""
    create_configmaps(api, ns, ["b-0"])
    other = f"{ns}-other"
    CoreV1Api(api).create_namespace({"metadata": {"name": other}})
    lw = lister_watcher(api, ns)
    start = list_all(lw)["metadata"]["resourceVersion"]
    began = time.monotonic()
    watch = lw.watch(ListOptions(resource_version=start, allow_watch_bookmarks=True,
                                 timeout_seconds=4))
    elsewhere = CoreV1Api(api).create_namespaced_config_map(other, configmap("b-1"))
    events, ended = collect(watch, lambda evs: False, timeout=15)
    elapsed = time.monotonic() - began
    assert ended and 3.5 <= elapsed < 8, elapsed
    bookmarks = [e.object for e in events if e.type == EventType.BOOKMARK]
    assert bookmarks and not non_bookmarks(events)
    for mark in bookmarks:
        assert mark["kind"] == "ConfigMap" and mark["apiVersion"] == "v1"
        assert set(mark["metadata"]) <= {"resourceVersion", "creationTimestamp"}
        assert int(mark["metadata"]["resourceVersion"]) == int(
            elsewhere.metadata.resource_version)
    # without allowWatchBookmarks there are none
    events, ended = collect(lw.watch(ListOptions(resource_version=start, timeout_seconds=3)),
                            lambda evs: False, timeout=15)
    assert ended and events == []


def test_no_bookmark_before_anything_changed(api: Any, ns: str) -> None:
    lw = lister_watcher(api, ns)
    start = list_all(lw)["metadata"]["resourceVersion"]
    events, ended = collect(lw.watch(ListOptions(resource_version=start,
                                                 allow_watch_bookmarks=True,
                                                 timeout_seconds=4)), lambda evs: False)
    assert ended and events == []


def test_watch_from_a_future_revision_waits_for_it(api: Any, ns: str) -> None:
    """Not an error: the stream stays open and sends only changes after that revision."""
    core = CoreV1Api(api)
    lw = lister_watcher(api, ns)
    current = int(list_all(lw)["metadata"]["resourceVersion"])
    watch = lw.watch(ListOptions(resource_version=str(current + 3), timeout_seconds=10))
    for i in range(6):
        core.create_namespaced_config_map(ns, configmap(f"f-{i}"))
    events, _ = collect(watch, lambda evs: ("ADDED", "f-5") in changes(evs))
    assert all(rv(e.object) > current + 3 for e in events)
    # only the creates after that revision, in order: the newest ones. With nothing else
    # written meanwhile they take the next six revisions and exactly f-3..f-5 come; a real
    # server may spend revisions elsewhere in between (its own leases, other tests'
    # namespaces), which only pushes more of the creates past it: never fewer than three
    seen = [name for _, name in changes(events)]
    assert 3 <= len(seen) <= 6 and seen == [f"f-{i}" for i in range(6 - len(seen), 6)]


def test_watch_from_expired_history_is_410(api: Any, ns: str, backend: Backend) -> None:
    create_configmaps(api, ns, ["x"])
    lw = lister_watcher(api, ns)
    old = list_all(lw)["metadata"]["resourceVersion"]
    CoreV1Api(api).patch_namespaced_config_map("x", ns, {"data": {"value": "1"}})
    backend.expire_watch_cache()
    events, ended = collect(lw.watch(ListOptions(resource_version=old)), lambda evs: False)
    assert ended and len(events) == 1 and events[0].type == EventType.ERROR
    status = events[0].object
    assert (status["code"], status["reason"], status["status"]) == (410, "Expired", "Failure")
    match = re.fullmatch(r"too old resource version: (\d+) \((\d+)\)", status["message"])
    assert match is not None, status["message"]
    assert int(match.group(1)) == int(old) and int(match.group(2)) > int(old)


def test_uncached_watch_from_compacted_revision_is_410(api: Any, ns: str,
                                                       backend: Backend) -> None:
    """podtemplates have no watch cache on the real server: its watches read etcd, and
    etcd's compaction is what makes a revision too old."""
    core = CoreV1Api(api)
    template = {"template": {"spec": {"containers": [{"name": "c", "image": "pause"}]}}}
    core.create_namespaced_pod_template(ns, {"metadata": {"name": "t"}, **template})
    lw = lister_watcher(api, ns, PODTEMPLATES)
    old = list_all(lw)["metadata"]["resourceVersion"]
    for value in ("a", "b"):
        core.patch_namespaced_pod_template("t", ns, {"metadata": {"labels": {"v": value}}})
    backend.compact()
    events, ended = collect(lw.watch(ListOptions(resource_version=old)), lambda evs: False)
    assert ended and [e.type for e in events] == [EventType.ERROR]
    status = events[0].object
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"] == "The resourceVersion for the provided watch is too old."


def test_send_initial_events_ends_with_the_bookmark(api: Any, ns: str) -> None:
    create_configmaps(api, ns, [f"i-{i}" for i in range(5)])
    lw = lister_watcher(api, ns)
    watch = lw.watch(ListOptions(send_initial_events=True, allow_watch_bookmarks=True,
                                 resource_version_match="NotOlderThan"))
    try:
        events, _ = collect_open(watch, initial_events_ended)
        added = [e for e in events if e.type == EventType.ADDED]
        assert sorted(name_of(e.object) for e in added) == [f"i-{i}" for i in range(5)]
        end = events[-1]
        assert end.type == EventType.BOOKMARK
        assert end.object["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert int(end.object["metadata"]["resourceVersion"]) >= max(rv(e.object) for e in added)
        assert [e.type for e in events[:-1]] == [EventType.ADDED] * 5
        # then the stream goes on with later changes
        CoreV1Api(api).patch_namespaced_config_map("i-3", ns, {"data": {"value": "9"}})
        later, _ = collect(watch, lambda evs: bool(non_bookmarks(evs)))
        assert changes(later) == [("MODIFIED", "i-3")]
    finally:
        watch.stop()


def collect_open(watch: Any, until: Any, timeout: float = 20.0) -> tuple[list[Event], bool]:
    """Like :func:`collect` but leaves the watch running."""
    events: list[Event] = []
    deadline = time.monotonic() + timeout
    while not until(events) and time.monotonic() < deadline:
        event, ok = watch.result_chan().recv(timeout=max(0.0, deadline - time.monotonic()))
        if not ok:
            return events, True
        if event is not None:
            events.append(event)
    return events, False


def test_label_and_field_selectors_on_list_and_watch(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    create_configmaps(api, ns, [f"s-{i}" for i in range(6)],
                      labels=lambda n: {"tier": "web" if int(n[-1]) % 2 else "db"})
    lw = lister_watcher(api, ns)
    web = list_all(lw, label_selector="tier=web")
    assert [name_of(o) for o in web["items"]] == ["s-1", "s-3", "s-5"]
    assert [name_of(o) for o in list_all(lw, label_selector="tier!=web,tier")["items"]] == [
        "s-0", "s-2", "s-4"]
    assert [name_of(o) for o in list_all(lw, label_selector="tier in (db)",
                                         field_selector="metadata.name!=s-0")["items"]] == [
        "s-2", "s-4"]
    assert [name_of(o) for o in list_all(lw, field_selector="metadata.name=s-3")["items"]] == [
        "s-3"]
    watch = lw.watch(ListOptions(resource_version=web["metadata"]["resourceVersion"],
                                 label_selector="tier=web"))
    core.patch_namespaced_config_map("s-1", ns, {"data": {"value": "1"}})        # stays in
    core.patch_namespaced_config_map("s-3", ns, {"metadata": {"labels": {"tier": "db"}}})
    core.patch_namespaced_config_map("s-0", ns, {"data": {"value": "1"}})        # never in
    core.patch_namespaced_config_map("s-2", ns, {"metadata": {"labels": {"tier": "web"}}})
    core.delete_namespaced_config_map("s-5", ns)
    core.create_namespaced_config_map(ns, configmap("s-6", {"tier": "web"}))
    core.create_namespaced_config_map(ns, configmap("s-7", {"tier": "db"}))
    events, _ = collect(watch, lambda evs: len(non_bookmarks(evs)) >= 5)
    assert changes(events) == [("MODIFIED", "s-1"), ("DELETED", "s-3"), ("ADDED", "s-2"),
                               ("DELETED", "s-5"), ("ADDED", "s-6")]
    # an object leaving the selector is reported with its last matching content but the
    # resourceVersion of the change that made it leave
    left = next(e.object for e in events if name_of(e.object) == "s-3")
    assert left["metadata"]["labels"] == {"tier": "web"}
    now = core.read_namespaced_config_map("s-3", ns)
    assert left["metadata"]["resourceVersion"] == now.metadata.resource_version
    fields = lw.watch(ListOptions(resource_version=web["metadata"]["resourceVersion"],
                                  field_selector="metadata.name=s-0"))
    events, _ = collect(fields, lambda evs: len(non_bookmarks(evs)) >= 1)
    assert changes(events) == [("MODIFIED", "s-0")]
