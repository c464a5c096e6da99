"""Field ownership and server-side apply for the embedded API server (the real server's
``managedFields`` and ``application/apply-patch+yaml`` PATCH), as far as a controller's
tests need them.

Every write that names a manager (the ``fieldManager`` query parameter, else the first
part of the User-Agent, as the real server derives it) records which fields it set in
``metadata.managedFields``, in the real server's ``FieldsV1`` shape (``{"f:spec":
{"f:replicas": {}}}``), one entry per manager and operation:

* an **update** (create, PUT, merge or strategic-merge PATCH) owns the fields whose value
  it changed or added, taking them from any other manager without a conflict;
* an **apply** owns exactly the fields of its body: a field another manager owns with a
  different value is a **conflict** (409, the real server's message) unless
  ``force=true``, which takes it over; a field the same manager applied before and left
  out now is removed when nobody else owns it; applying to a missing object creates it.

Simplifications, all in what a controller's apply rarely meets: lists are atomic (the
real server merges lists with merge keys, such as containers by name, item by item), a
map is owned through its leaves only, and the ``status`` of the main resource is the
object's like any other field.
"""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from typing import Any

from client_cache.errors import ApiStatusError

__all__ = ["ApplyConflictError", "after_apply", "after_update", "manager_of"]

Path = tuple[str, ...]

#: Fields no manager owns: the object's identity and what the server sets.
_UNOWNED_METADATA = frozenset({"name", "namespace", "uid", "resourceVersion", "generation",
                               "creationTimestamp", "managedFields", "deletionTimestamp",
                               "deletionGracePeriodSeconds", "selfLink"})


class ApplyConflictError(ApiStatusError):
    """An apply that would change fields another manager owns (409 Conflict)."""


def manager_of(field_manager: str, user_agent: str) -> str:
    """The manager of a write: ``fieldManager`` when given, else the User-Agent up to its
    first ``/`` (the real server's default)."""
    return field_manager or (user_agent or "").split("/", 1)[0]


def _leaves(obj: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Every owned leaf of ``obj`` by path: scalars, lists, empty maps."""
    out: dict[Path, Any] = {}
    if isinstance(obj, dict) and obj:
        for key, value in obj.items():
            if not prefix and key in ("apiVersion", "kind"):
                continue
            if prefix == ("metadata",) and key in _UNOWNED_METADATA:
                continue
            out.update(_leaves(value, (*prefix, key)))
    elif prefix:
        out[prefix] = obj
    return out


def _to_fields(paths: set[Path]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for path in sorted(paths):
        node = fields
        for key in path:
            node = node.setdefault(f"f:{key}", {})
    return fields


def _from_fields(fields: Any, prefix: Path = ()) -> set[Path]:
    if not isinstance(fields, dict) or not fields:
        return {prefix} if prefix else set()
    out: set[Path] = set()
    for key, value in fields.items():
        if key.startswith("f:"):
            out |= _from_fields(value, (*prefix, key[2:]))
    return out


def _owners(obj: dict[str, Any]) -> list[tuple[str, str, set[Path]]]:
    """``(manager, operation, paths)`` of each entry of ``obj``'s managedFields."""
    return [(str(e.get("manager", "")), str(e.get("operation", "Update")),
             _from_fields(e.get("fieldsV1")))
            for e in (obj.get("metadata") or {}).get("managedFields") or []]


def _write_owners(obj: dict[str, Any], owners: list[tuple[str, str, set[Path]]]) -> None:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    previous = {(e.get("manager"), e.get("operation")): e for e in
                (obj.get("metadata") or {}).get("managedFields") or []}
    entries = []
    for manager, operation, paths in owners:
        if not paths:
            continue
        old = previous.get((manager, operation))
        fields = _to_fields(paths)
        entries.append({"manager": manager, "operation": operation,
                        "apiVersion": obj.get("apiVersion", ""),
                        "time": old["time"] if old and old.get("fieldsV1") == fields else now,
                        "fieldsType": "FieldsV1", "fieldsV1": fields})
    md = obj.setdefault("metadata", {})
    if entries:
        md["managedFields"] = entries
    else:
        md.pop("managedFields", None)


def _get(obj: Any, path: Path) -> tuple[bool, Any]:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            return False, None
        obj = obj[key]
    return True, obj


def _set(obj: dict[str, Any], path: Path, value: Any) -> None:
    for key in path[:-1]:
        child = obj.get(key)
        if not isinstance(child, dict):
            child = obj[key] = {}
        obj = child
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: dict[str, Any], path: Path) -> None:
    """Remove the leaf at ``path`` and the maps it leaves empty."""
    parents = []
    node: Any = obj
    for key in path[:-1]:
        if not isinstance(node, dict) or key not in node:
            return
        parents.append((node, key))
        node = node[key]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    for parent, key in reversed(parents):
        if parent[key] == {}:
            del parent[key]
        else:
            break


def after_update(current: dict[str, Any] | None, new: dict[str, Any], manager: str) -> None:
    """Record in ``new``'s managedFields that ``manager`` wrote it over ``current`` (None:
    a create): it owns what it changed or added; fields gone from the object are owned by
    nobody."""
    if not manager:
        return
    before = _leaves(current) if current is not None else {}
    after = _leaves(new)
    changed = {p for p, v in after.items() if p not in before or before[p] != v}
    owners = _owners(current) if current is not None else []
    out = []
    mine = changed
    for who, operation, paths in owners:
        kept = (paths & after.keys()) - changed
        if who == manager and operation == "Update":
            mine = kept | changed
            continue
        out.append((who, operation, kept))
    out.append((manager, "Update", mine))
    _write_owners(new, out)


def after_apply(current: dict[str, Any] | None, applied: dict[str, Any], manager: str,
                force: bool) -> dict[str, Any]:
    """The object after ``manager`` applies ``applied`` to ``current`` (None: it is
    created), managedFields included; raises :class:`ApplyConflictError` for fields
    another manager owns with another value, unless ``force``."""
    wanted = _leaves(applied)
    base = copy.deepcopy(current) if current is not None else {
        "metadata": {k: v for k, v in (applied.get("metadata") or {}).items()
                     if k in ("name", "namespace", "generateName")}}
    owners = _owners(current) if current is not None else []
    conflicts: list[tuple[str, Path]] = []
    for who, operation, paths in owners:
        if who == manager and operation == "Apply":
            continue
        for path in sorted(paths & wanted.keys()):
            present, value = _get(base, path)
            if not present or value != wanted[path]:
                conflicts.append((who, path))
    if conflicts and not force:
        count = len(conflicts)
        raise ApplyConflictError(
            409, "Conflict",
            f"Apply failed with {count} conflict{'s' if count > 1 else ''}: "
            + "; ".join(f'conflict with "{who}" using {applied.get("apiVersion", "")}: '
                        f'.{".".join(path)}' for who, path in conflicts),
            details={"causes": [{"reason": "FieldManagerConflict",
                                 "message": f'conflict with "{who}"',
                                 "field": "." + ".".join(path)} for who, path in conflicts]})
    taken = {path for _, path in conflicts}
    previous: set[Path] = set()
    out = []
    for who, operation, paths in owners:
        if who == manager and operation == "Apply":
            previous = paths
            continue
        out.append((who, operation, paths - taken))
    others = set().union(*(paths for _, _, paths in out)) if out else set()
    for path in previous - wanted.keys() - others:
        _remove(base, path)
    for path, value in wanted.items():
        _set(base, path, value)
    for key in ("apiVersion", "kind"):
        if key in applied:
            base[key] = applied[key]
    out.append((manager, "Apply", set(wanted)))
    _write_owners(base, out)
    return base
