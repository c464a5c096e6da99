"""Struct objects decoded straight from protobuf (a port addition): the plans that let
the C protobuf decoder build :mod:`client_cache.codec.structs` classes instead of dicts.

A struct informer asking for protobuf (``ClientListerWatcher(protobuf=True)``, Go's
typed clients' encoding) gets the same structs its JSON gives, read from the server's
protobuf: the built-in kinds' protobuf is about 0.7 of their JSON's size, and the real
apiserver sends it about twice as fast. A plan says, for one protobuf message and one
struct class, which of the message's fields the class has and under which attribute
(the message's JSON names are the class's wire names), which plan reads the messages
those fields hold, and whose lists become tuples. Fields the class left out
(``metadata.managedFields`` by default) are passed over without being decoded. Where a
struct class holds plain JSON (``Any``: a recursive schema's inner part, free-form
fields), the decoder builds the dicts and lists JSON would give. With the walk's flags
the decoder does the walk as it goes (:mod:`client_cache.codec._sharing`): strings shared,
maps compacted, containers out of the collector's sight, and each frozen struct or
tuple of immutable values below the top replaced by the equal one seen before, exactly
as the list-watch's walk treats structs decoded from JSON.

Without the C part (:data:`AVAILABLE` False) struct objects are read from JSON only.
"""

from __future__ import annotations

import re
import sys
import threading
import types
import typing
from typing import Any

from client_cache.codec import _extension as extension
from client_cache.codec._protobuf_schema import schema
from client_cache.codec._protobuf_shapes import Items, Map, Message, Pointer, Repeated, Shape
from client_cache.codec.skip_paths import SkipTree, Tree
from client_cache.codec.structs import is_struct_type, model_of

__all__ = ["AVAILABLE", "DictPlans", "StructPlans", "dict_plans", "plans", "root_message"]

AVAILABLE = extension.AVAILABLE
"""Whether protobuf can be decoded into structs here (the C part is built)."""

_SKIP, _TUPLE = 1, 2  # the C part's PLAN_SKIP and PLAN_TUPLE
# what a model class's name holds before its kind: an optional group, then the version
_PREFIX = re.compile(r"(?:[A-Z][a-z0-9]*)*V\d+(?:(?:alpha|beta)\d+)?")
_lock = threading.Lock()
_compiled: dict[tuple[str, type], StructPlans] = {}
_compiled_dicts: dict[tuple[str, tuple[tuple[str, ...], ...]], DictPlans] = {}


class StructPlans:
    """The compiled plans that read ``message`` as ``cls`` (and the messages it holds
    as the struct classes of ``cls``'s fields): :attr:`capsule` and :attr:`root`, the
    plan of ``message`` itself, for the C decoder's entries."""

    def __init__(self, message: Message, cls: type) -> None:
        self.message = message
        self.cls = cls
        self._specs: list[tuple[Any, ...]] = []
        self._index: dict[tuple[str, type, bool], int] = {}
        self._messages = schema().compiled()[1]
        self.root = self._plan(message, cls, inline=False)
        self.capsule = extension.codec.protobuf_struct_plans(schema().compiled()[0],
                                                      tuple(self._specs))

    def _plan(self, message: Message, cls: type, *, inline: bool) -> int:
        key = (message.name, cls, inline)
        if key in self._index:
            return self._index[key]
        at = self._index[key] = len(self._specs)
        self._specs.append(())
        fields = _struct_fields(cls)
        child: list[int] = []
        mode: list[int] = []
        for field in message.fields:
            if field.inline:  # its fields are the holding struct's own
                assert isinstance(field.shape, Message)
                child.append(self._plan(field.shape, cls, inline=True))
                mode.append(0)
                continue
            found = fields.get(field.name)
            if found is None:  # left out of the class (skipped, or newer than the model)
                child.append(-1)
                mode.append(_SKIP)
                continue
            held, elem, tuples = _held(field.shape, found[1])
            child.append(self._plan(held, elem, inline=False)
                         if held is not None and elem is not None else -1)
            mode.append(_TUPLE if tuples else 0)
        names = None if inline else {wire: attr for wire, (attr, _) in fields.items()}
        self._specs[at] = (None if inline else cls, names, self._messages[message.name],
                           tuple(child), tuple(mode))
        return at


