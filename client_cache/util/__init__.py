"""Ports of the apimachinery and k8s.io/utils helpers the cache needs: clocks, channels,
wait/backoff loops and runtime error handling."""
