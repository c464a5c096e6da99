"""Kubernetes' sample-controller, both ports (``examples/sample_controller.py`` on the
runtime, ``examples/sample_controller_plain.py`` as Go's ``controller.go``), on both
servers, with the Foo CRD applied from ``examples/artifacts/crd.yaml``: 200 Foos converge
(each with its Deployment at the right replicas, owned, and the Foo's status updated), 100
replica changes converge, 50 Deployments deleted behind the controller's back come back, a
Foo naming a Deployment it does not own gets an error (an ErrResourceExists Event) and
leaves it alone, every Foo gets its Synced Event, and an apiserver restart mid-run still
converges."""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from kubernetes.client import AppsV1Api, CoreV1Api, CustomObjectsApi

from client_cache.client.rest import request_json
from tests.conformance.util import Backend, parallel
from tests.fixtures import eventually

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> ModuleType:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


@pytest.fixture(params=["sample_controller", "sample_controller_plain"])
def implementation(request: pytest.FixtureRequest) -> ModuleType:
    return example(request.param)


class Harness:
    """The controller under test and the Deployment-controller stand-in, both limited to
    the test's namespace, each on its own API client."""

    def __init__(self, backend: Backend, ns: str, implementation: ModuleType) -> None:
        self.backend, self.ns = backend, ns
        self.api = backend.api_client()
        self.apis = example("_sample_apis")
        self.objects = CustomObjectsApi(self.api)
        self.apps = AppsV1Api(self.api)
        self.stop = threading.Event()
        self.clients = [backend.api_client(), backend.api_client()]
        options: dict[str, Any] = {"namespace": ns}
        if implementation.__name__ == "sample_controller":
            options["client_qps"] = 0  # unthrottled: the test makes hundreds of writes
        self.threads = [
            example("_sample_demo").play_deployment_controller(self.clients[0], self.stop, ns),
            threading.Thread(target=implementation.run, args=(self.clients[1], self.stop),
                             kwargs=options, name="test-sample-controller", daemon=True)]
        self.threads[1].start()

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(15)
        assert not any(thread.is_alive() for thread in self.threads)
        for client in [self.api, *self.clients]:
            client.close()

    def create_foos(self, count: int) -> None:
        apis = self.apis
        parallel(lambda i=i: self.objects.create_namespaced_custom_object(
            apis.GROUP, apis.VERSION, self.ns, apis.FOOS.resource,
            apis.foo(f"foo-{i}", f"deploy-{i}", 1 + i % 3)) for i in range(count))

    def foos(self) -> list[dict[str, Any]]:
        apis = self.apis
        items: list[dict[str, Any]] = self.objects.list_namespaced_custom_object(
            apis.GROUP, apis.VERSION, self.ns, apis.FOOS.resource)["items"]
        return items

    def deployments(self) -> dict[str, Any]:
        listed = self.api.sanitize_for_serialization(
            self.apps.list_namespaced_deployment(self.ns))
        return {d["metadata"]["name"]: d for d in listed["items"]}

    def out_of_sync(self, skip: tuple[str, ...] = ()) -> list[str]:
        """The Foos not converged: Deployment missing, not owned, wrong replicas, or the
        Foo's status not showing them all available."""
        deployments = self.deployments()
        wrong = []
        for f in self.foos():
            name, spec = f["metadata"]["name"], f["spec"]
            if name in skip:
                continue
            d = deployments.get(spec["deploymentName"])
            if (d is None or not self.apis.is_controlled_by(d, f)
                    or d["spec"]["replicas"] != spec["replicas"]
                    or (f.get("status") or {}).get("availableReplicas") != spec["replicas"]):
                wrong.append(name)
        return wrong

    def converge(self, timeout: float = 90, skip: tuple[str, ...] = ()) -> None:
        state: dict[str, list[str]] = {}

        def done() -> bool:
            state["wrong"] = self.out_of_sync(skip)
            return not state["wrong"]

        try:
            eventually(done, timeout, "Foos out of sync")
        except AssertionError:
            deployments = self.deployments()
            detail = [(f["metadata"]["name"], f["spec"], f.get("status"),
                       (deployments.get(f["spec"]["deploymentName"]) or {}).get("spec", {})
                       .get("replicas"),
                       (deployments.get(f["spec"]["deploymentName"]) or {}).get("status"))
                      for f in self.foos() if f["metadata"]["name"] in state["wrong"][:5]]
            raise AssertionError(f"{len(state['wrong'])} Foos out of sync: {detail}") from None

    def events(self, reason: str) -> set[str]:
        """Names of the objects with an Event of ``reason`` in the namespace, on either
        API: the runtime port records events.k8s.io/v1 Events, the plain port core/v1
        ones (kube-apiserver serves each through both; the embedded server keeps them
        apart)."""
        core = CoreV1Api(self.api).list_namespaced_event(self.ns).items
        # read as JSON: kube-apiserver serves core/v1 Events here with a null eventTime,
        # which the kubernetes package's EventsV1Event model refuses
        status, newer = request_json(
            self.api, "GET", f"/apis/events.k8s.io/v1/namespaces/{self.ns}/events")
        assert status == 200, status
        return ({e.involved_object.name for e in core if e.reason == reason}
                | {e["regarding"]["name"] for e in newer["items"] if e["reason"] == reason})

    def set_replicas(self, names: list[str], replicas: int) -> None:
        apis = self.apis
        parallel(lambda n=n: self.objects.patch_namespaced_custom_object(
            apis.GROUP, apis.VERSION, self.ns, apis.FOOS.resource, n,
            {"spec": {"replicas": replicas}}) for n in names)


