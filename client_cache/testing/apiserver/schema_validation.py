"""A custom resource checked against its CRD's structural schema, as the real API server
checks it before storing it: the embedded server answers a create or update that breaks
the schema with 422 Invalid and one cause per broken member (reason, field path,
message), in the real server's terms.

Checked: the ``type`` of every member (``int-or-string`` and ``preserve-unknown-fields``
as the server takes them), ``required``, ``nullable``, ``minimum``/``maximum`` (and their
exclusive forms), ``multipleOf``, ``pattern``, ``minLength``/``maxLength``, ``enum``,
``minItems``/``maxItems``, ``minProperties``/``maxProperties``, into nested objects,
arrays and maps. Not checked (the real server does): CEL rules
(``x-kubernetes-validations``), formats, and pruning of unknown members.
"""

from __future__ import annotations

import re
from typing import Any

from client_cache.errors import ApiStatusError

__all__ = ["invalid_error", "validate"]

_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
          "object": (dict,), "array": (list,)}


def _show(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return '"' + type(value).__name__ + '"'
    return str(value)


def _json_type(value: Any) -> str:
    """The JSON type of ``value`` as the server names it in a type error."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def validate(schema: Any, value: Any, path: str = "") -> list[dict[str, str]]:
    """The causes (``reason``, ``field``, ``message``) of ``value`` breaking ``schema``."""
    causes: list[dict[str, str]] = []
    if not isinstance(schema, dict):
        return causes
    _check(schema, value, path, causes)
    return causes


def _cause(causes: list[dict[str, str]], reason: str, field: str, message: str) -> None:
    causes.append({"reason": reason, "field": field, "message": message})


def _check(schema: dict[str, Any], value: Any, path: str,
           causes: list[dict[str, str]]) -> None:
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            _cause(causes, "FieldValueTypeInvalid", path,
                   f"Invalid value: \"null\": {path} in body must be of type "
                   f"{schema['type']}: \"null\"")
        return
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            shown = f'"{_json_type(value)}"'
            _cause(causes, "FieldValueTypeInvalid", path,
                   f"Invalid value: {shown}: {path} in body must be of type integer,string: "
                   f"{shown}")
        return
    if kind:
        allowed = _TYPES.get(kind, ())
        wrong = not isinstance(value, allowed) or (
            kind in ("integer", "number") and isinstance(value, bool))
        if kind == "integer" and isinstance(value, float) and value.is_integer():
            wrong = False
        if wrong:
            shown = f'"{_json_type(value)}"'
            _cause(causes, "FieldValueTypeInvalid", path,
                   f"Invalid value: {shown}: {path} in body must be of type {kind}: {shown}")
            return
    if "enum" in schema and value not in schema["enum"]:
        _cause(causes, "FieldValueNotSupported", path,
               f"Unsupported value: {_show(value)}: supported values: "
               + ", ".join(_show(v) for v in schema["enum"]))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _numbers(schema, value, path, causes)
    if isinstance(value, str):
        _strings(schema, value, path, causes)
    if isinstance(value, list):
        _arrays(schema, value, path, causes)
    if isinstance(value, dict):
        _objects(schema, value, path, causes)


def _numbers(schema: dict[str, Any], value: float, path: str,
             causes: list[dict[str, str]]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and (value < low or (schema.get("exclusiveMinimum") and value == low)):
        word = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
        _cause(causes, "FieldValueInvalid", path,
               f"Invalid value: {_show(value)}: {path} in body should be {word} {low}")
    if high is not None and (value > high or (schema.get("exclusiveMaximum") and value == high)):
        word = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
        _cause(causes, "FieldValueInvalid", path,
               f"Invalid value: {_show(value)}: {path} in body should be {word} {high}")
    step = schema.get("multipleOf")
    if step and value % step:
        _cause(causes, "FieldValueInvalid", path,
               f"Invalid value: {_show(value)}: {path} in body should be a multiple of {step}")


def _strings(schema: dict[str, Any], value: str, path: str,
             causes: list[dict[str, str]]) -> None:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        _cause(causes, "FieldValueTooLong", path,
               f"Too long: may not be more than {schema['maxLength']} bytes")
    if "minLength" in schema and len(value) < schema["minLength"]:
        _cause(causes, "FieldValueInvalid", path,
               f"Invalid value: {_show(value)}: {path} in body should be at least "
               f"{schema['minLength']} chars long")
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        _cause(causes, "FieldValueInvalid", path,
               f"Invalid value: {_show(value)}: {path} in body should match "
               f"'{schema['pattern']}'")


def _count(schema: dict[str, Any], count: int, path: str, causes: list[dict[str, str]],
           keyword: str, noun: str) -> None:
    """``max<keyword>``/``min<keyword>`` (Items, Properties) against ``count``."""
    most, least = schema.get("max" + keyword), schema.get("min" + keyword)
    if most is not None and count > most:
        _cause(causes, "FieldValueTooMany", path,
               f"Too many: {count}: must have at most {most} items")
    if least is not None and count < least:
        _cause(causes, "FieldValueInvalid", path,
               f"Invalid value: {count}: {path} in body should have at least {least} {noun}")


def _arrays(schema: dict[str, Any], value: list[Any], path: str,
            causes: list[dict[str, str]]) -> None:
    _count(schema, len(value), path, causes, "Items", "items")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _check(items, item, f"{path}[{i}]", causes)


def _objects(schema: dict[str, Any], value: dict[str, Any], path: str,
             causes: list[dict[str, str]]) -> None:
    _count(schema, len(value), path, causes, "Properties", "properties")
    properties = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            _cause(causes, "FieldValueRequired", f"{path}.{name}" if path else name,
                   "Required value")
    for name, member in value.items():
        where = f"{path}.{name}" if path else name
        if name in properties:
            _check(properties[name], member, where, causes)
        elif isinstance(schema.get("additionalProperties"), dict):
            _check(schema["additionalProperties"], member, where, causes)


def invalid_error(kind: str, group: str, name: str,
                  causes: list[dict[str, str]]) -> ApiStatusError:
    """The real server's 422 for an object ``name`` of ``kind`` that breaks its schema."""
    shown = [f"{c['field']}: {c['message']}" for c in causes]
    detail = shown[0] if len(shown) == 1 else "[" + ", ".join(shown) + "]"
    return ApiStatusError(422, "Invalid", f'{kind}.{group} "{name}" is invalid: {detail}',
                          {"name": name, "group": group, "kind": kind, "causes": causes})
