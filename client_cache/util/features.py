"""client-go's feature gates, read from the same environment variables (Go
``k8s.io/client-go/features``).

A gate is on or off by its default for client-go v0.36 unless ``KUBE_FEATURE_<Name>``
is set to a value ``strconv.ParseBool`` reads (``1``, ``t``, ``T``, ``TRUE``,
``true``, ``True`` and the same six false spellings): so a Go team's deployment settings
mean the same here.
:func:`feature_gates` answers them; :meth:`FeatureGates.set_for_testing` overrides one
within a ``with`` block.

The gates that shape an informer (client-go v0.36 defaults, all on there):

* ``InOrderInformers``: a shared informer queues into a
  :class:`~client_cache.the_real_fifo.RealFIFO` (every event, in order), not a
  :class:`~client_cache.delta_fifo.DeltaFIFO`;
* ``AtomicFIFO``: a relist is one ``ReplacedAll`` item and a resync one ``SyncAll``
  item, the store swapped in one step; the informer's store tracks the resourceVersion it
  has seen (``last_store_sync_resource_version``) and receives bookmarks;
* ``UnlockWhileProcessingFIFO``: the reflector is not held up while a popped item is
  processed;
* ``InOrderInformersBatchProcess``: a RealFIFO informer applies up to 1,000 queued
  events in one store transaction;
* ``WatchListClient``: an informer fills its cache from a watch-list stream (falling
  back to LIST, at once and at DEBUG, where the server refuses it, and LISTing from a
  lister-watcher that says it does not support it). On by default since client-go
  v0.35.

Port choices: the variables are read each time a gate is asked (an informer asks when
it is built), not once per process as Go does, so a test or a program may set one before
building its informers. ``InOrderInformers`` is locked on in client-go v0.36 (setting it
false there logs an error and changes nothing); here ``KUBE_FEATURE_InOrderInformers=false``
is honoured, with a warning, as the one switch back to the v0.32 informer (a DeltaFIFO),
which this package keeps tested. A value that does not parse is ignored with a warning,
as Go does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from client_cache.util._env import parse_bool
from client_cache.util._logs import log_visibly

__all__ = [
    "ATOMIC_FIFO",
    "CLIENTS_ALLOW_CBOR",
    "CLIENTS_PREFER_CBOR",
    "IN_ORDER_INFORMERS",
    "IN_ORDER_INFORMERS_BATCH_PROCESS",
    "INFORMER_RESOURCE_VERSION",
    "KNOWN_FEATURES",
    "UNLOCK_WHILE_PROCESSING_FIFO",
    "WATCH_LIST_CLIENT",
    "FeatureGates",
    "FeatureSpec",
    "env_var_name",
    "feature_gates",
]

_log = logging.getLogger(__name__)

ATOMIC_FIFO = "AtomicFIFO"
CLIENTS_ALLOW_CBOR = "ClientsAllowCBOR"
CLIENTS_PREFER_CBOR = "ClientsPreferCBOR"
IN_ORDER_INFORMERS = "InOrderInformers"
IN_ORDER_INFORMERS_BATCH_PROCESS = "InOrderInformersBatchProcess"
INFORMER_RESOURCE_VERSION = "InformerResourceVersion"
UNLOCK_WHILE_PROCESSING_FIFO = "UnlockWhileProcessingFIFO"
WATCH_LIST_CLIENT = "WatchListClient"


@dataclass(frozen=True)
class FeatureSpec:
    """A gate's default and maturity at client-go v0.36 (Go ``FeatureSpec``)."""

    default: bool
    pre_release: str
    lock_to_default: bool = False


