"""Event filters of a controller's triggers: which informer events request a reconcile.

A :class:`Predicate` answers three questions, one per kind of informer event: does an
added object (the initial list's included), an update (old and new state), a deleted
object request a reconcile? :meth:`Controller.filter
<client_cache.runtime.Controller.filter>` puts predicates on the primary resource,
``owns(..., predicates=)`` and ``watches(..., predicates=)`` on a child or related
resource, and :meth:`Controller.event_filter <client_cache.runtime.Controller.event_filter>`
on all of them; an event requests its reconcile only when every predicate there passes it.

* :func:`changed` builds the kube-rs kind: a function of the object (its generation, its
  labels, ...) whose value is compared between the old and the new state of an update;
  the update passes when the value changed, or when the function returns None for either
  (nothing to compare: kube-rs's ``None``). Adds and deletes pass.
* :func:`when` builds the kopf/controller-runtime kind: a test of the object's state
  (``when=``, ``LabelSelectorPredicate``); every event passes when the object (the new
  one of an update) satisfies it. :func:`labelled` is it for a label selector string.
* ``a & b``, ``a | b`` and ``~a`` combine them event by event (controller-runtime's
  ``predicate.And``, ``Or`` and ``Not``: ``~generation`` passes no add or delete).

The ready-made ones are kube-rs's ``predicates::*``: :data:`generation` (a write to the
status subresource, which does not bump ``metadata.generation``, triggers nothing; an
object without a generation, as a ConfigMap, passes every update),
:data:`resource_version`, :data:`labels`, :data:`annotations` and :data:`finalizers`.

What they keep: nothing. kube-rs filters a stream of objects, so its ``predicate_filter``
remembers each object's last value (in a cache with a TTL since kube-rs 3.0); an informer
gives an update's old state beside the new, so here the two are compared and nothing is
remembered, however many generated names come and go. An update whose old and new
objects have different uids (the object was deleted and created again while the watch
was away, and a relist saw both under one name) is taken as an add of the new one.
A predicate that raises blocks the event: the exception is logged with the object's
kind, namespace/name and resourceVersion and the reconcile is not requested.
"""

# no ``from __future__ import annotations`` here: it would bind the name ``annotations``,
# which this module gives to a predicate

import logging
from collections.abc import Callable, Hashable
from typing import Any

from client_cache.api import labels as label_selectors
from client_cache.api import meta
from client_cache.runtime.finalizer import finalizers_of

__all__ = ["Predicate", "annotations", "changed", "finalizers", "generation", "labelled",
           "labels", "resource_version", "when"]

_log = logging.getLogger("client_cache.runtime.controller")

Test = Callable[[Any], bool]
Compare = Callable[[Any, Any], bool]


def _always(*_: Any) -> bool:
    return True


class Predicate:
    """One event filter (see the module documentation): ``update(old, new)``,
    ``add(obj)`` and ``delete(obj)`` say whether that event requests a reconcile; each
    omitted one passes every event. ``name`` is what ``repr`` and the logs show.
    controller-runtime ``predicate.Funcs``; kube-rs ``Predicate``."""

    __slots__ = ("_add", "_delete", "_update", "name")

    def __init__(self, update: Compare | None = None, *, add: Test | None = None,
                 delete: Test | None = None, name: str = "") -> None:
        for field, value in (("update", update), ("add", add), ("delete", delete)):
            if value is not None and not callable(value):
                raise TypeError(f"a predicate's {field} must be callable, not "
                                f"{type(value).__name__}")
        self._update: Compare = update or _always
        self._add: Test = add or _always
        self._delete: Test = delete or _always
        self.name = name or getattr(update or add or delete, "__name__", "predicate")

    def passes_add(self, obj: Any) -> bool:
        """Whether an added (or listed) object requests its reconcile."""
        return self._add(obj)

    def passes_update(self, old: Any, new: Any) -> bool:
        """Whether an update requests its reconcile; old and new of different uids are an
        add of ``new``."""
        if meta.accessor(old).uid != meta.accessor(new).uid:
            return self._add(new)
        return self._update(old, new)

    def passes_delete(self, obj: Any) -> bool:
        """Whether a deleted object requests a reconcile."""
        return self._delete(obj)

    def __and__(self, other: "Predicate") -> "Predicate":
        return Predicate(lambda o, n: self.passes_update(o, n) and other.passes_update(o, n),
                         add=lambda o: self._add(o) and other._add(o),
                         delete=lambda o: self._delete(o) and other._delete(o),
                         name=f"({self.name} & {other.name})")

    def __or__(self, other: "Predicate") -> "Predicate":
        return Predicate(lambda o, n: self.passes_update(o, n) or other.passes_update(o, n),
                         add=lambda o: self._add(o) or other._add(o),
                         delete=lambda o: self._delete(o) or other._delete(o),
                         name=f"({self.name} | {other.name})")

    def __invert__(self) -> "Predicate":
        return Predicate(lambda o, n: not self.passes_update(o, n),
                         add=lambda o: not self._add(o), delete=lambda o: not self._delete(o),
                         name=f"~{self.name}")

    def __repr__(self) -> str:
        return f"<Predicate {self.name}>"


