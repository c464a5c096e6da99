"""The storage behind the embedded API server: resources, revisions, history and watches.

It behaves like etcd behind a kube-apiserver, as far as clients can tell:

* one global revision counter; every create, update and delete takes the next revision,
  which becomes the object's ``metadata.resourceVersion`` (a delete's revision is the
  resourceVersion of the object in the DELETED event);
* a bounded history of changes; anything older than the oldest kept change is
  *compacted*: LIST at an exact old revision, a continue token from before the compaction
  and WATCH from such a revision all get 410 Expired;
* LIST at an exact revision inside the history is answered from a snapshot rebuilt from
  the history, so paged lists are consistent;
* watchers receive the changes of their resource, filtered by namespace and selectors; an
  object that stops matching a selector is reported DELETED, one that starts matching ADDED.

Objects are wire dicts and are never handed out without a copy.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from client_cache.api import labels as labelsel
from client_cache.errors import (
    ApiStatusError,
    new_already_exists,
    new_bad_request,
    new_conflict,
    new_not_found,
    new_resource_expired,
    new_too_large_resource_version,
)
from client_cache.testing.apiserver.admission import Admission
from client_cache.testing.apiserver.managed_fields import after_apply, after_update
from client_cache.testing.apiserver.resources import (
    BUILTIN_RESOURCES,
    CRD_KEY,
    ResourceType,
    apply_defaults,
    crd_resource_type,
    prune,
)
from client_cache.testing.apiserver.schema_validation import invalid_error, validate
from client_cache.testing.apiserver.validation import validate_write
from client_cache.testing.apiserver.watchers import Change, Watcher, encode_event
from client_cache.util.timestamps import format_time

# ResourceType, BUILTIN_RESOURCES, Watcher and encode_event live in their own modules
# (testing.resources, testing.watchers) and stay importable from here.
__all__ = ["BUILTIN_RESOURCES", "ApiStore", "ResourceType", "Watcher", "encode_event"]


def _now() -> str:
    return format_time(time.time())


def _check_version(
    rtype: ResourceType, name: str, current: Mapping[str, Any], wanted: Any
) -> None:
    """Optimistic concurrency: a stale resourceVersion in the request is a 409 Conflict."""
    if wanted and wanted != current["metadata"]["resourceVersion"]:
        raise new_conflict(
            rtype.group, rtype.plural, name,
            "the object has been modified; please apply your changes to the latest version "
            "and try again",
        )


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result


def _check_schema(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """422 Invalid, as the real server answers, for a custom resource that breaks its
    CRD's schema (:mod:`client_cache.testing.apiserver.schema_validation`)."""
    if rtype.schema is None:
        return
    causes = validate(rtype.schema, obj)
    if causes:
        raise invalid_error(rtype.kind, rtype.group,
                            str((obj.get("metadata") or {}).get("name", "")), causes)



class StoreFrozenError(RuntimeError):
    """The store was frozen by a dump and then closed: the request touched nothing."""


