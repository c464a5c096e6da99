"""client_cache.crd (issue 61, its first part): a custom resource declared as msgspec
structs gives a structural schema and a CustomResourceDefinition; the sample-controller's
Foo declared in Python means what its hand-written CRD means; what has no structural form
is named, not dropped; the CLI prints the CRD."""

from __future__ import annotations

import datetime
import enum
import importlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import pytest
import yaml

from client_cache.codec import to_wire
from client_cache.crd import (
    CustomResource,
    PrinterColumn,
    ScaleSubresource,
    UnsupportedSchemaError,
    crd,
    custom_resource,
    from_wire,
    generate,
    install_crd,
    patch_status,
    resource_info,
    structural_schema,
)
from client_cache.crd.__main__ import main as crd_main
from client_cache.testing.apiserver import EmbeddedApiServer

ROOT = Path(__file__).resolve().parents[2]


class FooSpec(msgspec.Struct, rename="camel", omit_defaults=True):
    deployment_name: str | None = None
    replicas: Annotated[int, msgspec.Meta(ge=1, le=10)] | None = None


class FooStatus(msgspec.Struct, rename="camel", omit_defaults=True):
    available_replicas: int | None = None


# a resource declared on a plain msgspec.Struct (not the CustomResource base)
@custom_resource(group="samplecontroller.k8s.io", version="v1alpha1", kind="Foo",
                 annotations={"api-approved.kubernetes.io": "unapproved, experimental-only; "
                              "please use https://github.com/kubernetes/enhancements/pull/1111"})
class Foo(msgspec.Struct, rename="camel", omit_defaults=True):
    spec: FooSpec
    status: FooStatus | None = None


def sample_foo() -> type:
    """The Foo that ``examples/sample_controller.py`` declares (``examples/_sample_apis``)."""
    if str(ROOT / "examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "examples"))
    return importlib.import_module("_sample_apis").Foo  # type: ignore[no-any-return]


def test_the_sample_controller_foo_means_what_its_hand_written_crd_means() -> None:
    """Issue 61: the example's Foo, declared in Python, against the upstream
    sample-controller's crd-status-subresource.yaml, field by field."""
    mine = crd(sample_foo())
    theirs = yaml.safe_load((ROOT / "examples" / "artifacts" / "crd.yaml").read_text())
    assert mine["metadata"] == theirs["metadata"]
    for key in ("group", "scope"):
        assert mine["spec"][key] == theirs["spec"][key]
    for key in ("kind", "plural"):
        assert mine["spec"]["names"][key] == theirs["spec"]["names"][key]
    (version,), (expected,) = mine["spec"]["versions"], theirs["spec"]["versions"]
    for key in ("name", "served", "storage", "subresources"):
        assert version[key] == expected[key], key
    schema = version["schema"]["openAPIV3Schema"]
    wanted = expected["schema"]["openAPIV3Schema"]
    for part in ("spec", "status"):  # field by field: types, bounds, nothing required
        assert schema["properties"][part] == wanted["properties"][part]
    assert "required" not in schema and schema["type"] == wanted["type"]
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}


class Mode(enum.Enum):
    FAST = "fast"
    SAFE = "safe"


class Everything(msgspec.Struct, rename="camel"):
    name: Annotated[str, msgspec.Meta(pattern="^[a-z]+$", min_length=1, max_length=63,
                                      description="what it is called")]
    count: Annotated[int, msgspec.Meta(gt=0, lt=100, multiple_of=5)] = 5
    ratio: float = 0.5
    enabled: bool = True
    kind: Literal["a", "b"] = "a"
    mode: Mode = Mode.FAST
    port: int | str = 80
    when: datetime.datetime | None = None
    tags: Annotated[list[str], msgspec.Meta(max_length=3)] = []
    unique: frozenset[str] = frozenset()
    labels: dict[str, str] = {}
    free: dict[str, Any] = {}
    anything: Any = None


