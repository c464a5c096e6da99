"""A structural OpenAPI v3 schema from ``msgspec`` types (the part of kube-rs's
``#[derive(CustomResource)]`` and of controller-gen that turns a type into a CRD's
``openAPIV3Schema``).

:func:`structural_schema` walks :func:`msgspec.inspect.type_info` and writes what the API
server calls a *structural* schema: every node has a ``type`` (but the two
``x-kubernetes-*`` escapes below), references are inlined, and a union with ``None`` is
``nullable: true``. The mapping:

=========================================== ==================================================
Python                                      schema
=========================================== ==================================================
``str``, ``int``, ``float``, ``bool``       ``string``, ``integer``, ``number``, ``boolean``
``datetime`` / ``date``                     ``string`` with ``format: date-time`` / ``date``
``Literal["a", "b"]``, an ``Enum``          the type and ``enum``
``int | str``                               ``x-kubernetes-int-or-string: true``
``X | None``                                ``X`` with ``nullable: true``
``list[X]``, ``tuple[X, ...]``              ``array`` of ``X``; ``set[X]``/``frozenset[X]``
                                            add ``x-kubernetes-list-type: set``
``dict[str, X]``                            ``object`` with ``additionalProperties: X``
``Any``, ``object``, ``dict[str, Any]``     ``x-kubernetes-preserve-unknown-fields: true``
                                            (the last with ``type: object``)
a ``msgspec.Struct``                        ``object`` with ``properties`` (wire names,
                                            ``rename=`` applied) and ``required`` (the
                                            fields without a default)
``Annotated[X, Meta(...)]``                 ``minimum``/``maximum`` (``ge``/``le``; ``gt``/``lt``
                                            as exclusive), ``multipleOf``, ``pattern``,
                                            ``minLength``/``maxLength``,
                                            ``minItems``/``maxItems``,
                                            ``minProperties``/``maxProperties``,
                                            ``description``, ``title``; ``format``
                                            from ``extra_json_schema``
=========================================== ==================================================

A field's default is written as ``default`` when it is a plain value (a number, a string,
a boolean; the server applies it to objects that leave the field out). Anything else
(another union, bytes, a custom type) raises :class:`UnsupportedSchemaError` naming the
field's path, never silently dropped.
"""

from __future__ import annotations

import enum
import re
from typing import Any

import msgspec
from msgspec import inspect as mi

from client_cache.errors import ClientCacheError

__all__ = ["UnsupportedSchemaError", "checked_type_info", "structural_schema"]


class UnsupportedSchemaError(ClientCacheError, TypeError):
    """A type that has no structural-schema form here; the message names its path."""


