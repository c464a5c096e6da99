"""One object model on both paths: informers hand out wire dicts by default (the server's
JSON, ``spec.nodeName``), the ``kubernetes`` client's calls return models
(``V1Pod.spec.node_name``). These convert between them (port additions):

* :func:`to_wire` - a model (or a wire dict, or anything made of them) to the wire form,
  with the server's field names, unset fields left out, timestamps as RFC 3339 strings;
  what the client would send. A wire dict comes back as a deep copy.
* :func:`to_model` - a wire dict to a ``kubernetes.client`` model, given the class or its
  name (``"V1Pod"``), with the client's own deserializer (both client generations).

Either write path accepts both forms: the client's write calls take a wire dict as body
as well as a model. ``examples/read_modify_write.py`` shows the read-modify-write cycle
(lister -> copy -> ``replace_*_status``) in both modes.
"""

from __future__ import annotations

import copy
import datetime
import functools
from collections.abc import Mapping
from typing import Any, TypeAlias

from client_cache.codec._decoding import model_decoder
from client_cache.codec.structs import is_struct_type, msgspec_module, struct_to_wire

__all__ = ["WireObject", "to_model", "to_struct", "to_wire"]

WireObject: TypeAlias = Mapping[str, Any]
"""How an object in wire form (the server's JSON, as informers hand it out by default)
is typed: a read-only mapping, since cached objects are shared; copy it
(``copy.deepcopy``) to change it. Deliberately not a ``TypedDict``: every resource and
version would need its own."""


def to_wire(obj: Any) -> Any:
    """``obj`` in the wire form (see the module documentation). Models are recognised by
    their ``attribute_map``/``openapi_types`` (the generated ``kubernetes.client``
    classes), structs of :mod:`client_cache.codec.structs` as such."""
    if isinstance(obj, Mapping):
        return {key: to_wire(value) for key, value in obj.items()}
    if is_struct_type(type(obj)):
        return struct_to_wire(obj)
    if isinstance(obj, (list, tuple)):
        return [to_wire(value) for value in obj]
    if isinstance(obj, datetime.datetime):
        text = obj.isoformat()
        return text[:-6] + "Z" if text.endswith("+00:00") else text
    if isinstance(obj, datetime.date):
        return obj.isoformat()
    names = getattr(type(obj), "attribute_map", None)
    types = getattr(type(obj), "openapi_types", None)
    if isinstance(names, Mapping) and isinstance(types, Mapping):
        out = {}
        for attr in types:
            value = getattr(obj, attr, None)
            if value is not None:
                out[names.get(attr, attr)] = to_wire(value)
        return out
    return copy.deepcopy(obj)


def to_model(obj: Any, model: type | str, api_client: Any = None) -> Any:
    """The wire dict (or :mod:`~client_cache.codec.structs` struct) ``obj`` as a
    ``kubernetes.client`` model: ``model`` is the class or its name (``"V1Pod"``);
    ``api_client`` lends its deserializer (when none is given and the model class cannot
    decode by itself, one client made once for the process lends it: no client, and no
    thread pool, per call). Raises ``TypeError`` for an unknown model name."""
    if is_struct_type(type(obj)):
        obj = struct_to_wire(obj)
    if isinstance(model, str):
        import kubernetes.client as models_module  # noqa: PLC0415 - only when asked

        found = getattr(models_module, model, None)
        if not isinstance(found, type):
            raise TypeError(f"kubernetes.client has no model {model!r}")
        model = found
    if api_client is None and not callable(getattr(model, "from_dict", None)):
        api_client = _shared_client()
    return model_decoder(api_client, model)(copy.deepcopy(dict(obj)))


@functools.cache
def _shared_client() -> Any:
    """One ``kubernetes`` ApiClient for the process, only for its deserializer (it never
    sends a request, so it opens no connection)."""
    from kubernetes.client import ApiClient  # noqa: PLC0415 - the classic client only

    return ApiClient()


def to_struct(data: Any, object_type: type) -> Any:
    """``data`` (a wire dict, JSON bytes, or a ``kubernetes`` model) as a struct of
    ``object_type``. Raises ValueError when it does not fit."""
    msgspec = msgspec_module()
    try:
        if isinstance(data, (bytes, bytearray, memoryview)):
            return msgspec.json.decode(data, type=object_type)
        if hasattr(type(data), "openapi_types"):
            data = to_wire(data)
        return msgspec.convert(data, object_type)
    except msgspec.ValidationError as err:
        raise ValueError(str(err)) from err
