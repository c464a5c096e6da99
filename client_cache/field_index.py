"""Field indexes, as controller-runtime offers them (``IndexField`` and
``MatchingFields``): index an informer's objects by the value at a field path, then list
the objects with a given value, in one namespace or in all.

::

    index_field(pods.informer(), "spec.nodeName")          # before the informer starts
    on_node = list_by_field(pods.informer().get_indexer(), "spec.nodeName", "node-1")
    here = list_by_field(indexer, "spec.nodeName", "node-1", namespace="web")

The path is dotted, in the wire form's names (``spec.nodeName``); for ``kubernetes.client``
models each segment is looked up in snake_case (``spec.node_name``) too. A list along the
path indexes every element (``spec.containers.image`` gives each container's image). A
missing or empty value is not indexed. Like controller-runtime, a namespaced object is
indexed under ``<namespace>/<value>`` and under ``__all_namespaces/<value>``; the index is
named ``field:<path>``. Values are compared as strings (``str(value)``; booleans as
``true``/``false``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from client_cache.api import meta
from client_cache.index import Indexer

__all__ = ["ALL_NAMESPACES_KEY", "field_index_name", "index_field", "list_by_field",
           "field_values"]

ALL_NAMESPACES_KEY = "__all_namespaces"
"""controller-runtime's ``allNamespacesNamespace``: the key prefix for a lookup across
namespaces."""

_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def field_index_name(path: str) -> str:
    """The index's name for ``path`` (controller-runtime ``FieldIndexName``)."""
    return f"field:{path}"


def _step(values: list[Any], segment: str) -> list[Any]:
    snake = _CAMEL.sub("_", segment).lower()
    out: list[Any] = []
    for value in values:
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, Mapping):
                found = item.get(segment)
            else:
                found = getattr(item, snake, getattr(item, segment, None))
            if found is not None:
                out.append(found)
    return out


def field_values(obj: Any, path: str) -> list[str]:
    """The values at ``path`` in ``obj`` (see the module documentation), as strings."""
    values = [obj]
    for segment in path.split("."):
        values = _step(values, segment)
    flat: list[Any] = []
    for value in values:
        flat.extend(value if isinstance(value, (list, tuple)) else [value])
    return [("true" if v else "false") if isinstance(v, bool) else str(v)
            for v in flat if v is not None and v != ""]


def index_field(informer: Any, path: str,
                extract: Callable[[Any], list[str]] | None = None) -> str:
    """Add the index of ``path`` to ``informer`` (anything with ``add_indexers``: an
    informer or an indexer); ``extract`` replaces the path lookup (controller-runtime's
    ``IndexerFunc``). Returns the index's name. Raises as ``add_indexers`` does when the
    informer has already started."""
    values_of = extract if extract is not None else (lambda obj: field_values(obj, path))

    def index(obj: Any) -> list[str]:
        values = values_of(obj)
        namespace = meta.get_namespace(obj)
        keys = [f"{ALL_NAMESPACES_KEY}/{v}" for v in values]
        if namespace:
            keys += [f"{namespace}/{v}" for v in values]
        return keys

    name = field_index_name(path)
    informer.add_indexers({name: index})
    return name


def list_by_field(indexer: Indexer, path: str, value: str, namespace: str = "") -> list[Any]:
    """The cached objects whose ``path`` holds ``value``, in ``namespace`` or, when empty,
    in all namespaces (controller-runtime ``MatchingFields`` with ``InNamespace``).
    Raises :class:`~client_cache.errors.IndexNotFoundError` when the field was not
    indexed."""
    key = f"{namespace or ALL_NAMESPACES_KEY}/{value}"
    return list(indexer.by_index(field_index_name(path), key))
