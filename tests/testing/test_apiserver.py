"""The embedded API server, driven through the real ``kubernetes`` client and our
list-watch over loopback HTTP."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import config as kconfig
from kubernetes import dynamic
from kubernetes.client import (
    ApiClient,
    ApiException,
    CoreV1Api,
    CustomObjectsApi,
    V1ConfigMap,
    V1ObjectMeta,
    V1Pod,
)

from client_cache.api import fields as fieldsel
from client_cache.api import labels as labelsel
from client_cache.api.lists import ListOptions, list_continue, list_items, list_resource_version
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import Event, EventType, Watch
from client_cache.client.lister_watcher import ClientListerWatcher
from client_cache.client.pager import ListPager, new_list_pager
from client_cache.client.rest import request_json
from client_cache.errors import (
    ApiStatusError,
    is_already_exists,
    is_conflict,
    is_expired,
    is_internal_error,
    is_not_found,
    is_timeout,
    is_too_large_resource_version,
    is_too_many_requests,
    suggests_client_delay,
)
from client_cache.listwatch import new_filtered_list_watch_from_client, new_list_watch_from_client
from client_cache.testing.apiserver import (
    WRITTEN_AT_ANNOTATION,
    EmbeddedApiServer,
    EmbeddedApiServerProcess,
)
from client_cache.testing.apiserver.store import BUILTIN_RESOURCES, ApiStore, ResourceType, Watcher
from client_cache.util.chan import CLOSED
from tests.fixtures import eventually

PODS = GroupVersionResource("", "v1", "pods")
WIDGETS = ResourceType("example.com", "v1", "widgets", "Widget", True, ("wd",))
WIDGETS_GVR = GroupVersionResource("example.com", "v1", "widgets")


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    srv = EmbeddedApiServer(bookmark_interval=0.2)
    srv.register(WIDGETS)
    with srv:
        yield srv


def pod_body(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def create_pods(server: EmbeddedApiServer, n: int, ns: str = "default") -> None:
    for i in range(n):
        server.store.create(server.store.lookup("", "v1", "pods"), ns,  # type: ignore[arg-type]
                            pod_body(f"pod-{i:03d}", {"i": str(i % 3)}))


def lw(server: EmbeddedApiServer, ns: str = "default", **kw: Any) -> ClientListerWatcher:
    return new_list_watch_from_client(server.api_client(), PODS, ns, **kw)


def next_event(w: Watch, timeout: float = 5) -> Event:
    event, ok = w.result_chan().recv(timeout)
    assert ok, f"watch closed or timed out: {event!r}"
    return event


def events_until_closed(w: Watch, timeout: float = 5) -> list[Event]:
    out = []
    while True:
        event, ok = w.result_chan().recv(timeout)
        if not ok:
            assert event is CLOSED, "the watch did not close in time"
            return out
        out.append(event)


def test_binds_only_to_loopback(server: EmbeddedApiServer) -> None:
    assert server.host == "127.0.0.1"
    assert server.listening_address() == ("127.0.0.1", server.port)
    other = [a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
             if not a[4][0].startswith("127.")]
    for address in other:
        with pytest.raises(OSError), socket.create_connection((address, server.port), 0.5):
            pass


def test_a_body_cut_short_by_the_client_is_not_applied(server: EmbeddedApiServer) -> None:
    """A PUT whose client went away after the headers (an abandoned request) changes
    nothing: it is not read as an empty object replacing the stored one."""
    core = CoreV1Api(server.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "cut"},
                                                  "data": {"a": "1"}})
    with socket.create_connection((server.host, server.port), 5) as conn:
        conn.sendall(b"PUT /api/v1/namespaces/default/configmaps/cut HTTP/1.1\r\n"
                     b"Host: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 200\r\n\r\n")
        conn.shutdown(socket.SHUT_WR)
        assert conn.recv(1) == b""  # closed without an answer
    assert server.truncated_bodies == 1
    assert core.read_namespaced_config_map("cut", "default").data == {"a": "1"}


def test_typed_client_crud_and_errors(server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    created = core.create_namespaced_config_map(
        "default", V1ConfigMap(metadata=V1ObjectMeta(name="cfg"), data={"a": "1"}))
    assert created.metadata.uid and created.metadata.resource_version
    assert created.metadata.creation_timestamp is not None
    with pytest.raises(ApiException) as info:
        core.create_namespaced_config_map("default", V1ConfigMap(metadata=V1ObjectMeta(name="cfg")))
    assert info.value.status == 409 and json.loads(info.value.body)["reason"] == "AlreadyExists"
    stale = created.metadata.resource_version
    created.data = {"a": "2"}
    updated = core.replace_namespaced_config_map("cfg", "default", created)
    assert updated.metadata.resource_version != stale
    created.metadata.resource_version = stale
    with pytest.raises(ApiException) as info:
        core.replace_namespaced_config_map("cfg", "default", created)
    assert info.value.status == 409 and json.loads(info.value.body)["reason"] == "Conflict"
    patched = core.patch_namespaced_config_map("cfg", "default", {"data": {"b": "3"}})
    assert patched.data == {"a": "2", "b": "3"}
    core.delete_namespaced_config_map("cfg", "default")
    with pytest.raises(ApiException) as info:
        core.read_namespaced_config_map("cfg", "default")
    assert info.value.status == 404 and json.loads(info.value.body)["reason"] == "NotFound"


def test_store_semantics_generation_and_errors(server: EmbeddedApiServer) -> None:
    store = server.store
    pods = store.lookup("", "v1", "pods")
    assert pods is not None
    obj = store.create(pods, "ns", pod_body("a"))
    assert obj["metadata"]["generation"] == 1
    obj["metadata"]["labels"] = {"x": "y"}
    same_spec = store.update(pods, "ns", "a", obj)
    assert same_spec["metadata"]["generation"] == 1  # metadata-only change
    same_spec["spec"]["containers"][0]["image"] = "nginx"
    bumped = store.update(pods, "ns", "a", same_spec)
    assert bumped["metadata"]["generation"] == 2
    with pytest.raises(ApiStatusError) as info:
        store.update(pods, "ns", "a", same_spec)  # stale resourceVersion
    assert is_conflict(info.value)
    with pytest.raises(ApiStatusError) as info:
        store.create(pods, "ns", pod_body("a"))
    assert is_already_exists(info.value)
    with pytest.raises(ApiStatusError) as info:
        store.delete(pods, "ns", "missing")
    assert is_not_found(info.value)
    generated = store.create(pods, "ns", {"metadata": {"generateName": "web-"}})
    assert generated["metadata"]["name"].startswith("web-")


def test_list_and_watch_pods_through_list_watch(server: EmbeddedApiServer) -> None:
    create_pods(server, 5)
    listed = lw(server).list(ListOptions())
    assert [o["metadata"]["name"] for o in list_items(listed)] == [f"pod-{i:03d}" for i in range(5)]
    rv = list_resource_version(listed)
    w = lw(server).watch(ListOptions(resource_version=rv))
    core = CoreV1Api(server.api_client())
    core.create_namespaced_pod("default", pod_body("late"))
    core.patch_namespaced_pod("late", "default", {"metadata": {"labels": {"p": "1"}}})
    core.delete_namespaced_pod("late", "default")
    got = [next_event(w) for _ in range(3)]
    assert [e.type for e in got] == [EventType.ADDED, EventType.MODIFIED, EventType.DELETED]
    rvs = [int(e.object["metadata"]["resourceVersion"]) for e in got]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)
    w.stop()


def test_models_dynamic_client_and_custom_resource(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    create_pods(server, 2)
    typed = lw(server, object_type=V1Pod).list(ListOptions())
    assert all(isinstance(p, V1Pod) for p in list_items(typed))
    dyn = dynamic.DynamicClient(api)
    assert len(dyn.resources.get(api_version="v1", kind="Pod").get(namespace="default").items) == 2
    widgets = dyn.resources.get(api_version="example.com/v1", kind="Widget")
    widgets.create(body={"apiVersion": "example.com/v1", "kind": "Widget",
                         "metadata": {"name": "w1"}, "spec": {"size": 3}}, namespace="default")
    custom = CustomObjectsApi(api).list_namespaced_custom_object(
        "example.com", "v1", "default", "widgets")
    assert [w["metadata"]["name"] for w in custom["items"]] == ["w1"]
    wlw = new_list_watch_from_client(api, WIDGETS_GVR, "default")
    listed = wlw.list(ListOptions())
    w = wlw.watch(ListOptions(resource_version=list_resource_version(listed)))
    widgets.patch(body={"spec": {"size": 4}}, name="w1", namespace="default",
                  content_type="application/merge-patch+json")
    event = next_event(w)
    assert event.type is EventType.MODIFIED and event.object["spec"]["size"] == 4
    w.stop()


def test_paging_returns_every_object_once(server: EmbeddedApiServer) -> None:
    create_pods(server, 53)
    pages: list[int] = []
    source = lw(server)

    def page_fn(options: ListOptions) -> Any:
        page = source.list(options)
        pages.append(len(list_items(page)))
        return page

    result, paginated = ListPager(page_fn, page_size=10).list(ListOptions())
    names = [o["metadata"]["name"] for o in list_items(result)]
    assert names == [f"pod-{i:03d}" for i in range(53)] and len(set(names)) == 53
    assert paginated and pages == [10, 10, 10, 10, 10, 3]


def test_pages_are_a_consistent_snapshot(server: EmbeddedApiServer) -> None:
    create_pods(server, 6)
    first = lw(server).list(ListOptions(limit=3))
    store = server.store
    pods = store.lookup("", "v1", "pods")
    assert pods is not None
    store.delete(pods, "default", "pod-004")
    store.create(pods, "default", pod_body("pod-999"))
    second = lw(server).list(ListOptions(limit=3, continue_=list_continue(first)))
    assert [o["metadata"]["name"] for o in list_items(second)] == ["pod-003", "pod-004",
                                                                    "pod-005"]
    assert list_resource_version(second) == list_resource_version(first)


def test_expired_continue_token_falls_back_to_full_list(server: EmbeddedApiServer) -> None:
    create_pods(server, 25)
    source = lw(server)
    calls: list[ListOptions] = []

    def page_fn(options: ListOptions) -> Any:
        calls.append(options.copy())
        if len(calls) == 2:
            pods = server.store.lookup("", "v1", "pods")
            assert pods is not None
            server.store.create(pods, "elsewhere", {"metadata": {"generateName": "bump-"}})
            server.compact()  # ...compacted: the token from page 1 is now too old
        return source.list(options)

    with pytest.raises(ApiStatusError) as info:
        ListPager(page_fn, page_size=10).list(ListOptions())
    assert is_expired(info.value)
    calls.clear()
    source = new_list_watch_from_client(server.api_client(), PODS, "default")
    result, paginated = new_list_pager(page_fn).list(ListOptions(limit=10))
    assert len(list_items(result)) == 25 and paginated
    assert calls[-1].limit == 0 and calls[-1].continue_ == ""


def test_list_resource_version_semantics(server: EmbeddedApiServer) -> None:
    create_pods(server, 3)
    source = lw(server)
    current = int(list_resource_version(source.list(ListOptions())))
    pods = server.store.lookup("", "v1", "pods")
    assert pods is not None
    server.store.delete(pods, "default", "pod-000")
    exact = source.list(ListOptions(resource_version=str(current),
                                    resource_version_match="Exact"))
    assert len(list_items(exact)) == 3 and list_resource_version(exact) == str(current)
    newer = source.list(ListOptions(resource_version=str(current),
                                    resource_version_match="NotOlderThan"))
    assert len(list_items(newer)) == 2
    with pytest.raises(ApiStatusError) as info:
        source.list(ListOptions(resource_version=str(current + 100)))
    assert is_too_large_resource_version(info.value) and is_timeout(info.value)
    unlimited = source.list(ListOptions(resource_version="0", limit=1))
    assert len(list_items(unlimited)) == 2 and not list_continue(unlimited)
    server.compact()
    with pytest.raises(ApiStatusError) as info:
        source.list(ListOptions(resource_version=str(current), resource_version_match="Exact"))
    assert is_expired(info.value)


def test_selectors_on_list_and_watch(server: EmbeddedApiServer) -> None:
    create_pods(server, 6)
    # (new_list_watch_from_client would overwrite the field selector, as in Go)
    source = new_filtered_list_watch_from_client(server.api_client(), PODS, "default")
    listed = source.list(ListOptions(label_selector="i=1"))
    assert [o["metadata"]["name"] for o in list_items(listed)] == ["pod-001", "pod-004"]
    by_name = source.list(ListOptions(field_selector="metadata.name=pod-002"))
    assert [o["metadata"]["name"] for o in list_items(by_name)] == ["pod-002"]
    w = source.watch(ListOptions(resource_version=list_resource_version(listed),
                                 label_selector="i=1"))
    core = CoreV1Api(server.api_client())
    core.patch_namespaced_pod("pod-001", "default", {"metadata": {"labels": {"i": "2"}}})
    core.patch_namespaced_pod("pod-000", "default", {"metadata": {"labels": {"i": "1"}}})
    core.patch_namespaced_pod("pod-000", "default", {"metadata": {"labels": {"x": "y"}}})
    got = [(e.type, e.object["metadata"]["name"]) for e in (next_event(w) for _ in range(3))]
    assert got == [(EventType.DELETED, "pod-001"), (EventType.ADDED, "pod-000"),
                   (EventType.MODIFIED, "pod-000")]
    w.stop()


def test_watch_initial_events_and_bookmarks(server: EmbeddedApiServer) -> None:
    create_pods(server, 3)
    w = lw(server).watch(ListOptions(send_initial_events=True, allow_watch_bookmarks=True,
                                     resource_version_match="NotOlderThan"))
    initial = [next_event(w) for _ in range(4)]
    assert [e.type for e in initial] == ["ADDED"] * 3 + ["BOOKMARK"]
    end = initial[3].object["metadata"]
    assert end["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert end["resourceVersion"] == str(server.store.resource_version)
    # periodic bookmarks only once the resource changed after the watch's start; a change
    # in another namespace moves them on without an event for this watch
    create_pods(server, 1, ns="other")
    periodic = next_event(w, 5)  # bookmark_interval is 0.2 s
    assert periodic.type is EventType.BOOKMARK and "annotations" not in periodic.object["metadata"]
    assert periodic.object["metadata"]["resourceVersion"] == str(server.store.resource_version)
    w.stop()
    plain = lw(server).watch(ListOptions())  # no resourceVersion: current state first
    assert [next_event(plain).type for _ in range(3)] == ["ADDED"] * 3
    plain.stop()


def test_watch_timeout_seconds_ends_stream(server: EmbeddedApiServer) -> None:
    w = lw(server).watch(ListOptions(resource_version="1", timeout_seconds=1))
    start = time.monotonic()
    assert events_until_closed(w) == []
    assert 0.9 < time.monotonic() - start < 5


def test_fault_watch_from_compacted_version(server: EmbeddedApiServer) -> None:
    create_pods(server, 2)
    old = server.store.resource_version
    create_pods(server, 1, ns="other")
    server.compact()
    events = events_until_closed(lw(server).watch(ListOptions(resource_version=str(old))))
    assert len(events) == 1 and events[0].type is EventType.ERROR
    assert events[0].object["code"] == 410 and events[0].object["reason"] == "Expired"


def test_fault_410_error_event_and_close(server: EmbeddedApiServer) -> None:
    w = lw(server).watch(ListOptions(resource_version="1"))
    wait_for_watches(server, 1)  # registered right after the response starts
    server.send_watch_error(410)
    events = events_until_closed(w)
    assert [e.type for e in events] == ["ERROR"] and events[0].object["code"] == 410
    w2 = lw(server).watch(ListOptions(resource_version="1"))
    wait_for_watches(server, 1)
    server.close_watches()
    assert events_until_closed(w2) == []
    w3 = lw(server).watch(ListOptions(resource_version="1"))
    wait_for_watches(server, 1)
    server.abort_watches()
    assert events_until_closed(w3) == []


def wait_for_watches(server: EmbeddedApiServer, n: int) -> None:
    eventually(lambda: server.open_watch_count() >= n, 5, "watch never registered")


@pytest.mark.parametrize(
    ("code", "predicate"), [(429, is_too_many_requests), (500, is_internal_error),
                            (504, is_timeout)]
)
def test_fault_status_codes(server: EmbeddedApiServer, code: int, predicate: Any) -> None:
    server.fail_next(2, code, retry_after=3 if code == 429 else 0)
    source = lw(server)
    for _ in range(2):
        with pytest.raises(ApiStatusError) as info:
            source.list(ListOptions())
        assert predicate(info.value) and info.value.code == code
    if code == 429:
        assert suggests_client_delay(info.value) == (3, True)
    source.list(ListOptions())  # the fault is used up


def test_fault_watch_only_failure(server: EmbeddedApiServer) -> None:
    server.fail_next(1, 500, watch_only=True)
    source = lw(server)
    source.list(ListOptions())
    with pytest.raises(ApiStatusError):
        source.watch(ListOptions(resource_version="1"))
    source.watch(ListOptions(resource_version="1")).stop()


def test_fault_of_one_method_waits_for_a_request_of_that_method(
        server: EmbeddedApiServer) -> None:
    core = CoreV1Api(server.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}})
    server.fail_next(1, 409, method="PATCH")
    core.read_namespaced_config_map("cm", "default")  # a GET: not the one
    lw(server).watch(ListOptions(resource_version="1")).stop()  # nor a watch
    with pytest.raises(ApiException) as caught:
        core.patch_namespaced_config_map("cm", "default", {"data": {"a": "1"}})
    assert caught.value.status == 409 and json.loads(caught.value.body)["reason"] == "Conflict"
    core.patch_namespaced_config_map("cm", "default", {"data": {"a": "1"}})  # served once


def test_fault_stall_then_stop_and_idle_timeout(server: EmbeddedApiServer) -> None:
    w = lw(server).watch(ListOptions(resource_version="1", allow_watch_bookmarks=True))
    wait_for_watches(server, 1)
    server.stall_watches()
    create_pods(server, 1)  # swallowed: the watch is stalled
    assert w.result_chan().recv(0.5) == (None, False)
    start = time.monotonic()
    w.stop()
    assert w.join(1.0)  # type: ignore[attr-defined]
    assert time.monotonic() - start < 1.0
    idle = lw(server, idle_timeout=0.3).watch(ListOptions(resource_version="1",
                                                          allow_watch_bookmarks=True))
    wait_for_watches(server, 1)
    server.stall_watches()
    assert events_until_closed(idle) == []  # ended by the client-side idle timeout
    server.stall_watches(False)


def test_fault_garbled_line(server: EmbeddedApiServer) -> None:
    w = lw(server).watch(ListOptions(resource_version="1"))
    wait_for_watches(server, 1)
    server.send_garbled_line()
    events = events_until_closed(w)
    assert len(events) == 1 and events[0].type is EventType.ERROR
    assert events[0].object["details"]["causes"][0]["reason"] == "ClientWatchDecoding"


def test_fault_latency_and_drop_connections(server: EmbeddedApiServer) -> None:
    server.latency = 0.2
    start = time.monotonic()
    lw(server).list(ListOptions())
    assert time.monotonic() - start >= 0.2
    server.latency = 0
    w = lw(server).watch(ListOptions(resource_version="1"))
    wait_for_watches(server, 1)
    server.drop_all_connections()
    assert events_until_closed(w) == []
    lw(server).list(ListOptions())  # new connections work


def test_control_endpoints(server: EmbeddedApiServer) -> None:
    http = urllib3.PoolManager()
    resp = http.request("POST", f"{server.url}/__control/fail?count=1&code=429&retryAfter=2")
    assert resp.status == 200 and json.loads(resp.data)["ok"]
    with pytest.raises(ApiStatusError) as info:
        lw(server).list(ListOptions())
    assert is_too_many_requests(info.value)
    resp = http.request("POST", f"{server.url}/__control/compact")
    assert json.loads(resp.data)["resourceVersion"] == server.store.resource_version
    assert http.request("POST", f"{server.url}/__control/nope").status == 404


def test_discovery_documents(server: EmbeddedApiServer) -> None:
    http = urllib3.PoolManager()
    groups = json.loads(http.request("GET", f"{server.url}/apis").data)
    names = {g["name"] for g in groups["groups"]}
    assert {"apps", "batch", "coordination.k8s.io", "example.com"} <= names
    core = json.loads(http.request("GET", f"{server.url}/api/v1").data)
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["kind"] == "Pod" and pods["namespaced"] and "watch" in pods["verbs"]
    assert http.request("GET", f"{server.url}/apis/nope/v1/things").status == 404


def test_kubeconfig_and_process_mode(tmp_path: Any) -> None:
    path = str(tmp_path / "kubeconfig")
    proc = subprocess.Popen(
        [sys.executable, "-m", "client_cache.testing.apiserver", "--kubeconfig", path],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        api = kconfig.new_client_from_config(config_file=path)
        assert isinstance(api, ApiClient)
        core = CoreV1Api(api)
        core.create_namespaced_pod("default", pod_body("from-kubeconfig"))
        assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == [
            "from-kubeconfig"]
    finally:
        proc.terminate()
        assert proc.wait(10) == 0


def test_load_generator_mixed_changes_keep_the_count(server: EmbeddedApiServer) -> None:
    http = urllib3.PoolManager()
    pods = server.store.lookup("", "v1", "pods")
    assert pods is not None
    http.request("POST", f"{server.url}/__control/load?count=10&namespace=mx&kind=pods")
    deadline = time.monotonic() + 10
    while len(server.store.names(pods, "mx")) < 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    before = server.store.names(pods, "mx")
    assert len(before) == 10
    w = lw(server, "mx").watch(ListOptions(resource_version=server.store.resource_version))
    wait_for_watches(server, 1)
    http.request("POST", f"{server.url}/__control/load?count=8&namespace=mx&kind=pods"
                         "&mix=mixed&rate=500")
    events: list[Event] = []
    while len(events) < 8:
        events.append(next_event(w, timeout=10))
    w.stop()
    # create, update, update, delete (the oldest), twice; every change stamped
    assert [e.type for e in events] == [EventType.ADDED, EventType.MODIFIED,
                                        EventType.MODIFIED, EventType.DELETED] * 2
    assert [e.object["metadata"]["name"] for e in events if e.type == EventType.DELETED] \
        == before[:2]
    stamps = [float(e.object["metadata"]["annotations"][WRITTEN_AT_ANNOTATION])
              for e in events]
    assert stamps == sorted(stamps)
    assert all(e.object["status"]["message"].startswith("change ")
               for e in events if e.type == EventType.MODIFIED)
    after = server.store.names(pods, "mx")
    assert len(after) == 10 and set(before[2:]) <= set(after)
    assert http.request("POST", f"{server.url}/__control/load?count=1&mix=odd").status >= 400


@pytest.mark.parametrize("host", ["0.0.0.0", "", "::", "192.0.2.1", "example.com"])
def test_refuses_to_bind_anything_but_loopback(host: str) -> None:
    with pytest.raises(ValueError, match="only to loopback"):
        EmbeddedApiServer(host=host)
    proc = subprocess.run([sys.executable, "-m", "client_cache.testing.apiserver", "--host",
                           host], check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "only to loopback" in proc.stderr


def test_localhost_is_loopback() -> None:
    with EmbeddedApiServer(host="localhost") as server:
        assert server.host == "127.0.0.1"


def test_process_killed_and_restarted_keeps_its_state(tmp_path: Any) -> None:
    """kill_and_restart: SIGKILL after a frozen dump, a new process on the same port with
    the same objects and resourceVersions; the watch history starts over (older
    resourceVersions are too old to watch from), new writes continue the revisions."""
    with EmbeddedApiServerProcess(bookmark_interval=60) as proc:
        core = CoreV1Api(proc.api_client())
        for i in range(3):
            core.create_namespaced_config_map("kr", {"metadata": {"name": f"c{i}"}})
        first_rv = core.list_namespaced_config_map("kr").metadata.resource_version
        before = {c.metadata.name: c.metadata.resource_version
                  for c in core.list_namespaced_config_map("kr").items}
        old_pid, port = proc.pid, proc.port
        revision = proc.kill_and_restart(str(tmp_path / "state.json"))
        assert proc.pid != old_pid and proc.port == port and revision == int(first_rv)
        with pytest.raises(OSError):
            os.kill(old_pid, 0)  # the old process is gone
        core = CoreV1Api(proc.api_client())
        listed = core.list_namespaced_config_map("kr")
        assert {c.metadata.name: c.metadata.resource_version for c in listed.items} == before
        assert listed.metadata.resource_version == first_rv
        w = new_list_watch_from_client(proc.api_client(), GroupVersionResource(
            "", "v1", "configmaps"), "kr").watch(ListOptions(resource_version="2"))
        event = next_event(w)
        assert event.type == EventType.ERROR and event.object["code"] == 410
        w.stop()
        created = core.create_namespaced_config_map("kr", {"metadata": {"name": "c9"}})
        assert int(created.metadata.resource_version) == int(first_rv) + 1


def test_the_server_process_exits_when_its_parent_dies() -> None:
    """SIGKILL of the program that started an EmbeddedApiServerProcess (what closing the
    terminal of ``make demo`` amounts to): the server exits instead of living on under
    PID 1."""
    parent = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\n"
         "from client_cache.testing.apiserver import EmbeddedApiServerProcess\n"
         "server = EmbeddedApiServerProcess().start()\n"
         "print(server.pid, flush=True)\n"
         "time.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        os.kill(child, 0)  # alive
    finally:
        parent.kill()
        parent.wait(10)
        if parent.stdout is not None:
            parent.stdout.close()
    killed_at = time.monotonic()
    while True:
        try:
            with open(f"/proc/{child}/stat", encoding="ascii") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break  # exited; only its reaping (by PID 1) is left
        except (FileNotFoundError, ProcessLookupError):
            break
        if time.monotonic() - killed_at > 5:
            os.kill(child, 9)
            raise AssertionError("the server process outlived its parent")
        time.sleep(0.02)
    assert time.monotonic() - killed_at < 2.0


def test_a_failed_write_leaves_the_kept_alive_connection_usable(
        server: EmbeddedApiServer) -> None:
    """An injected failure still reads the request body, so the next request on the same
    connection is not parsed from its leftovers (it used to get a 400)."""
    api = server.api_client()
    body = {"metadata": {"name": "cm"}, "data": {"k": "v" * 1000}}
    server.fail_next(1, 500)
    path = "/api/v1/namespaces/default/configmaps"
    assert request_json(api, "POST", path, body)[0] == 500
    status, created = request_json(api, "POST", path, body)
    assert status == 201 and created["metadata"]["name"] == "cm"
    api.close()


def test_no_bookmark_overtakes_a_queued_event() -> None:
    """A bookmark carries the resource's last revision: sent while an older event still
    waits in the watcher's queue, it would let a client that loses the connection right
    then resume after that event and never see it (seen as a lost object under load)."""
    store = ApiStore()
    pods = next(r for r in BUILTIN_RESOURCES if r.plural == "pods")
    store.create(pods, "default", {"metadata": {"name": "first"}})
    watcher = Watcher(pods, "", labelsel.everything(), fieldsel.everything())
    store.open_watch(watcher, store.resource_version, False, False)
    created = store.create(pods, "default", {"metadata": {"name": "second"}})
    assert store.bookmark(watcher) is None  # the ADDED event of "second" is still queued
    line = watcher.queue.get_nowait()
    assert json.loads(line)["object"]["metadata"]["name"] == "second"
    mark = store.bookmark(watcher)  # caught up: now the bookmark may go
    assert mark is not None
    assert json.loads(mark)["object"]["metadata"]["resourceVersion"] == \
        created["metadata"]["resourceVersion"]


def test_protobuf_errors_and_faults_arrive_as_the_json_ones_do(
        server: EmbeddedApiServer) -> None:
    """Asked for protobuf, the server's error statuses, a watch's ERROR event and a frame
    that is no event reach the caller as they do in JSON."""
    def pb() -> ClientListerWatcher:
        return lw(server, protobuf=True)

    server.fail_next(1, 500)
    with pytest.raises(ApiStatusError) as failed:
        pb().list(ListOptions())
    assert failed.value.code == 500 and is_internal_error(failed.value)
    w = pb().watch(ListOptions(resource_version="1"))
    wait_for_watches(server, 1)
    server.send_watch_error(410)
    events = events_until_closed(w)
    assert [e.type for e in events] == ["ERROR"]
    assert events[0].object["code"] == 410 and events[0].object["kind"] == "Status"
    w = pb().watch(ListOptions(resource_version="1"))
    wait_for_watches(server, 1)
    server.send_garbled_line()
    events = events_until_closed(w)
    assert [e.type for e in events] == ["ERROR"]
    assert events[0].object["details"]["causes"][0]["reason"] == "ClientWatchDecoding"
