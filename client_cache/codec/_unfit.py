"""unfit: what the codec gives in place of an object that does not fit its class.

A lister-watcher asked for typed objects (a struct class, a typed custom resource, a
``kubernetes`` model) decodes each LIST item and each watch event's object into that
class. An object the server sent that the class refuses (a required field missing, a
string where the class declares an int) does not fail the whole LIST or end the watch:
the decoder gives an :class:`UnfitObject` in its place, which carries the object's
identity (kind, apiVersion and metadata, as a wire dict) and the decoder's reason (with
the field path), never the rest of its contents. The reflector reports it and keeps it
out of the cache (:class:`~client_cache.reflector_status.ReflectorStatus` ``unfit``).

This differs from client-go, where a typed decode error fails the LIST (the informer
never syncs) or ends the watch with an ``InternalError`` and relists: one object a CRD's
schema allows but the controller's class does not would hold every other object
hostage, and it would be blamed on the server. Here the objects that fit are cached and
delivered and the one that does not is named.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from client_cache.codec import _wire as wire

__all__ = ["UnfitObject"]


def identity(obj: Any) -> Any:
    """A wire dict reduced to what names it: ``kind``, ``apiVersion`` and ``metadata``
    (what a BOOKMARK carries too). Anything but a dict is returned as it is."""
    if not isinstance(obj, dict):
        return obj
    return {k: obj[k] for k in ("kind", "apiVersion", "metadata") if k in obj}


class UnfitObject:
    """An object that does not fit ``class_name``: :attr:`wire` its identity (a dict of
    ``kind``, ``apiVersion`` and ``metadata``), :attr:`reason` the decoder's message
    (msgspec's names the field path: ``Expected `int`, got `str` - at `$.spec.size```).
    Its ``repr`` names the object, never its contents."""

    __slots__ = ("class_name", "reason", "wire")

    def __init__(self, wire_identity: dict[str, Any], reason: str, class_name: str) -> None:
        self.wire = wire_identity
        self.reason = reason
        self.class_name = class_name

    def key(self) -> str:
        """``namespace/name`` (``name`` for a cluster-scoped object), "" without a name."""
        md = self.wire.get("metadata")
        if not isinstance(md, dict):
            return ""
        name, namespace = md.get("name") or "", md.get("namespace") or ""
        if not isinstance(name, str) or not isinstance(namespace, str) or not name:
            return ""
        return f"{namespace}/{name}" if namespace else name

    def resource_version(self) -> str:
        """The object's ``metadata.resourceVersion`` ("" without one)."""
        md = self.wire.get("metadata")
        rv = md.get("resourceVersion") if isinstance(md, dict) else None
        return rv if isinstance(rv, str) else ""

    def kind(self) -> str:
        """The object's kind ("" without one)."""
        kind = self.wire.get("kind")
        return kind if isinstance(kind, str) else ""

    def describe(self) -> str:
        """``Widget ns/name (resourceVersion 12)``, safe to log."""
        text = f"{self.kind() or self.class_name} {self.key() or '<unnamed>'}"
        rv = self.resource_version()
        return f"{text} (resourceVersion {rv})" if rv else text

    def __repr__(self) -> str:
        return f"UnfitObject({self.describe()}: does not fit {self.class_name})"


def _class_name(cls: Any) -> str:
    return getattr(cls, "__name__", None) or type(cls).__name__


def unfit_from_wire(obj: Any, cls: Any, err: BaseException) -> UnfitObject:
    """The :class:`UnfitObject` of wire dict ``obj`` that ``cls`` refused with ``err``."""
    return UnfitObject(identity(obj) if isinstance(obj, dict) else {}, _reason(err),
                       _class_name(cls))


def unfit_from_bytes(data: bytes | memoryview, cls: Any, err: BaseException,
                     loads: Callable[[bytes], Any] = wire.loads) -> UnfitObject:
    """The :class:`UnfitObject` of the JSON object ``data`` that ``cls`` refused with
    ``err`` (its identity read with ``loads``). Raises ValueError (from ``err``) when
    ``data`` is not a JSON object at all: that is a broken document, not an object."""
    try:
        obj = loads(bytes(data))
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise ValueError(str(err)) from err
    return unfit_from_wire(obj, cls, err)


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|\([^()`]*\)")


def _reason(err: BaseException) -> str:
    """The decoder's message without the values it quotes (msgspec quotes an invalid
    enum value, the ``kubernetes`` models a refused value in parentheses: an object's
    contents never reach a log line), cut to a length a log line can carry."""
    text = _QUOTED.sub("<value>", str(err)) or type(err).__name__
    return text if len(text) <= 300 else text[:297] + "..."
