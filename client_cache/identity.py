"""Informer identity: a process-unique name that an informer's metrics and logs carry
(Go ``tools/cache/identity.go``, client-go v0.36).

:func:`new_informer_name` reserves a name for the whole process (``ValueError`` when
another live :class:`InformerName` holds it, or when it is empty, where Go returns an
error); :meth:`InformerName.with_resource` pairs it with a resource as an
:class:`InformerNameAndResource`, the ``identifier`` a
:class:`~client_cache.shared_informer.SharedIndexInformerOptions` and a
:class:`~client_cache.the_real_fifo.RealFIFOOptions` take. The first pairing of a
resource under a name is *reserved* (its metrics are published); a second one for the
same resource is not, and an error line says so, as Go. :meth:`InformerName.release`
(a factory's ``shutdown`` calls it) unreserves every pairing and frees the name.

An informer without an identifier publishes none of client-go's informer metrics
(:mod:`client_cache.informer_metrics`); the package's own per-resource series
(:mod:`client_cache.metrics.prometheus`) do not need one.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from client_cache.api.schema import GroupVersionResource
from client_cache.util._logs import log_visibly

__all__ = [
    "InformerName",
    "InformerNameAndResource",
    "new_informer_name",
    "reset_informer_names_for_testing",
]

_log = logging.getLogger(__name__)

_registry_lock = threading.Lock()
_registry: dict[str, InformerName] = {}


class _Flag:
    """A reservation that can be withdrawn (Go's ``*atomic.Bool``): reading it takes no
    lock, as the queues read it on every write."""

    __slots__ = ("on",)

    def __init__(self, on: bool) -> None:
        self.on = on


@dataclass(frozen=True)
class InformerNameAndResource:
    """A name and a resource, reserved or not (Go ``InformerNameAndResource``). The zero
    value (``InformerNameAndResource()``) is no identity: nothing is reserved."""

    name: str = ""
    resource: GroupVersionResource = field(
        default_factory=lambda: GroupVersionResource("", "", ""))
    _flag: _Flag | None = field(default=None, repr=False, compare=False)

    def reserved(self) -> bool:
        """Whether metrics are published under this identity (Go ``Reserved``): False for
        the zero value, a duplicate pairing, or once the name was released."""
        flag = self._flag
        return flag is not None and flag.on

    def group_version_resource(self) -> GroupVersionResource:
        """The resource (Go ``GroupVersionResource``)."""
        return self.resource


class InformerName:
    """A name reserved for this process (Go ``InformerName``); build it with
    :func:`new_informer_name`."""

    def __init__(self, name: str, *, _token: object = None) -> None:
        if _token is not _TOKEN:
            raise TypeError("build an InformerName with new_informer_name(name)")
        self._name = name
        self._lock = threading.Lock()
        self._reserved = _Flag(True)
        self._resources: dict[GroupVersionResource, _Flag] = {}

    def __repr__(self) -> str:
        state = "reserved" if self._reserved.on else "released"
        return f"<InformerName {self._name!r} {state}>"

    @property
    def name(self) -> str:
        """The name (Go ``Name``)."""
        return self._name

    def with_resource(self, resource: GroupVersionResource) -> InformerNameAndResource:
        """Pair the name with ``resource`` (Go ``WithResource``): reserved the first time
        for that resource; a repeat (two informers of one resource under one name) is not
        reserved, and an ERROR line names both, as Go logs it."""
        with self._lock:
            flag = _Flag(False)
            if self._reserved.on:
                if resource in self._resources:
                    log_visibly(_log, logging.ERROR, "duplicate informer registration of %s "
                                "under informer name %r: its metrics will not be "
                                "published", resource.label(), self._name)
                else:
                    flag.on = True
                    self._resources[resource] = flag
            return InformerNameAndResource(self._name, resource, flag)

    def release(self) -> None:
        """Unreserve every pairing made from this name and free the name for a new
        :func:`new_informer_name` (Go ``Release``); calling it again does nothing."""
        with self._lock:
            for flag in self._resources.values():
                flag.on = False
            self._resources.clear()
            self._reserved.on = False
        with _registry_lock:
            if _registry.get(self._name) is self:
                del _registry[self._name]

    def reserved(self) -> bool:
        """True until :meth:`release`."""
        return self._reserved.on


_TOKEN = object()


def new_informer_name(name: str) -> InformerName:
    """Reserve ``name`` for this process (Go ``NewInformerName``). ``ValueError`` when it
    is empty or another :class:`InformerName` not yet released holds it."""
    if not name:
        raise ValueError("informer name cannot be empty")
    with _registry_lock:
        existing = _registry.get(name)
        if existing is not None and existing.reserved():
            raise ValueError(f"informer name {name!r} is already registered in this "
                             "process (release the other one first)")
        informer_name = InformerName(name, _token=_TOKEN)
        _registry[name] = informer_name
        return informer_name


def reset_informer_names_for_testing() -> None:
    """Release every name (Go ``ResetInformerNamesForTesting``)."""
    with _registry_lock:
        names = list(_registry.values())
    for informer_name in names:
        informer_name.release()
