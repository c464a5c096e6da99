"""Old module names that still import, for one minor release, after a module moved.

:func:`alias_modules` puts a finder on :data:`sys.meta_path` that answers an import of an
old dotted name with the module at its new name (the same module object, so ``is`` and
``isinstance`` hold across both names) and a ``DeprecationWarning`` naming the new one.
Type checkers do not see the old names: code is meant to move to the new ones.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Mapping, Sequence

__all__ = ["alias_modules"]


class _Aliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names of :func:`alias_modules` and loads each as its new module."""

    def __init__(self, moved: Mapping[str, str]) -> None:
        self._moved = dict(moved)
        self._specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._moved:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = self._moved[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old name goes in the next minor "
                      "release", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._specs[new] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module is the new one, already imported; the import system
        has just set its ``__spec__`` to the old name's, so the new one is put back."""
        module.__spec__ = self._specs[module.__name__]


def alias_modules(moved: Mapping[str, str]) -> None:
    """Make each old dotted module name of ``moved`` import its new one (``old -> new``)."""
    if not any(isinstance(finder, _Aliases) and finder._moved == dict(moved)
               for finder in sys.meta_path):
        sys.meta_path.append(_Aliases(moved))
