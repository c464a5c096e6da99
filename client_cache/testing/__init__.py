"""Test support: the embedded API server, the fake controller source, consistency checks
and the real kube-apiserver harness (:mod:`client_cache.testing.envtest`)."""

from client_cache.testing.apiserver import EmbeddedApiServer, EmbeddedApiServerProcess
from client_cache.testing.consistency import check_indexer_consistency
from client_cache.testing.fake_controller_source import FakeControllerSource

__all__ = ["EmbeddedApiServer", "EmbeddedApiServerProcess", "FakeControllerSource",
           "check_indexer_consistency"]
