"""``python -m client_cache.crd print module:Class [module:Class ...]``: the
CustomResourceDefinition of the classes (the versions of one resource; the first is the
storage version) as YAML, for ``kubectl apply -f -`` or a Helm chart.

``python -m client_cache.crd generate crd.yaml``: the Python module declaring the resource
of an existing CRD (kube-rs's kopium); what it cannot express is listed in the module's
docstring and on standard error."""

from __future__ import annotations

import argparse
import importlib
import sys

import yaml

from client_cache.crd.generate import generate
from client_cache.crd.resource import crd


def load(spec: str) -> type:
    """The class named ``module:Class``."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise SystemExit(f"expected module:Class, not {spec!r}")
    found = getattr(importlib.import_module(module), name, None)
    if not isinstance(found, type):
        raise SystemExit(f"{spec}: no such class")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m client_cache.crd", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    printing = commands.add_parser("print", help="write the CRD of classes as YAML")
    printing.add_argument("classes", nargs="+", metavar="module:Class")
    generating = commands.add_parser("generate", help="write the Python classes of a CRD")
    generating.add_argument("file", help="a CustomResourceDefinition as YAML or JSON")
    args = parser.parse_args(argv)
    if args.command == "generate":
        with open(args.file, encoding="utf-8") as source:
            generated = generate(yaml.safe_load(source))
        sys.stdout.write(generated.source)
        for item in generated.unsupported:
            print(f"not expressed: {item}", file=sys.stderr)
        return 0
    classes = [load(spec) for spec in args.classes]
    sys.stdout.write(yaml.safe_dump(crd(*classes), sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
