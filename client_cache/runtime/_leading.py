"""Reconcile only while leading: the controller runtime's use of leader election.

A :class:`LeadershipGate` runs a :class:`~client_cache.leaderelection.LeaderElector` beside
a controller (its informers warm up meanwhile). :meth:`LeadershipGate.wait_leading` blocks
the controller's workers until this replica leads; when it stops leading (the elector's
fencing: its renewals failed past the renew deadline) ``on_lost`` runs at once, so the
controller stops starting reconciles, and :attr:`LeadershipGate.lost` says so. The user's
own callbacks in the configuration still run. Stopping the gate stops the elector, which
releases the lease when ``release_on_cancel`` is set. The controller asks
:meth:`LeadershipGate.holds_lease` before every reconcile, so a replica resumed from a
pause longer than its renew deadline starts none (see
:mod:`client_cache.leaderelection.leaderelection` for the bound this gives).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from client_cache.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    new_leader_elector,
)
from client_cache.util.stop import on_stop

__all__ = ["LeadershipGate"]


class LeadershipGate:
    """See the module documentation."""

    def __init__(self, config: LeaderElectionConfig, name: str,
                 on_lost: Callable[[], None]) -> None:
        user = config.callbacks
        self._on_lost = on_lost
        self._leading = threading.Event()
        self._stop = threading.Event()
        self._ended_lock = threading.Lock()
        self.lost = False

        def started(lead_stop: threading.Event) -> None:
            on_stop(lead_stop, self._lead_ended)
            self._leading.set()
            user.on_started_leading(lead_stop)

        self._elector = new_leader_elector(dataclasses.replace(
            config, name=config.name or name, callbacks=LeaderCallbacks(
                started, user.on_stopped_leading, user.on_new_leader)))
        self._thread = threading.Thread(target=self._elector.run, args=(self._stop,),
                                        name=f"controller-{name}-leaderelection",
                                        daemon=True)

    def _lead_ended(self) -> None:
        with self._ended_lock:
            if self.lost or self._stop.is_set():  # reported, or our own shutdown
                return
            self.lost = True
        self._on_lost()

    def start(self) -> None:
        """Start the election on a thread of its own."""
        self._thread.start()

    def wait_leading(self, stopping: threading.Event) -> bool:
        """Block until this replica leads (True) or ``stopping`` is set (False)."""
        wake = on_stop(stopping, self._leading.set)
        try:
            self._leading.wait()
        finally:
            wake.cancel()
        return not stopping.is_set()

    def is_leader(self) -> bool:
        """True while this replica leads (its last observation of the lock)."""
        return self._elector.is_leader()

    def holds_lease(self) -> bool:
        """Whether this replica may act as leader at this instant
        (:meth:`~client_cache.leaderelection.LeaderElector.holds_lease`: read from the
        monotonic clock when asked, so it is False in the first instruction after a pause
        that outlasted the renew deadline). When it is False after leading began, the
        leadership is over: ``on_lost`` runs (at most once)."""
        if self._elector.holds_lease():
            return True
        if self._leading.is_set():
            self._lead_ended()
        return False

    def check(self, max_tolerable_expired_lease: float) -> None:
        """The elector's health check (:meth:`LeaderElector.check`)."""
        self._elector.check(max_tolerable_expired_lease)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the elector (releasing the lease if configured) and wait for it."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
