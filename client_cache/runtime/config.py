"""The settings of a :class:`~client_cache.runtime.controller.Controller` (kube-rs
``controller::Config`` plus the port's own)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from client_cache.leaderelection import LeaderElectionConfig
from client_cache.runtime.recorder import EVENTS_APIS
from client_cache.runtime.retry import RateLimiterFactory, default_rate_limiter
from client_cache.sharding import ShardingConfig

__all__ = ["ControllerConfig"]


@dataclass
class ControllerConfig:
    """Settings of a :class:`Controller` (kube-rs ``controller::Config`` plus the port's):
    ``debounce`` seconds (default 0); ``concurrency`` reconciles at once (default 1, see the
    module documentation); ``shutdown_timeout`` seconds given to running reconciles at
    shutdown; ``client_qps``/``client_burst`` client-side throttling of every
    request sent through the factory's ``ApiClient``: the controller's writes and any
    other call the application makes with that same client share one token bucket
    (client-go's ``rest.Config`` QPS/Burst, which is per client too); its Events wait on a
    second bucket of the same size (controller-runtime's recorder has a client of its
    own), and the informers' LIST and WATCH requests are not throttled; give the
    controller a client of its own to keep the application's calls out of it. Off by
    default (``client_qps=0``), as controller-runtime's since v0.21: the API server's
    Priority and Fairness protects it, and a client-side bucket mostly delays a
    controller's own bursts (200 Foos of the sample-controller converged in 6.6 s without
    it and 28.7 s with 20/s, ``bench/results/sample-controller.md``); set it to share a
    server with clients that lack that protection;
    ``client_burst`` (default 30) applies when it is set; ``name`` of the
    controller in thread names, logs and metrics (default: the primary resource);
    ``events``: hand reconcilers an event recorder (``ctx.recorder``, reporting as
    ``name``, flushed at shutdown; see :mod:`client_cache.runtime.recorder`);
    ``events_api``: the Event API it writes, ``"events.k8s.io/v1"`` (the default, as
    controller-runtime's since v0.23) or ``"v1"`` (core/v1 Events); ``leader_election``:
    reconcile only while this replica leads (see :mod:`client_cache.runtime._leading`);
    ``sharding``: every replica reconciles its share of the keys, handed over between
    replicas as they come and go (see :mod:`client_cache.runtime.sharded`; not with
    ``leader_election``, which keeps one replica acting); ``loop``: where an
    ``async def`` reconcile or error policy runs (default: a loop the controller starts
    on a thread of its own and ends with the run); ``rate_limiter``: a function making the
    limiter that spaces the retries of a failing object, called at each run (default
    :func:`~client_cache.runtime.retry.default_rate_limiter`, 5 ms doubling to 1000 s;
    controller-runtime's ``Options.RateLimiter``; see :mod:`client_cache.runtime.retry`);
    ``read_your_writes_timeout``: how long the next reconcile of an object written through
    its context waits for the primary cache to hold that write (default 10 s; 0 turns
    read-your-writes off; see :mod:`client_cache.runtime._read_your_writes`);
    ``leadership_lost``: what a leader-elected replica does when it loses the lease:
    ``"end"`` its run (the default, as controller-runtime's manager exits) or
    ``"follow"``: stop reconciling, stand again and resume with warm caches when it leads
    (KEP-5366's graceful transition; see :mod:`client_cache.runtime._leading` for what it
    means for reconciles in flight); ``reconcile_timeout``: seconds a reconcile may run
    before its attempt fails (default None: no limit; controller-runtime
    ``ReconciliationTimeout``, kopf ``timeout=``): its ``ctx.stopping`` is set, it is
    logged with its stack and counted, another worker takes its place, and its key backs
    off once the call returns; the call itself cannot be interrupted (see
    :mod:`client_cache.runtime._timeouts`); ``cache_sync_timeout``: seconds ``run`` waits
    for its caches' first lists before it fails with
    :class:`~client_cache.errors.CacheSyncTimeoutError` naming what did not sync (default
    None: as long as it takes, as kube-rs; controller-runtime's ``CacheSyncTimeout``
    defaults to 2 minutes); ``priority_queue``: hand out due requests highest priority
    first, so that after a start or a bulk reconcile what changed is reconciled ahead of
    the backlog of what did not (default True, controller-runtime's default since v0.23;
    False: first due, first served, controller-runtime ``UsePriorityQueue: false``; see
    :mod:`client_cache.runtime.scheduler`); ``warmup``: with ``leader_election``, whether a
    standby replica starts its informers and fills its caches before it leads (default
    True: a takeover reconciles at once from warm caches, at the price of every standby
    holding the caches and watching the server; controller-runtime's ``EnableWarmup``,
    which is off there by default). False: a standby starts its informers only once it
    leads (controller-runtime's default), so a takeover first lists every resource; it
    counts as ready while it stands by (see :meth:`Controller.ready`). Without leader
    election it changes nothing; ``max_daemons``: how many per-object daemons
    (``Controller.daemon``) run at once, each on a thread of its own (default 100); the
    others wait in line (see :mod:`client_cache.runtime.daemons`)."""

    debounce: float = 0.0
    concurrency: int = 1
    shutdown_timeout: float = 30.0
    client_qps: float = 0.0
    client_burst: int = 30
    name: str = ""
    events: bool = True
    events_api: str = "events.k8s.io/v1"
    leader_election: LeaderElectionConfig | None = None
    sharding: ShardingConfig | None = None
    loop: asyncio.AbstractEventLoop | None = None
    rate_limiter: RateLimiterFactory = default_rate_limiter
    read_your_writes_timeout: float = 10.0
    leadership_lost: str = "end"
    reconcile_timeout: float | None = None
    cache_sync_timeout: float | None = None
    priority_queue: bool = True
    warmup: bool = True
    max_daemons: int = 100

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {self.concurrency}")
        if self.max_daemons < 1:
            raise ValueError(f"max_daemons must be at least 1, not {self.max_daemons}")
        if self.debounce < 0 or self.shutdown_timeout < 0 or self.client_qps < 0 or \
                self.read_your_writes_timeout < 0:
            raise ValueError("debounce, shutdown_timeout, client_qps and "
                             "read_your_writes_timeout must not be negative")
        for field_name in ("reconcile_timeout", "cache_sync_timeout"):
            value = getattr(self, field_name)
            if value is not None and not value > 0:
                raise ValueError(f"{field_name} must be positive seconds or None, not "
                                 f"{value!r}")
        if not callable(self.rate_limiter):
            raise TypeError("rate_limiter must be a function making a rate limiter (called "
                            f"at each run), not {type(self.rate_limiter).__name__}")
        if self.events_api not in EVENTS_APIS:
            raise ValueError(f"events_api is one of {', '.join(map(repr, EVENTS_APIS))}, "
                             f"not {self.events_api!r}")
        if self.leadership_lost not in ("end", "follow"):
            raise ValueError("leadership_lost is 'end' or 'follow', not "
                             f"{self.leadership_lost!r}")
        if self.leader_election is not None and self.sharding is not None:
            raise ValueError("leader_election and sharding exclude each other: one replica "
                             "acting, or each acting on its share")