def structural_schema(tp: Any, *, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The structural schema of type ``tp`` (see the module documentation); for a struct,
    the members whose wire names are in ``exclude`` are left out (not even walked). A
    constraint msgspec refuses for its type (``Annotated[str, Meta(ge=1)]``) raises
    :class:`UnsupportedSchemaError` naming the field's path, as a declared default
    outside its own bounds does (the server would refuse every object that omits it)."""
    return _Walker(frozenset(exclude)).node(checked_type_info(tp), "")


def checked_type_info(tp: Any) -> mi.Type:
    """``msgspec.inspect.type_info(tp)``; a type msgspec refuses raises
    :class:`UnsupportedSchemaError` naming the path of the field at fault."""
    try:
        return mi.type_info(tp)
    except TypeError as err:
        raise UnsupportedSchemaError(f"{_bad_field(tp, '') or 'the type'}: {err}") from err


def _bad_field(tp: Any, path: str) -> str:
    """The path of the first field of struct ``tp`` (or of a struct inside it) whose type
    msgspec refuses; "" when none is found."""
    try:
        fields = msgspec.structs.fields(tp)
    except TypeError:
        return ""
    for field in fields:
        where = f"{path}.{field.encode_name}" if path else field.encode_name
        try:
            mi.type_info(field.type)
        except TypeError:
            return _bad_field(field.type, where) or where
    return ""


class _Walker:
    def __init__(self, exclude: frozenset[str]) -> None:
        self.exclude = exclude  # top-level members left out

    def node(self, info: mi.Type, path: str) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        while isinstance(info, mi.Metadata):
            for key in ("description", "title", "format"):
                value = (info.extra_json_schema or {}).get(key)
                if value is not None:
                    extra[key] = value
            info = info.type
        return {**self._plain(info, path), **extra}

    def _plain(self, info: mi.Type, path: str) -> dict[str, Any]:
        if isinstance(info, mi.UnionType):
            return self._union(info, path)
        if isinstance(info, mi.StrType):
            return _compact({"type": "string", "pattern": info.pattern,
                             "minLength": info.min_length, "maxLength": info.max_length})
        if isinstance(info, mi.BoolType):
            return {"type": "boolean"}
        if isinstance(info, (mi.IntType, mi.FloatType)):
            return _compact({"type": "integer" if isinstance(info, mi.IntType) else "number",
                             **_bounds(info)})
        if isinstance(info, mi.DateTimeType):
            return {"type": "string", "format": "date-time"}
        if isinstance(info, mi.DateType):
            return {"type": "string", "format": "date"}
        if isinstance(info, mi.LiteralType):
            return self._enum(list(info.values), path)
        if isinstance(info, mi.EnumType):
            return self._enum([member.value for member in info.cls], path)
        if isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType, mi.FrozenSetType)):
            out = _compact({"type": "array", "items": self.node(info.item_type, path + "[]"),
                            "minItems": info.min_length, "maxItems": info.max_length})
            if isinstance(info, (mi.SetType, mi.FrozenSetType)):
                out["x-kubernetes-list-type"] = "set"
            return out
        if isinstance(info, mi.DictType):
            if not isinstance(info.key_type, mi.StrType):
                raise UnsupportedSchemaError(f"{path or 'the type'}: map keys must be strings")
            bounds = {"minProperties": info.min_length, "maxProperties": info.max_length}
            if isinstance(info.value_type, mi.AnyType):
                return _compact({"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                 **bounds})
            return _compact({"type": "object", **bounds,
                             "additionalProperties": self.node(info.value_type, path + "{}")})
        if isinstance(info, mi.AnyType):
            return {"x-kubernetes-preserve-unknown-fields": True}
        if isinstance(info, mi.StructType):
            return self._struct(info, path)
        raise UnsupportedSchemaError(
            f"{path or 'the type'}: {_python_name(info)} has no structural schema here")

    def _struct(self, info: mi.StructType, path: str) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in info.fields:
            if not path and field.encode_name in self.exclude:
                continue
            where = f"{path}.{field.encode_name}" if path else field.encode_name
            schema = self.node(field.type, where)
            if field.required:
                required.append(field.encode_name)
            elif _plain_default(field.default):
                schema["default"] = _wire(field.default)
                broken = _default_breaks(schema, schema["default"])
                if broken:
                    raise UnsupportedSchemaError(
                        f"{where}: the default {schema['default']!r} {broken}: the server "
                        "would refuse every object that leaves the field out")
            properties[field.encode_name] = schema
        out: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            out["required"] = required
        return out

    def _union(self, info: mi.UnionType, path: str) -> dict[str, Any]:
        types = [t for t in info.types if not isinstance(t, mi.NoneType)]
        nullable = len(types) < len(info.types)
        kinds = {type(_strip(t)) for t in types}
        if kinds == {mi.IntType, mi.StrType} and len(types) == 2:
            out: dict[str, Any] = {"x-kubernetes-int-or-string": True}
        elif len(types) == 1:
            out = self.node(types[0], path)
        else:
            union = " | ".join(sorted(_python_name(_strip(t)) for t in types))
            raise UnsupportedSchemaError(
                f"{path or 'the type'}: the union {union} has no structural schema (only "
                "X | None and int | str)")
        if nullable:
            out["nullable"] = True
        return out

    def _enum(self, values: list[Any], path: str) -> dict[str, Any]:
        if all(isinstance(v, str) for v in values):
            return {"type": "string", "enum": values}
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return {"type": "integer", "enum": values}
        raise UnsupportedSchemaError(f"{path or 'the type'}: an enum must be all strings or "
                                     "all integers")


_NAMES = {"DateTime": "datetime", "Time": "datetime.time", "Date": "datetime.date",
          "TimeDelta": "datetime.timedelta", "UUID": "uuid.UUID",
          "Decimal": "decimal.Decimal", "ByteArray": "bytearray",
          "MemoryView": "memoryview", "Raw": "msgspec.Raw", "Ext": "msgspec.msgpack.Ext",
          "VarTuple": "tuple", "FrozenSet": "frozenset"}


def _python_name(info: mi.Type) -> str:
    """How the annotation was written in Python (``bytes``, ``float``, a class's name),
    not msgspec's name for its type info (``BytesType``, ``FloatType``)."""
    cls = getattr(info, "cls", None)
    if isinstance(cls, type):
        return cls.__name__
    if isinstance(info, mi.LiteralType):
        return f"Literal[{', '.join(repr(v) for v in info.values)}]"
    kind = type(info).__name__.removesuffix("Type")
    return _NAMES.get(kind, kind.lower())


def _strip(info: mi.Type) -> mi.Type:
    while isinstance(info, mi.Metadata):
        info = info.type
    return info


def _bounds(info: mi.IntType | mi.FloatType) -> dict[str, Any]:
    out: dict[str, Any] = {"multipleOf": info.multiple_of}
    if info.ge is not None:
        out["minimum"] = info.ge
    elif info.gt is not None:
        out.update(minimum=info.gt, exclusiveMinimum=True)
    if info.le is not None:
        out["maximum"] = info.le
    elif info.lt is not None:
        out.update(maximum=info.lt, exclusiveMaximum=True)
    return out


def _compact(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if v is not None}


def _plain_default(value: Any) -> bool:
    return value is not msgspec.NODEFAULT and (
        isinstance(value, (str, int, float, bool, enum.Enum)) and value is not None)


def _wire(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _default_breaks(schema: dict[str, Any], value: Any) -> str:
    """How ``value`` breaks the bounds ``schema`` writes for it ("" when it does not)."""
    if "enum" in schema and value not in schema["enum"]:
        return f"is not one of {schema['enum']}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if low is not None and (value <= low if schema.get("exclusiveMinimum")
                                else value < low):
            return f"is below the minimum {low}"
        if high is not None and (value >= high if schema.get("exclusiveMaximum")
                                 else value > high):
            return f"is above the maximum {high}"
        step = schema.get("multipleOf")
        if step and value % step:
            return f"is not a multiple of {step}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return f"is shorter than {schema['minLength']}"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"is longer than {schema['maxLength']}"
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            return f"does not match {schema['pattern']!r}"
    return ""
