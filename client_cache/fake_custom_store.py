"""A store whose every method is a pluggable function (Go ``FakeCustomStore``), for tests.

A method whose function is not set does nothing and returns the zero value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["FakeCustomStore"]

_Objects = list[Any]
_Keys = list[str]


@dataclass
class FakeCustomStore:
    """A :class:`~client_cache.store.Store` built from optional functions."""

    add_func: Callable[[Any], None] | None = None
    update_func: Callable[[Any], None] | None = None
    delete_func: Callable[[Any], None] | None = None
    list_func: Callable[[], list[Any]] | None = None
    list_keys_func: Callable[[], list[str]] | None = None
    get_func: Callable[[Any], tuple[Any, bool]] | None = None
    get_by_key_func: Callable[[str], tuple[Any, bool]] | None = None
    replace_func: Callable[[Iterable[Any], str], None] | None = None
    resync_func: Callable[[], None] | None = None

    def add(self, obj: Any) -> None:
        """Call the ``add_func`` given, if any (Go ``Add``); a fake for tests."""
        if self.add_func is not None:
            self.add_func(obj)

    def update(self, obj: Any) -> None:
        """Call the ``update_func`` given, if any (Go ``Update``); a fake for tests."""
        if self.update_func is not None:
            self.update_func(obj)

    def delete(self, obj: Any) -> None:
        """Call the ``delete_func`` given, if any (Go ``Delete``); a fake for tests."""
        if self.delete_func is not None:
            self.delete_func(obj)

    def list(self) -> _Objects:
        """Call the ``list_func`` given, if any (Go ``List``); a fake for tests."""
        return self.list_func() if self.list_func is not None else []

    def list_keys(self) -> _Keys:
        """Call the ``list_keys_func`` given, if any (Go ``ListKeys``); a fake for tests."""
        return self.list_keys_func() if self.list_keys_func is not None else []

    def get(self, obj: Any) -> tuple[Any, bool]:
        """Call the ``get_func`` given, if any (Go ``Get``); a fake for tests."""
        return self.get_func(obj) if self.get_func is not None else (None, False)

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """Call the ``get_by_key_func`` given, if any (Go ``GetByKey``); a fake for tests."""
        return self.get_by_key_func(key) if self.get_by_key_func is not None else (None, False)

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Call the ``replace_func`` given, if any (Go ``Replace``); a fake for tests."""
        if self.replace_func is not None:
            self.replace_func(items, resource_version)

    def resync(self) -> None:
        """Call the ``resync_func`` given, if any (Go ``Resync``); a fake for tests."""
        if self.resync_func is not None:
            self.resync_func()
