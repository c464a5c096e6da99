"""The runtime tests' embedded server (bookmarks every 0.2 s), client and factory;
a module may define its own ``server`` instead."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes.client import CoreV1Api

from client_cache.informers import SharedInformerFactory, new_shared_informer_factory
from client_cache.testing.apiserver import EmbeddedApiServer


@pytest.fixture
def server() -> Iterator[EmbeddedApiServer]:
    with EmbeddedApiServer(bookmark_interval=0.2) as srv:
        yield srv


@pytest.fixture
def core(server: EmbeddedApiServer) -> CoreV1Api:
    return CoreV1Api(server.api_client())


@pytest.fixture
def factory(server: EmbeddedApiServer) -> SharedInformerFactory:
    return new_shared_informer_factory(server.api_client(), 0)