def changed(value: Callable[[Any], Hashable | None], name: str = "") -> Predicate:
    """A predicate passing an update when ``value(object)`` differs between its old and new
    state, or is None for either; adds and deletes pass (kube-rs ``predicate_filter``
    with a closure; controller-runtime's ``...ChangedPredicate``)."""
    def update(old: Any, new: Any) -> bool:
        before, after = value(old), value(new)
        return before is None or after is None or before != after
    return Predicate(update, name=name or getattr(value, "__name__", "changed"))


def when(test: Test, name: str = "") -> Predicate:
    """A predicate passing every event of an object for which ``test(object)`` is true
    (the new state of an update): kopf's ``when=``, controller-runtime's
    ``predicate.NewPredicateFuncs``."""
    return Predicate(lambda old, new: test(new), add=test, delete=test,
                     name=name or getattr(test, "__name__", "when"))


def labelled(selector: str) -> Predicate:
    """:func:`when` the object's labels match ``selector`` (``"app=web,tier!=db"``;
    a bad selector raises :class:`~client_cache.api.labels.SelectorParseError` here):
    controller-runtime ``LabelSelectorPredicate``, kopf ``labels=``."""
    parsed = label_selectors.parse(selector)
    return when(lambda obj: parsed.matches(meta.accessor(obj).labels), f"labelled({selector})")


def _generation(obj: Any) -> int | None:
    return meta.accessor(obj).generation or None  # 0: the server keeps none for it


def _labels(obj: Any) -> Hashable:
    return frozenset(meta.accessor(obj).labels.items())


def _annotations(obj: Any) -> Hashable:
    return frozenset(meta.accessor(obj).annotations.items())


def _finalizers(obj: Any) -> Hashable:
    return tuple(finalizers_of(obj))


generation = changed(_generation, "generation")
"""``metadata.generation`` changed (kube-rs ``predicates::generation``,
controller-runtime ``GenerationChangedPredicate``); an object without one passes."""
resource_version = changed(meta.get_resource_version, "resource_version")
"""``metadata.resourceVersion`` changed (kube-rs ``predicates::resource_version``,
controller-runtime ``ResourceVersionChangedPredicate``): drops the resync's repeats."""
labels = changed(_labels, "labels")
"""``metadata.labels`` changed (kube-rs ``predicates::labels``, controller-runtime
``LabelChangedPredicate``)."""
annotations = changed(_annotations, "annotations")
"""``metadata.annotations`` changed (kube-rs ``predicates::annotations``,
controller-runtime ``AnnotationChangedPredicate``)."""
finalizers = changed(_finalizers, "finalizers")
"""``metadata.finalizers`` changed (kube-rs ``predicates::finalizers``)."""


def passes(predicates: tuple[Predicate, ...], kind: str, *objs: Any) -> bool:
    """Whether an event of ``kind`` ("add", "update" or "delete") with ``objs`` passes
    every predicate; one that raises is logged and blocks it."""
    try:
        for predicate in predicates:
            if kind == "update":
                ok = predicate.passes_update(objs[0], objs[1])
            elif kind == "add":
                ok = predicate.passes_add(objs[0])
            else:
                ok = predicate.passes_delete(objs[0])
            if not ok:
                return False
    except Exception:
        _log.exception("predicate %s failed on %s; no reconcile requested", predicate.name,
                       meta.describe(objs[-1]))
        return False
    return True
