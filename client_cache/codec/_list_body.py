"""list_body: a LIST response's body read into the list the lister-watcher returns.

:class:`ListBodyReader` is how
:class:`~client_cache.client.lister_watcher.ClientListerWatcher` reads a LIST body, in JSON
or in protobuf (the answer's ``Content-Type`` says which), item by item as the body
arrives, with the decoded objects' strings shared, containers untracked and dicts
compacted as the lister-watcher was asked (:mod:`client_cache.codec._sharing`). It is the
port's own (client-go decodes the whole body with its codec).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from client_cache.codec import _protobuf_structs as protobuf_structs
from client_cache.codec import _sharing as sharing
from client_cache.codec import _wire as wire
from client_cache.codec import protobuf
from client_cache.codec._wire import Loads
from client_cache.codec.skip_paths import SkipTree

__all__ = ["LIST_READ_SIZE", "ListBodyReader"]

#: How many bytes of a LIST body are read at a time, the items completed by each piece
#: being decoded before the next is read.
LIST_READ_SIZE = 256 * 1024



class ListBodyReader:
    """Reads LIST bodies for one lister-watcher.

    ``loads`` decodes a JSON document with the walk done (the lister-watcher's decoder:
    each item's), ``plain_loads`` without it, ``body_loads`` a whole body (default:
    ``loads``); ``codec`` is the struct codec when objects are structs (a protobuf body is then
    decoded into them by the C part: :mod:`client_cache.codec._protobuf_structs`), ``walk`` the
    walk asked for (None: none) and ``flags`` its C flags, applied while decoding
    protobuf items that stay dicts (``dicts``) or become structs. ``skip``: the members
    left out of protobuf items that are not structs (the JSON decoders leave out their
    own).
    """

    def __init__(self, loads: Loads, plain_loads: Loads, codec: Any,
                 walk: Callable[[Any], Any] | None, flags: int, dicts: bool, *,
                 body_loads: Loads | None = None, skip: SkipTree | None = None) -> None:
        self._loads = loads
        self._body_loads = body_loads or loads
        self._plain_loads = plain_loads
        self._codec = codec
        self._walk = walk
        self._flags = flags if dicts or codec is not None else 0
        self._skip = skip if codec is None else None

    def read(self, response: Any, item_loads: Loads | None = None) -> Any:
        """A LIST response's body, decoded. Where the C part is installed a JSON body is
        read :data:`LIST_READ_SIZE` bytes at a time and each item is decoded as soon as
        it has arrived (:class:`~client_cache.codec._sharing.ListSplitter`), so decoding
        overlaps the server's sending instead of following it, and the body is never held
        whole; each item's decoder copies are freed before the next is decoded
        (:func:`client_cache.codec._sharing.split_list` says why that matters). A JSON body
        that is not a list is decoded whole. A protobuf body is read the same way by
        :class:`client_cache.codec.protobuf.ListReader`. ``item_loads`` (dict objects only)
        decodes each JSON item in place of the reader's own decoder (a relist's, reading
        items beside the cached objects: ``Decoding.item_loads_reusing``)."""
        content_type = response.headers.get("Content-Type", "") if response.headers else ""
        if content_type.startswith(protobuf.CONTENT_TYPE):
            return self._read_protobuf(response)
        if not sharing.AVAILABLE:  # pragma: no cover - depends on the installation
            return self._decode_whole(response.read())
        splitter = sharing.ListSplitter()
        # an item decoded and walked (not walked: no walk asked), in one pass for dicts
        decode = self._walked_item if self._codec is not None else item_loads or self._loads
        items: list[Any] = []
        with wire.gc_paused():  # as over a whole body (the reflector holds it too)
            while piece := response.read(LIST_READ_SIZE):
                for raw in splitter.feed(piece):
                    items.append(decode(raw))
            envelope, split = splitter.finish()
            if not split or splitter.later_items():
                # a later items member wins, as in any JSON decoder: the envelope (whose
                # first array is emptied) is then the whole body's equal
                return self._decode_whole(envelope)
            result = self._codec.decode_list(envelope) if self._codec is not None \
                else self._plain_loads(envelope)
        result["items"] = items
        return result

    def _read_protobuf(self, response: Any) -> Any:
        if self._codec is not None and not protobuf_structs.AVAILABLE:
            raise ValueError("a protobuf LIST body for struct objects, which ask for JSON "
                             "only where the C part is not built")
        reader = protobuf.ListReader(
            self._flags, None if self._codec is None else self._codec.item_type,
            skip=self._skip)
        with wire.gc_paused():
            while piece := response.read(LIST_READ_SIZE):
                reader.feed(piece)
            return reader.finish()

    def _walked(self, item: Any) -> Any:
        return self._walk(item) if self._walk else item

    def _walked_item(self, raw: bytes) -> Any:
        """One LIST item's JSON decoded by the struct codec, then walked if asked."""
        return self._walked(self._codec.decode_item(raw))

    def _decode_whole(self, body: bytes) -> Any:
        """A body decoded whole, and walked if at all: dicts as a whole, structs item by
        item, so that each cached object is the top of its walk (never replaced by an
        equal one: :mod:`client_cache.codec._sharing`)."""
        if self._codec is None:
            return self._body_loads(body)
        result = self._codec.decode_list(body)
        if self._walk:
            result["items"] = [self._walk(item) for item in result["items"]]
        return result
