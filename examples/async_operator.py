"""An asyncio operator: reads through client_cache's listers, writes with an async client.

For every pod labelled ``team``, it keeps a ConfigMap ``<pod>-team`` holding the team's
name. The controller runtime runs the ``async def reconcile`` on this program's event
loop; the reconcile reads the ConfigMap from the cache (a lister answers from memory: no
await needed) and writes with ``kubernetes.aio`` (the ``kubernetes`` package's asyncio
client), whose session belongs to this loop. A second task follows the ConfigMaps with
``async for event in events(informer)``.

    .venv/bin/python examples/async_operator.py    # the embedded server (writes)

Inside kopf, the same pieces fit: start the factory in an ``@kopf.on.startup`` handler
(``factory.start()``, then ``await wait_for_cache_sync_async(informer)``), read from
its listers in kopf's handlers instead of listing or watching yourself, and set the
factory's stop event in ``@kopf.on.cleanup``. kopf's own watches keep driving kopf's
handlers; the listers give them indexed, shared reads of everything else.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from _cluster import connect, parser
from kubernetes.aio import client as aio_client
from kubernetes.client import CoreV1Api

from client_cache.aio import InformerEvent, events
from client_cache.api.schema import GroupVersionResource
from client_cache.codec import WireObject
from client_cache.errors import is_not_found
from client_cache.informers import new_shared_informer_factory
from client_cache.runtime import Action, Context, Controller, ControllerConfig

PODS = GroupVersionResource("", "v1", "pods")
TEAMS = ("payments", "search", "search")


async def operate(api_client: Any, url: str) -> None:
    factory = new_shared_informer_factory(api_client, 0)
    config_maps = factory.core().v1().config_maps()
    writes = aio_client.ApiClient(aio_client.Configuration(host=url))
    core = aio_client.CoreV1Api(writes)

    async def reconcile(pod: WireObject, ctx: Context[None]) -> Action:
        team = pod["metadata"].get("labels", {}).get("team")
        if team is None:
            return Action.await_change()
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"] + "-team"
        try:
            cached = config_maps.lister().by_namespace(namespace).get(name)
        except Exception as err:
            if not is_not_found(err):
                raise
            await core.create_namespaced_config_map(namespace, {
                "metadata": {"name": name}, "data": {"team": team}})
            print(f"reconcile: created {namespace}/{name} (team {team})", flush=True)
            return Action.await_change()
        if cached["data"].get("team") != team:
            await core.patch_namespaced_config_map(name, namespace, {"data": {"team": team}})
        return Action.await_change()

    controller = Controller(factory, PODS).with_config(ControllerConfig(
        events=False, loop=asyncio.get_running_loop()))

    async def follow() -> None:
        seen = 0
        async for event in events(config_maps.informer()):
            if event.object["metadata"]["name"].endswith("-team"):
                show(event)
                seen += 1
                if seen == len(TEAMS):
                    controller.shutdown()  # every pod has its ConfigMap: done
                    return

    following = asyncio.ensure_future(follow())
    try:
        summary = await asyncio.to_thread(controller.run, reconcile)
    finally:
        following.cancel()
        await writes.close()
    print(f"controller: {summary.reconciles} reconciles, {summary.errors} errors")


def show(event: InformerEvent) -> None:
    meta = event.object["metadata"]
    print(f"events(): {event.type.value} {meta['namespace']}/{meta['name']} "
          f"team={event.object['data']['team']}", flush=True)


def main() -> None:
    args = parser(__doc__).parse_args()
    with connect(args) as cluster:
        if cluster.embedded is None:
            print("this example writes: run it against the embedded server")
            return
        core = CoreV1Api(cluster.api_client)
        for i, team in enumerate(TEAMS):
            core.create_namespaced_pod("default", {
                "metadata": {"name": f"web-{i}", "labels": {"team": team}},
                "spec": {"containers": [{"name": "c", "image": "pause"}]}})
        asyncio.run(operate(cluster.api_client, cluster.embedded.url))
        names = sorted(c.metadata.name for c in core.list_namespaced_config_map("default").items)
        print(f"config maps: {', '.join(names)}")
        mine = [t.name for t in threading.enumerate()
                if t is not threading.main_thread() and not t.name.startswith("apiserver-")]
        print(f"library threads left: {mine}")  # the embedded server's are still serving


if __name__ == "__main__":
    main()
