"""The read-modify-write cycle from the cache, in both object modes.

Informers hand out wire dicts by default (the server's JSON: ``spec.nodeName``), and
``kubernetes.client`` models with ``models=True`` (``V1Pod.spec.node_name``). Either way
the cached object is shared and read-only: copy it, change the copy, write the copy. The
client's write calls take both forms as body, and ``client_cache.codec.objects`` converts
between them (``to_model``, ``to_wire``).

    .venv/bin/python examples/read_modify_write.py    # the embedded server (writes)
"""

from __future__ import annotations

import copy

from _cluster import connect, parser
from kubernetes.client import CoreV1Api, V1PodCondition, V1PodStatus

from client_cache.codec import to_model, to_wire
from client_cache.informers import new_shared_informer_factory


def main() -> None:
    args = parser(__doc__).parse_args()
    with connect(args) as cluster:
        if cluster.read_only:
            print("this example writes: run it against the embedded server")
            return
        core = CoreV1Api(cluster.api_client)
        for name in ("dict-mode", "model-mode"):
            core.create_namespaced_pod("default", {"metadata": {"name": name}, "spec": {
                "containers": [{"name": "c", "image": "pause"}]}})
        # one informer per resource and factory: the two modes need two factories
        dict_factory = new_shared_informer_factory(cluster.api_client, 0)
        model_factory = new_shared_informer_factory(cluster.api_client, 0)
        dicts = dict_factory.core().v1().pods()                 # wire dicts
        models = model_factory.core().v1().pods(models=True)    # V1Pod
        with dict_factory.running(timeout=30), model_factory.running(timeout=30):
            # dict mode: the server's field names
            cached = dicts.lister().by_namespace("default").get("dict-mode")
            pod = copy.deepcopy(cached)                        # never change the cache
            pod.setdefault("status", {})["phase"] = "Running"
            written = core.replace_namespaced_pod_status("dict-mode", "default", pod)
            print(f"dict mode: {written.metadata.name} is {written.status.phase} "
                  f"(resourceVersion {written.metadata.resource_version})")
            # model mode: the client's attribute names
            cached_model = models.lister().by_namespace("default").get("model-mode")
            model = copy.deepcopy(cached_model)
            model.status = model.status or V1PodStatus()       # a new pod has none yet
            model.status.phase = "Running"
            model.status.conditions = [V1PodCondition(type="Ready", status="True")]
            written = core.replace_namespaced_pod_status("model-mode", "default", model)
            print(f"model mode: {written.metadata.name} is {written.status.phase}, "
                  f"Ready={written.status.conditions[0].status}")
            # between the two: a model as the server writes it, and back
            wire = to_wire(written)
            again = to_model(wire, "V1Pod")
            print(f"to_wire: status.conditions[0] = {wire['status']['conditions'][0]}; "
                  f"to_model round trip equal: {again == written}")


if __name__ == "__main__":
    main()
