"""Generate ``client_cache/informers/typed.py``: the factory's typed accessors
(``factory.apps().v1().deployments()``) for every API group, version and list-and-watch
resource the installed ``kubernetes`` package knows, read from its API classes (each
``list_*`` method: the REST path it requests and the model of its answer).

Names follow client-go's: Go ``ConfigMaps()`` is ``config_maps()`` (the kind in
snake_case, made plural as Go's generator does), the group is the first label of the API
group (``rbac.authorization.k8s.io`` -> ``rbac()``, the core group ``core()``).

    .venv/bin/python tools/gen_typed.py          # rewrite the module
    .venv/bin/python tools/gen_typed.py --check  # exit 1 when it is stale

``tests/informers/test_typed_accessors.py`` runs the check whenever the installed ``kubernetes`` is
the version the module was generated from.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import kubernetes
import kubernetes.client
import kubernetes.client.api as api_package

OUT = Path(__file__).resolve().parent.parent / "client_cache" / "informers" / "typed.py"
LIST = re.compile(r"^list_(namespaced_)?(\w+?)$")
PATH = re.compile(r"""['"](/apis?/[^'"]+)['"]""")
MODEL = re.compile(r"""['"](\w+List)['"]""")
PLURAL_EXCEPTIONS = {"endpoints": "endpoints"}


def snake_plural(singular: str) -> str:
    """Go's generator's plural of a kind (in snake_case): ``config_map`` ->
    ``config_maps``, ``network_policy`` -> ``network_policies``, ``ingress_class`` ->
    ``ingress_classes``."""
    if singular in PLURAL_EXCEPTIONS:
        return PLURAL_EXCEPTIONS[singular]
    if singular.endswith(("s", "x", "z", "ch", "sh")):
        return singular + "es"
    if singular.endswith("y") and singular[-2:-1] not in "aeiou":
        return singular[:-1] + "ies"
    return singular + "s"


def group_accessor(group: str) -> str:
    return "core" if not group else group.split(".", maxsplit=1)[0].replace("-", "_")


def source_of(cls: type, name: str) -> str:
    """The source of ``name`` and of the helpers it calls (old and new generators put the
    path in ``<name>_with_http_info`` or ``_<name>_serialize``)."""
    parts = []
    for candidate in (name, f"{name}_with_http_info", f"_{name}_serialize"):
        method = getattr(cls, candidate, None)
        if method is not None:
            parts.append(inspect.getsource(method))
    return "\n".join(parts)


def item_model(name: str, group: str) -> str:
    """The ``kubernetes.client`` class of a list's items: ``name`` itself, or, where two
    groups have a kind of that name, the class with the group's prefix
    (``ResourceV1ResourceClaim``, ``CoreV1Event``)."""
    if hasattr(kubernetes.client, name):
        return name
    prefixed = (group.split(".", 1)[0] or "core").capitalize() + name
    if hasattr(kubernetes.client, prefixed):
        return prefixed
    raise SystemExit(f"no kubernetes.client class for {name} (group {group or 'core'})")


def resources() -> dict[tuple[str, str], dict[str, tuple[str, str, str, bool]]]:
    """(group, version) -> {accessor: (plural, model, singular, namespaced)}."""
    found: dict[tuple[str, str], dict[str, tuple[str, str, str, bool]]] = {}
    for info in pkgutil.iter_modules(api_package.__path__):
        module = importlib.import_module(f"{api_package.__name__}.{info.name}")
        for cls in vars(module).values():
            if not (inspect.isclass(cls) and cls.__module__ == module.__name__):
                continue
            for name in dir(cls):
                match = LIST.match(name)
                if not match or name.endswith(("_with_http_info", "_for_all_namespaces")) \
                        or "_without_preload_content" in name:
                    continue
                source = source_of(cls, name)
                path, model = PATH.search(source), MODEL.search(source)
                if path is None or model is None:
                    continue
                parts = path.group(1).strip("/").split("/")
                if parts[0] == "api":
                    group, version, rest = "", parts[1], parts[2:]
                else:
                    group, version, rest = parts[1], parts[2], parts[3:]
                namespaced = rest[:2] == ["namespaces", "{namespace}"]
                if namespaced:
                    rest = rest[2:]
                if len(rest) != 1 or "{" in rest[0]:
                    continue  # a subresource or something nested: not a list of a resource
                plural = rest[0]
                singular = match.group(2)
                accessor = snake_plural(singular)
                if accessor.replace("_", "") != plural:
                    accessor = plural  # the rule does not fit this kind: the REST plural
                model_name = item_model(model.group(1)[: -len("List")], group)
                found.setdefault((group, version), {})[accessor] = (
                    plural, model_name, singular.replace("_", ""), namespaced)
    return found


