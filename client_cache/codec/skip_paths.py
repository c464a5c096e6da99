"""skip_paths: members of decoded objects left out while decoding (a port addition).

A lister-watcher given ``skip_paths``
(:class:`~client_cache.client.lister_watcher.ClientListerWatcher`,
:class:`~client_cache.informers.SharedInformerFactoryOptions`) never builds the members
the paths name: ``metadata.managedFields`` (often a third of a pod's JSON, which a
controller seldom reads), a large annotation. The object is what decoding it whole and
then deleting those members would give, but the decoder passes over their bytes instead
of making objects of them, so a LIST costs less time and its peak memory less (a
transform, Go's ``SetTransform``, runs only after the whole object, or the whole LIST,
is built).

A path is a dotted string (``"metadata.managedFields"``) or a sequence of keys, for keys
that hold dots themselves (``("metadata", "annotations",
"kubectl.kubernetes.io/last-applied-configuration")``). It is followed through objects by
key and through arrays into each of their items (``"spec.containers.env"`` leaves out
every container's ``env``). A path that is a prefix of another covers it. Paths apply to
every object a response holds: LIST items, watch events' objects (a watch's ``ERROR``
``Status`` included, in JSON), bookmarks.

Where they are done: the C JSON decoder (``decode.c``) passes over the members, checking
their JSON as it goes (a document malformed there fails as it would decoded whole); the C
protobuf decoder reads the objects of the built-in kinds with plans that pass over the
fields the paths name (:func:`client_cache.codec._protobuf_structs.dict_plans`); what neither
can do (no C part, a document the C decoder declines, a path into a protobuf map or raw
JSON) is done by :meth:`SkipTree.drop` on the decoded object. Struct objects leave out
what their class leaves out instead (:func:`client_cache.codec.structs.struct_type`'s
``skip``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["SkipPath", "SkipTree", "Tree", "drop_members", "skip_tree"]

SkipPath = str | Sequence[str]
"""A dotted path, or its keys."""

Tree = dict[str, Any]
"""A node: each key's node below it, or None where the member is left out."""


def _keys(path: SkipPath) -> tuple[str, ...]:
    if isinstance(path, str):
        keys = tuple(path.split("."))
    elif isinstance(path, Sequence) and all(isinstance(k, str) for k in path):
        keys = tuple(path)
    else:
        raise TypeError(f"a skip path is a dotted str or a sequence of str, not {path!r}")
    if not keys or not all(keys):
        raise ValueError(f"a skip path has an empty key: {path!r}")
    return keys


class SkipTree:
    """The paths of :func:`skip_tree`, as the decoders take them: :attr:`tree` (a
    node: see :data:`Tree`), and each path's keys in :attr:`paths`."""

    def __init__(self, paths: Iterable[SkipPath]) -> None:
        self.tree: Tree = {}
        found: list[tuple[str, ...]] = []
        for path in paths:
            keys = _keys(path)
            found.append(keys)
            self._add(self.tree, keys)
        if not found:
            raise ValueError("a skip tree needs at least one path")
        self.paths = tuple(found)

    @staticmethod
    def _add(node: Tree, keys: tuple[str, ...]) -> None:
        for key in keys[:-1]:
            below = node.setdefault(key, {})
            if below is None:  # a shorter path covers this one
                return
            node = below
        node[keys[-1]] = None  # covers any longer path already there

    def __repr__(self) -> str:
        return f"<SkipTree {['.'.join(keys) for keys in self.paths]}>"

    def under(self, key: str) -> Tree:
        """The tree of documents holding the objects under ``key`` (a watch event's
        ``object``, a list's ``items``)."""
        return {key: self.tree}

    def drop(self, obj: Any) -> Any:
        """``obj`` with the members the paths name deleted, in place
        (:func:`drop_members`); returned."""
        return drop_members(obj, self.tree)


def drop_members(obj: Any, tree: Tree) -> Any:
    """``obj`` with the members ``tree`` (a node of a :class:`SkipTree`) names deleted, in
    place, through dicts by key and lists item by item; returned."""
    if isinstance(obj, dict):
        for key, below in tree.items():
            if key in obj:
                if below is None:
                    del obj[key]
                else:
                    drop_members(obj[key], below)
    elif isinstance(obj, list):
        for item in obj:
            drop_members(item, tree)
    return obj


def skip_tree(paths: Iterable[SkipPath] | None) -> SkipTree | None:
    """The :class:`SkipTree` of ``paths``; None for none. A ``str`` alone is one path.
    Raises TypeError or ValueError for a path that is not one."""
    if paths is None:
        return None
    listed = [paths] if isinstance(paths, str) else list(paths)
    return SkipTree(listed) if listed else None
