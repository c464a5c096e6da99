"""The embedded server's coordinated leader election (kube-apiserver's
``pkg/controlplane/controller/leaderelection``, KEP-4355), on with the
``CoordinatedLeaderElection`` gate.

For each Lease that ``LeaseCandidate`` objects name, as the real controller: when an
election is needed (no Lease, an expired one, one without holder, a candidate not renewed
for 15 minutes, or a better candidate than the holder), ping every candidate that has not
renewed within the last 5 s (``spec.pingTime``), wait up to 5 s for their renewals, then
elect among those that answered, with the ``OldestEmulationVersion`` strategy: the oldest
emulation version, then binary version, then the oldest candidate. It creates the Lease
with that holder (a 5 s lease), gives an expired or holderless one to it, or, when the
holder is alive but not the best, marks the term's end with ``preferredHolder`` (the
holder then stops renewing and the Lease expires into the next election). Candidates
whose versions do not parse are not elected; a strategy other than
``OldestEmulationVersion`` is left to the candidates. Unlike kube-apiserver, the
coordinator is not itself leader-elected (there is one embedded server).
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import queue
import re
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Any

from client_cache.api import fields as fieldsel
from client_cache.api import labels as labelsel
from client_cache.errors import ApiStatusError
from client_cache.testing.apiserver.store import ApiStore
from client_cache.testing.apiserver.watchers import Watcher
from client_cache.util._logs import log_visibly
from client_cache.util.timestamps import format_micro_time, parse_micro_time

__all__ = ["ELECTION_DURATION", "LEASE_DURATION_SECONDS", "LeaseCoordinator"]

ELECTION_DURATION = 5.0
"""Seconds a pinged candidate has to renew (Go ``electionDuration``)."""
LEASE_DURATION_SECONDS = 5
"""The duration of a Lease the coordinator writes (Go ``defaultLeaseDurationSeconds``)."""
_log = logging.getLogger(__name__)
_REQUEUE = 5.0
_CANDIDATE_VALID = timedelta(minutes=30)
_STRATEGY = "OldestEmulationVersion"
_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def _version(text: str | None) -> tuple[int, int, int] | None:
    """semver's tolerant parse, to the part the ordering needs (None: does not parse)."""
    match = _VERSION.match((text or "").strip())
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())  # type: ignore[return-value]


def _order(candidate: dict[str, Any]) -> tuple[tuple[int, int, int], tuple[int, int, int], str]:
    spec = candidate.get("spec") or {}
    zero = (0, 0, 0)
    return (_version(spec.get("emulationVersion")) or zero,
            _version(spec.get("binaryVersion")) or zero,
            candidate["metadata"].get("creationTimestamp") or "")