KNOWN_FEATURES: dict[str, FeatureSpec] = {
    ATOMIC_FIFO: FeatureSpec(True, "Beta"),
    CLIENTS_ALLOW_CBOR: FeatureSpec(False, "Alpha"),
    CLIENTS_PREFER_CBOR: FeatureSpec(False, "Alpha"),
    IN_ORDER_INFORMERS: FeatureSpec(True, "GA", lock_to_default=True),
    IN_ORDER_INFORMERS_BATCH_PROCESS: FeatureSpec(True, "Beta"),
    INFORMER_RESOURCE_VERSION: FeatureSpec(True, "GA"),
    UNLOCK_WHILE_PROCESSING_FIFO: FeatureSpec(True, "Beta"),
    WATCH_LIST_CLIENT: FeatureSpec(True, "Beta"),
}
"""client-go v0.36's gates (``features/known_features.go``) that this package reads or
names (the CBOR gates have no effect here: the package speaks JSON and protobuf)."""


def env_var_name(feature: str) -> str:
    """The variable that sets ``feature`` (``KUBE_FEATURE_<Name>``)."""
    return f"KUBE_FEATURE_{feature}"


class FeatureGates:
    """The process's gates (Go's ``envVarFeatureGates``): :meth:`enabled` answers from an
    override set by :meth:`set` or :meth:`set_for_testing`, else the environment, else
    the default."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._overrides: dict[str, bool] = {}
        self._warned: set[tuple[str, str]] = set()

    @staticmethod
    def _spec(feature: str) -> FeatureSpec:
        spec = KNOWN_FEATURES.get(feature)
        if spec is None:
            raise KeyError(f"feature {feature!r} is not a known client-go feature gate; "
                           f"known: {', '.join(sorted(KNOWN_FEATURES))}")
        return spec

    def enabled(self, feature: str) -> bool:
        """Whether ``feature`` is on (Go ``Enabled``); ``KeyError`` for an unknown name, as
        Go panics."""
        spec = self._spec(feature)
        with self._lock:
            if feature in self._overrides:
                return self._overrides[feature]
        raw = os.environ.get(env_var_name(feature))
        if raw is None:
            return spec.default
        value = _parse(raw)
        if value is None:
            self._warn_once(feature, raw, "%s=%r is not a boolean; the gate keeps its "
                            "default (%s)", env_var_name(feature), raw, spec.default)
            return spec.default
        if spec.lock_to_default and value != spec.default:
            self._warn_once(feature, raw, "%s=%s: client-go v0.36 locks this gate to %s and "
                            "ignores the setting; this package honours it as the switch "
                            "back to the v0.32 behaviour", env_var_name(feature), raw,
                            spec.default)
        return value

    def set(self, feature: str, value: bool) -> None:
        """Set ``feature`` for the process, over the environment (Go ``Set``; a locked gate
        cannot be set away from its default: ``ValueError``)."""
        spec = self._spec(feature)
        if spec.lock_to_default and value != spec.default:
            raise ValueError(f"cannot set feature gate {feature} to {value}, feature is "
                             f"locked to {spec.default}")
        with self._lock:
            self._overrides[feature] = value

    @contextlib.contextmanager
    def set_for_testing(self, feature: str, value: bool) -> Iterator[None]:
        """Within the block, ``feature`` is ``value`` (locked gates included), then what it
        was (Go ``SetFeatureGateDuringTest``)."""
        self._spec(feature)
        with self._lock:
            before = self._overrides.get(feature)
            self._overrides[feature] = value
        try:
            yield
        finally:
            with self._lock:
                if before is None:
                    self._overrides.pop(feature, None)
                else:
                    self._overrides[feature] = before

    def _warn_once(self, feature: str, raw: str, message: str, *args: object) -> None:
        with self._lock:
            if (feature, raw) in self._warned:
                return
            self._warned.add((feature, raw))
        log_visibly(_log, logging.WARNING, message, *args)  # seen with no logging set up


_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _parse(raw: str) -> bool | None:
    """Go ``strconv.ParseBool``: True, False, or None for anything else."""
    if parse_bool(raw):
        return True
    return False if raw in _FALSE else None


_GATES = FeatureGates()


def feature_gates() -> FeatureGates:
    """The process's gates (Go ``features.FeatureGates()``)."""
    return _GATES
