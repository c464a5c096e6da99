"""Kubernetes' sample-controller written with the controller runtime.

A Foo (``samplecontroller.k8s.io/v1alpha1``) names a Deployment and a replica count; the
controller creates that Deployment, owned by the Foo, keeps its replicas equal to the
Foo's, recreates it when it is deleted, refuses to touch a Deployment of that name it does
not own (an error, reported and retried with backoff), and copies the Deployment's
``availableReplicas`` into the Foo's status. ``sample_controller_plain.py`` beside it is
the same controller written as the Go original is, with informers and a work queue.

By default it starts the embedded API server, applies ``artifacts/crd.yaml``, creates a few
Foos, plays the Deployment controller (sets availableReplicas) and stops once every Foo
is in sync; with ``--kubeconfig PATH`` it runs against that cluster until Ctrl-C (it
writes there: Deployments and Foo status).

    .venv/bin/python examples/sample_controller.py
    .venv/bin/python examples/sample_controller.py --kubeconfig ~/.kube/config
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

import msgspec
from _cluster import connect, parser
from _sample_apis import (
    API_VERSION,
    DEPLOYMENTS,
    ERR_RESOURCE_EXISTS,
    KIND,
    MESSAGE_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_SYNCED,
    SUCCESS_SYNCED,
    Foo,
    FooSpec,
    FooStatus,
    install_crd,
    is_controlled_by,
    new_deployment,
)
from _sample_demo import run_demo
from kubernetes.client import ApiClient, AppsV1Api

from client_cache.codec import to_wire
from client_cache.crd import patch_status
from client_cache.errors import ApiStatusError, is_not_found
from client_cache.informers import (
    SharedInformerFactory,
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.runtime import Action, Context, Controller, ControllerConfig

log = logging.getLogger("sample-controller")


class ResourceExistsError(Exception):
    """The Deployment a Foo names exists and belongs to something else."""


@dataclass
class Clients:
    api: ApiClient
    apps: AppsV1Api
    factory: SharedInformerFactory


def reconcile(foo: Foo, ctx: Context[Clients]) -> Action:
    """Bring one Foo's Deployment and status in line (Go ``syncHandler``). ``foo`` is a
    typed ``Foo``, decoded straight from the server's JSON (``client_cache.crd``)."""
    clients = ctx.data
    namespace, name = foo.metadata.namespace, foo.metadata.name
    spec = foo.spec if not isinstance(foo.spec, msgspec.UnsetType) else FooSpec()
    deployment_name = spec.deployment_name
    if isinstance(deployment_name, msgspec.UnsetType) or not deployment_name:
        log.error("%s/%s: deployment name must be specified", namespace, name)
        return Action.await_change()  # nothing to retry until the Foo changes
    wire = to_wire(foo)  # for the dict helpers shared with the plain port
    lister = clients.factory.for_resource(DEPLOYMENTS).lister().by_namespace(namespace)
    try:
        deployment = lister.get(deployment_name)
    except ApiStatusError as err:
        if not is_not_found(err):
            raise
        deployment = to_wire(clients.apps.create_namespaced_deployment(
            namespace, new_deployment(wire)))
    if not is_controlled_by(deployment, wire):
        message = MESSAGE_RESOURCE_EXISTS % deployment_name
        ctx.recorder.event(wire, "Warning", ERR_RESOURCE_EXISTS, message, kind=KIND,
                           api_version=API_VERSION)
        raise ResourceExistsError(message)
    replicas = None if isinstance(spec.replicas, msgspec.UnsetType) else spec.replicas
    if replicas is not None and replicas != deployment["spec"].get("replicas"):
        log.info("Foo %s/%s replicas: %s, deployment replicas: %s", namespace, name,
                 replicas, deployment["spec"].get("replicas"))
        deployment = to_wire(clients.apps.replace_namespaced_deployment(
            deployment_name, namespace, new_deployment(wire)))
    available = (deployment.get("status") or {}).get("availableReplicas") or 0
    if isinstance(foo.status, msgspec.UnsetType) or \
            foo.status.available_replicas != available:
        patch_status(clients.api, foo, FooStatus(available_replicas=available))
    ctx.recorder.event(wire, "Normal", SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED, kind=KIND,
                       api_version=API_VERSION)
    return Action.await_change()


def build(api_client: ApiClient, *, namespace: str = "", concurrency: int = 2,
          client_qps: float = 0.0) -> tuple[Controller[Foo], Clients]:
    """The controller: Foos, owning Deployments (Go ``NewController``); ``namespace``
    limits it to one namespace (default: all)."""
    factory = new_shared_informer_factory_with_options(
        api_client, 0, SharedInformerFactoryOptions(namespace=namespace))
    controller = Controller(
        factory, Foo, config=ControllerConfig(name="sample-controller",
                                              concurrency=concurrency,
                                              client_qps=client_qps)).owns(DEPLOYMENTS)
    return controller, Clients(api_client, AppsV1Api(api_client), factory)


def run(api_client: ApiClient, stop: threading.Event, *, namespace: str = "",
        concurrency: int = 2, client_qps: float = 0.0) -> None:
    """Run until ``stop`` is set."""
    controller, clients = build(api_client, namespace=namespace, concurrency=concurrency,
                                client_qps=client_qps)
    controller.graceful_shutdown_on(stop)
    # No error_policy: a failed reconcile is logged by the runtime and retried with the
    # per-object backoff (5 ms doubling to 1000 s), as sample-controller's AddRateLimited.
    summary = controller.run(reconcile, data=clients)
    log.info("done: %s", summary)


def main() -> None:
    args = parser(__doc__).parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    with connect(args) as cluster:
        install_crd(cluster.api_client)
        run_demo(cluster, run)


if __name__ == "__main__":
    main()