class FreezableLock:
    """The store's re-entrant lock, which :meth:`freeze` closes for good: from then on
    every ``acquire`` by any other thread than the freezing one blocks until the process
    ends or :meth:`close` is called, then raises :class:`StoreFrozenError`. A plain
    ``RLock`` left held by the thread that dumped is not that: a later thread given the
    ended thread's id re-enters it, and writes were acknowledged after a dump."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._frozen = threading.Event()
        self._closed = threading.Event()
        self._freezer: threading.Thread | None = None

    def acquire(self) -> bool:
        """Take the lock (re-entrant); once frozen, wait for :meth:`close` and raise."""
        self._lock.acquire()
        if self._frozen.is_set() and threading.current_thread() is not self._freezer:
            self._lock.release()
            self._closed.wait()  # frozen: the process is about to be killed
            raise StoreFrozenError("the store is frozen (dumped before a kill)")
        return True

    def close(self) -> None:
        """End the waits of the requests a freeze holds (each raises)."""
        self._closed.set()

    def release(self) -> None:
        """Let go of one level of the lock."""
        self._lock.release()

    def freeze(self) -> None:
        """Close the lock for good (called with it held: the caller finishes, no one
        else enters after; the request that froze it may finish its answer: a thread
        is told apart by its object, not by its reusable id)."""
        self._freezer = threading.current_thread()
        self._frozen.set()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

class ApiStore:
    """See the module documentation."""

    def __init__(self, history: int = 100_000,
                 uncached_resources: tuple[str, ...] = ()) -> None:
        self._lock = FreezableLock()
        self.history_limit = history
        #: Plurals served as if the real server had no watch cache for them (its
        #: ``--watch-cache-sizes=<resource>#0``): a watch from a compacted revision gets
        #: etcd's 410 wording instead of the watch cache's.
        self.uncached_resources = frozenset(uncached_resources)
        self._rv = 1  # etcd-like: the first write is revision 2
        self._compacted = 1
        self._history: deque[Change] = deque()
        self._types: dict[tuple[str, str], ResourceType] = {}
        self._objects: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
        self._watchers: dict[tuple[str, str], set[Watcher]] = {}
        self._last_rv: dict[tuple[str, str], int] = {}  # last change per resource
        #: The dynamic admission chain (webhooks), called outside the lock on every write
        #: while a webhook configuration is stored (:mod:`.admission`).
        self.admission = Admission(self.objects_of)
        for rtype in BUILTIN_RESOURCES:
            self.register(rtype)

    def objects_of(self, key: tuple[str, str]) -> list[dict[str, Any]]:
        """The stored objects of the resource ``key`` (``(group, plural)``), not copied:
        never modify them."""
        with self._lock:
            return list(self._objects.get(key, {}).values())

    def close(self) -> None:
        """The server is stopping: requests a frozen dump holds end (with
        :class:`StoreFrozenError`, having touched nothing)."""
        self._lock.close()

    # -- registry ---------------------------------------------------------------------------
    def register(self, rtype: ResourceType) -> None:
        """Serve ``rtype`` (built-ins are registered already)."""
        with self._lock:
            self._types[rtype.key] = rtype
            self._objects.setdefault(rtype.key, {})
            self._watchers.setdefault(rtype.key, set())

    def resource_types(self) -> list[ResourceType]:
        """Every resource type served."""
        with self._lock:
            return list(self._types.values())

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The resource type of ``group/version/plural``, None when not served."""
        with self._lock:
            rtype = self._types.get((group, plural))
            return rtype if rtype is not None and rtype.version == version else None

    @property
    def resource_version(self) -> int:
        """The store's current revision."""
        with self._lock:
            return self._rv

    @property
    def compacted_revision(self) -> int:
        """The oldest revision still in the history."""
        with self._lock:
            return self._compacted

    # -- writes -------------------------------------------------------------------------------
    def _record_locked(
        self, rtype: ResourceType, event_type: str, key: tuple[str, str],
        obj: dict[str, Any], prev: dict[str, Any] | None,
    ) -> None:
        self._history.append(Change(self._rv, event_type, rtype.key, key, obj, prev))
        while len(self._history) > self.history_limit:
            dropped = self._history.popleft()
            self._compacted = dropped.rv
        self._notify_locked(rtype, event_type, obj, prev)

    def _notify_locked(
        self, rtype: ResourceType, event_type: str, obj: dict[str, Any],
        prev: dict[str, Any] | None,
    ) -> None:
        self._last_rv[rtype.key] = self._rv
        watchers = self._watchers.get(rtype.key)
        if not watchers:
            return
        cache: dict[str, bytes] = {}
        for watcher in watchers:
            if self._rv <= watcher.start_rv:
                continue
            event = watcher.event_for(event_type, obj, prev)
            if event is None:
                continue
            kind, sent = event
            if sent is obj:
                line = cache.get(kind)
                if line is None:
                    line = cache[kind] = encode_event(kind, obj)
            else:
                line = encode_event(kind, sent)
            watcher.queue.put(line)

    def _key(self, rtype: ResourceType, namespace: str, name: str) -> tuple[str, str]:
        return (namespace if rtype.namespaced else "", name)

    def create(
        self, rtype: ResourceType, namespace: str, body: Mapping[str, Any], manager: str = "",
        *, dry_run: bool = False,
    ) -> dict[str, Any]:
        """Create an object from ``body`` and return it as stored; ``manager`` (when given)
        owns its fields (:mod:`~client_cache.testing.apiserver.managed_fields`).
        ``dry_run`` (``?dryRun=All``): admitted, checked and returned as it would be
        stored, with a uid and no resourceVersion, and not stored."""
        obj = copy.deepcopy(dict(body))
        obj.get("metadata", {}).pop("managedFields", None)
        after_update(None, obj, manager)
        return copy.deepcopy(self.insert(rtype, namespace, self._admit_create(
            rtype, namespace, obj, manager, dry_run), dry_run=dry_run))

    def _admit_create(self, rtype: ResourceType, namespace: str, obj: dict[str, Any],
                      user: str, dry_run: bool = False) -> dict[str, Any]:
        """``obj`` as the admission webhooks leave it (its namespace filled in first, as
        the webhooks see it on a real server)."""
        if not self.admission.active():
            return obj
        md = obj.setdefault("metadata", {})
        if rtype.namespaced and not md.get("namespace"):
            md["namespace"] = namespace or "default"
        obj.setdefault("apiVersion", rtype.api_version)
        obj.setdefault("kind", rtype.kind)
        admitted = self.admission.admit("CREATE", rtype, obj, None, user, dry_run=dry_run)
        assert admitted is not None
        return admitted

    def _write(self, rtype: ResourceType, namespace: str, name: str,
               build: Callable[[dict[str, Any]], dict[str, Any]], user: str = "",
               ) -> dict[str, Any]:
        """An update of ``name``: ``build(current)`` makes the new object under the lock
        (raising for a bad request or a stale version); the admission webhooks see it
        outside the lock, and it is stored if the object did not change meanwhile, else
        built and admitted again (kube-apiserver's ``GuaranteedUpdate``)."""
        while True:
            with self._lock:
                key, current = self._existing_locked(rtype, namespace, name)
                obj = build(current)
                if not self.admission.active():
                    return copy.deepcopy(self._replace_locked(rtype, key, current, obj))
                seen = current["metadata"].get("resourceVersion")
                before = copy.deepcopy(current)
            obj.setdefault("apiVersion", rtype.api_version)
            obj.setdefault("kind", rtype.kind)
            admitted = self.admission.admit("UPDATE", rtype, obj, before, user)
            assert admitted is not None
            with self._lock:
                key, current = self._existing_locked(rtype, namespace, name)
                if current["metadata"].get("resourceVersion") == seen:
                    return copy.deepcopy(self._replace_locked(rtype, key, current, admitted))

    def apply(
        self, rtype: ResourceType, namespace: str, name: str, body: Mapping[str, Any],
        manager: str, force: bool,
    ) -> tuple[dict[str, Any], bool]:
        """Server-side apply of ``body`` by ``manager``: ``(stored object, created)``; a
        missing object is created. Conflicts raise a 409 status error (see
        :mod:`~client_cache.testing.apiserver.managed_fields`)."""
        md = body.get("metadata") or {}
        if md.get("name") not in (None, name):
            raise new_bad_request("the name of the object does not match the URL")
        if body.get("apiVersion") != rtype.api_version or body.get("kind") != rtype.kind:
            raise new_bad_request(
                f"the API version in the data ({body.get('apiVersion')}) does not match the "
                f"expected API version ({rtype.api_version})" if body.get("apiVersion")
                != rtype.api_version else f"the kind in the data ({body.get('kind')}) does "
                f"not match the expected kind ({rtype.kind})")
        with self._lock:
            current = self._objects[rtype.key].get(self._key(rtype, namespace, name))
        if current is None:
            created = after_apply(None, dict(body), manager, force)
            created.setdefault("metadata", {})["name"] = name
            try:
                return copy.deepcopy(self.insert(rtype, namespace, self._admit_create(
                    rtype, namespace, created, manager))), True
            except ApiStatusError as err:
                if err.reason != "AlreadyExists":
                    raise  # created meanwhile: applied to it below

        def build(current: dict[str, Any]) -> dict[str, Any]:
            merged = after_apply(current, dict(body), manager, force)
            validate_write(rtype.group, rtype.plural, merged)
            return merged

        return self._write(rtype, namespace, name, build, manager), False

    def insert(self, rtype: ResourceType, namespace: str, obj: dict[str, Any], *,
               dry_run: bool = False) -> dict[str, Any]:
        """:meth:`create` without the copies: the store takes ``obj`` itself and returns
        the stored object (for load generators that build fresh objects; never modify
        either afterwards); with ``dry_run`` it returns it unstored."""
        md = obj.setdefault("metadata", {})
        generate = "" if md.get("name") else md.get("generateName", "")
        if not md.get("name") and not generate:
            raise new_bad_request("name or generateName is required")
        if rtype.namespaced:
            namespace = namespace or md.get("namespace") or "default"
            if md.get("namespace") and md["namespace"] != namespace:
                raise new_bad_request("the namespace of the provided object does not match "
                                      "the namespace sent on the request")
            md["namespace"] = namespace
        else:
            md.pop("namespace", None)
        obj["apiVersion"] = rtype.api_version
        obj["kind"] = rtype.kind
        prune(rtype.schema, obj)  # the real server's order: prune, default, validate
        apply_defaults(rtype.schema, obj)
        _check_schema(rtype, obj)
        validate_write(rtype.group, rtype.plural, obj)
        defined = crd_resource_type(obj) if rtype.key == CRD_KEY else None
        if defined is not None:  # the real server's controllers accept and establish it
            obj["status"] = {
                "acceptedNames": obj["spec"]["names"],
                "storedVersions": [defined.version],
                "conditions": [
                    {"type": t, "status": "True", "reason": r, "lastTransitionTime": _now(),
                     "message": m}
                    for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                                    ("Established", "InitialNamesAccepted",
                                     "the initial names have been accepted"))],
            }
        with self._lock:
            if defined is not None:
                if self._types.get(defined.key) is not None:
                    raise new_already_exists(rtype.group, rtype.plural, md["name"])
                self.register(defined)
            objects = self._objects[rtype.key]
            if generate:  # like the real server: a random suffix that is free
                while True:
                    md["name"] = f"{generate}{uuid.uuid4().hex[:5]}"
                    if self._key(rtype, md.get("namespace", ""), md["name"]) not in objects:
                        break
            key = self._key(rtype, md.get("namespace", ""), md["name"])
            if key in objects:
                raise new_already_exists(rtype.group, rtype.plural, md["name"])
            if dry_run:
                md.update(uid=str(uuid.uuid4()), generation=1, creationTimestamp=_now())
                md.pop("resourceVersion", None)
                return obj
            self._rv += 1
            md["uid"] = str(uuid.uuid4())
            md["resourceVersion"] = str(self._rv)
            md["generation"] = 1
            md["creationTimestamp"] = _now()
            md.pop("deletionTimestamp", None)
            objects[key] = obj
            self._record_locked(rtype, "ADDED", key, obj, None)
            return obj

    def names(self, rtype: ResourceType, namespace: str) -> list[str]:
        """The names of the objects of ``rtype`` in ``namespace``, oldest first."""
        with self._lock:
            return [name for (ns, name) in self._objects[rtype.key] if ns == namespace]

    def peek(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """:meth:`get` without the copy (never modify the result)."""
        with self._lock:
            return self._existing_locked(rtype, namespace, name)[1]

    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        """The stored object; raises a NotFound API error when absent."""
        with self._lock:
            obj = self._objects[rtype.key].get(self._key(rtype, namespace, name))
            if obj is None:
                raise new_not_found(rtype.group, rtype.plural, name)
            return copy.deepcopy(obj)

    def update(
        self, rtype: ResourceType, namespace: str, name: str, body: Mapping[str, Any],
        manager: str = "",
    ) -> dict[str, Any]:
        """PUT: optimistic concurrency on ``metadata.resourceVersion`` when given."""
        def build(current: dict[str, Any]) -> dict[str, Any]:
            obj = copy.deepcopy(dict(body))
            md = obj.setdefault("metadata", {})
            if md.get("name") not in (None, name):
                raise new_bad_request("the name of the object does not match the URL")
            _check_version(rtype, name, current, md.get("resourceVersion"))
            validate_write(rtype.group, rtype.plural, obj)
            md["managedFields"] = current["metadata"].get("managedFields")
            after_update(current, obj, manager)
            if md.get("managedFields") is None:
                md.pop("managedFields", None)
            return obj

        return self._write(rtype, namespace, name, build, manager)

    def _existing_locked(
        self, rtype: ResourceType, namespace: str, name: str
    ) -> tuple[tuple[str, str], dict[str, Any]]:
        """The key and stored object of ``name``; a NotFound status error when absent."""
        key = self._key(rtype, namespace, name)
        current = self._objects[rtype.key].get(key)
        if current is None:
            raise new_not_found(rtype.group, rtype.plural, name)
        return key, current

    def _replace_locked(
        self, rtype: ResourceType, key: tuple[str, str], current: dict[str, Any],
        obj: dict[str, Any],
    ) -> dict[str, Any]:
        md = obj.setdefault("metadata", {})
        cur_md = current["metadata"]
        if rtype.key == CRD_KEY and "status" in current:
            # the server's own conditions (Established, NamesAccepted): a write of the main
            # resource does not replace them, as the real server ignores status there
            obj["status"] = current["status"]
        for kept in ("name", "uid", "creationTimestamp", "generation", "deletionTimestamp",
                     "deletionGracePeriodSeconds"):
            if kept in cur_md:
                md[kept] = cur_md[kept]
        if md.get("deletionTimestamp") and not md.get("finalizers"):
            # the last finalizer of an object being deleted is gone: delete it now
            self._rv += 1
            final = dict(obj, metadata=dict(md, resourceVersion=str(self._rv)))
            del self._objects[rtype.key][key]
            self._record_locked(rtype, "DELETED", key, final, current)
            return final
        if rtype.namespaced:
            md["namespace"] = cur_md.get("namespace", "")
        obj["apiVersion"] = rtype.api_version
        obj["kind"] = rtype.kind
        prune(rtype.schema, obj)
        apply_defaults(rtype.schema, obj)
        _check_schema(rtype, obj)
        # an updated CRD serves its new schema from the next request on (validation,
        # defaults, pruning), as the real server's does
        defined = crd_resource_type(obj) if rtype.key == CRD_KEY else None
        if defined is not None and self._types.get(defined.key) is not None:
            self._types[defined.key] = defined
        if {k: v for k, v in obj.items() if k not in ("metadata", "status")} != {
            k: v for k, v in current.items() if k not in ("metadata", "status")
        }:
            md["generation"] = int(cur_md.get("generation", 1)) + 1
        self._rv += 1
        md["resourceVersion"] = str(self._rv)
        self._objects[rtype.key][key] = obj
        self._record_locked(rtype, "MODIFIED", key, obj, current)
        return obj

    def patch(
        self, rtype: ResourceType, namespace: str, name: str, patch: Mapping[str, Any],
        manager: str = "",
    ) -> dict[str, Any]:
        """A JSON merge patch (strategic merge patches are applied as merge patches)."""
        def build(current: dict[str, Any]) -> dict[str, Any]:
            _check_version(rtype, name, current, (patch.get("metadata") or {}).get(
                "resourceVersion"))
            merged: dict[str, Any] = _merge_patch(copy.deepcopy(current), patch)
            validate_write(rtype.group, rtype.plural, merged)
            after_update(current, merged, manager)
            return merged

        return self._write(rtype, namespace, name, build, manager)

    def delete(self, rtype: ResourceType, namespace: str, name: str,
               preconditions: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """DELETE. An object with finalizers is only marked (``deletionTimestamp``, a
        MODIFIED event) and goes when its last finalizer is removed, as on a real server.
        ``preconditions`` (DeleteOptions' ``uid``/``resourceVersion``) that the object does
        not meet make it a 409 Conflict, as the real server answers. The admission
        webhooks see the object first (DELETE, its state then as ``oldObject``)."""
        if self.admission.active():
            with self._lock:
                _, current = self._existing_locked(rtype, namespace, name)
                before = copy.deepcopy(current)
            self.admission.admit("DELETE", rtype, None, before)
        with self._lock:
            key, current = self._existing_locked(rtype, namespace, name)
            md = current["metadata"]
            for field, label, why in (("uid", "UID", "deleted and then recreated"),
                                      ("resourceVersion", "ResourceVersion", "modified")):
                wanted = (preconditions or {}).get(field)
                if wanted and wanted != md.get(field):
                    # the real server names the kind here, not the resource
                    raise new_conflict(rtype.group, rtype.kind, name,
                                       f"the {label} in the precondition ({wanted}) does "
                                       f"not match the {label} in record ({md.get(field)}). "
                                       f"The object might have been {why}")
            if current["metadata"].get("finalizers"):
                if current["metadata"].get("deletionTimestamp"):
                    return copy.deepcopy(current)
                marked = copy.deepcopy(current)
                marked["metadata"]["deletionTimestamp"] = _now()
                marked["metadata"]["deletionGracePeriodSeconds"] = 0
                self._rv += 1
                marked["metadata"]["resourceVersion"] = str(self._rv)
                self._objects[rtype.key][key] = marked
                self._record_locked(rtype, "MODIFIED", key, marked, current)
                return copy.deepcopy(marked)
        return copy.deepcopy(self.remove(rtype, namespace, name))

    def remove(self, rtype: ResourceType, namespace: str, name: str,
               annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
        """:meth:`delete` without the copy of the result (never modify it); the load
        generator passes ``annotations`` to stamp on the final state it sends."""
        with self._lock:
            key = self._key(rtype, namespace, name)
            current = self._objects[rtype.key].pop(key, None)
            if current is None:
                raise new_not_found(rtype.group, rtype.plural, name)
            self._rv += 1
            md = dict(current["metadata"], resourceVersion=str(self._rv))
            if annotations:
                md["annotations"] = {**(md.get("annotations") or {}), **annotations}
            final = dict(current, metadata=md)
            self._record_locked(rtype, "DELETED", key, final, current)
            return final

    def replace(self, rtype: ResourceType, namespace: str, name: str,
                obj: dict[str, Any]) -> dict[str, Any]:
        """An unconditional update that takes ``obj`` itself, for load generators (never
        modify ``obj`` afterwards); returns the stored object."""
        with self._lock:
            key, current = self._existing_locked(rtype, namespace, name)
            self._replace_locked(rtype, key, current, obj)
            return obj

    def delete_collection(
        self, rtype: ResourceType, namespace: str, label_selector: labelsel.Selector
    ) -> int:
        """Delete the objects ``label_selector`` matches; returns how many."""
        with self._lock:
            doomed = [
                obj["metadata"]["name"]
                for obj in self._objects[rtype.key].values()
                if (not namespace or obj["metadata"].get("namespace") == namespace)
                and label_selector.matches(obj["metadata"].get("labels") or {})
            ]
            for name in doomed:
                self.delete(rtype, namespace, name)
            return len(doomed)

    def dump(self, path: str, freeze: bool = False) -> int:
        """Write every object of every resource and the current revision to ``path``
        (JSON) and return the revision. With ``freeze`` the store is frozen afterwards
        (:class:`FreezableLock`): no request of any thread touches it again, so no write
        can follow the dump, for a process about to be killed and restarted from it
        (:meth:`restore`)."""
        with self._lock:
            state = {"resourceVersion": self._rv, "objects": [
                {"group": group, "plural": plural, "items": list(objs.values())}
                for (group, plural), objs in self._objects.items() if objs]}
            tmp = f"{path}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(state, fh)
            os.replace(tmp, path)
            if freeze:
                self._lock.freeze()
            return self._rv

    def restore(self, path: str) -> int:
        """Load a :meth:`dump`: the objects and the revision come back, the history does
        not (like a restarted API server's watch cache, every older resourceVersion is
        then too old to watch from). Returns the revision."""
        with open(path, encoding="utf-8") as fh:
            state = json.load(fh)
        with self._lock:
            for entry in state["objects"]:  # custom resources first: their types
                if (entry["group"], entry["plural"]) == CRD_KEY:
                    for crd in entry["items"]:
                        self.register(crd_resource_type(crd))
            for entry in state["objects"]:
                key = (entry["group"], entry["plural"])
                if key not in self._types:
                    continue
                rtype = self._types[key]
                self._objects[key] = {
                    self._key(rtype, obj["metadata"].get("namespace", ""),
                              obj["metadata"]["name"]): obj for obj in entry["items"]}
            self._rv = int(state["resourceVersion"])
            self._history.clear()
            self._compacted = self._rv
            return self._rv

    def compact(self) -> int:
        """Forget the whole history (etcd compaction); returns the compacted revision."""
        with self._lock:
            self._history.clear()
            self._compacted = self._rv
            return self._compacted

    # -- reads ---------------------------------------------------------------------------------
    def snapshot(
        self, rtype: ResourceType, revision: int | None
    ) -> tuple[list[dict[str, Any]], int]:
        """The objects of ``rtype`` at ``revision`` (None: now), sorted by key, and the
        revision served. Raises 410 Expired for a compacted revision and the too-large
        error for a future one."""
        with self._lock:
            current = self._rv
            if revision is None or revision == current:
                objs = dict(self._objects[rtype.key])
                revision = current
            elif revision > current:
                raise new_too_large_resource_version(revision, current, 1)
            elif revision < self._compacted:  # the real server's words for a LIST
                raise new_resource_expired("The resourceVersion for the provided list is too "
                                           "old.")
            else:
                objs = dict(self._objects[rtype.key])
                for change in reversed(self._history):
                    if change.rv <= revision:
                        break
                    if change.resource != rtype.key:
                        continue
                    if change.prev is None:
                        objs.pop(change.key, None)
                    else:
                        objs[change.key] = change.prev
            ordered = [objs[k] for k in sorted(objs)]
            return ordered, revision

    def changes_since(self, rtype: ResourceType, revision: int) -> Iterator[Change]:
        """Recorded changes of ``rtype`` after ``revision`` (caller holds the lock)."""
        for change in self._history:
            if change.rv > revision and change.resource == rtype.key:
                yield change

    # -- watches --------------------------------------------------------------------------------
    def open_watch(
        self,
        watcher: Watcher,
        revision: int | None,
        initial_events: bool,
        initial_end_bookmark: bool,
    ) -> None:
        """Register ``watcher`` and queue what it must see first.

        ``revision`` None (or with ``initial_events``): the current objects as ADDED events
        (then, with ``initial_end_bookmark``, the initial-events-end bookmark); otherwise the
        recorded changes after ``revision``. A compacted ``revision`` gets one 410 ERROR
        event that ends the stream; a future one waits for the changes after it (the
        real server's watch cache does the same; only a LIST answers "too large").
        """
        rtype = watcher.resource
        with self._lock:
            current = self._rv
            if initial_events or revision is None:
                for obj in self.snapshot(rtype, None)[0]:
                    if watcher.matches(obj):
                        watcher.queue.put(encode_event("ADDED", obj))
                if initial_end_bookmark:
                    watcher.queue.put(encode_event("BOOKMARK", {
                        "kind": rtype.kind,
                        "apiVersion": rtype.api_version,
                        "metadata": {
                            "resourceVersion": str(current),
                            "annotations": {"k8s.io/initial-events-end": "true"},
                        },
                    }))
            elif revision < self._compacted:
                # the watch cache's words, or etcd's for a resource served without one
                message = (
                    "The resourceVersion for the provided watch is too old."
                    if rtype.plural in self.uncached_resources
                    else f"too old resource version: {revision} ({self._compacted})")
                watcher.queue.put(encode_event("ERROR", new_resource_expired(message).status()))
                watcher.queue.put(None)
                return
            elif revision <= current:
                for change in self.changes_since(rtype, revision):
                    self._replay_locked(watcher, change)
            # like the watch cache, a watch from a future revision is accepted and waits:
            # it gets the changes after that revision when they happen
            watcher.start_rv = current if revision is None or initial_events else revision
            self._watchers[rtype.key].add(watcher)

    def _replay_locked(self, watcher: Watcher, change: Change) -> None:
        event = watcher.event_for(change.type, change.obj, change.prev)
        if event is not None:
            watcher.queue.put(encode_event(*event))

    def close_watch(self, watcher: Watcher) -> None:
        """End ``watcher``'s watch."""
        with self._lock:
            self._watchers.get(watcher.resource.key, set()).discard(watcher)

    def watchers(self) -> list[Watcher]:
        """The clients' watches open now (not the server's own)."""
        with self._lock:
            return [w for ws in self._watchers.values() for w in ws if not w.internal]

    def bookmark(self, watcher: Watcher) -> bytes | None:
        """A bookmark line for ``watcher``, or None. As from the real watch cache, its
        resourceVersion is that of the last change to the watched resource (in any
        namespace), and there is none until that is newer than the watch's start, nor
        while events for the watcher are still queued."""
        rtype = watcher.resource
        with self._lock:
            last = self._last_rv.get(rtype.key, 0)
            # Changes are queued for watchers under this lock: an event still waiting in
            # the queue may be older than ``last``, and a bookmark sent before it would
            # let a client that loses the connection right then resume after the event,
            # never seeing it. Like the watch cache, bookmark only a watcher that has
            # caught up.
            if not watcher.queue.empty():
                return None
        if last <= watcher.start_rv:
            return None
        return encode_event("BOOKMARK", {
            "kind": rtype.kind,
            "apiVersion": rtype.api_version,
            "metadata": {"resourceVersion": str(last)},
        })
