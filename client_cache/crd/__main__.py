"""``python -m client_cache.crd print module:Class [module:Class ...]``: the
CustomResourceDefinition of the classes (the versions of one resource; the first is the
storage version) as YAML, for ``kubectl apply -f -`` or a Helm chart.

``python -m client_cache.crd generate crd.yaml``, or ``generate --name foos.example.com
[--kubeconfig PATH]`` to read the CRD from a server: the Python module declaring the
resource of an existing CRD (kube-rs's kopium); what it cannot express is listed in the
module's docstring and on standard error."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

import yaml
from kubernetes import config as kube_config

from client_cache.crd.generate import generate
from client_cache.crd.resource import crd
from client_cache.rest import request_json


def load(spec: str) -> type:
    """The class named ``module:Class``."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise SystemExit(f"expected module:Class, not {spec!r}")
    found = getattr(importlib.import_module(module), name, None)
    if not isinstance(found, type):
        raise SystemExit(f"{spec}: no such class")
    return found


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
        raise SystemExit(f"reading CustomResourceDefinition {name}: HTTP {status}")
    return body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m client_cache.crd", description=__doc__)
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
    if args.command == "generate":
        if (args.file is None) == (args.name is None):
            parser.error("generate takes a file or --name, one of the two")
        if args.name:
            definition = read_crd(args.name, args.kubeconfig)
        else:
            with open(args.file, encoding="utf-8") as source:
                definition = yaml.safe_load(source)
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
