"""A store that pushes its whole content after every change (Go
``tools/cache/undelta_store.go``).

Use it to feed something that wants complete states rather than deltas: after each
successful ``add``, ``update``, ``delete`` and ``replace`` the push function receives the
full list of objects. Reads never push. A failing write (e.g. a key error) raises and does
not push. Two concurrent writers may cause two pushes of the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from client_cache.store import KeyFunc, new_store

__all__ = ["PushFunc", "UndeltaStore", "new_undelta_store"]

PushFunc = Callable[[list[Any]], None]

_Objects = list[Any]
_Keys = list[str]


class UndeltaStore:
    """See the module documentation. Build with :func:`new_undelta_store`."""

    def __init__(self, push_func: PushFunc, key_func: KeyFunc) -> None:
        self.store = new_store(key_func)
        self.push_func = push_func

    def _push(self) -> None:
        self.push_func(self.store.list())

    def add(self, obj: Any) -> None:
        """Insert ``obj`` under its key, replacing what was there (Go ``Add``). Then push
        the whole contents."""
        self.store.add(obj)
        self._push()

    def update(self, obj: Any) -> None:
        """Store ``obj`` under its key, replacing what was there (Go ``Update``). Then push
        the whole contents."""
        self.store.update(obj)
        self._push()

    def delete(self, obj: Any) -> None:
        """Remove the object stored under ``obj``'s key; nothing when absent (Go
        ``Delete``). Then push the whole contents."""
        self.store.delete(obj)
        self._push()

    def replace(self, items: Iterable[Any], resource_version: str = "") -> None:
        """Make the contents exactly ``items`` (the result of a list at
        ``resource_version``) (Go ``Replace``). Then push the whole contents."""
        self.store.replace(items, resource_version)
        self._push()

    def list(self) -> _Objects:
        """Every stored object (Go ``List``)."""
        return self.store.list()

    def list_keys(self) -> _Keys:
        """The keys of every stored object (Go ``ListKeys``)."""
        return self.store.list_keys()

    def get(self, obj: Any) -> tuple[Any, bool]:
        """``(stored object, True)`` for ``obj``'s key, ``(None, False)`` when absent (Go
        ``Get``)."""
        return self.store.get(obj)

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        """``(stored object, True)`` for ``key``, ``(None, False)`` when absent (Go
        ``GetByKey``)."""
        return self.store.get_by_key(key)

    def resync(self) -> None:
        """Resync the underlying store (Go ``Resync``)."""
        self.store.resync()


def new_undelta_store(push_func: PushFunc, key_func: KeyFunc) -> UndeltaStore:
    """A new :class:`UndeltaStore` (Go ``NewUndeltaStore``)."""
    return UndeltaStore(push_func, key_func)
