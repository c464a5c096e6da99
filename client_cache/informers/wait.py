"""Wait until one object meets a condition, on a watch (kube-rs
``runtime::wait::await_condition``; client-go ``tools/watch.UntilWithSync``; kr8s and
lightkube ``wait()``).

:func:`await_condition` asks ``condition(obj)`` about the object named ``name`` each
time it changes, with ``None`` while it does not exist, and returns the object (None: it
is gone) the first time the answer is True. ``source`` is either

* an ``ApiClient`` with ``resource=``: a watch of that one object (a field selector on
  ``metadata.name``) is started for the wait and stopped at its end, its threads gone
  within a second; or
* a running informer (or a factory's ``GenericInformer``) that caches the object: a
  handler is added for the wait and removed at its end; the informer is not stopped.

Nothing polls: the condition is asked when an event arrives, and once with the cached
state when the watch has delivered its initial list (so a condition on an object that
does not exist, as :func:`~client_cache.informers.conditions.is_deleted`, holds at
once). Past ``timeout`` seconds (None: no limit), or when ``stop`` is set first,
:class:`ConditionTimeoutError` says which. An exception from ``condition`` is raised
from the wait.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from client_cache.api import meta
from client_cache.api.fields import one_term_equal_selector
from client_cache.api.lists import ListOptions
from client_cache.api.schema import GroupVersionResource
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.errors import ClientCacheError
from client_cache.informers.conditions import Condition
from client_cache.informers.factory import (
    GenericInformer,
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.shared_informer import SharedIndexInformer
from client_cache.store import DeletedFinalStateUnknown
from client_cache.util.stop import on_stop

__all__ = ["Condition", "ConditionTimeoutError", "await_condition"]



class ConditionTimeoutError(ClientCacheError, TimeoutError):
    """:func:`await_condition` gave up: its timeout passed, or its ``stop`` was set."""


class _Wait:
    """One wait's state: the answer, or the condition's exception."""

    def __init__(self, key: str, condition: Condition) -> None:
        self.key = key
        self.condition = condition
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.result: Any = None
        self.met = False
        self.error: BaseException | None = None

    def ask(self, obj: Any) -> None:
        if self.done.is_set():
            return
        try:
            met = self.condition(obj)
        except Exception as err:  # handed to the waiting caller
            with self.lock:
                self.error = err
            self.done.set()
            return
        if met:
            with self.lock:
                self.result, self.met = obj, True
            self.done.set()

    def handler(self) -> ResourceEventHandlerFuncs[Any]:
        def applied(obj: Any) -> None:
            if _key(obj) == self.key:
                self.ask(obj)

        def deleted(obj: Any) -> None:
            obj = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if _key(obj) == self.key:
                self.ask(None)

        return ResourceEventHandlerFuncs(add_func=applied,
                                         update_func=lambda old, new: applied(new),
                                         delete_func=deleted)


def _key(obj: Any) -> str:
    namespace, name = meta.namespace_and_name(obj)
    return f"{namespace}/{name}" if namespace else name


def await_condition(source: Any, name: str, condition: Condition, *,
                    namespace: str = "", resource: GroupVersionResource | None = None,
                    timeout: float | None = None,
                    stop: threading.Event | None = None) -> Any:
    """Block until ``condition`` holds for object ``name`` (in ``namespace``) and return
    it as it was then (None: it does not exist); see the module documentation.
    ``ValueError`` for an ``ApiClient`` without ``resource``, or an empty ``name``."""
    if not name:
        raise ValueError("await_condition needs the object's name")
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must not be negative, not {timeout!r}")
    deadline = None if timeout is None else time.monotonic() + timeout
    wait = _Wait(f"{namespace}/{name}" if namespace else name, condition)
    stop = stop if stop is not None else threading.Event()
    if isinstance(source, GenericInformer):
        source = source.informer()
    if isinstance(source, SharedIndexInformer):
        return _on_informer(source, wait, stop, deadline, timeout)
    if resource is None:
        raise ValueError("await_condition on an ApiClient needs resource= (the object's "
                         "GroupVersionResource)")

    def only(options: ListOptions) -> None:
        options.field_selector = str(one_term_equal_selector("metadata.name", name))

    factory = new_shared_informer_factory_with_options(
        source, 0, SharedInformerFactoryOptions(namespace=namespace,
                                                tweak_list_options=only))
    informer = factory.for_resource(resource).informer()
    watch_stop = threading.Event()
    try:
        factory.start(watch_stop)
        return _on_informer(informer, wait, stop, deadline, timeout)
    finally:
        watch_stop.set()
        factory.shutdown(timeout=1.0)


def _on_informer(informer: SharedIndexInformer[Any], wait: _Wait, stop: threading.Event,
                 deadline: float | None, timeout: float | None) -> Any:
    registration = informer.add_event_handler(wait.handler())

    def synced() -> None:  # the initial list delivered: ask about the cached state
        obj, exists = informer.get_indexer().get_by_key(wait.key)
        wait.ask(obj if exists else None)

    hooks = [on_stop(registration.has_synced_checker().done(), synced),
             on_stop(stop, wait.done.set)]
    try:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not wait.done.wait(left):
            raise ConditionTimeoutError(f"{wait.key}: condition not met within {timeout} s")
        with wait.lock:
            if wait.error is not None:
                raise wait.error
            if not wait.met:
                raise ConditionTimeoutError(f"{wait.key}: stopped before the condition was met")
            return wait.result
    finally:
        for hook in hooks:
            hook.cancel()
        informer.remove_event_handler(registration)

