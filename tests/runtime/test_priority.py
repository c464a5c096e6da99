"""Issue 70: the controller's priority queue (controller-runtime's default since v0.23):
what the triggers did not see change waits behind a change, a requeue can ask its own
priority, and ``priority_queue=False`` is first come, first served."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import pytest
from kubernetes.client import CoreV1Api

from client_cache.api.schema import GroupVersionResource
from client_cache.informers import SharedInformerFactory
from client_cache.runtime import (
    Action,
    Context,
    Controller,
    ControllerConfig,
    ObjectRef,
    ReconcileReason,
    ReconcileRequest,
    Scheduler,
)
from client_cache.runtime._kind import PrimaryKind
from client_cache.runtime._triggers import Triggers
from client_cache.store import DeletedFinalStateUnknown
from client_cache.testing.apiserver import EmbeddedApiServer
from client_cache.workqueue.priority import DEFAULT_PRIORITY, LOW_PRIORITY
from tests.runtime.handed_out import take_all

NS = "default"
CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")
ONE_WORKER = ControllerConfig(client_qps=0, events=False, concurrency=1)
SEEDED = 2000


def cm(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": f"u-{name}",
                         "resourceVersion": rv}}


# -- the triggers' priorities ----------------------------------------------------------------
@pytest.fixture
def wired() -> Any:
    scheduler = Scheduler("triggers")
    triggers = Triggers(lambda: "t", PrimaryKind(CONFIGMAPS))
    triggers.attach(scheduler, None)
    yield triggers, scheduler
    scheduler.shut_down()


def test_what_was_not_seen_change_is_low_and_a_change_is_default(wired: Any) -> None:
    triggers, scheduler = wired
    handler = triggers.primary_handler()
    handler.on_add(cm("listed", "1"), True)  # the informer's initial list
    handler.on_update(cm("resynced", "2"), cm("resynced", "2"))  # same resourceVersion
    handler.on_add(cm("created", "3"), False)
    handler.on_update(cm("changed", "4"), cm("changed", "5"))
    assert take_all(scheduler) == [("created", DEFAULT_PRIORITY),
                                     ("changed", DEFAULT_PRIORITY),
                                     ("listed", LOW_PRIORITY), ("resynced", LOW_PRIORITY)]


def test_related_handlers_carry_the_event_priority_and_bulk_is_low(wired: Any) -> None:
    triggers, scheduler = wired
    mapped = triggers.mapper_handler(
        lambda o: ObjectRef(o["metadata"]["name"].upper(), NS))
    mapped.on_add(cm("a", "1"), True)
    mapped.on_update(cm("b", "1"), cm("b", "2"))
    mapped.on_delete(DeletedFinalStateUnknown(f"{NS}/c", cm("c", "3")))
    assert take_all(scheduler) == [("B", DEFAULT_PRIORITY), ("C", DEFAULT_PRIORITY),
                                     ("A", LOW_PRIORITY)]
    triggers.trigger(ObjectRef("x", NS), ReconcileReason.unknown(), 42)
    assert take_all(scheduler) == [("x", 42)]


# -- a controller ------------------------------------------------------------------------------
def seed(server: EmbeddedApiServer) -> None:
    configmaps = server.store.lookup("", "v1", "configmaps")
    for i in range(SEEDED):
        server.store.create(configmaps, NS, {"metadata": {"name": f"old-{i:04d}"}})


class Ordered:
    """A reconcile recording the order of names; the first call creates ``new`` and
    returns once the scheduler holds its request (so the order says where the queue put
    it, not how fast the watch was)."""

    def __init__(self, core: CoreV1Api, monkeypatch: pytest.MonkeyPatch) -> None:
        self.core = core
        self.order: list[str] = []
        self.priorities: dict[str, int] = {}
        self.done = threading.Event()
        self.new_scheduled = threading.Event()
        schedule = Scheduler.schedule

        def watched(scheduler: Scheduler, ref: ObjectRef, *args: Any, **kw: Any) -> None:
            schedule(scheduler, ref, *args, **kw)
            if ref.name == "new":
                self.new_scheduled.set()

        monkeypatch.setattr(Scheduler, "schedule", watched)

    def __call__(self, o: Any, ctx: Context[Any]) -> Action:
        name = o["metadata"]["name"]
        self.order.append(name)
        self.priorities[name] = ctx.request.priority
        if len(self.order) == 1:
            self.core.create_namespaced_config_map(NS, {"metadata": {"name": "new"}})
            assert self.new_scheduled.wait(30)
        if len(self.order) == SEEDED + 1:
            self.done.set()
        return Action.await_change()


@pytest.mark.parametrize("priority_queue", [True, False])
def test_a_change_overtakes_the_initial_list(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory,
        monkeypatch: pytest.MonkeyPatch, priority_queue: bool) -> None:
    """2000 listed objects wait at low priority; ``new``, created by the first reconcile,
    is a change and runs next. Without the priority queue it runs last."""
    seed(server)
    ordered = Ordered(core, monkeypatch)
    config = dataclasses.replace(ONE_WORKER, priority_queue=priority_queue)
    with Controller(factory, CONFIGMAPS, config=config).running(ordered):
        assert ordered.done.wait(60), len(ordered.order)
    assert sorted(ordered.order) == sorted(["new", *(f"old-{i:04d}" for i in range(SEEDED))])
    position = ordered.order.index("new")
    if priority_queue:
        assert position == 1, ordered.order[:5]
        assert ordered.priorities["new"] == DEFAULT_PRIORITY
        assert ordered.priorities[ordered.order[-1]] == LOW_PRIORITY
    else:
        assert position == SEEDED


def test_a_requeue_keeps_or_sets_its_priority(
        server: EmbeddedApiServer, core: CoreV1Api, factory: SharedInformerFactory) -> None:
    """A requeue without a priority keeps the request's (low, from the initial list);
    ``Action.requeue(priority=...)`` sets it."""
    core.create_namespaced_config_map(NS, {"metadata": {"name": "a"}})
    seen: list[ReconcileRequest] = []
    finished = threading.Event()

    def reconcile(o: Any, ctx: Context[Any]) -> Action:
        seen.append(ctx.request)
        if len(seen) == 1:
            return Action.requeue(0.01)
        if len(seen) == 2:
            return Action.requeue(0.01, priority=7)
        finished.set()
        return Action.await_change()

    with Controller(factory, CONFIGMAPS, config=ONE_WORKER).running(reconcile):
        assert finished.wait(30)
    assert [r.priority for r in seen] == [LOW_PRIORITY, LOW_PRIORITY, 7]
    with pytest.raises(TypeError, match="priority"):
        Action.requeue(1.0, priority="high")  # type: ignore[arg-type]
