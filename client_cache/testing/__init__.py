"""Test support: the embedded API server (:mod:`client_cache.testing.apiserver`, which
owns its store, watchers, validation and resource table), the fake controller source,
consistency checks and the real kube-apiserver harness (:mod:`client_cache.testing.envtest`)."""

from client_cache.testing.apiserver import EmbeddedApiServer, EmbeddedApiServerProcess
from client_cache.testing.consistency import check_indexer_consistency
from client_cache.testing.fake_controller_source import FakeControllerSource
from client_cache.util._moved import alias_modules as _alias_modules

__all__ = ["EmbeddedApiServer", "EmbeddedApiServerProcess", "FakeControllerSource",
           "check_indexer_consistency"]

# the embedded server's parts moved into client_cache.testing.apiserver; their old names
# import, with a DeprecationWarning, for one more minor release
_alias_modules({f"client_cache.testing.{old}": f"client_cache.testing.apiserver.{new}"
                for old, new in {"apistore": "store", "watchers": "watchers",
                                 "managed_fields": "managed_fields",
                                 "schema_validation": "schema_validation",
                                 "validation": "validation", "resources": "resources"}.items()})