def version_key(version: str) -> tuple[int, int, int]:
    """v1 before v1beta2 before v1beta1 before v1alpha1, as Kubernetes orders them."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if match is None:
        return (0, 0, 0)
    stage = {"alpha": 0, "beta": 1}.get(match.group(2) or "", 2)
    return (int(match.group(1)), stage, int(match.group(3) or 0))


def class_name(text: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^a-zA-Z0-9]", text) if part)


def generate() -> str:
    found = resources()
    groups: dict[str, dict[str, str]] = {}
    for group, version in found:
        groups.setdefault(group_accessor(group), {})[version] = group
    out = [
        '"""The factory\'s typed accessors: ``factory.<group>().<version>().<resource>()``.',
        "",
        f"GENERATED by tools/gen_typed.py from kubernetes {kubernetes.__version__}'s API "
        "classes; do not edit (its long lines are exempt from the line limit).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload",
        "",
        "from client_cache.codec.objects import WireObject",
        "from client_cache.informers.accessors import GroupVersion, TypedResource",
        "from client_cache.informers.generic import GenericInformer",
        "",
        "if TYPE_CHECKING:",
        "    from kubernetes.client import (",
        "MODELS",
        "    )",
        "",
        "    from client_cache.informers.factory import SharedInformerFactory",
        "",
        "__all__ = [\"GENERATED_FROM\", \"TypedGroups\"]",
        "",
        f'GENERATED_FROM = "{kubernetes.__version__}"',
        '"""The ``kubernetes`` package this module was generated from."""',
        "",
        '_T = TypeVar("_T")',
        "",
    ]
    models_used: set[str] = set()
    for accessor, versions in sorted(groups.items()):
        for version in sorted(versions, key=version_key, reverse=True):
            group = versions[version]
            name = f"{class_name(accessor)}{class_name(version)}"
            out += ["", "", f"class {name}(GroupVersion):",
                    f'    """``{group or "core"}/{version}`` (Go ``{class_name(accessor)}()'
                    f'.{class_name(version)}()``)."""', "",
                    f'    GROUP = "{group}"', f'    VERSION = "{version}"',
                    "    GENERATED_FROM = GENERATED_FROM",
                    "    RESOURCES = {  # noqa: RUF012 - read-only by convention"]
            for res, (plural, model, singular, namespaced) in sorted(
                    found[(group, version)].items()):
                out.append(f'        "{res}": TypedResource("{plural}", "{singular}", '
                           f'"{model}", {namespaced}),')
            out += ["    }"]
            for res in sorted(found[(group, version)]):
                plural, model = found[(group, version)][res][:2]
                models_used.add(model)
                # three typings: wire dicts by default, the model with models=True, the
                # type given as object_type
                out += ["",
                        "    @overload",
                        f"    def {res}(self, object_type: None = None, models: Literal[False]"
                        " = False) -> GenericInformer[WireObject]: ...",
                        "",
                        "    @overload",
                        f"    def {res}(self, object_type: None = None, *, models: Literal[True]"
                        f") -> GenericInformer[{model}]: ...",
                        "",
                        "    @overload",
                        f"    def {res}(self, object_type: type[_T], models: bool = False) -> "
                        "GenericInformer[_T]: ...",
                        "",
                        f"    def {res}(",
                        "            self, object_type: Any = None, models: bool = False,",
                        "    ) -> GenericInformer[Any]:",
                        f'        """The ``{plural}`` informer: wire dicts, or ``{model}`` '
                        'with ``models=True``."""',
                        f'        return self.informer("{res}", object_type, models)']
        out += ["", "", f"class {class_name(accessor)}:",
                f'    """The ``{accessor}`` group\'s versions."""', "",
                "    def __init__(self, factory: SharedInformerFactory) -> None:",
                "        self._factory = factory"]
        for version in sorted(versions, key=version_key, reverse=True):
            name = f"{class_name(accessor)}{class_name(version)}"
            out += ["", f"    def {version}(self) -> {name}:",
                    f'        """``{versions[version] or "core"}/{version}``."""',
                    f"        return {name}(self._factory)"]
    out += ["", "", "class TypedGroups:",
            '    """Mixed into the factory: one accessor per API group."""', ""]
    for accessor in sorted(groups):
        out += [f"    def {accessor}(self) -> {class_name(accessor)}:",
                f'        """The ``{accessor}`` group (Go ``{class_name(accessor)}()``)."""',
                f"        return {class_name(accessor)}(self)  # type: ignore[arg-type]", ""]
    at = out.index("MODELS")
    out[at:at + 1] = [f"        {model}," for model in sorted(models_used, key=str.lower)]
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when stale")
    args = parser.parse_args()
    text = generate()
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is stale: run tools/gen_typed.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
