"""decoding: how a :class:`~client_cache.client.lister_watcher.ClientListerWatcher` turns what its
server sends into its objects (the port's own; client-go decodes with its codecs).

:class:`ObjectDecoding` holds, for one lister-watcher, the decoders of each kind of
document: a LIST item, a whole LIST body, a watch line, a protobuf watch frame. Each is
JSON or protobuf into dicts (the walk of :mod:`client_cache.codec._sharing` done while
decoding), then into ``kubernetes`` models when asked, or straight into struct classes
(:mod:`client_cache.codec.structs`, :mod:`client_cache.codec._protobuf_structs`), with the
members of :mod:`client_cache.codec.skip_paths` left out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, cast

from client_cache.codec import _protobuf_structs as protobuf_structs
from client_cache.codec import _sharing as sharing
from client_cache.codec import _wire as wire
from client_cache.codec import protobuf
from client_cache.codec._list_body import ListBodyReader
from client_cache.codec._protobuf_schema import schema
from client_cache.codec._unfit import unfit_from_wire
from client_cache.codec._watch_decoders import (
    JsonLines,
    NativeJsonLines,
    ProtobufFrames,
    WatchDecoder,
    bookmark_object,
    object_lines,
)
from client_cache.codec._wire import Loads
from client_cache.codec.skip_paths import SkipPath, Tree, drop_members, skip_tree
from client_cache.codec.structs import StructCodec, is_struct_type, struct_to_wire

__all__ = ["ObjectDecoding", "Resource", "dropped", "model_decoder", "reuse_cached",
           "walked", "walked_events"]

_log = logging.getLogger(__name__)


E = TypeVar("E")


class Resource(Protocol):
    """What the decoders need of the resource they decode (a
    :class:`~client_cache.api.schema.GroupVersionResource`): its group/version and the name
    log lines give it."""

    def group_version(self) -> str:
        """``group/version`` (``v1`` for the core group)."""
        ...

    def label(self) -> str:
        """The resource as log lines name it (``pods``, ``apps/v1/deployments``)."""
        ...


def model_decoder(api_client: Any, object_type: Any) -> Callable[[Any], Any]:
    """A function turning a wire dict into ``object_type`` with the client's own
    deserializer (both the classic and the pydantic client generations)."""
    deserialize = getattr(api_client, "_ApiClient__deserialize", None)
    if callable(deserialize):
        return lambda data: deserialize(data, object_type)
    from_dict = getattr(object_type, "from_dict", None)
    if callable(from_dict):
        return cast(Callable[[Any], Any], from_dict)
    raise TypeError(f"cannot build a decoder for {object_type!r}")


def dropped(loads: Loads, tree: Tree) -> Loads:
    """``loads`` followed by the drop of the members ``tree`` names
    (:func:`client_cache.codec.skip_paths.drop_members`)."""
    def decode(data: bytes) -> Any:
        return drop_members(loads(data), tree)
    return decode


def walked(loads: Loads, walk: Callable[[Any], Any]) -> Loads:
    """``loads`` followed by ``walk`` (a :func:`client_cache.codec._sharing.walker`) of what it
    decoded."""
    def decode(data: bytes) -> Any:
        return walk(loads(data))
    return decode


def reuse_cached(lister_watcher: Any, store: Any) -> None:
    """Have ``lister_watcher``'s watches take, for each event, the unchanged parts of the
    object ``store`` (a store with ``get_by_key`` and ``len``) holds under its key, and
    its LISTs and watch-lists the same for each item or ``ADDED`` event while ``store``
    is not empty (a relist), when the lister-watcher can (``set_previous_objects``: a
    :class:`~client_cache.client.lister_watcher.ClientListerWatcher`) and
    ``CLIENT_CACHE_REUSE_UNCHANGED`` is not ``0``; ``store`` None lets go of the store
    (what an informer does when it stops, so the lister-watcher does not keep its cache
    alive)."""
    setter = getattr(lister_watcher, "set_previous_objects", None)
    if setter is None:
        return
    if store is None or not sharing.reused_by_default():
        setter(None)
        return
    get_by_key = store.get_by_key

    def cached(key: str) -> Any:  # a plain function: the C decoder calls it per event
        return get_by_key(key)[0]
    setter(cached, held=store.__len__)


def walked_events(decode_event: Callable[[bytes], tuple[str, Any]],
                  walk: Callable[[Any], Any]) -> Callable[[bytes], tuple[str, Any]]:
    """``decode_event`` followed by ``walk`` of the event's object."""
    def decode(line: bytes) -> tuple[str, Any]:
        type_name, obj = decode_event(line)
        return type_name, walk(obj)
    return decode


