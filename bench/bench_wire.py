"""Wire-layer benchmarks (run with ``make bench-micro``).

1. Decode cost of one pod-sized watch event line (about 4 KB of JSON with labels,
   annotations, owner references, managedFields and status) for each JSON decoder that is
   installed (stdlib ``json``, ``orjson``, ``msgspec``), and for building a ``V1Pod``
   model from the decoded dict with the ``kubernetes`` package's own deserializer; and
   the list-watch's default decoding (strings shared, untracked, dicts compacted) both
   ways: the JSON decoder followed by the walk, and the one-pass C decoder.
2. The embedded API server's streaming rate: the server runs in its own process and
   creates N configmaps while one StreamWatcher over loopback HTTP counts the events.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient, V1Pod

from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.codec import _sharing as sharing
from client_cache.codec import _wire as wire
from client_cache.codec._decoding import model_decoder
from client_cache.listwatch import new_list_watch_from_client
from client_cache.testing.apiserver import EmbeddedApiServerProcess


def realistic_pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"web-{i:06d}-7d9f8c6b5d-x2x4z",
            "namespace": f"team-{i % 40}",
            "uid": f"3f1c2b9a-0000-4000-8000-{i:012d}",
            "resourceVersion": str(100000 + i),
            "generation": 1,
            "creationTimestamp": "2026-11-22T04:00:00Z",
            "labels": {"app": "web", "pod-template-hash": "7d9f8c6b5d", "tier": "frontend",
                       "team": f"team-{i % 40}"},
            "annotations": {"kubernetes.io/psp": "restricted",
                            "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                 "name": "web-7d9f8c6b5d", "uid": "8b7c6d5e-1111-2222-3333-4444",
                                 "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": "2026-11-22T04:00:00Z",
                               "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {},
                                            "f:tier": {}}}, "f:spec": {"f:containers": {
                                            "k:{\"name\":\"web\"}": {"f:image": {},
                                            "f:ports": {}}}}}},
                              {"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                               "time": "2026-11-22T04:00:05Z", "fieldsType": "FieldsV1",
                               "subresource": "status",
                               "fieldsV1": {"f:status": {"f:conditions": {}, "f:phase": {},
                                                         "f:podIP": {}}}}],
        },
        "spec": {
            "nodeName": f"node-{i % 50}",
            "serviceAccountName": "default",
            "containers": [{
                "name": "web", "image": "registry.example.com/web:1.25.3",
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": f"VAR_{k}", "value": f"value-{k}"} for k in range(8)],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "256Mi"}},
                "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            }],
            "volumes": [{"name": "kube-api-access", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}}]}}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
        },
        "status": {
            "phase": "Running", "podIP": f"10.0.{i % 250}.{i % 200}", "hostIP": "192.0.2.10",
            "startTime": "2026-11-22T04:00:01Z", "qosClass": "Burstable",
            "conditions": [{"type": t, "status": "True",
                            "lastTransitionTime": "2026-11-22T04:00:03Z"}
                           for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")],
            "containerStatuses": [{"name": "web", "ready": True, "restartCount": 0,
                                   "image": "registry.example.com/web:1.25.3",
                                   "imageID": "registry.example.com/web@sha256:" + "ab" * 32,
                                   "containerID": "containerd://" + "cd" * 32,
                                   "state": {"running": {"startedAt": "2026-11-22T04:00:02Z"}}}],
        },
    }


def per_call_us(fn: Callable[[], Any], n: int, repeats: int) -> tuple[float, float, float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples), min(samples), max(samples)


def decoders(n: int, repeats: int) -> None:
    line = json.dumps({"type": "MODIFIED", "object": realistic_pod(7)}).encode()
    print(f"decode one watch event line of {len(line)} bytes ({n} per run, {repeats} runs):")
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("json.loads (stdlib)", lambda: json.loads(line))
    ]
    try:
        import orjson

        cases.append(("orjson.loads", lambda: orjson.loads(line)))
    except ImportError:
        print("  orjson: not installed")
    try:
        import msgspec

        decoder = msgspec.json.Decoder()
        cases.append(("msgspec.json.decode", lambda: decoder.decode(line)))
    except ImportError:
        print("  msgspec: not installed")
    walk = sharing.walker(True, True, True)
    one_pass = sharing.decoder(wire.loads, True, True, True)
    if walk is not None and one_pass is not None:  # the list-watch's default, both ways
        cases.append(("wire.loads + walk", lambda: walk(wire.loads(line))))
        cases.append(("sharing.decoder (one pass)", lambda: one_pass(line)))
    for name, fn in cases:
        med, lo, hi = per_call_us(fn, n, repeats)
        print(f"  {name:<28} {med:8.1f} us  (min {lo:.1f}, max {hi:.1f})")
    decode = model_decoder(ApiClient(), V1Pod)
    obj = json.loads(line)["object"]
    med, lo, hi = per_call_us(lambda: decode(obj), max(1, n // 10), repeats)
    print(f"  {'+ V1Pod model (deserializer)':<28} {med:8.1f} us  (min {lo:.1f}, max {hi:.1f})")


def server_stream_rate(count: int) -> None:
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        lw = new_list_watch_from_client(server.api_client(),
                                        GroupVersionResource("", "v1", "configmaps"), "bench")
        watch = lw.watch(ListOptions(resource_version="1"))
        start = time.perf_counter()
        server.control("load", count=count)
        got = 0
        while got < count:
            _, ok = watch.result_chan().recv(30)
            if not ok:
                break
            got += 1
        elapsed = time.perf_counter() - start
        watch.stop()
        print(f"embedded API server streaming: {got} events in {elapsed:.2f}s = "
              f"{got / elapsed:,.0f} events/s (server creating and streaming in its own "
              f"process, one watch, client decoding with the default decoder)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--events", type=int, default=50_000)
    args = parser.parse_args()
    decoders(args.n, args.repeats)
    server_stream_rate(args.events)


if __name__ == "__main__":
    main()
