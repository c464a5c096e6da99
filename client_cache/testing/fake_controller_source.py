"""An in-memory API server for tests (Go ``tools/cache/testing/fake_controller_source.go``).

:class:`FakeControllerSource` is a :class:`~client_cache.listwatch.ListerWatcher`: every
change bumps a global resourceVersion (1, 2, 3...) and writes it into the object (the
object passed in is modified, as upstream), ``list`` returns deep copies with the latest
resourceVersion, and ``watch(rv)`` replays the recorded changes after ``rv`` and then
follows live ones. Changes made with the ``*_drop_watch`` methods are recorded but not sent
to open watches (a watch that missed events). :meth:`reset_watch` closes every watch and
forgets the history, so older resourceVersions become "too old" (410 Expired).
"""

from __future__ import annotations

import copy
import random
import threading
from typing import Any

from kubernetes.client import V1ListMeta, V1PersistentVolumeClaimList, V1PersistentVolumeList

from client_cache.api import meta
from client_cache.api.lists import ListOptions
from client_cache.api.watch import Broadcaster, Event, EventType, FullChannelBehavior, Watch
from client_cache.errors import ClientCacheError, new_resource_expired

__all__ = [
    "FakeControllerSource",
    "FakePVCControllerSource",
    "FakePVControllerSource",
    "new_fake_controller_source",
    "new_fake_pv_controller_source",
    "new_fake_pvc_controller_source",
]


def _set_resource_version(obj: Any, rv: str) -> None:
    if isinstance(obj, dict):
        obj.setdefault("metadata", {})["resourceVersion"] = rv
        return
    md = getattr(obj, "metadata", None)
    if md is None:
        raise ClientCacheError(f"{type(obj).__name__} has no metadata to version")
    if isinstance(md, dict):
        md["resourceVersion"] = rv
    elif hasattr(md, "resource_version"):
        md.resource_version = rv
    else:
        md.resourceVersion = rv


