"""What makes a controller reconcile an object: the event handlers on its informers and
its external sources, turned into requests to its scheduler (kube-rs's ``trigger_self``,
``trigger_owners``, ``trigger_others`` and ``reconcile_on`` streams; controller-runtime's
event handlers ``EnqueueRequestForObject``, ``EnqueueRequestForOwner`` and
``EnqueueRequestsFromMapFunc``).

* an applied primary object (added, updated, listed again) requests its own reconcile;
  deletions do not (an object with a finalizer is updated with a deletionTimestamp first);
* a child's add, update or delete requests the reconcile of each owner in its
  ``ownerReferences`` of the primary's apiVersion and kind (on an update, the old
  object's owners too, so an owner that lost a child hears of it);
* a related object's change requests what the user's mapper returns for it;
* a source (a ``queue.Queue`` or another iterable) yields refs or requests, or, in bulk,
  asks for every cached primary object.

Each request carries a priority (:mod:`client_cache.runtime.scheduler`): what the
controller did not see change asks :data:`~client_cache.workqueue.priority.LOW_PRIORITY`
(an add from an informer's initial list, an update whose resourceVersion did not move: a
resync or an unchanged relist, and a bulk reconcile), every other event
:data:`~client_cache.workqueue.priority.DEFAULT_PRIORITY` (controller-runtime's
``WithLowPriorityWhenUnchanged``, on every handler as there); a source's
:class:`~client_cache.runtime.reconcile.ReconcileRequest` gives its own.

Each informer's events pass its predicates and the controller's event filters first
(:mod:`client_cache.runtime.predicates`); a filtered primary event still reaches a
label-mode shard gate, which follows every object of its member.

A request before the run has a scheduler is dropped (the initial list triggers them
all again once it has one).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from client_cache.api import meta
from client_cache.controller import ResourceEventHandlerDetailedFuncs
from client_cache.runtime._kind import PrimaryKind
from client_cache.runtime.objectref import ObjectRef, object_ref
from client_cache.runtime.predicates import Predicate, passes
from client_cache.runtime.reconcile import ReconcileReason, ReconcileRequest
from client_cache.runtime.scheduler import Scheduler
from client_cache.runtime.sharded import ShardGate
from client_cache.shared_informer import SharedIndexInformer
from client_cache.store import DeletedFinalStateUnknown
from client_cache.workqueue.priority import DEFAULT_PRIORITY, LOW_PRIORITY

__all__ = ["Mapper", "ObjectObserver", "Triggers", "wake_on_stop"]

_log = logging.getLogger("client_cache.runtime.controller")

Mapper = Callable[[Any], "ObjectRef | Iterable[ObjectRef] | None"]
"""``watches``' function: a related object -> the refs to reconcile (or None)."""


def _unwrap(obj: Any) -> Any:
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj


class ObjectObserver(Protocol):
    """What hears every event of the primary informer besides the requests (the daemons
    and timers of a run)."""

    def applied(self, obj: Any) -> None:
        """``obj`` was added or updated."""

    def deleted(self, obj: Any) -> None:
        """``obj`` was deleted."""


