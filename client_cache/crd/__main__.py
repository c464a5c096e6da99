"""``python -m client_cache.crd print module:Class [module:Class ...]``: the
CustomResourceDefinition of the classes (the versions of one resource; the first is the
storage version) as YAML, for ``kubectl apply -f -`` or a Helm chart.

``python -m client_cache.crd generate crd.yaml``, or ``generate --name foos.example.com
[--kubeconfig PATH]`` to read the CRD from a server: the Python module declaring the
resource of an existing CRD (kube-rs's kopium); what it cannot express is listed in the
module's docstring and on standard error.

A mistake (a module that does not import, a class that is not there, a file that is
missing or is not YAML, a document that is not a CRD, a server that refuses) is one line
on standard error naming it, exit status 2; ``--debug`` adds the traceback."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

import yaml
from kubernetes import config as kube_config

from client_cache.client.rest import request_json
from client_cache.crd.generate import generate
from client_cache.crd.resource import crd
from client_cache.errors import ClientCacheError


class UsageError(Exception):
    """A mistake in what the command was given: said in one line, exit status 2."""


def load(spec: str) -> type:
    """The class named ``module:Class``."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise UsageError(f"expected module:Class, not {spec!r}")
    try:
        imported = importlib.import_module(module)
    except Exception as err:  # whatever the module raises is the user's mistake
        raise UsageError(f"{spec}: cannot import {module!r}: {type(err).__name__}: "
                         f"{err}") from err
    found = getattr(imported, name, None)
    if not isinstance(found, type):
        raise UsageError(f"{spec}: no class {name!r} in {module!r}")
    return found


def read_file(path: str) -> dict[str, Any]:
    """The CRD in the YAML or JSON file ``path``."""
    try:
        with open(path, encoding="utf-8") as source:
            definition = yaml.safe_load(source)
    except OSError as err:
        raise UsageError(f"{path}: {err.strerror or err}") from err
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UsageError(f"{path}: not YAML or JSON{where}") from err
    if not isinstance(definition, dict) or \
            definition.get("kind") not in (None, "CustomResourceDefinition"):
        what = "empty" if definition is None else (
            f"a {definition.get('kind')}" if isinstance(definition, dict)
            else f"a {type(definition).__name__}")
        raise UsageError(f"{path}: not a CustomResourceDefinition (the document is {what})")
    return definition


def read_crd(name: str, kubeconfig: str | None) -> dict[str, Any]:
    """The CustomResourceDefinition ``name`` as the server holds it."""
    api = kube_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig)
    try:
        status, body = request_json(
            api, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
    finally:
        api.close()
    if status != 200 or not isinstance(body, dict):
        raise UsageError(f"reading CustomResourceDefinition {name}: HTTP {status}")
    return body


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 when it worked, 2 for a mistake (said on standard error)."""
    parser = argparse.ArgumentParser(prog="python -m client_cache.crd", description=__doc__)
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of a failure")
    commands = parser.add_subparsers(dest="command", required=True)
    printing = commands.add_parser("print", help="write the CRD of classes as YAML")
    printing.add_argument("classes", nargs="+", metavar="module:Class")
    generating = commands.add_parser("generate", help="write the Python classes of a CRD")
    generating.add_argument("file", nargs="?",
                            help="a CustomResourceDefinition as YAML or JSON")
    generating.add_argument("--name", help="read the CRD of this name from a server instead")
    generating.add_argument("--kubeconfig",
                            help="the server's kubeconfig (default: as kubectl finds it)")
    args = parser.parse_args(argv)
    if args.command == "generate" and (args.file is None) == (args.name is None):
        parser.error("generate takes a file or --name, one of the two")
    try:
        return _run(args)
    except (UsageError, ValueError, TypeError, ClientCacheError,
            kube_config.ConfigException) as err:
        if args.debug:
            raise
        print(f"python -m client_cache.crd {args.command}: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if args.command == "generate":
        definition = read_crd(args.name, args.kubeconfig) if args.name \
            else read_file(args.file)
        generated = generate(definition)
        sys.stdout.write(generated.source)
        for item in generated.unsupported:
            print(f"not expressed: {item}", file=sys.stderr)
        return 0
    classes = [load(spec) for spec in args.classes]
    sys.stdout.write(yaml.safe_dump(crd(*classes), sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
