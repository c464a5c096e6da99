"""The embedded server's load generator: realistic objects written from inside the server
process, so that benchmarks measure the client and not a writer beside it."""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from typing import Any

from client_cache.testing.apiserver.store import ApiStore

__all__ = ["WRITTEN_AT_ANNOTATION", "sample_object", "start_load"]

#: The annotation in which the load generator stores when it wrote an object.
WRITTEN_AT_ANNOTATION = "bench.client-cache.io/written-at"


def start_load(store: ApiStore, count: int, namespace: str = "bench",
               kind: str = "configmaps", rate: float = 0.0, mix: str = "create") -> None:
    """Make ``count`` changes in ``namespace`` from a background thread
    (``apiserver-load``): a load generator for benchmarks that keeps the writer inside
    the server's process. ``kind`` is ``configmaps`` (small) or ``pods`` (about 3 KB of
    JSON each, shaped like real pods). With ``mix="create"`` every change creates an
    object; with ``mix="mixed"`` the changes cycle create, update, update, delete (the
    updates change a random existing object's status, the delete removes the oldest),
    so the number of objects stays the same after every multiple of four. New objects
    are built first, then the changes are written as fast as the store takes them, or
    ``rate`` per second; each written or deleted object carries the time of the write
    (``time.time()``) in the annotation :data:`WRITTEN_AT_ANNOTATION`, so a client on
    the same machine can measure the delay to its handler."""
    if mix not in ("create", "mixed"):
        raise ValueError(f"mix must be 'create' or 'mixed', not {mix!r}")
    rtype = store.lookup("", "v1", kind)
    assert rtype is not None

    def run() -> None:
        creates = count if mix == "create" else (count + 3) // 4
        objects = [sample_object(kind, i) for i in range(creates)]
        names = deque(store.names(rtype, namespace))
        rng = random.Random(count)
        started = time.monotonic()
        for i in range(count):
            if rate > 0:
                delay = started + i / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            step = i % 4 if mix == "mixed" else 0
            stamp = {WRITTEN_AT_ANNOTATION: f"{time.time():.6f}"}
            if step == 0:
                obj = objects[i // 4 if mix == "mixed" else i]
                obj["metadata"].setdefault("annotations", {}).update(stamp)
                names.append(store.insert(rtype, namespace, obj)["metadata"]["name"])
            elif step == 3:
                store.remove(rtype, namespace, names.popleft(), stamp)
            else:
                name = names[rng.randrange(len(names))]
                current = store.peek(rtype, namespace, name)
                md = current["metadata"]
                changed = dict(current, metadata=dict(
                    md, annotations={**(md.get("annotations") or {}), **stamp}))
                if isinstance(current.get("status"), dict):
                    changed["status"] = dict(current["status"], message=f"change {i}")
                store.replace(rtype, namespace, name, changed)

    threading.Thread(target=run, name="apiserver-load", daemon=True).start()


def sample_object(kind: str, i: int) -> dict[str, Any]:
    """The ``i``-th object the load generator writes: for ``pods`` about 3 KB of JSON
    shaped like a real pod (labels, annotations, an owner reference, managedFields,
    twelve environment variables, status with conditions), on node ``node-{i % 50}``;
    otherwise a small configmap. It has ``generateName`` and no namespace."""
    if kind != "pods":
        return {"metadata": {"generateName": "load-", "labels": {"load": "true"}},
                "data": {"index": str(i)}}
    return {
        "metadata": {
            "generateName": "web-",
            "labels": {"app": "web", "tier": "frontend", "pod-template-hash": "7d9f8c6b5d",
                       "load": "true"},
            "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-7d9f8c6b5d", "uid": "8b7c6d5e-1111-2222",
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}},
                                            "f:spec": {"f:containers": {}}}}],
        },
        "spec": {
            "nodeName": f"node-{i % 50}",
            "containers": [{
                "name": "web", "image": "registry.example.com/web:1.25.3",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": f"VAR_{k}", "value": f"value-{k}-{i}"} for k in range(12)],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
            }],
        },
        "status": {
            "phase": "Running", "podIP": f"10.0.{i % 250}.{i % 200}",
            "conditions": [{"type": t, "status": "True",
                            "lastTransitionTime": "2026-11-22T04:00:03Z"}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0,
                                   "image": "registry.example.com/web:1.25.3",
                                   "imageID": "registry.example.com/web@sha256:" + "ab" * 32,
                                   "containerID": "containerd://" + "cd" * 32}],
        },
    }