class Triggers:
    """The requests of one controller named ``name``, reconciling ``primary`` whose objects
    ``informer`` caches. :meth:`attach` gives it the run's scheduler and shard gate."""

    def __init__(self, name: Callable[[], str], primary: PrimaryKind) -> None:
        self._name = name
        self._primary = primary
        self.informer: SharedIndexInformer[Any] | None = None
        self._scheduler: Scheduler | None = None
        self._shard: ShardGate | None = None
        self.observers: list[ObjectObserver] = []  # the run's daemons and timers
        self.primary_predicates: list[Predicate] = []  # Controller.filter
        self.event_filters: list[Predicate] = []  # Controller.event_filter: every informer

    def attach(self, scheduler: Scheduler | None, shard: ShardGate | None) -> None:
        """Send the requests to ``scheduler`` (None: drop them) and let ``shard`` see the
        primary objects (a label-mode member drains those it is asked to let go)."""
        self._scheduler, self._shard = scheduler, shard

    # -- the handlers ------------------------------------------------------------------------
    def _passes(self, own: Iterable[Predicate], kind: str, *objs: Any) -> bool:
        """Whether an event passes ``own`` predicates and the event filters."""
        if not own and not self.event_filters:  # the common case: nothing to ask
            return True
        return passes((*own, *self.event_filters), kind, *(_unwrap(obj) for obj in objs))

    def _filtered(self, predicates: tuple[Predicate, ...],
                  add: Callable[[Any, int], None], update: Callable[[Any, Any, int], None],
                  delete: Callable[[Any, int], None],
                  ) -> ResourceEventHandlerDetailedFuncs[Any]:
        """A handler calling ``add``, ``update`` or ``delete`` with the event's priority
        for the events that pass."""
        def added(obj: Any, is_in_initial_list: bool) -> None:
            if self._passes(predicates, "add", obj):
                add(obj, _added_priority(is_in_initial_list))

        def updated(old: Any, new: Any) -> None:
            if self._passes(predicates, "update", old, new):
                update(old, new, _updated_priority(old, new))

        def deleted(obj: Any) -> None:
            if self._passes(predicates, "delete", obj):
                delete(obj, DEFAULT_PRIORITY)

        return ResourceEventHandlerDetailedFuncs(add_func=added, update_func=updated,
                                                 delete_func=deleted)

    def primary_handler(self) -> ResourceEventHandlerDetailedFuncs[Any]:
        """The handler on the primary informer."""
        return ResourceEventHandlerDetailedFuncs(
            add_func=lambda obj, initial: self._primary_applied(
                obj, (obj,), _added_priority(initial)),
            update_func=lambda old, new: self._primary_applied(
                new, (old, new), _updated_priority(old, new)),
            delete_func=self._primary_deleted)

    def owner_handler(self, predicates: tuple[Predicate, ...] = (),
                      ) -> ResourceEventHandlerDetailedFuncs[Any]:
        """The handler on a child informer (``owns``)."""
        def changed(priority: int, *objs: Any) -> None:
            primary = self._primary
            owners: dict[ObjectRef, ObjectRef] = {}
            for changed_obj in objs:
                obj = _unwrap(changed_obj)
                try:
                    md = meta.accessor(obj)
                    refs = md.owner_references
                except Exception:  # an unreadable child owns nothing
                    continue
                for ref in refs:
                    if ref.kind == primary.kind and ref.api_version == primary.api_version:
                        owner = ObjectRef(ref.name, md.namespace if primary.namespaced else "",
                                          primary.kind, primary.api_version, ref.uid)
                        owners[owner] = object_ref(obj)
            for owner, related in owners.items():
                self.trigger(owner, ReconcileReason.related_object_updated(related), priority)

        return self._filtered(predicates, lambda obj, p: changed(p, obj),
                              lambda old, new, p: changed(p, old, new),
                              lambda obj, p: changed(p, obj))

    def mapper_handler(self, mapper: Mapper, predicates: tuple[Predicate, ...] = (),
                       ) -> ResourceEventHandlerDetailedFuncs[Any]:
        """The handler on a related informer (``watches``): ``mapper``'s refs; a ref
        without kind means the primary kind."""
        def changed(obj: Any, priority: int) -> None:
            obj = _unwrap(obj)
            try:
                refs = mapper(obj)
            except Exception:
                _log.exception("controller %s: the mapper failed on %s", self._name(),
                               meta.describe(obj))
                return
            if refs is None:
                return
            reason = ReconcileReason.related_object_updated(object_ref(obj))
            for ref in [refs] if isinstance(refs, ObjectRef) else refs:
                self.trigger(ref, reason, priority)

        return self._filtered(predicates, changed, lambda old, new, p: changed(new, p),
                              changed)

    def _primary_applied(self, obj: Any, event: tuple[Any, ...], priority: int) -> None:
        shard = self._shard
        drain = shard is not None and shard.by_labels and shard.observe(obj)
        for observer in self.observers:  # every event, whatever the predicates say
            observer.applied(obj)
        if drain:
            return  # asked to drain: let go, not reconciled here any more
        if not self._passes(self.primary_predicates, "add" if len(event) == 1 else "update",
                            *event):
            return
        self.trigger(object_ref(obj, self._primary.kind, self._primary.api_version),
                     ReconcileReason.object_updated(), priority)

    def _primary_deleted(self, obj: Any) -> None:
        shard = self._shard
        if shard is not None and shard.by_labels:
            shard.forget(obj)
        for observer in self.observers:
            observer.deleted(_unwrap(obj))

    # -- requests ----------------------------------------------------------------------------
    def trigger(self, ref: ObjectRef, reason: ReconcileReason,
                priority: int = DEFAULT_PRIORITY) -> None:
        """Request the reconcile of ``ref`` at ``priority`` (its kind and apiVersion
        filled in when missing; a ref of another kind is refused with a WARNING)."""
        primary = self._primary
        if not ref.kind:
            ref = ObjectRef(ref.name, ref.namespace, primary.kind, primary.api_version,
                            ref.uid)
        elif ref.kind != primary.kind \
                or (ref.api_version or primary.api_version) != primary.api_version:
            _log.warning("controller %s: ignoring a request for %s, not a %s", self._name(),
                         ref, primary.kind)
            return
        elif not ref.api_version:
            ref = ObjectRef(ref.name, ref.namespace, ref.kind, primary.api_version, ref.uid)
        scheduler = self._scheduler
        if scheduler is not None:
            scheduler.schedule(ref, reason, 0.0, priority)

    def primary_refs(self) -> list[ObjectRef]:
        """A ref to every cached primary object."""
        informer = self.informer
        if informer is None:
            return []
        return [object_ref(obj, self._primary.kind, self._primary.api_version)
                for obj in informer.get_indexer().list()]

    def primary_uid(self, ref: ObjectRef) -> str:
        """The uid of ``ref``'s cached primary object, else the ref's own (a child's
        owner reference carries it), else "" (what a server-sharded gate shards by)."""
        informer = self.informer
        if informer is not None:
            obj, exists = informer.get_indexer().get_by_key(ref.key())
            if exists:
                return meta.accessor(obj).uid or ref.uid
        return ref.uid

    def trigger_all(self) -> None:
        """Request the reconcile of every cached primary object (``BULK_RECONCILE``, at
        low priority: a change of any one of them runs first)."""
        for ref in self.primary_refs():
            self.trigger(ref, ReconcileReason.bulk_reconcile(), LOW_PRIORITY)

    def pump(self, source: Any, bulk: bool, stopping: threading.Event) -> None:
        """Read ``source`` until ``stopping`` (a ``queue.Queue``) or its end (another
        iterable): each item a request, or with ``bulk`` a reconcile of everything."""
        def handle(item: Any) -> None:
            if bulk:
                self.trigger_all()
            elif isinstance(item, ReconcileRequest):
                self.trigger(item.obj_ref, item.reason, item.priority)
            elif isinstance(item, ObjectRef):
                self.trigger(item, ReconcileReason.unknown())
            else:
                _log.error("controller %s: a reconcile_on source yielded a %s, not an "
                           "ObjectRef or ReconcileRequest", self._name(), type(item).__name__)

        if isinstance(source, queue.Queue):
            while not stopping.is_set():
                item = source.get()
                if item is _WAKE or stopping.is_set():
                    return
                handle(item)
            return
        for item in source:
            if stopping.is_set():
                return
            handle(item)


def _added_priority(is_in_initial_list: bool) -> int:
    """An add's priority: low when the informer's initial list (or a replay to a handler
    added late) delivered it."""
    return LOW_PRIORITY if is_in_initial_list else DEFAULT_PRIORITY


def _updated_priority(old: Any, new: Any) -> int:
    """An update's priority: low when its resourceVersion did not move (a resync, or an
    object a relist found unchanged)."""
    try:
        same = meta.get_resource_version(_unwrap(old)) == meta.get_resource_version(new)
    except Exception:  # an unreadable object: treated as changed
        return DEFAULT_PRIORITY
    return LOW_PRIORITY if same else DEFAULT_PRIORITY


class _Wake:
    """The marker put in a ``reconcile_on`` queue to wake its reader at shutdown."""


_WAKE = _Wake()


def wake_on_stop(source: queue.Queue[Any]) -> Callable[[], None]:
    """A function that wakes ``source``'s reader (:meth:`Triggers.pump`) to see the stop."""
    def wake() -> None:
        # a full queue: its reader is not blocked, and sees the stop at its next item
        with contextlib.suppress(queue.Full):
            source.put_nowait(_WAKE)
    return wake
