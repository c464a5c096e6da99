"""Resource locks for leader election (Go ``tools/leaderelection/resourcelock``).

A lock is an object on the server that candidates race to write: :class:`Interface` is the
protocol, :class:`LeaseLock` the implementation on ``coordination.k8s.io/v1`` Leases (the
only lock client-go still offers). Writes are optimistic: an update carries the
resourceVersion of the last read, so a candidate that lost a race gets a 409, which
:meth:`LeaseLock.update` raises as :class:`LockConflictError` and the elector treats as a
lost round, not a failure.

:class:`LeaderElectionRecord` is what a Lease's spec holds, field for field as client-go
writes it (holderIdentity, leaseDurationSeconds, acquireTime, renewTime,
leaseTransitions), so Go and Python candidates can share one Lease. Times are written as
RFC 3339 with microseconds in UTC (Kubernetes ``MicroTime``).

Beyond Go's lock, :class:`LeaseLock` can label its Lease, write annotations with a record
and delete its Lease on a resourceVersion precondition: what a shard member needs of a
Lease that is both its liveness and its published view (kube-rs and controller-runtime
sharders write such Leases too; client-go's lock only ever releases by writing an empty
holder).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from client_cache.client.rest import request_json
from client_cache.client.transport import Transport
from client_cache.errors import ClientCacheError
from client_cache.util.timestamps import format_micro_time, parse_micro_time

__all__ = [
    "LEASES_RESOURCE_LOCK",
    "Interface",
    "LeaderElectionRecord",
    "LeaseLock",
    "LockConflictError",
    "LockError",
    "LockNotFoundError",
    "ResourceLockConfig",
    "format_micro_time",
    "parse_micro_time",
]

LEASES_RESOURCE_LOCK = "leases"
"""Go ``LeasesResourceLock``."""


class LockError(ClientCacheError):
    """Reading or writing the lock failed (a server error or no answer). ``status`` is
    the HTTP status of the server's answer, None when there was none (a timeout, a
    refused connection, a stop)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LockNotFoundError(LockError):
    """The lock object does not exist yet (the elector then creates it)."""


class LockConflictError(LockError):
    """Someone else wrote the lock first (409): a lost race, not a failure."""


