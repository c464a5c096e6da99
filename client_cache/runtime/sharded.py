"""Reconcile only this replica's share: the controller runtime's use of sharding.

A :class:`ShardGate` runs a :class:`~client_cache.sharding.ShardMember` beside a
controller. Every replica caches every object; a worker asks :meth:`ShardGate.begin`
before each reconcile and skips the request when the key (the primary object's
``namespace/name``: its children trigger the same key, so they stay with it) is not this
replica's to start now. When what the member allows changes (a member joined or left, a
handover finished), a thread of the gate's own (``controller-<name>-shard``) triggers the
cached keys that became startable, and those whose requests were skipped while the key was
on its way here; it also reports ``shard_keys_owned`` and ``shard_handovers_total``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from client_cache.runtime.objectref import ObjectRef
from client_cache.sharding import ShardingConfig, ShardMember, get_sharding_metrics_provider

__all__ = ["ShardGate"]

_log = logging.getLogger(__name__)


class ShardGate:
    """See the module documentation. ``refs`` lists the cached primary objects' refs;
    ``trigger`` requests a reconcile of one."""

    def __init__(self, config: ShardingConfig, name: str, api_client: Any,
                 refs: Callable[[], Iterable[ObjectRef]],
                 trigger: Callable[[ObjectRef], None]) -> None:
        self.config = config.resolved(name)
        self._name = name
        self._refs = refs
        self._trigger = trigger
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._owned: set[ObjectRef] = set()
        self._skipped: set[ObjectRef] = set()  # wanted here, skipped while not yet clear
        self._first = True
        self._epoch = 0
        self._metrics = get_sharding_metrics_provider()
        self.member = ShardMember(self.config, api_client, on_change=self._changed.set)
        self._thread = threading.Thread(target=self._react, daemon=True,
                                        name=f"controller-{name}-shard")

    @property
    def identity(self) -> str:
        """This replica's identity in the ring (``ctx.shard``)."""
        return self.member.identity

    def start(self) -> None:
        """Join the ring and start reacting to its changes."""
        self.member.start()
        self._thread.start()

    def begin(self, ref: ObjectRef) -> bool:
        """Whether this replica may reconcile ``ref`` now; True registers it in flight
        until :meth:`end`. A request refused only because the key is still on its way
        here is remembered and triggered again when it arrives."""
        key = ref.key()
        if self.member.begin(key):
            return True
        if self.member.wants(key):
            with self._lock:
                self._skipped.add(ref)
            self._changed.set()  # the state may have changed under us (a lapse)
        return False

    def end(self, ref: ObjectRef) -> None:
        """The reconcile :meth:`begin` allowed has finished."""
        self.member.end(ref.key())

    def _react(self) -> None:
        while True:
            self._changed.wait()
            if self._stop.is_set():
                return
            self._changed.clear()
            try:
                self._retrigger()
            except Exception:
                _log.exception("controller %s: shard %s: triggering gained keys failed",
                               self._name, self.identity)

    def _retrigger(self) -> None:
        member = self.member
        if not member.ready():  # it will be, and tell: the keys are counted then
            return
        assigned = member.assigned
        owned = {ref for ref in self._refs() if assigned(ref.key())}
        epoch = member.epoch()
        with self._lock:
            if epoch != self._epoch:  # after a lapse every key is reconciled again
                self._epoch, self._owned = epoch, set()
            gained = owned - self._owned
            skipped = {ref for ref in self._skipped if ref in owned}
            self._skipped -= skipped
            self._owned = owned
            first, self._first = self._first, self._first and not owned
        for ref in gained | skipped:
            self._trigger(ref)
        ring = self.config.ring
        self._metrics.set_keys_owned(ring, len(owned))
        if gained and not first:
            self._metrics.add_handovers(ring, len(gained))
        if gained:
            _log.info("controller %s: shard %s reconciles %d keys (%d new)", self._name,
                      self.identity, len(owned), len(gained))

    def stop(self, timeout: float = 5.0) -> None:
        """Leave the ring (running reconciles have ended: the controller's workers were
        joined) and stop the thread."""
        self._stop.set()
        self._changed.set()
        self.member.stop(timeout)
        self._thread.join(1.0)
