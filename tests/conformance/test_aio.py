"""The asyncio bridge against both servers: an async reconcile on the test's loop writes
ConfigMaps with the ``kubernetes`` package's asyncio client, an ``events()`` consumer sees
them arrive, and ``wait_for_cache_sync_async`` waits for the caches."""

from __future__ import annotations

import asyncio
from typing import Any

from kubernetes.aio import client as aio_client
from kubernetes.client import CoreV1Api

from client_cache.aio import events, wait_for_cache_sync_async
from client_cache.api.labels import everything
from client_cache.api.schema import GroupVersionResource
from client_cache.api.watch import EventType
from client_cache.informers import SharedInformerFactoryOptions
from client_cache.informers import new_shared_informer_factory_with_options as new_factory
from client_cache.runtime import Action, Controller, ControllerConfig

PODS = GroupVersionResource("", "v1", "pods")


def async_client(api: Any) -> aio_client.ApiClient:
    """An asyncio client with the synchronous client's server and credentials."""
    sync = api.configuration
    config = aio_client.Configuration(
        host=sync.host, api_key=dict(sync.api_key), api_key_prefix=dict(sync.api_key_prefix),
        ssl_ca_cert=sync.ssl_ca_cert, cert_file=sync.cert_file, key_file=sync.key_file,
        verify_ssl=sync.verify_ssl)
    return aio_client.ApiClient(config)


def test_async_reconcile_writes_with_the_async_client(api: Any, ns: str) -> None:
    core = CoreV1Api(api)
    for i in range(3):
        core.create_namespaced_pod(ns, {
            "metadata": {"name": f"p{i}"},
            "spec": {"containers": [{"name": "c", "image": "pause"}]}})
    factory = new_factory(api, 0, SharedInformerFactoryOptions(namespace=ns))
    config_maps = factory.core().v1().config_maps()

    async def main() -> tuple[Any, list[str]]:
        writes = async_client(api)
        cores = aio_client.CoreV1Api(writes)

        async def reconcile(pod: dict[str, Any], ctx: Any) -> Action:
            name = pod["metadata"]["name"] + "-copy"
            cached = {c["metadata"]["name"]
                      for c in config_maps.lister().by_namespace(ns).list(everything())}
            if name in cached:  # read from the cache: no await
                return Action.await_change()
            await cores.create_namespaced_config_map(ns, {"metadata": {"name": name}})
            return Action.await_change()

        controller = Controller(factory, PODS).with_config(ControllerConfig(
            events=False, loop=asyncio.get_running_loop()))
        seen: list[str] = []

        async def follow() -> None:
            await wait_for_cache_sync_async(config_maps.informer(), timeout=30)
            async for event in events(config_maps.informer()):
                name = event.object["metadata"]["name"]
                if event.type is EventType.ADDED and name.endswith("-copy"):
                    seen.append(name)
                    if len(seen) == 3:
                        controller.shutdown()
                        return

        following = asyncio.ensure_future(follow())
        try:
            summary = await asyncio.wait_for(asyncio.to_thread(controller.run, reconcile),
                                             60)
            await asyncio.wait_for(following, 5)
        finally:
            following.cancel()
            await writes.close()
        return summary, seen

    summary, seen = asyncio.run(main())
    assert sorted(seen) == ["p0-copy", "p1-copy", "p2-copy"]
    assert summary.errors == 0 and summary.reconciles >= 3
    listed = core.list_namespaced_config_map(ns).items
    assert {"p0-copy", "p1-copy", "p2-copy"} <= {c.metadata.name for c in listed}
