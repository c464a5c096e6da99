"""The demo around the two sample-controller examples: Foos to reconcile, a stand-in for
the Deployment controller (neither the embedded server nor a bare kube-apiserver runs
one), and the wait until every Foo is in sync."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from _cluster import Cluster, stop_on_signals
from _sample_apis import DEPLOYMENTS, FOOS, GROUP, VERSION, foo
from kubernetes.client import ApiClient, AppsV1Api, CustomObjectsApi

from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.runtime import Action, Context, Controller, ControllerConfig

RunFunc = Callable[[ApiClient, threading.Event], None]


def play_deployment_controller(api_client: ApiClient, stop: threading.Event,
                               namespace: str = "") -> threading.Thread:
    """Until ``stop``: make every Deployment (in ``namespace``, default all) report all its
    replicas available (what the real Deployment controller does once its pods are up).
    It is itself a small runtime controller, so a failed write is retried. Returns the
    thread running it."""
    apps = AppsV1Api(api_client)
    factory = new_shared_informer_factory_with_options(
        api_client, 0, SharedInformerFactoryOptions(namespace=namespace))

    def settle(deployment: Any, ctx: Context[None]) -> Action:
        md, spec = deployment["metadata"], deployment["spec"]
        replicas = spec.get("replicas") or 0
        if (deployment.get("status") or {}).get("availableReplicas") != replicas:
            apps.patch_namespaced_deployment_status(md["name"], md["namespace"], {"status": {
                "replicas": replicas, "readyReplicas": replicas,
                "availableReplicas": replicas, "updatedReplicas": replicas,
                "observedGeneration": md.get("generation", 1)}})
        return Action.await_change()

    controller = Controller(
        factory, DEPLOYMENTS, config=ControllerConfig(name="deployment-stand-in",
                                                      client_qps=0))
    controller.graceful_shutdown_on(stop)
    thread = threading.Thread(target=controller.run, args=(settle,),
                              name="deployment-controller-stand-in", daemon=True)
    thread.start()
    return thread


def foos_in_sync(api_client: ApiClient, namespace: str) -> tuple[int, int]:
    """(Foos whose status shows all their replicas available, all Foos)."""
    items = CustomObjectsApi(api_client).list_namespaced_custom_object(
        GROUP, VERSION, namespace, FOOS.resource)["items"]
    done = sum(1 for f in items
               if (f.get("status") or {}).get("availableReplicas") == f["spec"]["replicas"])
    return done, len(items)


def run_demo(cluster: Cluster, run: RunFunc, count: int = 5) -> None:
    """On the embedded server: create ``count`` Foos, run the controller until they are all
    in sync, print their state, stop. On a real cluster: run until Ctrl-C."""
    if cluster.read_only:
        run(cluster.api_client, stop_on_signals())
        return
    stop = threading.Event()
    objects = CustomObjectsApi(cluster.api_client)
    for i in range(count):
        objects.create_namespaced_custom_object(GROUP, VERSION, "default", FOOS.resource,
                                                foo(f"example-foo-{i}", f"foo-{i}", 1 + i % 3))
    helper = play_deployment_controller(cluster.api_client, stop)
    runner = threading.Thread(target=run, args=(cluster.api_client, stop),
                              name="sample-controller", daemon=True)
    runner.start()
    deadline = time.monotonic() + 30
    while foos_in_sync(cluster.api_client, "default")[0] < count:
        if time.monotonic() > deadline:
            raise SystemExit("the Foos did not converge within 30 s")
        time.sleep(0.1)
    for f in objects.list_namespaced_custom_object(GROUP, VERSION, "default",
                                                   FOOS.resource)["items"]:
        print(f"{f['metadata']['name']}: deployment {f['spec']['deploymentName']} "
              f"available {f['status']['availableReplicas']}/{f['spec']['replicas']}",
              flush=True)
    stop.set()
    runner.join(10)
    helper.join(10)
