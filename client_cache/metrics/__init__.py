"""Metric exporters. :mod:`client_cache.metrics.prometheus` (the ``[prometheus]`` extra)
puts every metric of the library into a ``prometheus_client`` registry in one call; it is
imported only on request, so the core install does not need ``prometheus_client``."""
