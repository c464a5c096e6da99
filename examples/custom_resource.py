"""An informer for a custom resource through the dynamic path (no generated model).

Mirrors client-go's dynamic informers (``dynamicinformer.NewDynamicSharedInformerFactory``
+ ``ForResource(gvr)``): objects are wire dicts, the lister works the same, and any
``group/version/resource`` the server serves can be informed.

On the embedded server it registers a ``Widget`` CustomResourceDefinition through the API,
creates, updates and deletes a few widgets, and prints what the handler sees and what the
lister holds. On a real cluster, name an existing resource and it only watches:

    python examples/custom_resource.py
    python examples/custom_resource.py --kubeconfig ~/.kube/config \\
        --resource cert-manager.io/v1/certificates --seconds 10
"""

from __future__ import annotations

import threading
import time
from typing import Any

from _cluster import connect, parser, stop_on_signals
from kubernetes.client import ApiextensionsV1Api, CustomObjectsApi

from client_cache import deletion_handling_meta_namespace_key_func as key_of
from client_cache.api.labels import everything
from client_cache.api.schema import GroupVersionResource
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers import new_shared_informer_factory

GROUP, VERSION, PLURAL = "example.com", "v1", "widgets"


def register_widgets(api_client: Any) -> None:
    """Create the Widget CRD and wait until it is established and served."""
    extensions = ApiextensionsV1Api(api_client)
    extensions.create_custom_resource_definition({
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "widget", "kind": "Widget"},
            "versions": [{"name": VERSION, "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True}}}],
        },
    })
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        crd = extensions.read_custom_resource_definition(f"{PLURAL}.{GROUP}")
        if any(c.type == "Established" and c.status == "True"
               for c in (crd.status.conditions or [])):
            return
        time.sleep(0.1)
    raise TimeoutError("the CRD was not established")


def main() -> int:
    cli = parser(__doc__)
    cli.add_argument("--resource", default=f"{GROUP}/{VERSION}/{PLURAL}",
                     help="group/version/resource to inform (core: v1/configmaps)")
    cli.add_argument("--seconds", type=float, default=5.0, help="watch time on a cluster")
    args = cli.parse_args()
    parts = args.resource.split("/")
    gvr = GroupVersionResource(*(["", *parts] if len(parts) == 2 else parts))
    stop = stop_on_signals()
    with connect(args) as cluster:
        if not cluster.read_only:
            register_widgets(cluster.api_client)
        factory = new_shared_informer_factory(cluster.api_client, 0)
        widgets = factory.for_resource(gvr)  # the dynamic (generic) informer
        seen = threading.Semaphore(0)

        def report(kind: str) -> Any:
            def handler(*objs: Any) -> None:
                obj = objs[-1]
                size = (obj.get("spec") or {}).get("size") if isinstance(obj, dict) else None
                print(f"{kind} {key_of(obj)}" + (f" size={size}" if size is not None else ""),
                      flush=True)
                seen.release()
            return handler

        widgets.informer().add_event_handler(ResourceEventHandlerFuncs(
            add_func=report("add"), update_func=report("update"),
            delete_func=report("delete")))
        factory.start(stop)
        try:
            factory.wait_for_cache_sync(stop)
            print(f"informing {gvr.group or 'core'}/{gvr.version}/{gvr.resource}")
            if cluster.read_only:
                stop.wait(args.seconds)
            else:
                objects = CustomObjectsApi(cluster.api_client)
                for i in range(3):
                    objects.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, {
                        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Widget",
                        "metadata": {"name": f"widget-{i}"}, "spec": {"size": i + 1}})
                objects.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL,
                                                       "widget-1", {"spec": {"size": 10}})
                objects.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL,
                                                        "widget-2")
                for _ in range(5):
                    seen.acquire(timeout=10)
            cached = sorted(key_of(o) for o in widgets.lister().list(everything()))
            print(f"lister holds {len(cached)}: {cached[:10]}")
        finally:
            stop.set()
            factory.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
