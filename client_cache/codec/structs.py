"""A struct object mode: informers that decode the server's JSON straight into compact
``msgspec`` structs shaped like the ``kubernetes`` package's models (a port addition;
needs the ``[struct]`` extra, ``pip install client_cache[struct]``).

::

    Pod = struct_type(V1Pod)                       # built once from the model's metadata
    pods = factory.core().v1().pods(Pod)           # any typed accessor takes the class
    pod = pods.lister().by_namespace("ns").get("web")
    pod.metadata.name, pod.spec.node_name          # the model's attribute names

What a struct type is, generated from the model class's ``openapi_types`` and
``attribute_map``:

* one ``msgspec.Struct`` class per model class reached from the root, the model's Python
  attribute names as fields (renamed to the wire names when encoded or decoded), every
  field optional (None when the server sent nothing);
* arrays are tuples, maps are dicts, timestamps and base64 fields stay the wire strings,
  free-form fields (``object``: int-or-string, raw extensions) stay what JSON gives;
* the paths in ``skip`` (default ``metadata.managedFields``) are not fields at all, so
  the decoder passes over them without building anything. They are read as
  :mod:`client_cache.codec.skip_paths` reads them (dotted strings or sequences of keys,
  followed through arrays into their items); a class leaves out fields, not the keys
  of a map, so a path that goes into a map (``metadata.annotations.<key>``) leaves
  nothing out, as a path naming no field does;
* the classes are frozen by default (``frozen=False`` makes mutable ones): setting a
  field raises AttributeError, ``msgspec.structs.replace(obj, field=value)`` makes a
  changed copy (a transform returns one), and the list-watch gives the cached objects
  one shared copy of the parts they have alike (:mod:`client_cache.codec._sharing`: equal
  immutable values). Objects from a cache are read-only by contract (Go's too);
  frozen classes enforce it for fields, not for the dicts inside (labels, annotations);
* instances are not tracked by the cyclic garbage collector (``gc=False``) and the
  tuples holding them drop out of its sight as the list-watch decodes them
  (:func:`client_cache.codec._sharing.untrack`; else after the collector's first pass): a
  cache of structs costs the collector almost nothing. Such objects must not be put in
  reference cycles (nothing the server sends can make one);
* a self-referencing schema (``V1JSONSchemaProps``) holds plain JSON at the point where
  it would recur.

A LIST body and each watch event are decoded by ``msgspec.json`` directly into these
classes (:class:`StructCodec`, used by the list-watch when its ``object_type`` is a struct
class). An ``ERROR`` event's object stays the ``Status`` dict the reflector reads. A
list-watch asked for protobuf (``protobuf=True``) has the C protobuf decoder build these
classes from the server's protobuf instead, to equal objects
(:mod:`client_cache.codec._protobuf_structs`).
Conversions: :func:`client_cache.codec.objects.to_wire` and
:func:`~client_cache.codec.objects.to_model` take structs as they take models and dicts
(a wire dict with the server's field names; the ``kubernetes`` model, timestamps
parsed); :func:`~client_cache.codec.objects.to_struct` makes a struct from a wire dict,
JSON or a model. Custom resources have no model class: give them wire dicts.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any

from client_cache.codec import _wire as wire
from client_cache.codec._unfit import identity, unfit_from_bytes
from client_cache.codec.skip_paths import SkipPath, Tree, skip_tree

__all__ = ["DEFAULT_SKIP", "StructCodec", "is_struct_type", "model_of", "msgspec_module",
           "struct_to_wire", "struct_type"]

DEFAULT_SKIP = ("metadata.managedFields",)
"""What :func:`struct_type` leaves out unless told otherwise: the field owners' records,
the largest part of most objects and read by almost no controller."""

_PRIMITIVES: dict[str, Any] = {"str": str, "int": int, "float": float, "bool": bool,
                               "bytes": str, "datetime": str, "date": str, "object": Any}
_LIST = re.compile(r"^(?:List\[|list\[)(.+)\]$")
_DICT = re.compile(r"^(?:Dict\[str, |dict\(str, )(.+)[\])]$")
_lock = threading.Lock()
_built: dict[tuple[type, tuple[tuple[str, ...], ...], bool], type] = {}
_models: dict[type, type] = {}  # each class struct_type made -> its model class


def msgspec_module() -> Any:
    """The ``msgspec`` module; ImportError naming the ``[struct]`` extra without it."""
    try:
        import msgspec  # noqa: PLC0415 - the optional [struct] extra
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("struct mode needs msgspec: pip install client_cache[struct]") from err
    return msgspec


def is_struct_type(object_type: Any) -> bool:
    """True for a ``msgspec.Struct`` class (without importing msgspec when it is not)."""
    return isinstance(object_type, type) and hasattr(object_type, "__struct_fields__")


def struct_type(model: type, *, skip: Iterable[SkipPath] = DEFAULT_SKIP,
                frozen: bool = True) -> type:
    """The struct class for the ``kubernetes`` model class ``model`` (see the module
    documentation), built on first request and cached. ``skip`` lists wire paths
    (``metadata.managedFields``, ``status.conditions``) to leave out, as
    :func:`client_cache.codec.skip_paths.skip_tree` takes them: each item a dotted string or
    a sequence of keys, and a dotted string alone one path (``("metadata",
    "managedFields")`` is two paths; ``[("metadata", "managedFields")]`` is one).
    ``frozen`` (the default) makes the classes immutable (``msgspec``'s
    ``frozen=True``: setting a field raises AttributeError; ``msgspec.structs.replace``
    makes a changed copy), which lets the list-watch share equal parts between cached
    objects; ``frozen=False`` gives mutable classes, never shared. Raises TypeError for a
    class without the models' ``openapi_types`` metadata, and TypeError or ValueError
    for a path that is not one (an empty key, a key that is not a str)."""
    if not hasattr(model, "openapi_types") or not hasattr(model, "attribute_map"):
        raise TypeError(f"{model!r} is not a kubernetes model class (no openapi_types)")
    tree = skip_tree(skip)
    skipped = tuple(sorted(set(tree.paths))) if tree is not None else ()
    with _lock:
        key = (model, skipped, frozen)
        if key not in _built:
            _built[key] = _Builder(frozen).build(
                model, tree.tree if tree is not None else None, ())
            _models[_built[key]] = model
        return _built[key]


def model_of(cls: type) -> type | None:
    """The ``kubernetes`` model class :func:`struct_type` made ``cls`` from; None for
    any other class."""
    with _lock:
        return _models.get(cls)


class _Builder:
    """Makes the struct classes of one model class; ``node`` is where the skip tree
    (:data:`client_cache.codec.skip_paths.Tree`) stands at the class being built (None: no
    path goes on below it)."""

    def __init__(self, frozen: bool) -> None:
        self.frozen = frozen
        self.msgspec = msgspec_module()
        from kubernetes.client import models  # noqa: PLC0415 - kubernetes is imported late
        self.models = models

    def build(self, model: type, node: Tree | None, building: tuple[type, ...]) -> Any:
        if model in building:
            return Any  # a recursive schema: plain JSON from here down
        fields = []
        rename = {}
        types: dict[str, str] = getattr(model, "openapi_types", {})
        names: dict[str, str] = getattr(model, "attribute_map", {})
        for attr, spec in types.items():
            wire_name = names[attr]
            below: Tree | None = None
            if node is not None and wire_name in node:
                below = node[wire_name]
                if below is None:
                    continue  # the tree leaves this field out
            kind = self.field_type(spec, below, (*building, model))
            fields.append((attr, kind | None, None))
            rename[attr] = wire_name
        return self.msgspec.defstruct(
            model.__name__, fields, rename=rename, kw_only=True, omit_defaults=True,
            gc=False, frozen=self.frozen, module=__name__)

    def field_type(self, spec: str, node: Tree | None, building: tuple[type, ...]) -> Any:
        if spec in _PRIMITIVES:
            return _PRIMITIVES[spec]
        if (match := _LIST.match(spec)) is not None:  # paths go on into each item
            return tuple[self.field_type(match.group(1), node, building), ...]  # type: ignore[misc]
        if (match := _DICT.match(spec)) is not None:  # a path's next key is a map key
            return dict[str, self.field_type(match.group(1), None, building)]  # type: ignore[misc]
        model = getattr(self.models, spec, None)
        if model is None:
            return Any
        return self.build(model, node, building)


class StructCodec:
    """Decodes a LIST body and watch events straight into ``item_type`` structs (the
    list-watch's decoder when its ``object_type`` is a struct class).

    An object that is JSON but does not fit ``item_type`` (msgspec's validation error: a
    required field missing, a value of the wrong type) decodes to an
    :class:`~client_cache.codec._unfit.UnfitObject` in its place, in a LIST and in a watch
    alike: the other objects are not held hostage by it. A BOOKMARK's object is never
    given to ``item_type`` (it carries only metadata, which a class with a required
    ``spec`` refuses): it is the wire dict of its kind, apiVersion and metadata, as an
    ``ERROR``'s is the ``Status`` dict."""

    def __init__(self, item_type: type) -> None:
        msgspec = msgspec_module()
        self.item_type = item_type
        listing = msgspec.defstruct("List", [
            ("kind", str | None, None), ("apiVersion", str | None, None),
            ("metadata", dict[str, Any] | None, None),
            ("items", list[item_type] | None, None)])  # type: ignore[valid-type]
        raw_listing = msgspec.defstruct("RawList", [
            ("kind", str | None, None), ("apiVersion", str | None, None),
            ("metadata", dict[str, Any] | None, None),
            ("items", list[msgspec.Raw] | None, None)])  # type: ignore[name-defined]
        event = msgspec.defstruct("WatchEvent", [("type", str), ("object", msgspec.Raw)])
        self._list = msgspec.json.Decoder(listing)
        self._raw_list = msgspec.json.Decoder(raw_listing)
        self._event = msgspec.json.Decoder(event)
        self._item = msgspec.json.Decoder(item_type)
        self._error = msgspec.DecodeError
        self._invalid = msgspec.ValidationError

    def decode_list(self, body: bytes) -> dict[str, Any]:
        """A LIST body as the list-watch returns lists: a dict with ``metadata`` and
        ``items`` (structs, an :class:`~client_cache.codec._unfit.UnfitObject` for each
        item that does not fit). Raises ValueError for a body that is not such a list."""
        try:
            listed = self._list.decode(body)
            items = listed.items or []
        except self._invalid:  # one item or more does not fit: each on its own
            try:
                listed = self._raw_list.decode(body)
            except self._error as err:
                raise ValueError(str(err)) from err
            items = [self.decode_item(raw) for raw in listed.items or []]
        except self._error as err:
            raise ValueError(str(err)) from err
        return {"kind": listed.kind, "apiVersion": listed.apiVersion,
                "metadata": listed.metadata or {}, "items": items}

    def decode_item(self, data: bytes | memoryview) -> Any:
        """One object's JSON as an ``item_type`` struct, or an
        :class:`~client_cache.codec._unfit.UnfitObject` when it does not fit. Raises
        ValueError when it is not JSON."""
        try:
            return self._item.decode(data)
        except self._invalid as err:
            return unfit_from_bytes(data, self.item_type, err)
        except self._error as err:
            raise ValueError(str(err)) from err

    def decode_event(self, line: bytes) -> tuple[str, Any]:
        """One watch event line: its type and object (a struct; a ``Status`` dict for
        ``ERROR``; an identity dict for ``BOOKMARK``; an
        :class:`~client_cache.codec._unfit.UnfitObject` for an object that does not
        fit). Raises ValueError for a line that is not an event."""
        try:
            event = self._event.decode(line)
        except self._error as err:
            raise ValueError(str(err)) from err
        if event.type == "ERROR":
            return event.type, wire.loads(bytes(event.object))
        if event.type == "BOOKMARK":
            return event.type, identity(wire.loads(bytes(event.object)))
        return event.type, self.decode_item(event.object)


def struct_to_wire(obj: Any) -> Any:
    """A struct as a wire dict: the server's field names, unset fields left out, arrays
    as lists (encoded to JSON and decoded again: both steps are C code).
    :func:`client_cache.codec.objects.to_wire` calls this for structs."""
    return wire.loads(msgspec_module().json.encode(obj))
