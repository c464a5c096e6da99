"""The codec: everything that turns a server's bytes into the objects a cache holds.

client-go leaves this to apimachinery's serializers (``runtime.Decoder``, the JSON and
protobuf serializers, ``rest/watch.Decoder``); here it is one room of its own, below the
client-go port (the cache layer imports it; it imports only :mod:`client_cache.util`):

- :mod:`~client_cache.codec._wire`: the JSON decoder (orjson when installed, else ``json``)
  and a pause of the cyclic collector while a body is decoded.
- :mod:`~client_cache.codec._decoding`: the one place a lister-watcher's decoders are chosen
  (JSON or protobuf, dicts, models or structs, shared strings, skipped members).
- :mod:`~client_cache.codec._list_body`: LIST bodies, read as they arrive.
- :mod:`~client_cache.codec._sharing`: one copy of each repeated string, containers out of
  the collector's sight, dicts sharing key tables; the native decoders' Python face.
- :mod:`~client_cache.codec.skip_paths`: members left out while decoding.
- :mod:`~client_cache.codec.structs`, :mod:`~client_cache.codec.objects`: the struct
  object mode and the conversions between dicts, models and structs.
- :mod:`~client_cache.codec.protobuf` and its schema, shapes and struct plans: the
  Kubernetes protobuf encoding.

The native part, ``client_cache.codec._codec``, is built from ``codec/csrc/`` (one C unit
per concern: the string table, the walk, the JSON decoder, the line decoder, the LIST
scanner, the protobuf decoder, the tables of shapes, values and layouts, and the module
init) and has a pure-Python twin for everything it does; ``CLIENT_CACHE_NATIVE=0`` runs
the twins (:mod:`client_cache.util._native`).

What users call is exported here: :func:`struct_type` (the struct mode's classes),
:func:`to_model`, :func:`to_wire`, :func:`to_struct` and :data:`WireObject` (an object's
three forms). They lived at ``client_cache.structs`` and ``client_cache.objects`` before
the codec had a room of its own.
"""

from client_cache.codec.objects import WireObject, to_model, to_struct, to_wire
from client_cache.codec.structs import struct_type

__all__ = ["WireObject", "struct_type", "to_model", "to_struct", "to_wire"]
