"""The conformance suite's servers: every test here runs against the embedded API server
(in its own process) and against a real kube-apiserver + etcd (``make envtest``).

Without the real binaries the ``real`` half is skipped with instructions, except under
``CI=true``, where a missing real server fails the run.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.testing.envtest import ControlPlane
from tests.conformance.util import Backend, EmbeddedBackend, RealBackend
from tests.fixtures import envtest_binaries

BACKENDS = ("embedded", "real")
_namespaces = itertools.count(1)


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """One server per kind for the whole session."""
    if request.param == "embedded":
        with EmbeddedBackend() as embedded:
            yield embedded
        return
    # the alpha gates the suite tests (both servers have them on)
    with ControlPlane(envtest_binaries(), uncached_resources=("podtemplates",),
                      extra_args=("--feature-gates=ShardedListAndWatch=true,"
                                  "CoordinatedLeaderElection=true",
                                  "--runtime-config=coordination.k8s.io/v1beta1=true"),
                      ) as plane:
        yield RealBackend(plane)


@pytest.fixture
def api(backend: Backend) -> Iterator[Any]:
    """A fresh ``kubernetes.client.ApiClient`` for the test (its pool closed after)."""
    client = backend.api_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def ns(api: Any, request: pytest.FixtureRequest) -> str:
    """A new namespace for the test (the real server needs it to exist)."""
    name = f"cf-{next(_namespaces)}-{request.node.name.split('[')[0][5:30]}"
    name = name.replace("_", "-").lower().rstrip("-")
    CoreV1Api(api).create_namespace({"metadata": {"name": name}})
    return name