class LeaseCoordinator:
    """See the module documentation: one thread, ``apiserver-lease-coordinator``, woken by
    the store's changes to Leases and LeaseCandidates and by its own timers."""

    def __init__(self, store: ApiStore) -> None:
        self.store = store
        leases = store.lookup("coordination.k8s.io", "v1", "leases")
        candidates = store.lookup("coordination.k8s.io", "v1beta1", "leasecandidates")
        assert leases is not None and candidates is not None
        self._leases, self._candidates = leases, candidates
        self._events: queue.Queue[Any] = queue.Queue()
        self._watchers = [Watcher(rtype, "", labelsel.everything(), fieldsel.everything(),
                                  queue=self._events, internal=True)
                          for rtype in (leases, candidates)]
        self._due: dict[tuple[str, str], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="apiserver-lease-coordinator",
                                        daemon=True)

    def start(self) -> None:
        """Watch the store and start the thread."""
        for watcher in self._watchers:
            self.store.open_watch(watcher, None, True, False)
        self._thread.start()

    def stop(self) -> None:
        """End the thread (within a second)."""
        self._stop.set()
        self._events.put(None)
        for watcher in self._watchers:
            with contextlib.suppress(Exception):
                self.store.close_watch(watcher)
        if self._thread.is_alive():
            self._thread.join(1.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            wait = min((due - now for due in self._due.values()), default=None)
            try:
                line = self._events.get(timeout=None if wait is None else max(0.0, wait))
            except queue.Empty:
                line = b""
            if self._stop.is_set():
                return
            if isinstance(line, bytes) and line:
                self._note(line)
            now = time.monotonic()
            for key in [k for k, due in self._due.items() if due <= now]:
                del self._due[key]
                try:
                    again = self._reconcile(*key)
                except ApiStatusError as err:
                    if err.code != 409:  # a write that lost a race is retried quietly
                        log_visibly(_log, logging.WARNING, "lease coordinator: election "
                                    "of Lease %s/%s failed: %s", *key, err)
                    again = 0.5
                except Exception as err:  # a bug must not end the thread, nor go unseen
                    log_visibly(_log, logging.ERROR, "lease coordinator: election of Lease "
                                "%s/%s failed", *key, exc_info=err)
                    again = _REQUEUE
                if again is not None:
                    self._schedule(key, again)

    def _schedule(self, key: tuple[str, str], delay: float) -> None:
        due = time.monotonic() + delay
        if self._due.get(key, float("inf")) > due:
            self._due[key] = due

    def _note(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return  # a control line, not an event
        obj = event.get("object") or {}
        md = obj.get("metadata") or {}
        if obj.get("kind") == "LeaseCandidate":
            spec = obj.get("spec") or {}
            ping, renew = parse_micro_time(spec.get("pingTime")), parse_micro_time(
                spec.get("renewTime"))
            if ping is not None and (renew is None or renew < ping):
                return  # a ping not answered yet, as the real controller skips it
            if spec.get("leaseName"):
                self._schedule((md.get("namespace", ""), spec["leaseName"]), 0.0)
        elif obj.get("kind") == "Lease":
            self._schedule((md.get("namespace", ""), md.get("name", "")), 0.0)

    # -- one election step (Go reconcileElectionStep) ------------------------------------------
    def _reconcile(self, namespace: str, lease_name: str) -> float | None:
        now = datetime.now(timezone.utc)
        candidates = [c for c in self.store.snapshot(self._candidates, None)[0]
                      if c["metadata"].get("namespace") == namespace
                      and (c.get("spec") or {}).get("leaseName") == lease_name
                      and not _expired_candidate(c, now)]
        if not candidates:
            return None
        lease = self._lease(namespace, lease_name)
        if not self._election_needed(candidates, lease, now):
            return _REQUEUE
        can_vote = True
        for candidate in candidates:
            spec = candidate["spec"]
            ping, renew = _times(spec)
            if ping is not None and ping + _ELECTION > now and renew is not None and \
                    renew < ping:
                can_vote = False  # pinged, its answer awaited
                continue
            if renew is not None and renew + _ELECTION > now:
                continue  # renewed lately: alive
            if ping is None or (ping + _ELECTION < now and not (renew is not None
                                                                  and renew < ping)):
                pinged = copy.deepcopy(candidate)
                pinged["spec"]["pingTime"] = format_micro_time(now)
                self.store.update(self._candidates, namespace,
                                  candidate["metadata"]["name"], pinged)
                can_vote = False
        if not can_vote:
            return _REQUEUE
        for candidate in candidates:
            ping, renew = _times(candidate["spec"])
            if ping is None or (renew is not None and renew >= ping):
                continue
            if ping + _ELECTION > now:
                return None  # still waiting for an answer: its renewal requeues
        acked = [c for c in candidates if (_times(c["spec"])[1] or _EPOCH) + _ELECTION > now]
        if not acked:
            return None
        strategy = self._strategy(acked)
        if strategy is None:
            return None
        electee = None
        if strategy == _STRATEGY:
            valid = [c for c in acked if _version(c["spec"].get("emulationVersion"))
                     and _version(c["spec"].get("binaryVersion"))]
            electee = min(valid, key=_order)["metadata"]["name"] if valid else None
        self._write_lease(namespace, lease_name, lease, strategy, electee, now)
        return _REQUEUE

    def _lease(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self.store.get(self._leases, namespace, name)
        except ApiStatusError:
            return None

    def _election_needed(self, candidates: list[dict[str, Any]],
                         lease: dict[str, Any] | None, now: datetime) -> bool:
        if lease is None:
            return True
        spec = lease.get("spec") or {}
        if _expired_lease(spec, now) or not spec.get("holderIdentity"):
            return True
        if any((_times(c["spec"])[1] or _EPOCH) + _CANDIDATE_VALID / 2 < now
               for c in candidates):
            return True
        if self._strategy(candidates) != _STRATEGY:
            return False
        valid = [c for c in candidates if _version(c["spec"].get("emulationVersion"))
                 and _version(c["spec"].get("binaryVersion"))]
        if not valid:
            return False
        return bool(min(valid, key=_order)["metadata"]["name"] != spec.get("holderIdentity"))

    @staticmethod
    def _strategy(candidates: list[dict[str, Any]]) -> str | None:
        """The strategy of the candidates of the highest binary version (None: two at
        that version disagree, Go's error)."""
        best = max(candidates, key=lambda c: _version(c["spec"].get("binaryVersion"))
                   or (0, 0, 0))
        top = _version(best["spec"].get("binaryVersion")) or (0, 0, 0)
        strategies = {c["spec"].get("strategy", "") for c in candidates
                      if (_version(c["spec"].get("binaryVersion")) or (0, 0, 0)) == top}
        return strategies.pop() if len(strategies) == 1 else None

    def _write_lease(self, namespace: str, name: str, lease: dict[str, Any] | None,
                     strategy: str, electee: str | None, now: datetime) -> None:
        if lease is None:
            spec: dict[str, Any] = {"strategy": strategy,
                                    "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                                    "renewTime": format_micro_time(now)}
            if electee:
                spec["holderIdentity"] = electee
            self.store.create(self._leases, namespace,
                              {"metadata": {"name": name}, "spec": spec})
            return
        updated = copy.deepcopy(lease)
        spec = updated.setdefault("spec", {})
        holder = spec.get("holderIdentity") or ""
        spec["strategy"] = strategy
        if electee and (not holder or (_expired_lease(lease.get("spec") or {}, now)
                                       and holder != electee)):
            spec.pop("preferredHolder", None)
            spec.pop("acquireTime", None)
            spec.update(holderIdentity=electee, renewTime=format_micro_time(now),
                        leaseDurationSeconds=LEASE_DURATION_SECONDS)
        elif electee and holder != electee:
            spec["preferredHolder"] = electee  # the end of the holder's term
        if updated != lease:
            self.store.update(self._leases, namespace, name, updated)


_ELECTION = timedelta(seconds=ELECTION_DURATION)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _times(spec: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
    return parse_micro_time(spec.get("pingTime")), parse_micro_time(spec.get("renewTime"))


def _expired_candidate(candidate: dict[str, Any], now: datetime) -> bool:
    renew = parse_micro_time((candidate.get("spec") or {}).get("renewTime"))
    return renew is None or renew + _CANDIDATE_VALID < now


def _expired_lease(spec: dict[str, Any], now: datetime) -> bool:
    renew = parse_micro_time(spec.get("renewTime"))
    duration = spec.get("leaseDurationSeconds")
    return renew is None or duration is None or renew + timedelta(seconds=duration) < now