class FakeControllerSource:
    """See the module documentation (Go ``FakeControllerSource``). Set ``list_error`` to
    make ``list`` raise it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.items: dict[tuple[str, str, str], Any] = {}
        self.broadcaster = Broadcaster(100, FullChannelBehavior.WAIT_IF_CHANNEL_FULL)
        self.list_error: BaseException | None = None
        self._changes: list[Event] = []
        self._last_rv = 0

    @staticmethod
    def _key(obj: Any) -> tuple[str, str, str]:
        acc = meta.accessor(obj)
        return acc.namespace, acc.name, acc.uid

    def reset_watch(self) -> None:
        """Close every watch and forget the change history."""
        with self._lock:
            self.broadcaster.shutdown()
            self.broadcaster = Broadcaster(100, FullChannelBehavior.WAIT_IF_CHANNEL_FULL)
            self._changes = []

    def add(self, obj: Any) -> None:
        """Add ``obj`` with the next resourceVersion and tell the watchers (Go ``Add``)."""
        self.change(Event(EventType.ADDED, obj), 1.0)

    def modify(self, obj: Any) -> None:
        """Replace ``obj`` with the next resourceVersion and tell the watchers (Go
        ``Modify``)."""
        self.change(Event(EventType.MODIFIED, obj), 1.0)

    def delete(self, last_value: Any) -> None:
        """Delete ``last_value`` and tell the watchers (Go ``Delete``)."""
        self.change(Event(EventType.DELETED, last_value), 1.0)

    def add_drop_watch(self, obj: Any) -> None:
        """Add ``obj`` without telling the watchers (Go ``AddDropWatch``)."""
        self.change(Event(EventType.ADDED, obj), 0.0)

    def modify_drop_watch(self, obj: Any) -> None:
        """Replace ``obj`` without telling the watchers (Go ``ModifyDropWatch``)."""
        self.change(Event(EventType.MODIFIED, obj), 0.0)

    def delete_drop_watch(self, last_value: Any) -> None:
        """Delete ``last_value`` without telling the watchers (Go ``DeleteDropWatch``)."""
        self.change(Event(EventType.DELETED, last_value), 0.0)

    def change(self, event: Event, watch_probability: float) -> None:
        """Record ``event`` (bumping the resourceVersion) and send it to open watches with
        probability ``watch_probability``."""
        with self._lock:
            self._last_rv += 1
            _set_resource_version(event.object, str(self._last_rv))
            # A copy, so that a caller re-using one object for several changes (which Go's
            # tests avoid) cannot rewrite the history.
            self._changes.append(Event(event.type, copy.deepcopy(event.object)))
            key = self._key(event.object)
            if event.type in (EventType.ADDED, EventType.MODIFIED):
                self.items[key] = event.object
            elif event.type is EventType.DELETED:
                self.items.pop(key, None)
            if random.random() < watch_probability:
                self.broadcaster.action(event.type, copy.deepcopy(event.object))

    def _list_objects(self) -> tuple[list[Any], str]:
        with self._lock:
            if self.list_error is not None:
                raise self.list_error
            return [copy.deepcopy(obj) for obj in self.items.values()], str(self._last_rv)

    def list(self, options: ListOptions | None = None) -> Any:
        """A wire-dict ``List`` of deep copies at the latest resourceVersion."""
        items, rv = self._list_objects()
        return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": rv},
                "items": items}

    def is_watch_list_semantics_unsupported(self) -> bool:
        """True: this fake ignores ``send_initial_events`` (as Go's, whose watch refuses
        the empty resourceVersion a watch-list asks with), so reflectors list from it."""
        return True

    def watch(self, options: ListOptions) -> Watch:
        """Replay changes after ``options.resource_version`` then follow live changes.

        A version older than the history raises a 410 Expired ``ApiStatusError``; a
        version in the future raises ``ValueError``; a non-integer one ``ValueError``.
        """
        with self._lock:
            rv = int(options.resource_version)
            if rv < self._last_rv:
                if not self._changes:
                    raise new_resource_expired(
                        f"too old resource version: {rv} ({self._last_rv})"
                    )
                oldest = int(meta.get_resource_version(self._changes[0].object))
                if rv < oldest:
                    raise new_resource_expired(f"too old resource version: {rv} ({oldest})")
                replay = [
                    Event(e.type, copy.deepcopy(e.object))
                    for e in self._changes[rv - oldest + 1 :]
                ]
                return self.broadcaster.watch_with_prefix(replay)
            if rv > self._last_rv:
                raise ValueError("resource version in the future not supported by this fake")
            return self.broadcaster.watch()

    def shutdown(self) -> None:
        """Close every watch. (Go leaves its lock held afterwards; this port does not.)"""
        with self._lock:
            self.broadcaster.shutdown()


class FakePVControllerSource(FakeControllerSource):
    """Lists as a ``V1PersistentVolumeList`` of models (Go ``FakePVControllerSource``)."""

    def list(self, options: ListOptions | None = None) -> Any:
        items, rv = self._list_objects()
        return V1PersistentVolumeList(items=items, metadata=V1ListMeta(resource_version=rv))


class FakePVCControllerSource(FakeControllerSource):
    """Lists as a ``V1PersistentVolumeClaimList`` (Go ``FakePVCControllerSource``)."""

    def list(self, options: ListOptions | None = None) -> Any:
        items, rv = self._list_objects()
        return V1PersistentVolumeClaimList(items=items, metadata=V1ListMeta(resource_version=rv))


def new_fake_controller_source() -> FakeControllerSource:
    """An empty fake list-watch source (Go ``NewFakeControllerSource``)."""
    return FakeControllerSource()


def new_fake_pv_controller_source() -> FakePVControllerSource:
    """An empty fake source of PersistentVolumes (Go ``NewFakePVControllerSource``)."""
    return FakePVControllerSource()


def new_fake_pvc_controller_source() -> FakePVCControllerSource:
    """An empty fake source of PersistentVolumeClaims (Go ``NewFakePVCControllerSource``)."""
    return FakePVCControllerSource()
