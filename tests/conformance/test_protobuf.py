"""The protobuf wire format (:mod:`client_cache.codec.protobuf`) against both servers: every
object, list and watch event a server sends in protobuf decodes to the dict its JSON
gives, for kinds that use each special field shape (times, micro-times, quantities,
int-or-strings, bytes, raw JSON, inline structs, pointers, maps of lists).

The real server's JSON is already what Go writes of an object read from protobuf (its
storage), so there the JSON must survive :func:`canonical` (encode, decode) unchanged,
which also tests the encoder. The embedded server stores what it was sent and encodes it
on the way out, so its protobuf answers equal its JSON answers after :func:`canonical`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes.client import ApiClient, AppsV1Api, CoreV1Api

from bench.bench_compare import real_pod
from client_cache.codec import _sharing as sharing
from client_cache.codec import protobuf
from tests.conformance.util import Backend, RealBackend, parallel

JSON = "application/json"

POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "rich", "labels": {"app": "a", "tier": ""},
                 "annotations": {"note": "ü unicode ✓"}, "finalizers": ["x.io/keep"]},
    "spec": {
        "containers": [{
            "name": "c", "image": "busybox", "command": ["sh", "-c", "sleep 1"],
            "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
            "env": [{"name": "A", "value": "1"}, {"name": "EMPTY", "value": ""},
                    {"name": "F", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "resources": {"limits": {"cpu": "1500m", "memory": "64Mi"},
                          "requests": {"cpu": "0.5"}},
            "livenessProbe": {"httpGet": {"path": "/", "port": "http"},
                              "periodSeconds": 3},
            "readinessProbe": {"tcpSocket": {"port": 8080}},
            "securityContext": {"runAsUser": 0, "privileged": False,
                                "readOnlyRootFilesystem": True},
        }],
        "volumes": [{"name": "s", "secret": {"secretName": "x", "defaultMode": 0o600}},
                    {"name": "e", "emptyDir": {"sizeLimit": "1Gi"}}],
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 30}],
        "terminationGracePeriodSeconds": 0,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
    },
}

OTHERS: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces/{ns}/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
        "data": {"a": "1", "b": ""}, "binaryData": {"bin": "AAEC/w=="}}),
    ("/api/v1/namespaces/{ns}/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
        "type": "Opaque", "data": {"k": "c2VjcmV0", "empty": ""}}),
    ("/api/v1/namespaces/{ns}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
        "spec": {"ports": [{"port": 80, "targetPort": "http", "name": "a"},
                           {"port": 81, "targetPort": 8081, "name": "b"}],
                 "selector": {"app": "a"}}}),
    ("/apis/apps/v1/namespaces/{ns}/deployments", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "dep"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "a"}},
                 "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
                 "template": {"metadata": {"labels": {"app": "a"}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    ("/apis/apps/v1/namespaces/{ns}/controllerrevisions", {
        "apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "rev"},
        "revision": 3, "data": {"spec": {"x": [1, 2.5, "s", None, True]}}}),
    ("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                 "acquireTime": "2026-11-26T10:00:00.123456Z",
                 "renewTime": "2026-11-26T10:00:01.000000Z", "leaseTransitions": 0}}),
    ("/api/v1/namespaces/{ns}/events", {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "ev"},
        "involvedObject": {"kind": "Pod", "name": "rich", "namespace": "{ns}"},
        "reason": "R", "message": "m", "type": "Normal", "count": 2,
        "firstTimestamp": "2026-11-26T10:00:00Z", "lastTimestamp": "2026-11-26T10:00:05Z",
        "source": {"component": "c"}}),
    ("/apis/batch/v1/namespaces/{ns}/jobs", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "job"},
        "spec": {"backoffLimit": 2, "suspend": True, "activeDeadlineSeconds": 60,
                 "template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "i"}]}}}}),
]


def request(api: ApiClient, path: str, accept: str, method: str = "GET",
            body: Any = None) -> tuple[str, bytes]:
    """The server's answer to a plain request: its content type and body."""
    config = api.configuration
    http = urllib3.PoolManager(ca_certs=config.ssl_ca_cert or None,
                               cert_reqs="CERT_REQUIRED" if config.ssl_ca_cert else None)
    headers = {"Authorization": config.get_api_key_with_prefix("authorization"),
               "Accept": accept, "Content-Type": JSON}
    try:
        resp = http.request(method, config.host + path, headers=headers,
                            body=None if body is None else json.dumps(body),
                            timeout=urllib3.Timeout(connect=10, read=30))
        assert resp.status < 300, (resp.status, resp.data[:300])
        return resp.headers.get("Content-Type", ""), resp.data
    finally:
        http.clear()