class ObjectDecoding:
    """The decoders of one lister-watcher (see the module documentation); the arguments
    are :class:`~client_cache.client.lister_watcher.ClientListerWatcher`'s, which documents them.

    :attr:`loads` decodes a JSON document whole, walked (a Status body); :attr:`event_loads`
    a watch line (its object's members left out), :meth:`event_loads_reusing` one taking
    the unchanged parts of the object it replaces; :attr:`list_body` reads LIST bodies;
    :attr:`decode` turns a dict into a model (None for dicts and structs);
    :attr:`decode_event` is the struct codec's line decoder (None unless structs);
    :meth:`protobuf_event` decodes a protobuf watch frame. :attr:`protobuf` says whether
    the server is asked for protobuf."""

    def __init__(self, api_client: Any, gvr: Resource, *, object_type: Any,
                 loads: Loads, metadata_only: bool, share_strings: bool | None,
                 untrack: bool | None, compact_dicts: bool | None, protobuf: bool,
                 skip_paths: Iterable[SkipPath] | None) -> None:
        self.object_type = object_type
        structs = is_struct_type(object_type)
        self.skip = skip_tree(skip_paths)
        if self.skip is not None and structs:
            raise ValueError("skip_paths is for dict and model objects; a struct class "
                             "leaves out its own fields (struct_type's skip)")
        self.share_strings = sharing.shared_by_default() if share_strings is None \
            else share_strings and sharing.AVAILABLE
        self.untrack = sharing.untracked_by_default() if untrack is None \
            else untrack and sharing.AVAILABLE
        models = bool(object_type) and not structs
        self.compact_dicts = not models and (
            sharing.compacted_by_default() if compact_dicts is None
            else compact_dicts and sharing.AVAILABLE)
        self._walk = sharing.walker(self.share_strings, self.untrack, self.compact_dicts)
        self.loads = self._json_loads(loads, None)
        item_loads = self.loads if self.skip is None else self._json_loads(loads,
                                                                           self.skip.tree)
        self._event_tree = None if self.skip is None else self.skip.under("object")
        self.event_loads = self.loads if self.skip is None else self._json_loads(
            loads, self._event_tree)
        # watch lines read by the C decoder into dicts can take parts of cached dicts
        self._reusable = loads is wire.loads and not object_type and sharing.AVAILABLE
        body_loads = self.loads if self.skip is None else self._json_loads(
            loads, self.skip.under("items"))
        self.codec: Any = None
        self.decode_event: Callable[[bytes], tuple[str, Any]] | None = None
        self.decode: Callable[[Any], Any] | None = None
        if structs:
            self.codec = StructCodec(object_type)
            self.decode_event = walked_events(self.codec.decode_event, self._walk) \
                if self._walk else self.codec.decode_event
        elif object_type:
            self.decode = model_decoder(api_client, object_type)
        # structs from protobuf: the plans of their kind's message, when it has one
        self._struct_plans: tuple[Any, ...] = ()
        if protobuf and not metadata_only and structs:
            message = protobuf_structs.root_message(object_type, gvr.group_version()) \
                if protobuf_structs.AVAILABLE else None
            if message is not None:
                found = protobuf_structs.plans(message, object_type)
                self._struct_plans = (found.capsule, found.root)
            else:
                _log.info("%s: struct objects of %s read JSON: %s", gvr.label(),
                          object_type.__name__, "no protobuf message of their kind in "
                          f"{gvr.group_version()}" if protobuf_structs.AVAILABLE
                          else "the C part of client_cache is not built")
        self.protobuf = protobuf and not metadata_only and (
            not structs or bool(self._struct_plans))
        self.flags = sharing.walk_flags(self.share_strings, self.untrack, self.compact_dicts)
        # dicts from protobuf, members left out: the plans of the kind the events carry
        # (kind, plans, exact), learnt from the first event; replaced whole, never changed
        self._event_plans: tuple[tuple[str, str], tuple[Any, ...], bool] | None = None
        self.list_body = ListBodyReader(
            item_loads, loads, self.codec, self._walk, self.flags, dicts=not object_type,
            body_loads=body_loads, skip=self.skip)

    def event_loads_reusing(self, previous: Callable[[str], Any] | None,
                            added: bool = False) -> Loads:
        """The watch line decoder whose event objects take the parts equal to those of
        the object ``previous`` gives for their key (:func:`client_cache.codec._sharing.decoder`
        says how): dict objects read by the C decoder only; :attr:`event_loads` for the
        others, or when ``previous`` is None. ``ADDED`` events are looked up too with
        ``added`` (a watch-list's relist)."""
        if previous is None or not self._reusable:
            return self.event_loads
        reusing = sharing.decoder(wire.loads, self.share_strings, self.untrack,
                                  self.compact_dicts, skip=self._event_tree,
                                  previous=previous, added=added)
        return reusing if reusing is not None else self.event_loads

    def watch_decoder(self, previous: Callable[[str], Any] | None, *, added: bool = False,
                      protobuf: bool = False, event_class: Callable[[Any, Any], E],
                      types: Mapping[str, Any]) -> WatchDecoder[E]:
        """The decoder of one watch stream, making each event
        ``event_class(types[type], object)``: this is where a watch's decoding is chosen.

        A protobuf stream (``protobuf``: the server answered in protobuf) is read as
        frames (:meth:`protobuf_event`). A JSON one is read as lines: by the struct codec
        for struct objects; else each line by :meth:`event_loads_reusing` (``previous``,
        ``added``) and its object made a model when models were asked for; dict objects
        read by the native decoder a buffer at a time when it is built (the lines it
        leaves go through the Python decoder, so the events and errors are the same)."""
        if protobuf:
            return ProtobufFrames(self.protobuf_event, event_class, types)
        line = self.decode_event if self.decode_event is not None else object_lines(
            self.event_loads_reusing(previous, added), self.decode, self.object_type)
        lines = JsonLines(line, event_class, types)
        if not self._reusable:
            return lines
        native = sharing.line_decoder(self.share_strings, self.untrack, self.compact_dicts,
                                      skip=self._event_tree, previous=previous, added=added,
                                      event_class=event_class, types=dict(types))
        return lines if native is None else NativeJsonLines(native, lines)

    def item_loads_reusing(self, previous: Callable[[str], Any] | None) -> Loads | None:
        """The LIST item decoder whose objects take the parts equal to those of the
        object ``previous`` gives for their key, an item equal to it decoding to that
        object itself (a relist then builds only what changed; see
        :func:`client_cache.codec._sharing.decoder`'s ``whole``): dict objects read by the C
        decoder only. None where that is not so, or when ``previous`` is None: the
        lister-watcher's own item decoder then reads the items."""
        if previous is None or not self._reusable:
            return None
        return sharing.decoder(wire.loads, self.share_strings, self.untrack,
                               self.compact_dicts,
                               skip=None if self.skip is None else self.skip.tree,
                               previous=previous, whole=True)

    def _json_loads(self, loads: Loads, tree: Tree | None) -> Loads:
        """The JSON decoder of documents whose members ``tree`` names are left out, walked
        as asked: in one pass by the C decoder when ``loads`` is the default one, else
        ``loads``, then the drop, then the walk."""
        if loads is wire.loads:
            one_pass = sharing.decoder(loads, self.share_strings, self.untrack,
                                       self.compact_dicts, skip=tree)
            if one_pass is not None:
                return one_pass
        if tree is not None:
            loads = dropped(loads, tree)
        return walked(loads, self._walk) if self._walk else loads

    def protobuf_event(self, frame: bytes) -> tuple[str, Any]:
        """One protobuf watch frame as its type and object (a dict, model or struct as
        the lister-watcher's objects are; a ``Status`` dict for ``ERROR``)."""
        learnt = self._event_plans
        plans = self._struct_plans or (learnt[1] if learnt is not None else ())
        event_type, obj = protobuf.decode_watch_event(
            frame, self.flags if not self.object_type or self._struct_plans else 0, plans)
        if event_type == "ERROR":
            return event_type, obj
        if self.skip is not None:
            self._left_out(obj, learnt)
        if event_type == "BOOKMARK" and self.object_type:
            return event_type, bookmark_object(
                obj if isinstance(obj, dict) else struct_to_wire(obj))
        return event_type, self.decode_model(obj) if self.decode is not None else obj

    def decode_model(self, obj: Any) -> Any:
        """Wire dict ``obj`` as the lister-watcher's model, or an
        :class:`~client_cache.codec._unfit.UnfitObject` when the model refuses it."""
        assert self.decode is not None
        try:
            return self.decode(obj)
        except Exception as err:
            if not isinstance(obj, dict):
                raise ValueError(str(err)) from err
            return unfit_from_wire(obj, self.object_type, err)

    def _left_out(self, obj: Any,
                  learnt: tuple[tuple[str, str], tuple[Any, ...], bool] | None) -> None:
        """The skipped members of a protobuf event's dict (decoded with the plans of
        ``learnt``) dropped where the plans did not pass over them; the first object of a
        kind with a message gives the plans of the events after it."""
        assert self.skip is not None
        kind = (obj.get("apiVersion", ""), obj.get("kind", "")) if isinstance(obj, dict) \
            else None
        if learnt is not None and kind == learnt[0] and learnt[2]:
            return
        self.skip.drop(obj)
        if learnt is None and kind is not None and protobuf_structs.AVAILABLE:
            try:
                message = schema().message(*kind)
            except ValueError:  # not a built-in kind: dropped after decoding, each time
                self._event_plans = (kind, (), False)
                return
            found = protobuf_structs.dict_plans(message, self.skip)
            self._event_plans = (kind, (found.capsule, found.root), found.exact)
