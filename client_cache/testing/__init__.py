"""Test support: consistency checks, fakes and (later) the embedded API server."""

from client_cache.testing.consistency import check_indexer_consistency

__all__ = ["check_indexer_consistency"]