def canonical(backend: Backend, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as a protobuf round trip leaves it; on the real server that is ``obj``."""
    got = protobuf.decode(protobuf.encode(obj))
    if isinstance(backend, RealBackend):
        assert got == obj
    return got


def both(backend: Backend, api: ApiClient, path: str) -> tuple[Any, Any]:
    """``path`` asked in JSON and in protobuf: (the JSON's dict after :func:`canonical`,
    the protobuf's dict)."""
    _, as_json = request(api, path, JSON)
    content_type, as_protobuf = request(api, path, protobuf.CONTENT_TYPE)
    assert content_type == protobuf.CONTENT_TYPE
    return canonical(backend, json.loads(as_json)), protobuf.decode(as_protobuf)


@pytest.fixture
def objects(api: ApiClient, ns: str) -> Iterator[list[str]]:
    """The rich pod and one object of each other kind, created in ``ns``; their paths."""
    paths = []
    for collection, template in [("/api/v1/namespaces/{ns}/pods", POD), *OTHERS]:
        body = json.loads(json.dumps(template).replace("{ns}", ns))
        where = collection.format(ns=ns)
        request(api, where, JSON, "POST", body)
        paths.append(f"{where}/{body['metadata']['name']}")
    yield paths


def test_each_object_decodes_to_its_json(backend: Backend, api: ApiClient,
                                         objects: list[str]) -> None:
    for path in objects:
        from_json, from_protobuf = both(backend, api, path)
        assert from_protobuf == from_json, path
        assert list(from_protobuf) == list(from_json), path  # the same order of keys


def test_lists_decode_to_their_json(backend: Backend, api: ApiClient, ns: str,
                                    objects: list[str]) -> None:
    core = CoreV1Api(api)
    parallel(lambda i=i: core.create_namespaced_pod(ns, real_pod(i), _preload_content=False)
             for i in range(20))
    for path in (f"/api/v1/namespaces/{ns}/pods", f"/api/v1/namespaces/{ns}/pods"
                 "?resourceVersion=0", f"/apis/apps/v1/namespaces/{ns}/deployments",
                 f"/api/v1/namespaces/{ns}/pods?limit=7"):
        from_json, from_protobuf = both(backend, api, path)
        assert from_protobuf == from_json, path
    assert len(from_protobuf["items"]) == 7 and from_protobuf["metadata"]["continue"]


def test_watch_events_decode_to_their_json(backend: Backend, api: ApiClient, ns: str,
                                           objects: list[str]) -> None:
    """The same watch (from the start of the namespace's pods) read in both encodings:
    the same events, in the same order, with equal objects."""
    path = f"/api/v1/namespaces/{ns}/pods"
    _, listed = request(api, path, JSON)
    rv = json.loads(listed)["metadata"]["resourceVersion"]
    AppsV1Api(api).patch_namespaced_deployment("dep", ns, {"spec": {"replicas": 0}})
    CoreV1Api(api).patch_namespaced_pod("rich", ns, {"metadata": {"labels": {"b": "2"}}})
    CoreV1Api(api).delete_namespaced_pod("rich", ns, grace_period_seconds=0)
    watch = f"{path}?watch=true&resourceVersion={rv}&timeoutSeconds=1"
    _, as_json = request(api, watch, JSON)
    content_type, as_protobuf = request(api, watch, protobuf.CONTENT_TYPE)
    assert content_type == protobuf.WATCH_CONTENT_TYPE
    want = [(e["type"], canonical(backend, e["object"]))
            for e in map(json.loads, as_json.splitlines())]
    reader = protobuf.FrameReader()
    frames = [f for i in range(0, len(as_protobuf), 5) for f in reader.feed(
        as_protobuf[i:i + 5])]  # a few bytes at a time: frames cut anywhere
    assert reader.pending() == 0
    got = [protobuf.decode_watch_event(frame) for frame in frames]
    # the label, then the deletion (the finalizer keeps the pod: a deletion timestamp)
    assert [t for t, _ in want] == ["MODIFIED", "MODIFIED"]
    assert want[-1][1]["metadata"]["deletionTimestamp"]
    assert got == want


def test_a_list_read_as_it_arrives_is_the_list(api: ApiClient, ns: str,
                                              objects: list[str]) -> None:
    """:class:`protobuf.ListReader` fed the body in pieces of every size gives what
    decoding the whole body gives, with the sharing flags too."""
    core = CoreV1Api(api)
    parallel(lambda i=i: core.create_namespaced_pod(ns, real_pod(i), _preload_content=False)
             for i in range(5))
    _, body = request(api, f"/api/v1/namespaces/{ns}/pods", protobuf.CONTENT_TYPE)
    whole = protobuf.decode(body)
    assert len(whole["items"]) == 6
    for size in (1, 7, 100, 4096, len(body)):
        reader = protobuf.ListReader(sharing.walk_flags(True, True, True))
        for i in range(0, len(body), size):
            reader.feed(body[i:i + size])
        assert reader.finish() == whole, size
    reader = protobuf.ListReader()
    reader.feed(body[:-1])
    with pytest.raises(ValueError, match="ended early"):
        reader.finish()
