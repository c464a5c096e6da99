"""What a reflector accepts from its server: the expected type of its objects, and the
check that skips the rest (Go: the ``expectedType``/``expectedGVK`` parts of
``tools/cache/reflector.go``).

Go's typed decoding refuses an object of another type; a dict decoder accepts anything,
so the reflector checks each object itself, against a class (``isinstance``) or against
the ``apiVersion`` and ``kind`` of a dict example.

Whatever the expected type, a ``Table`` (``meta.k8s.io/v1`` or ``v1beta1``: what a server
sends for ``Accept: application/json;as=Table``) is refused, as client-go v0.36 refuses
it: a LIST answered with one fails with :class:`ListFailedError`, a watch event carrying
one is reported and skipped.
"""

from __future__ import annotations

from typing import Any

from client_cache.api import meta
from client_cache.errors import ClientCacheError
from client_cache.util.runtime import handle_error

__all__ = [
    "DEFAULT_EXPECTED_TYPE_NAME",
    "ListFailedError",
    "TypeCheck",
    "describe_expected_type",
]

DEFAULT_EXPECTED_TYPE_NAME = "<unspecified>"

_TABLE_VERSIONS = frozenset({"meta.k8s.io/v1", "meta.k8s.io/v1beta1"})


def _is_table(obj: Any) -> bool:
    """``obj`` is a server-side ``Table`` (Go ``isUnsupportedTableObject``)."""
    api_version, kind = meta.type_meta(obj)
    return kind == "Table" and api_version in _TABLE_VERSIONS


class ListFailedError(ClientCacheError):
    """``failed to list <type>: <cause>``; the cause is ``__cause__`` (Go wraps with %w)."""


def describe_expected_type(expected_type: Any) -> tuple[str, type | None, tuple[str, str] | None]:
    """``(type description, type to check, (apiVersion, kind) to check)`` for a
    reflector's ``expected_type``: a class (checked with ``isinstance``), a dict example
    carrying ``apiVersion`` and ``kind`` (checked against the objects'), or None."""
    if expected_type is None:
        return DEFAULT_EXPECTED_TYPE_NAME, None, None
    if isinstance(expected_type, type):
        return expected_type.__name__, expected_type, None
    api_version, kind = meta.type_meta(expected_type)
    if isinstance(expected_type, dict) and api_version and kind:
        group, _, version = api_version.rpartition("/")
        return f"{group}/{version}, Kind={kind}", dict, (api_version, kind)
    return type(expected_type).__name__, type(expected_type), None


class TypeCheck:
    """Checks objects against a reflector's expected type, reporting each mismatch
    through ``handle_error`` under the reflector's ``name``. ``expected_type`` and
    ``expected_gvk`` are the second and third parts of :func:`describe_expected_type`
    (None: not checked); ``description`` names the type in messages."""

    def __init__(self, name: str, description: str, expected_type: type | None,
                 expected_gvk: tuple[str, str] | None) -> None:
        self.name = name
        self.description = description
        self.expected_type = expected_type
        self.expected_gvk = expected_gvk

    def __repr__(self) -> str:
        return f"<TypeCheck {self.name} ({self.description})>"

    def accept(self, obj: Any, what: str = "watch event object") -> bool:
        """Whether ``obj`` is of the expected type (a class) or apiVersion and kind (a
        dict example); a mismatch is reported and the object is to be skipped, as Go's
        typed decoding rejects it. A LIST item without apiVersion and kind is typed by its
        list (servers omit them there) and passes."""
        gvk = self.expected_gvk
        if (type(obj) is dict and gvk is not None and self.expected_type in (dict, None)
                and obj.get("kind") == gvk[1] and obj.get("apiVersion") == gvk[0]):
            return True  # a wire dict of the expected kind: every watch event's case
        if self.expected_type is not None and not isinstance(obj, self.expected_type):
            handle_error(f"{self.name}: expected type {self.description}, but {what} "
                         f"had type {type(obj).__name__}")
            return False
        if self.expected_gvk is not None:
            got = meta.type_meta(obj)
            if got != self.expected_gvk and not (what == "LIST item" and got == ("", "")):
                handle_error(f"{self.name}: expected gvk {self.expected_gvk} "
                             f"({self.description}), but {what} had gvk {got}")
                return False
        elif type(obj) is dict and obj.get("kind") == "Table" and _is_table(obj):
            handle_error(f"{self.name}: unsupported {what} gvk {meta.type_meta(obj)}: "
                         "informers do not take objects in the Table format")
            return False
        return True

    @staticmethod
    def refuse_table(page: Any) -> Any:
        """``page`` (a LIST's answer) unless it is a ``Table``, refused whatever the
        expected type with :class:`~client_cache.errors.ClientCacheError` (Go:
        ``unsupported list gvk``; the reflector reports it as the LIST's failure)."""
        if _is_table(page):
            api_version, kind = meta.type_meta(page)
            raise ClientCacheError(
                f"unsupported list gvk {api_version}, Kind={kind}: the server answered in "
                "the Table format (asked for with 'as=Table' in the Accept header), which "
                "informers do not take")
        return page

    def accept_list(self, result: Any, items: list[Any]) -> list[Any]:
        """The LIST's items that pass :meth:`accept` (``items`` itself when all do);
        raises :class:`ListFailedError` for a list of another kind (a ``ConfigMapList``
        for pods), as Go's typed decoding fails it."""
        if self.expected_gvk is not None and isinstance(result, dict):
            api_version, kind = self.expected_gvk
            got = (result.get("apiVersion") or "", result.get("kind") or "")
            if all(got) and got != (api_version, f"{kind}List"):
                raise ListFailedError(
                    f"failed to list {self.description}: expected a {kind}List of "
                    f"{api_version}, the server sent a {got[1]} of {got[0]}")
        if self.expected_type is None and self.expected_gvk is None:
            return items
        accepted = [item for item in items if self.accept(item, "LIST item")]
        return accepted if len(accepted) < len(items) else items