class DictPlans:
    """The compiled plans that read ``message`` into dicts with the members ``skip``
    names passed over (:mod:`client_cache.codec.skip_paths`): :attr:`capsule` and :attr:`root`
    as :class:`StructPlans` has them. :attr:`exact` is False when a path goes where no
    plan reaches (into a map's keys, raw JSON or a scalar): those members are then still
    decoded, and the caller drops them after (:meth:`SkipTree.drop`)."""

    def __init__(self, message: Message, skip: SkipTree) -> None:
        self.message = message
        self.exact = True
        self._specs: list[tuple[Any, ...]] = []
        self._index: dict[tuple[str, int], int] = {}
        self._messages = schema().compiled()[1]
        self.root = self._plan(message, skip.tree)
        self.capsule = extension.codec.protobuf_struct_plans(schema().compiled()[0],
                                                      tuple(self._specs))

    def _plan(self, message: Message, node: Tree) -> int:
        key = (message.name, id(node))  # the nodes live as long as the skip tree
        if key in self._index:
            return self._index[key]
        at = self._index[key] = len(self._specs)
        self._specs.append(())
        child: list[int] = []
        mode: list[int] = []
        for field in message.fields:
            below = node if field.inline else node.get(field.name, {})
            if field.name in node and below is None and not field.inline:
                child.append(-1)
                mode.append(_SKIP)
                continue
            held = _message_held(field.shape) if below else None
            if below and held is None:
                self.exact = False
            child.append(self._plan(held, below) if held is not None and below else -1)
            mode.append(0)
        self._specs[at] = (None, None, self._messages[message.name], tuple(child),
                           tuple(mode))
        return at


def _message_held(shape: Shape) -> Message | None:
    """The message a field of ``shape`` holds, itself or as each item of its list (the
    places a skip path goes on into by key, as through JSON objects and arrays)."""
    if isinstance(shape, Pointer):
        shape = shape.elem
    if isinstance(shape, Repeated):
        shape = shape.elem
    if isinstance(shape, Pointer):
        shape = shape.elem
    return shape if isinstance(shape, Message) else None


def _struct_fields(cls: type) -> dict[str, tuple[str, Any]]:
    """A struct class's fields by wire name: (attribute name, interned; declared type)."""
    import msgspec  # noqa: PLC0415 - the optional [struct] extra, there when structs are

    return {f.encode_name: (sys.intern(f.name), f.type)
            for f in msgspec.structs.fields(cls)}


def _optional_inner(declared: Any) -> Any:
    """``X`` of a field declared ``X | None``."""
    if typing.get_origin(declared) not in (typing.Union, types.UnionType):
        return declared
    args = [a for a in typing.get_args(declared) if a is not type(None)]
    return args[0] if len(args) == 1 else declared


def _held(shape: Shape, declared: Any) -> tuple[Message | None, type | None, bool]:
    """What a field of protobuf ``shape``, declared ``declared`` in a struct class,
    holds: the message and struct class to read it with (None, None: not a struct),
    and whether its lists (its own, or its map's values) are tuples."""
    declared = _optional_inner(declared)
    tuples = False
    if isinstance(shape, Pointer):
        shape = shape.elem
    if isinstance(shape, Repeated):
        if typing.get_origin(declared) is not tuple:
            return None, None, False  # plain JSON in the class: lists stay lists
        shape, declared, tuples = shape.elem, typing.get_args(declared)[0], True
    elif isinstance(shape, Map):
        if typing.get_origin(declared) is not dict:
            return None, None, False
        shape, declared = shape.value, typing.get_args(declared)[1]
        if isinstance(shape, Items):
            tuples = typing.get_origin(declared) is tuple
            shape = shape.list.elem
            declared = typing.get_args(declared)[0] if tuples else declared
    if isinstance(shape, Pointer):
        shape = shape.elem
    if isinstance(shape, Message) and is_struct_type(declared):
        return shape, declared, tuples
    return None, None, tuples


def plans(message: Message, cls: type) -> StructPlans:
    """The plans reading ``message`` as struct class ``cls`` (compiled once). Raises
    RuntimeError where the C part is not built."""
    if not AVAILABLE:
        raise RuntimeError("struct objects from protobuf need the C part of client_cache")
    with _lock:
        key = (message.name, cls)
        if key not in _compiled:
            _compiled[key] = StructPlans(message, cls)
        return _compiled[key]


def root_message(cls: type, api_version: str) -> Message | None:
    """The protobuf message of struct class ``cls`` (made by
    :func:`~client_cache.codec.structs.struct_type`) in ``api_version``: the kind its model
    class is named for (``V1Pod``: ``Pod``; ``CoreV1Event``: ``Event``); None for a class
    of no built-in kind there."""
    model = model_of(cls)
    if model is None:
        return None
    name = model.__name__
    found: Message | None = None
    found_kind = ""
    for kind, message in schema().kinds(api_version).items():
        if name.endswith(kind) and len(kind) > len(found_kind) \
                and _PREFIX.fullmatch(name[:-len(kind)]):
            found, found_kind = message, kind
    return found


def dict_plans(message: Message, skip: SkipTree) -> DictPlans:
    """The plans reading ``message`` into dicts with ``skip``'s members passed over
    (compiled once per message and paths). Raises RuntimeError where the C part is not
    built."""
    if not AVAILABLE:
        raise RuntimeError("protobuf plans need the C part of client_cache")
    with _lock:
        key = (message.name, skip.paths)
        if key not in _compiled_dicts:
            _compiled_dicts[key] = DictPlans(message, skip)
        return _compiled_dicts[key]
