"""``await_condition`` and its conditions (kube-rs ``runtime::wait``), on the embedded
server: through a watch of its own and on a running informer."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.aio import await_condition_async
from client_cache.api.schema import GroupVersionResource
from client_cache.informers import new_shared_informer_factory
from client_cache.informers.conditions import (
    all_of,
    any_of,
    exists,
    has_condition,
    is_deleted,
    is_pod_running,
)
from client_cache.informers.wait import ConditionTimeoutError, await_condition
from client_cache.testing.apiserver import EmbeddedApiServer

NS = "default"
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
PODS = GroupVersionResource("", "v1", "pods")


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer() as srv:
        yield srv


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


def test_waits_for_an_object_to_appear_then_to_go(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    core = CoreV1Api(api)
    before = _threads()
    asked: list[Any] = []

    def created_later(obj: Any) -> bool:
        asked.append(obj)
        if obj is None and len(asked) == 1:  # the wait's first look: create it now
            core.create_namespaced_config_map(NS, {"metadata": {"name": "later"}})
        return exists()(obj)

    got = await_condition(api, "later", created_later, namespace=NS, resource=CONFIGMAPS,
                          timeout=10)
    assert got["metadata"]["name"] == "later" and asked[0] is None
    uid = got["metadata"]["uid"]
    threading.Timer(0.05, core.delete_namespaced_config_map, ("later", NS)).start()
    assert await_condition(api, "later", is_deleted(uid), namespace=NS,
                           resource=CONFIGMAPS, timeout=10) is None
    # the waits' watches are gone with them
    assert {n for n in _threads() - before if not n.startswith(("Thread-", "apiserver-"))} == set()


def test_a_status_condition_on_a_running_informer(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    core = CoreV1Api(api)
    core.create_namespaced_pod(NS, {"metadata": {"name": "p"},
                                    "spec": {"containers": [{"name": "c", "image": "i"}]}})
    factory = new_shared_informer_factory(api, 0)
    pods = factory.for_resource(PODS)
    stop = threading.Event()
    factory.start(stop)
    try:
        ready = all_of(is_pod_running(), has_condition("Ready"))

        def mark_ready(obj: Any) -> bool:
            if obj is not None and obj.get("status") is None:  # first look: make it so
                core.patch_namespaced_pod_status("p", NS, {"status": {
                    "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
            return ready(obj)

        got = await_condition(pods, "p", mark_ready, namespace=NS, timeout=10)
        assert got["status"]["phase"] == "Running"
        assert len(pods.informer().get_indexer().list()) == 1  # the informer runs on
    finally:
        stop.set()
        factory.shutdown(timeout=1.0)


def test_a_timeout_a_stop_and_a_raising_condition(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    with pytest.raises(ConditionTimeoutError, match=r"not met within 0\.2 s"):
        await_condition(api, "never", exists(), namespace=NS, resource=CONFIGMAPS,
                        timeout=0.2)
    stop = threading.Event()
    stop.set()
    with pytest.raises(ConditionTimeoutError, match="stopped"):
        await_condition(api, "never", exists(), namespace=NS, resource=CONFIGMAPS,
                        stop=stop)

    def broken(obj: Any) -> bool:
        raise KeyError("status")
    with pytest.raises(KeyError):
        await_condition(api, "never", broken, namespace=NS, resource=CONFIGMAPS, timeout=10)
    assert any_of(exists(), is_deleted())(None)


def test_bad_arguments_are_refused(server: EmbeddedApiServer) -> None:
    with pytest.raises(ValueError, match=r"needs resource="):
        await_condition(server.api_client(), "x", exists())
    with pytest.raises(ValueError, match="name"):
        await_condition(server.api_client(), "", exists(), resource=CONFIGMAPS)


def test_the_asyncio_twin_waits_and_ends_when_cancelled(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    core = CoreV1Api(api)

    async def main() -> None:
        waiting = asyncio.ensure_future(await_condition_async(
            api, "soon", exists(), namespace=NS, resource=CONFIGMAPS, timeout=10))
        core.create_namespaced_config_map(NS, {"metadata": {"name": "soon"}})
        assert (await waiting)["metadata"]["name"] == "soon"
        never = asyncio.ensure_future(await_condition_async(
            api, "never", exists(), namespace=NS, resource=CONFIGMAPS))
        await asyncio.sleep(0)  # let it start
        never.cancel()
        with pytest.raises(asyncio.CancelledError):
            await never

    before = _threads()
    asyncio.run(main())  # run() waits for the executor's threads: the wait has ended
    assert {n for n in _threads() - before
            if not n.startswith(("Thread-", "apiserver-", "asyncio_"))} == set()
