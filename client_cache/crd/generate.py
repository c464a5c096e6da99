"""Python classes generated from a CustomResourceDefinition (kube-rs's ``kopium``): the
module that declares, with :mod:`client_cache.crd`, the resource an existing CRD defines,
so that ``crd(generated classes)`` gives the CRD's schema back for what it covers.

    python -m client_cache.crd generate crd.yaml > foo_types.py

Each served version becomes a class deriving :class:`~client_cache.crd.CustomResource`
(``Foo``, or ``FooV1``, ``FooV2``... for several), each object with properties a
``msgspec.Struct`` named after its path (``FooSpec``, ``FooSpecTemplate``), fields named in
snake_case with their wire names kept (``msgspec.field(name=...)`` where they differ),
required members without a default, the others ``UNSET`` unless the schema gives a plain
default. Constraints, formats and descriptions become ``Annotated[..., msgspec.Meta(...)]``.
What has no counterpart here (``oneOf``/``anyOf``/``allOf``/``not``, CEL rules in
``x-kubernetes-validations``, non-plain defaults, embedded resources, map-list keys) is
named: listed in the module's docstring and returned by :func:`generate`, never silently
dropped.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Generated", "generate"]

_UNSUPPORTED = ("oneOf", "anyOf", "allOf", "not", "x-kubernetes-validations",
                "x-kubernetes-embedded-resource", "x-kubernetes-list-map-keys",
                "x-kubernetes-map-type", "externalDocs", "example")
_META = {"minimum": "ge", "maximum": "le", "multipleOf": "multiple_of", "pattern": "pattern",
         "minLength": "min_length", "maxLength": "max_length", "minItems": "min_length",
         "maxItems": "max_length", "minProperties": "min_length",
         "maxProperties": "max_length"}


@dataclass
class Generated:
    """The module's source and the constructs of the CRD it could not express (each as
    ``path: what``)."""

    source: str
    unsupported: list[str] = field(default_factory=list)


def _class_name(*parts: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^A-Za-z0-9]+", "_".join(parts))
                   if p)


def _snake(name: str) -> str:
    out = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    out = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", out).lower()
    out = re.sub(r"[^a-z0-9_]", "_", out)
    if not out or out[0].isdigit():
        out = "f_" + out
    return out + "_" if keyword.iskeyword(out) else out


class _Writer:
    def __init__(self) -> None:
        self.classes: list[str] = []
        self.unsupported: list[str] = []
        self.names: set[str] = set()

    def unique(self, name: str) -> str:
        candidate, n = name, 2
        while candidate in self.names:
            candidate, n = f"{name}{n}", n + 1
        self.names.add(candidate)
        return candidate

    def type_of(self, schema: dict[str, Any], path: str, class_hint: str) -> str:
        for key in _UNSUPPORTED:
            if key in schema:
                self.unsupported.append(f"{path or '.'}: {key}")
        if schema.get("x-kubernetes-int-or-string"):
            base = "int | str"
        elif schema.get("x-kubernetes-preserve-unknown-fields") and not schema.get(
                "properties"):
            base = "dict[str, Any]" if schema.get("type") == "object" else "Any"
        else:
            base = self._plain(schema, path, class_hint)
        meta = self._meta(schema, path)
        if meta:
            base = f"Annotated[{base}, msgspec.Meta({meta})]"
        if schema.get("nullable"):
            base = f"{base} | None"
        return base

    def _plain(self, schema: dict[str, Any], path: str, class_hint: str) -> str:
        kind = schema.get("type")
        if "enum" in schema:
            return f"Literal[{', '.join(repr(v) for v in schema['enum'])}]"
        if kind == "string":
            return {"date-time": "datetime.datetime", "date": "datetime.date"}.get(
                schema.get("format", ""), "str")
        if kind in ("integer", "number", "boolean"):
            return {"integer": "int", "number": "float", "boolean": "bool"}[kind]
        if kind == "array":
            item = self.type_of(schema.get("items") or {}, path + "[]", class_hint + "Item")
            return (f"frozenset[{item}]" if schema.get("x-kubernetes-list-type") == "set"
                    else f"list[{item}]")
        if kind == "object" and schema.get("properties"):
            return self.struct(schema, path, class_hint)
        if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            value = self.type_of(schema["additionalProperties"], path + "{}", class_hint + "Value")
            return f"dict[str, {value}]"
        if kind == "object":
            return "dict[str, Any]"
        self.unsupported.append(f"{path or '.'}: no type")
        return "Any"

    def _meta(self, schema: dict[str, Any], path: str) -> str:
        args = []
        for key, arg in _META.items():
            if key in schema:
                name = arg
                if key == "minimum" and schema.get("exclusiveMinimum"):
                    name = "gt"
                if key == "maximum" and schema.get("exclusiveMaximum"):
                    name = "lt"
                args.append(f"{name}={schema[key]!r}")
        extra: dict[str, Any] = {k: schema[k] for k in ("description", "title") if k in schema}
        fmt = schema.get("format")
        if fmt and not (schema.get("type") == "string" and fmt in ("date-time", "date")):
            extra["format"] = fmt
        if extra:
            args.append(f"extra_json_schema={extra!r}")
        return ", ".join(args)

    def struct(self, schema: dict[str, Any], path: str, class_name: str) -> str:
        name = self.unique(class_name)
        required = set(schema.get("required") or ())
        lines = [f"class {name}(msgspec.Struct, kw_only=True):"]
        if schema.get("description"):
            lines.append(f"    {_docstring(schema['description'])}")
        for wire, prop in (schema.get("properties") or {}).items():
            python = _snake(wire)
            where = f"{path}.{wire}" if path else wire
            annotation = self.type_of(prop, where, _class_name(class_name, wire))
            default = self._default(prop, where, wire in required)
            if default == "msgspec.UNSET":
                annotation += " | msgspec.UnsetType"
            rename = f"name={wire!r}" if python != wire else ""
            if default is None and not rename:
                lines.append(f"    {python}: {annotation}")
            elif default is None:
                lines.append(f"    {python}: {annotation} = msgspec.field({rename})")
            elif not rename:
                lines.append(f"    {python}: {annotation} = {default}")
            else:
                lines.append(f"    {python}: {annotation} = msgspec.field(default={default}, "
                             f"{rename})")
        if len(lines) == 1:
            lines.append("    pass")
        self.classes.append("\n".join(lines))
        return name

    def _default(self, prop: dict[str, Any], path: str, required: bool) -> str | None:
        """The default's source: None for a required member."""
        if required:
            return None
        if "default" in prop:
            value = prop["default"]
            if isinstance(value, (str, int, float, bool)):
                return repr(value)
            self.unsupported.append(f"{path}: default {value!r} (not a plain value)")
        return "msgspec.UNSET"


