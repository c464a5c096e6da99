"""The shared informer factory (a port of client-go's ``informers`` package)."""

from client_cache.informers import factory as _factory
from client_cache.informers.factory import *  # noqa: F403

__all__ = list(_factory.__all__)