def test_each_python_type_has_its_structural_form() -> None:
    schema = structural_schema(Everything)
    props = schema["properties"]
    assert schema["required"] == ["name"]
    assert props["name"] == {"type": "string", "pattern": "^[a-z]+$", "minLength": 1,
                             "maxLength": 63, "description": "what it is called"}
    assert props["count"] == {"type": "integer", "multipleOf": 5, "minimum": 0,
                              "exclusiveMinimum": True, "maximum": 100,
                              "exclusiveMaximum": True, "default": 5}
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["enabled"] == {"type": "boolean", "default": True}
    assert props["kind"] == {"type": "string", "enum": ["a", "b"], "default": "a"}
    assert props["mode"] == {"type": "string", "enum": ["fast", "safe"], "default": "fast"}
    assert props["port"] == {"x-kubernetes-int-or-string": True, "default": 80}
    assert props["when"] == {"type": "string", "format": "date-time", "nullable": True}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "maxItems": 3}
    assert props["unique"] == {"type": "array", "items": {"type": "string"},
                               "x-kubernetes-list-type": "set"}
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert props["free"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["anything"] == {"x-kubernetes-preserve-unknown-fields": True}


class Ambiguous(msgspec.Struct):
    value: str | float


class Inner(msgspec.Struct):
    raw: bytes


class Outer(msgspec.Struct):
    inner: list[Inner]


def test_what_has_no_structural_form_is_named_not_dropped() -> None:
    """Named as written in Python (``float | str``, ``bytes``), not by msgspec's type
    info classes (``FloatType``, ``BytesType``)."""
    with pytest.raises(UnsupportedSchemaError,
                       match=r"value: the union float \| str has no structural schema"):
        structural_schema(Ambiguous)
    with pytest.raises(UnsupportedSchemaError,
                       match=r"inner\[\]\.raw: bytes has no structural schema"):
        structural_schema(Outer)
    with pytest.raises(UnsupportedSchemaError, match=r"when: datetime.timedelta has no"):
        structural_schema(msgspec.defstruct("Later", [("when", datetime.timedelta)]))

    with pytest.raises(UnsupportedSchemaError):  # refused at declaration, not at install
        @custom_resource(group="example.com", version="v1", kind="Bad")
        class Bad(msgspec.Struct):
            spec: Ambiguous
    with pytest.raises(TypeError, match="no spec field"):
        @custom_resource(group="example.com", version="v1", kind="NoSpec")
        class NoSpec(msgspec.Struct):
            status: int = 0


@custom_resource(group="example.com", version="v1", kind="Widget", plural="widgets",
                 namespaced=False, short_names=("wd",), categories=("all",),
                 printer_columns=(PrinterColumn("Size", "integer", ".spec.size"),),
                 scale=ScaleSubresource(label_selector_path=".status.selector"))
class WidgetV1(msgspec.Struct):
    spec: dict[str, int]
    status: dict[str, Any] | None = None


@custom_resource(group="example.com", version="v2", kind="Widget", plural="widgets",
                 namespaced=False, short_names=("wd",), categories=("all",))
class WidgetV2(msgspec.Struct):
    spec: dict[str, str]


def test_several_versions_one_storage_and_the_extras() -> None:
    definition = crd(WidgetV1, WidgetV2, storage=WidgetV2)
    spec = definition["spec"]
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {"plural": "widgets", "singular": "widget", "kind": "Widget",
                             "listKind": "WidgetList", "shortNames": ["wd"],
                             "categories": ["all"]}
    v1, v2 = spec["versions"]
    assert (v1["name"], v1["storage"], v2["name"], v2["storage"]) == ("v1", False, "v2", True)
    assert v1["subresources"] == {"status": {}, "scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}}
    assert v1["additionalPrinterColumns"] == [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
    assert "subresources" not in v2
    assert resource_info(WidgetV1).gvr.resource == "widgets"
    with pytest.raises(ValueError, match="not a version of"):
        crd(WidgetV1, Foo)
    with pytest.raises(ValueError, match="same version"):
        crd(WidgetV1, WidgetV1)
    with pytest.raises(TypeError, match="not declared"):
        crd(FooSpec)


def test_the_cli_prints_the_crd_as_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    assert crd_main(["print", "tests.crd.test_crd:Foo"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == crd(Foo)
    assert crd_main(["print", "tests.crd.test_crd"]) == 2
    assert "expected module:Class" in capsys.readouterr().err


@custom_resource(group="example.com", version="v1", kind="Thing")
class Thing(CustomResource):
    spec: FooSpec


@custom_resource(group="example.com", version="v1", kind="Stateful")
class Stateful(CustomResource):
    spec: FooSpec
    status: FooStatus | None = None


def test_a_custom_resource_class_round_trips_its_wire_form() -> None:
    """The base's apiVersion, kind and metadata decode into the class; members the class
    does not declare (a newer schema's) are dropped; to_wire gives the wire form back."""
    wire = {"apiVersion": "example.com/v1", "kind": "Thing",
            "metadata": {"name": "t", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"deploymentName": "d", "replicas": 2, "addedLater": True}}
    thing = from_wire(Thing, wire)
    assert (thing.metadata.name, thing.metadata.resource_version) == ("t", "7")
    assert thing.spec == FooSpec(deployment_name="d", replicas=2)
    back = to_wire(thing)
    assert back["spec"] == {"deploymentName": "d", "replicas": 2}
    assert back["metadata"]["name"] == "t" and back["kind"] == "Thing"
    with pytest.raises(msgspec.ValidationError, match=r"spec\.replicas"):
        from_wire(Thing, {**wire, "spec": {"replicas": "two"}})
    # the schema leaves the server's own members to the server
    schema = crd(Thing)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["required"] == ["spec"]


def test_patch_status_refuses_what_it_cannot_write() -> None:
    with pytest.raises(ValueError, match="no status subresource"):
        patch_status(None, Thing(spec=FooSpec()), FooStatus())
    with pytest.raises(ValueError, match=r"no metadata\.name"):
        patch_status(None, Stateful(spec=FooSpec()), FooStatus())


def _generated(definition: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """The generated module of ``definition``, run: its namespace and the result."""
    result = generate(definition)
    namespace: dict[str, Any] = {"__name__": "generated_crd"}
    code = compile(result.source, "generated_crd.py", "exec", dont_inherit=True)
    exec(code, namespace)
    return namespace, result


def test_classes_generated_from_a_crd_give_its_schema_back() -> None:
    """kube-rs's kopium: the sample-controller's hand-written CRD, and a CRD of every
    construct the generator covers, give classes whose crd() is the input."""
    theirs = yaml.safe_load((ROOT / "examples" / "artifacts" / "crd.yaml").read_text())
    namespace, result = _generated(theirs)
    assert result.unsupported == []
    generated = crd(namespace["Foo"])
    assert generated["metadata"] == theirs["metadata"]
    assert generated["spec"]["names"] == {**theirs["spec"]["names"], "singular": "foo",
                                          "listKind": "FooList"}  # spelled out
    mine = crd(namespace["Foo"])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    wanted = theirs["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert {k: mine["properties"][k] for k in ("spec", "status")} == wanted["properties"]
    rich = crd(WidgetV1, WidgetV2, storage=WidgetV2)
    namespace, result = _generated(rich)
    assert crd(namespace["WidgetV1"], namespace["WidgetV2"], storage=namespace["STORAGE"]) \
        == rich
    everything = crd(EverythingResource)
    namespace, result = _generated(everything)
    assert result.unsupported == []
    assert crd(namespace["Gadget"]) == everything


def test_what_a_crd_says_that_classes_cannot_is_named() -> None:
    definition = crd(Thing)
    schema = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.replicas > 0"}]
    schema["properties"]["spec"]["properties"]["choice"] = {"oneOf": [{"type": "string"}]}
    result = generate(definition)
    assert result.unsupported == ["spec: x-kubernetes-validations", "spec.choice: oneOf",
                                  "spec.choice: no type"]
    assert "spec: x-kubernetes-validations" in result.source  # in the module's docstring


@custom_resource(group="example.com", version="v1", kind="Gadget")
class EverythingResource(CustomResource):
    spec: Everything
    status: dict[str, Any] | None = None


def test_the_cli_generates_classes_from_a_crd_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert crd_main(["generate", str(ROOT / "examples" / "artifacts" / "crd.yaml")]) == 0
    out = capsys.readouterr()
    assert "class Foo(CustomResource):" in out.out and out.err == ""


def test_bad_declarations_fail_where_they_are_written() -> None:
    """Issue 61: a field type with no schema, a constraint that contradicts its type,
    two storage versions and a bad group, version, kind or plural fail at declaration or
    at crd(), not at install."""
    with pytest.raises(TypeError, match="ge"):  # a bound on a string
        @custom_resource(group="example.com", version="v1", kind="Contradiction")
        class Contradiction(msgspec.Struct):
            spec: Annotated[str, msgspec.Meta(ge=1)]
    for bad, match in (({"group": "nodots"}, "group 'nodots'"),
                       ({"group": "Example.com"}, "group 'Example.com'"),
                       ({"version": "1"}, "version '1'"),
                       ({"kind": "foo"}, "kind 'foo'"),
                       ({"plural": "Foos"}, "plural 'Foos'")):
        names = {"group": "example.com", "version": "v1", "kind": "Foo", **bad}
        with pytest.raises(ValueError, match=match):
            custom_resource(**names)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="storage must be one of"):
        crd(WidgetV1, storage=WidgetV2)


def test_generate_reads_a_crd_from_a_server(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """kopium's other input: the CRD as a server holds it (--name, --kubeconfig)."""
    with EmbeddedApiServer() as server:
        api = server.api_client()
        install_crd(api, WidgetV1)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(json.dumps(server.kubeconfig()), encoding="utf-8")
        assert crd_main(["generate", "--name", "widgets.example.com",
                         "--kubeconfig", str(kubeconfig)]) == 0
        api.close()
    out = capsys.readouterr().out
    assert "class Widget(CustomResource):" in out and "plural='widgets'" in out
    with pytest.raises(SystemExit):
        crd_main(["generate"])  # a file or --name


@pytest.mark.parametrize(("argv", "content", "message"), [
    (["print", "no_such_module_x:Foo"], None, "cannot import 'no_such_module_x'"),
    (["print", "json:Nope"], None, "no class 'Nope' in 'json'"),
    (["print", "nocolon"], None, "expected module:Class"),
    (["generate", "{missing}"], None, "No such file or directory"),
    (["generate", "{file}"], "", "not a CustomResourceDefinition (the document is empty)"),
    (["generate", "{file}"], "a: [1,\n", "not YAML or JSON (line 2)"),
    (["generate", "{file}"], "kind: ConfigMap\n", "the document is a ConfigMap"),
    (["generate", "{file}"], "- 1\n", "the document is a list"),
    (["generate", "{file}"], "kind: CustomResourceDefinition\nspec: {}\n",
     "not a CustomResourceDefinition with a group"),
])
def test_every_cli_mistake_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
        content: str | None, message: str) -> None:
    """Issue 67: a wrong module, a missing file, broken YAML, a non-CRD or an empty file
    is one line on stderr naming the problem, exit status 2, no traceback (``--debug``
    gives it)."""
    path = tmp_path / "crd.yaml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    argv = [a.format(file=path, missing=tmp_path / "missing.yaml") for a in argv]
    assert crd_main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    with pytest.raises(Exception):  # noqa: B017 - whichever the mistake raises
        crd_main(["--debug", *argv])


class Bounded(msgspec.Struct):
    count: Annotated[int, msgspec.Meta(ge=5)] = 1


class Patterned(msgspec.Struct):
    name: Annotated[str, msgspec.Meta(pattern="^[a-z]+$")] = "UPPER"


class Contradicted(msgspec.Struct):
    label: Annotated[str, msgspec.Meta(ge=1)]


class HoldsContradicted(msgspec.Struct):
    inner: Contradicted


def test_declaration_errors_name_the_field_and_protected_groups_need_approval() -> None:
    """Issue 67: a default outside its own bounds was accepted and written as
    ``minimum: 5, default: 1`` (then every object omitting it was refused); a constraint
    msgspec refuses for its type did not name the field; a *.k8s.io group without the
    approval annotation was refused only by a real server."""
    with pytest.raises(UnsupportedSchemaError, match=r"spec\.count: the default 1 is below"):
        @custom_resource(group="example.com", version="v1", kind="Low")
        class Low(CustomResource):
            spec: Bounded

    with pytest.raises(UnsupportedSchemaError, match=r"spec\.name: the default 'UPPER' does"):
        @custom_resource(group="example.com", version="v1", kind="Pat")
        class Pat(CustomResource):
            spec: Patterned

    with pytest.raises(UnsupportedSchemaError, match=r"^spec\.inner\.label: Can only set `ge`"):
        @custom_resource(group="example.com", version="v1", kind="Nested")
        class Nested(CustomResource):
            spec: HoldsContradicted

    for group in ("things.k8s.io", "k8s.io", "x.kubernetes.io"):
        with pytest.raises(ValueError, match="is protected"):
            custom_resource(group=group, version="v1", kind="Thing")
    custom_resource(group="things.k8s.io", version="v1", kind="Thing",
                    annotations={"api-approved.kubernetes.io": "unapproved, testing"})