def _docstring(text: str) -> str:
    return '"""' + " ".join(str(text).split()).replace('"""', "'''") + '"""'


def generate(definition: dict[str, Any]) -> Generated:
    """The module declaring the resource of CRD ``definition`` (a wire dict)."""
    spec = definition.get("spec") or {}
    names = spec.get("names") or {}
    kind = names.get("kind")
    group = spec.get("group")
    versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
    if not (kind and group and versions):
        raise ValueError("not a CustomResourceDefinition with a group, a kind and a served "
                         "version")
    writer = _Writer()
    resources: list[str] = []
    storage_name = ""
    for version in versions:
        schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        suffix = _class_name(version["name"]) if len(versions) > 1 else ""
        resource = _class_name(kind, suffix)
        writer.names.add(resource)
        required = set(schema.get("required") or ())
        fields = []
        for wire, prop in (schema.get("properties") or {}).items():
            if wire in ("apiVersion", "kind", "metadata"):
                continue
            annotation = writer.type_of(prop, wire, _class_name(kind, suffix, wire))
            default = writer._default(prop, wire, wire in required)
            if default == "msgspec.UNSET":
                annotation += " | msgspec.UnsetType"
            fields.append(f"    {_snake(wire)}: {annotation}"
                          + ("" if default is None else f" = {default}"))
        args = [f"group={group!r}", f"version={version['name']!r}", f"kind={kind!r}",
                f"plural={names.get('plural')!r}"]
        if names.get("singular") and names["singular"] != kind.lower():
            args.append(f"singular={names['singular']!r}")
        if spec.get("scope") == "Cluster":
            args.append("namespaced=False")
        for key, arg in (("shortNames", "short_names"), ("categories", "categories")):
            if names.get(key):
                args.append(f"{arg}={tuple(names[key])!r}")
        columns = version.get("additionalPrinterColumns") or []
        if columns:
            args.append("printer_columns=(" + ", ".join(
                f"PrinterColumn({c['name']!r}, {c['type']!r}, {c['jsonPath']!r}"
                + (f", description={c['description']!r}" if c.get("description") else "")
                + (f", priority={c['priority']!r}" if c.get("priority") else "")
                + (f", format={c['format']!r}" if c.get("format") else "") + ")"
                for c in columns) + ",)")
        scale = (version.get("subresources") or {}).get("scale")
        if scale:
            args.append("scale=ScaleSubresource(" + ", ".join(
                f"{arg}={scale[key]!r}" for key, arg in (
                    ("specReplicasPath", "spec_replicas_path"),
                    ("statusReplicasPath", "status_replicas_path"),
                    ("labelSelectorPath", "label_selector_path")) if scale.get(key)) + ")")
        annotations = (definition.get("metadata") or {}).get("annotations") or {}
        if annotations:
            args.append(f"annotations={dict(annotations)!r}")
        has_status = "status" in (version.get("subresources") or {})
        if has_status and not any(f.startswith("    status:") for f in fields):
            writer.unsupported.append(f"{version['name']}: a status subresource without a "
                                      "status schema")
        body = "\n".join(fields) or "    pass"
        resources.append(f"@custom_resource({', '.join(args)})\n"
                         f"class {resource}(CustomResource):\n{body}")
        if version.get("storage"):
            storage_name = resource
    listed = "\n".join(f"  {item}" for item in writer.unsupported) or "  (none)"
    header = (f'"""Generated by ``python -m client_cache.crd generate`` from the '
              f'CustomResourceDefinition {definition.get("metadata", {}).get("name", "")}; '
              "edit freely.\n\nNot expressed here (checked by the server, not by these "
              f'classes):\n\n{listed}\n"""\n\n'
              "import datetime  # noqa: F401\n"
              "from typing import Annotated, Any, Literal  # noqa: F401\n\n"
              "import msgspec\n\n"
              "from client_cache.crd import (  # noqa: F401\n"
              "    CustomResource,\n    PrinterColumn,\n    ScaleSubresource,\n"
              "    custom_resource,\n)\n")
    storage = f"\n\nSTORAGE = {storage_name}\n" if storage_name and len(versions) > 1 else "\n"
    source = header + "\n\n" + "\n\n\n".join(writer.classes + resources) + "\n" + storage
    return Generated(source, writer.unsupported)
