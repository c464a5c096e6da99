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

**Following** (``ControllerConfig(leadership_lost="follow")``, KEP-5366's graceful
leader transition, an option here): a replica that loses the lease does not end its run.
It stops starting reconciles, stands for the lease again, and resumes when it leads,
with the caches it kept warm meanwhile (no relist): the requests that came while it
followed wait in the scheduler, one per object, and run then. A reconcile in flight when
the lease is lost runs to its end (a thread cannot be interrupted); its
``ctx.stopping`` is set at that moment, so a long reconcile checking it stops writing.
Until it returns, it may still write as the old leader: the same bound as a pause
shorter than the renew deadline.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

from client_cache.leaderelection import (
    LeaderCallbacks,
    LeaderElectionConfig,
    new_leader_elector,
)
from client_cache.util.stop import on_stop

__all__ = ["LeadershipGate"]

_log = logging.getLogger("client_cache.runtime.controller")


class LeadershipGate:
    """See the module documentation. ``follow`` (``ControllerConfig.leadership_lost=
    "follow"``): a lost leadership does not end the run; see :meth:`term_stopping`."""

    def __init__(self, config: LeaderElectionConfig, name: str,
                 on_lost: Callable[[], None], *, follow: bool = False) -> None:
        user = config.callbacks
        self._on_lost = on_lost
        self._follow = follow
        self._leading = threading.Event()
        self._stop = threading.Event()
        self._ended_lock = threading.Lock()
        self._term = threading.Event()  # set when the current term ends
        self._hooked: threading.Event | None = None  # the term tied to the run's stop
        self.lost = False
        self.terms = 0
        """Terms led so far."""
        self._listeners: list[Callable[[], None]] = []

        def started(lead_stop: threading.Event) -> None:
            with self._ended_lock:
                self._term = threading.Event()
                self.terms += 1
            on_stop(lead_stop, self._lead_ended)
            self._leading.set()
            self._tell()
            user.on_started_leading(lead_stop)

        self._config = dataclasses.replace(
            config, name=config.name or name, callbacks=LeaderCallbacks(
                started, user.on_stopped_leading, user.on_new_leader))
        self._elector = new_leader_elector(self._config)
        self._thread = threading.Thread(target=self._run_terms,
                                        name=f"controller-{name}-leaderelection",
                                        daemon=True)

    def _run_terms(self) -> None:
        """Run the election; in follow mode, stand again after each lost term (a new
        elector each time, as Go's ``RunOrDie`` in a loop) until stopped."""
        while True:
            self._elector.run(self._stop)
            if not self._follow or self._stop.is_set():
                return
            self._elector = new_leader_elector(self._config)

    def _lead_ended(self) -> None:
        with self._ended_lock:
            if self._stop.is_set():  # our own shutdown
                self._term.set()
                return
            if self._follow:
                if not self._leading.is_set():
                    return  # this term's end was reported
                self._leading.clear()
                self.lost = True
                self._term.set()
                follow = True
            else:
                if self.lost:
                    return
                self.lost = True
                follow = False
        if follow:
            _log.info("controller %s: lost the lease; following with warm caches until it "
                      "leads again", self._config.name)
        else:
            self._on_lost()
        self._tell()

    def add_listener(self, callback: Callable[[], None]) -> None:
        """Also call ``callback`` (on the elector's thread) when a term begins or ends
        (the daemons start and stop with it)."""
        self._listeners = [*self._listeners, callback]

    def _tell(self) -> None:
        for callback in self._listeners:
            try:
                callback()
            except Exception:
                _log.exception("controller %s: a leadership listener failed",
                               self._config.name)

    @property
    def follows(self) -> bool:
        """Whether a lost lease leaves the run going (follow mode)."""
        return self._follow

    def term_stopping(self, stopping: threading.Event) -> threading.Event:
        """What a reconcile's ``ctx.stopping`` is: ``stopping`` itself unless following,
        where it is an event set when this term ends or ``stopping`` is set (a reconcile
        in flight when the lease is lost may check it and stop writing)."""
        if not self._follow:
            return stopping
        with self._ended_lock:
            term = self._term
            hook = term is not self._hooked  # one hook per term, not one per reconcile
            self._hooked = term
        if hook:
            on_stop(stopping, term.set)
        return term

    def wait_to_lead(self, stopping: threading.Event) -> bool:
        """In follow mode, block while this replica does not lead (True once it does,
        False when ``stopping`` is set); at once True when it leads or not following."""
        if not self._follow or self.holds_lease():
            return not stopping.is_set()
        return self.wait_leading(stopping)

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