@pytest.fixture
def harness(backend: Backend, api: Any, ns: str, implementation: ModuleType,
            ) -> Iterator[Harness]:
    example("_sample_apis").install_crd(api)
    running = Harness(backend, ns, implementation)
    try:
        yield running
    finally:
        running.close()


@pytest.mark.slow
def test_sample_controller_converges(harness: Harness, caplog: pytest.LogCaptureFixture,
                                     tmp_path: Path) -> None:
    caplog.set_level(logging.WARNING)
    harness.create_foos(200)
    harness.converge()
    # 100 replica changes
    names = [f"foo-{i}" for i in range(100)]
    harness.set_replicas(names, 4)
    harness.converge()
    assert all(f["spec"]["replicas"] == 4 for f in harness.foos()
               if f["metadata"]["name"] in names)
    # 50 Deployments deleted behind the controller's back are recreated
    before = {name: d["metadata"]["uid"] for name, d in harness.deployments().items()}
    gone = [f"deploy-{i}" for i in range(100, 150)]
    parallel(lambda n=n: harness.apps.delete_namespaced_deployment(n, harness.ns)
             for n in gone)
    harness.converge()
    after = harness.deployments()
    assert all(after[n]["metadata"]["uid"] != before[n] for n in gone)
    # a Foo naming a Deployment it does not own: an error, and the Deployment untouched
    apis = harness.apis
    taken = harness.apps.create_namespaced_deployment(harness.ns, {
        "metadata": {"name": "taken"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "x"}},
                 "template": {"metadata": {"labels": {"app": "x"}},
                              "spec": {"containers": [{"name": "x", "image": "x"}]}}}})
    harness.objects.create_namespaced_custom_object(
        apis.GROUP, apis.VERSION, harness.ns, apis.FOOS.resource,
        apis.foo("intruder", "taken", 3))
    eventually(lambda: any("taken already exists and is not managed by Foo" in r.getMessage()
                           for r in caplog.records), 30, "no error reported")
    eventually(lambda: "intruder" in harness.events("ErrResourceExists"), 30,
               "no ErrResourceExists Event")
    assert {f"foo-{i}" for i in range(200)} <= harness.events("Synced")
    still = harness.apps.read_namespaced_deployment("taken", harness.ns)
    assert still.metadata.generation == taken.metadata.generation  # its spec untouched
    assert not still.metadata.owner_references and still.spec.replicas == 1
    # an apiserver restart mid-run: changes made around it still converge
    harness.set_replicas([f"foo-{i}" for i in range(150, 170)], 5)
    harness.backend.restart_apiserver(str(tmp_path / "state.json"))
    harness.set_replicas([f"foo-{i}" for i in range(170, 190)], 5)
    harness.converge(skip=("intruder",))
    assert sum(1 for f in harness.foos() if f["spec"]["replicas"] == 5) == 40