@dataclass(frozen=True)
class LeaderElectionRecord:
    """Who holds the lock and since when (Go ``LeaderElectionRecord``). An empty
    ``holder_identity`` means nobody (a released lock). ``strategy`` and
    ``preferred_holder`` are the coordinated leader election's (KEP-4355): the API server's
    strategy for the Lease, and the candidate it wants to hold it next (the holder then
    stops renewing)."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    leader_transitions: int = 0
    strategy: str = ""
    preferred_holder: str = ""

    def to_lease_spec(self) -> dict[str, Any]:
        """The Lease spec (wire form) holding this record (Go
        ``LeaderElectionRecordToLeaseSpec``)."""
        spec: dict[str, Any] = {"holderIdentity": self.holder_identity,
                                "leaseDurationSeconds": self.lease_duration_seconds,
                                "leaseTransitions": self.leader_transitions}
        if self.acquire_time is not None:
            spec["acquireTime"] = format_micro_time(self.acquire_time)
        if self.renew_time is not None:
            spec["renewTime"] = format_micro_time(self.renew_time)
        if self.strategy:
            spec["strategy"] = self.strategy
        if self.preferred_holder:
            spec["preferredHolder"] = self.preferred_holder
        return spec

    @classmethod
    def from_lease_spec(cls, spec: dict[str, Any] | None) -> LeaderElectionRecord:
        """The record a Lease's spec holds; an absent or empty spec is an empty record (Go
        ``LeaseSpecToLeaderElectionRecord``)."""
        spec = spec or {}
        return cls(holder_identity=str(spec.get("holderIdentity") or ""),
                   lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
                   acquire_time=parse_micro_time(spec.get("acquireTime")),
                   renew_time=parse_micro_time(spec.get("renewTime")),
                   leader_transitions=int(spec.get("leaseTransitions") or 0),
                   strategy=str(spec.get("strategy") or ""),
                   preferred_holder=str(spec.get("preferredHolder") or ""))

    def raw(self) -> bytes:
        """A canonical encoding, to tell whether the record changed (Go compares the
        JSON of the record)."""
        return json.dumps(self.to_lease_spec(), sort_keys=True).encode()


@dataclass
class ResourceLockConfig:
    """Go ``ResourceLockConfig``: the candidate's ``identity`` (unique per candidate:
    hostname plus a random suffix, typically) and an optional event recorder (anything
    with ``eventf(obj, type, reason, fmt, *args)``) told about leadership changes."""

    identity: str
    event_recorder: Any = None


@runtime_checkable
class Interface(Protocol):
    """A resource lock (Go ``resourcelock.Interface``)."""

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, bytes]:
        """The current record and its raw form; :class:`LockNotFoundError` if absent.
        ``timeout`` (seconds) bounds the request, as Go's context deadline does."""
        ...

    def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        """Create the lock holding ``record``; a lost race raises :class:`LockConflictError`
        (Go ``Create``)."""
        ...

    def update(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        """Write ``record`` over the version last read; :class:`LockConflictError` if
        someone wrote since."""
        ...

    def record_event(self, message: str) -> None:
        """Post an Event about the lock, when a recorder is configured (Go ``RecordEvent``)."""
        ...

    def identity(self) -> str:
        """This candidate's identity (Go ``Identity``)."""
        ...

    def describe(self) -> str:
        """``namespace/name`` of the lock, for logs (Go ``Describe``)."""
        ...


class LeaseLock:
    """A lock on ``coordination.k8s.io/v1`` Lease ``namespace/name`` (Go ``LeaseLock``).
    ``timeout`` bounds each request whose caller gives none, and caps those that do
    (seconds).

    Port additions, all optional: ``labels`` are written on the Lease when it is created
    and kept on every update (a label selector then finds a group of Leases);
    ``transport`` is a :class:`~client_cache.client.transport.Transport` the caller owns
    and shares between locks (:meth:`close` leaves it open); ``stop`` is an event that,
    once set, abandons the request in flight and refuses new ones with
    :class:`LockError` (what :meth:`abort` does once, for good)."""

    def __init__(self, namespace: str, name: str, api_client: Any,
                 lock_config: ResourceLockConfig, timeout: float = 10.0, *,
                 labels: Mapping[str, str] | None = None,
                 transport: Transport | None = None,
                 stop: threading.Event | None = None) -> None:
        if not lock_config.identity:
            raise ValueError("a lease lock needs a non-empty identity")
        if not name or "/" in name:
            raise ValueError(f"a lease name must be a non-empty name without '/': {name!r}")
        self.namespace = namespace
        self.name = name
        self.api_client = api_client
        self.lock_config = lock_config
        self.timeout = timeout
        self.labels = dict(labels or {})
        self._lease: dict[str, Any] | None = None
        self._shared = transport is not None
        self._transport: Transport | None = transport  # else made at the first request
        self._transport_lock = threading.Lock()
        self._stop = stop

    def __repr__(self) -> str:
        return f"<LeaseLock {self.describe()} as {self.identity()!r}>"

    @property
    def lease(self) -> dict[str, Any] | None:
        """The Lease (wire form) as last read or written, None before the first read or
        after the server said it is gone. Do not change it: the next update starts from
        it."""
        return self._lease

    def _path(self, named: bool = True) -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases"
        return f"{base}/{self.name}" if named else base

    def _request(self, method: str, named: bool, body: Any = None,
                 timeout: float | None = None) -> tuple[int, Any]:
        limit = self.timeout if timeout is None else max(0.05, min(timeout, self.timeout))
        try:
            return request_json(self.api_client, method, self._path(named), body,
                                timeout=limit, transport=self._own_transport(),
                                stop=self._stop)
        except ClientCacheError as err:
            raise LockError(f"{method} lease {self.describe()}: no answer") from err

    def _own_transport(self) -> Transport:
        with self._transport_lock:
            if self._transport is None:
                self._transport = Transport(self.api_client)
            return self._transport

    def abort(self) -> None:
        """Abandon the request in flight now, if any (its connection is shut down; it
        raises :class:`LockError`); later requests go on. The elector calls it when told
        to stop, so a stop never waits out a hung server's request timeout (a port
        addition: Go cancels the request's context)."""
        with self._transport_lock:
            transport = self._transport
        if transport is not None:
            transport.abort()

    def close(self) -> None:
        """Close the lock's connections (not those of a transport the caller gave)."""
        with self._transport_lock:
            if self._shared:
                return
            transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()

    def _keep(self, status: int, lease: Any, what: str) -> LeaderElectionRecord:
        if status == 409:
            raise LockConflictError(f"{what} lease {self.describe()}: conflict", status)
        if status == 404:
            self._lease = None
            raise LockNotFoundError(f"lease {self.describe()} not found", status)
        if not 200 <= status < 300 or not isinstance(lease, dict):
            raise LockError(f"{what} lease {self.describe()}: HTTP {status}", status)
        self._lease = lease
        return LeaderElectionRecord.from_lease_spec(lease.get("spec"))

    def get(self, timeout: float | None = None) -> tuple[LeaderElectionRecord, bytes]:
        """The current record and its raw form; :class:`LockNotFoundError` if the lock does
        not exist (Go ``Get``)."""
        record = self._keep(*self._request("GET", True, None, timeout), "get")
        return record, record.raw()

    def create(self, record: LeaderElectionRecord, timeout: float | None = None, *,
               annotations: Mapping[str, str] | None = None) -> None:
        """Create the lock holding ``record``, with the lock's labels and ``annotations``;
        a lost race raises :class:`LockConflictError` (Go ``Create``)."""
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        if annotations:
            metadata["annotations"] = dict(annotations)
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": metadata, "spec": record.to_lease_spec()}
        self._keep(*self._request("POST", False, body, timeout), "create")

    def update(self, record: LeaderElectionRecord, timeout: float | None = None, *,
               annotations: Mapping[str, str] | None = None) -> None:
        """Write ``record`` over the version last read, setting ``annotations`` (others
        stay) and the lock's labels; a lost race raises :class:`LockConflictError`, a
        Lease deleted meanwhile :class:`LockNotFoundError` (Go ``Update``)."""
        if self._lease is None:
            raise LockError("lease not initialized, call get or create first")
        metadata = dict(self._lease.get("metadata") or {})
        if self.labels:
            metadata["labels"] = {**(metadata.get("labels") or {}), **self.labels}
        if annotations:
            metadata["annotations"] = {**(metadata.get("annotations") or {}), **annotations}
        body = dict(self._lease, metadata=metadata, spec=record.to_lease_spec())
        self._keep(*self._request("PUT", True, body, timeout), "update")

    def delete(self, timeout: float | None = None, *,
               resource_version: str | None = None) -> bool:
        """Delete the Lease if it is still at ``resource_version`` (by default the version
        last read or written): a server-side precondition, so a Lease someone renewed
        since is kept and :class:`LockConflictError` raised. True when this call deleted
        it, False when it was already gone. A port addition (Go's lock has no delete)."""
        version = resource_version
        if version is None and self._lease is not None:
            version = str((self._lease.get("metadata") or {}).get("resourceVersion") or "")
        if not version:
            raise LockError(f"delete lease {self.describe()}: no resourceVersion to "
                            "hold it to; call get first or pass resource_version")
        body = {"apiVersion": "v1", "kind": "DeleteOptions",
                "preconditions": {"resourceVersion": version}}
        status, _ = self._request("DELETE", True, body, timeout)
        if status == 404:
            self._lease = None
            return False
        if status == 409:
            raise LockConflictError(f"delete lease {self.describe()}: changed since "
                                    f"resourceVersion {version}", status)
        if not 200 <= status < 300:
            raise LockError(f"delete lease {self.describe()}: HTTP {status}", status)
        self._lease = None
        return True

    def record_event(self, message: str) -> None:
        """Post an Event about the lock, when a recorder is configured (Go ``RecordEvent``)."""
        recorder = self.lock_config.event_recorder
        if recorder is None or self._lease is None:
            return
        subject = dict(self._lease, apiVersion="coordination.k8s.io/v1", kind="Lease")
        recorder.eventf(subject, "Normal", "LeaderElection", "%s %s",
                        self.lock_config.identity, message)

    def identity(self) -> str:
        """This candidate's identity (Go ``Identity``)."""
        return self.lock_config.identity

    def describe(self) -> str:
        """``namespace/name`` of the lock, for logs (Go ``Describe``)."""
        return f"{self.namespace}/{self.name}"
