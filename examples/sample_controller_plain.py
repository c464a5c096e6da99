"""Kubernetes' sample-controller, ``controller.go`` line by line, with informers and a
work queue (no runtime): compare with ``sample_controller.py``, the same controller on the
controller runtime. Go names are kept in snake case (``NewController`` is
``new_controller``, ``syncHandler`` is ``sync_handler``); Events are posted as Go's are
(``Synced``, ``ErrResourceExists``).

    .venv/bin/python examples/sample_controller_plain.py
    .venv/bin/python examples/sample_controller_plain.py --kubeconfig ~/.kube/config
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from _cluster import connect, parser
from _sample_apis import (
    API_VERSION,
    DEPLOYMENTS,
    ERR_RESOURCE_EXISTS,
    FOOS,
    GROUP,
    KIND,
    MESSAGE_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_SYNCED,
    SUCCESS_SYNCED,
    VERSION,
    install_crd,
    is_controlled_by,
    new_deployment,
    with_available_replicas,
)
from _sample_demo import run_demo
from kubernetes.client import ApiClient, AppsV1Api, CustomObjectsApi

from client_cache import (
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    meta_namespace_key_func,
    split_meta_namespace_key,
    wait_for_cache_sync,
)
from client_cache.codec import to_wire
from client_cache.errors import describe_error, is_not_found
from client_cache.informers import (
    GenericInformer,
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.record import CoreV1EventSink, EventBroadcaster, EventSource
from client_cache.util.wait import until
from client_cache.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimitingQueueConfig,
    TokenBucket,
    new_rate_limiting_queue_with_config,
)

CONTROLLER_AGENT_NAME = "sample-controller"
log = logging.getLogger(CONTROLLER_AGENT_NAME)


class Controller:
    """Go's ``Controller`` struct: clients, listers, synced funcs, the work queue."""

    def __init__(self, kubeclientset: AppsV1Api, sampleclientset: CustomObjectsApi,
                 deployment_informer: GenericInformer, foo_informer: GenericInformer) -> None:
        log.info("Creating event broadcaster")
        self.event_broadcaster = EventBroadcaster()
        self.event_broadcaster.start_logging(log)
        self.event_broadcaster.start_recording_to_sink(
            CoreV1EventSink(kubeclientset.api_client))
        self.recorder = self.event_broadcaster.new_recorder(
            EventSource(component=CONTROLLER_AGENT_NAME))
        self.kubeclientset = kubeclientset
        self.sampleclientset = sampleclientset
        self.deployments_lister = deployment_informer.lister()
        self.deployments_synced = deployment_informer.informer().has_synced
        self.foos_lister = foo_informer.lister()
        self.foos_synced = foo_informer.informer().has_synced
        rate_limiter = MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(0.005, 1000.0),
            BucketRateLimiter(TokenBucket(50.0, 300)))
        self.workqueue = new_rate_limiting_queue_with_config(
            rate_limiter, RateLimitingQueueConfig(name="Foos"))
        log.info("Setting up event handlers")
        foo_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.enqueue_foo,
            update_func=lambda old, new: self.enqueue_foo(new)))
        deployment_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.handle_object,
            update_func=self._deployment_updated,
            delete_func=self.handle_object))

    def _deployment_updated(self, old: Any, new: Any) -> None:
        if new["metadata"]["resourceVersion"] == old["metadata"]["resourceVersion"]:
            return  # a periodic resync: both versions are the same
        self.handle_object(new)

    def run(self, workers: int, stop: threading.Event) -> None:
        """Go ``Run``: wait for the caches, start the workers, block until ``stop``."""
        try:
            log.info("Starting Foo controller")
            log.info("Waiting for informer caches to sync")
            if not wait_for_cache_sync(stop, self.deployments_synced, self.foos_synced):
                raise RuntimeError("failed to wait for caches to sync")
            log.info("Starting workers count=%d", workers)
            threads = [threading.Thread(target=until, args=(self.run_worker, 1.0, stop),
                                        name=f"sample-controller-worker-{i}", daemon=True)
                       for i in range(workers)]
            for thread in threads:
                thread.start()
            log.info("Started workers")
            stop.wait()
        finally:
            self.workqueue.shut_down()
        log.info("Shutting down workers")
        for thread in threads:
            thread.join(10)
        self.event_broadcaster.shutdown()

    def run_worker(self) -> None:
        while self.process_next_work_item():
            pass

    def process_next_work_item(self) -> bool:
        obj_ref, shutdown = self.workqueue.get()
        if shutdown or obj_ref is None:
            return False
        try:
            self.sync_handler(obj_ref)
        except Exception as err:
            log.error("Error syncing; requeuing for later retry objectReference=%s: %s",
                      obj_ref, describe_error(err))
            self.workqueue.add_rate_limited(obj_ref)
        else:
            self.workqueue.forget(obj_ref)
            log.debug("Successfully synced objectName=%s", obj_ref)
        finally:
            self.workqueue.done(obj_ref)
        return True

    def sync_handler(self, key: str) -> None:
        """Go ``syncHandler``: compare the actual state with the desired, and converge."""
        namespace, name = split_meta_namespace_key(key)
        try:
            foo = self.foos_lister.by_namespace(namespace).get(name)
        except Exception as err:
            if is_not_found(err):
                log.error("Foo referenced by item in work queue no longer exists: %s", key)
                return
            raise
        deployment_name = foo["spec"].get("deploymentName")
        if not deployment_name:
            log.error("%s: deployment name must be specified", key)
            return
        try:
            deployment = self.deployments_lister.by_namespace(namespace).get(deployment_name)
        except Exception as err:
            if not is_not_found(err):
                raise
            deployment = to_wire(self.kubeclientset.create_namespaced_deployment(
                namespace, new_deployment(foo)))
        if not is_controlled_by(deployment, foo):
            msg = MESSAGE_RESOURCE_EXISTS % deployment_name
            self.recorder.event(foo, "Warning", ERR_RESOURCE_EXISTS, msg, kind=KIND,
                                api_version=API_VERSION)
            raise RuntimeError(msg)
        replicas = foo["spec"].get("replicas")
        if replicas is not None and replicas != deployment["spec"].get("replicas"):
            log.info("Update deployment resource currentReplicas=%s desiredReplicas=%s",
                     deployment["spec"].get("replicas"), replicas)
            deployment = to_wire(self.kubeclientset.replace_namespaced_deployment(
                deployment_name, namespace, new_deployment(foo)))
        self.update_foo_status(foo, deployment)
        self.recorder.event(foo, "Normal", SUCCESS_SYNCED, MESSAGE_RESOURCE_SYNCED, kind=KIND,
                            api_version=API_VERSION)

    def update_foo_status(self, foo: Any, deployment: Any) -> None:
        foo_copy = with_available_replicas(foo, deployment)
        if foo_copy.get("status") == foo.get("status"):
            return  # the port skips a write that changes nothing
        self.sampleclientset.replace_namespaced_custom_object_status(
            GROUP, VERSION, foo["metadata"]["namespace"], FOOS.resource,
            foo["metadata"]["name"], foo_copy)

    def enqueue_foo(self, obj: Any) -> None:
        self.workqueue.add(meta_namespace_key_func(obj))

    def handle_object(self, obj: Any) -> None:
        """Enqueue the Foo that owns a changed Deployment (Go ``handleObject``)."""
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
            log.info("Recovered deleted object")
        md = obj["metadata"]
        log.debug("Processing object %s/%s", md.get("namespace"), md.get("name"))
        for ref in md.get("ownerReferences") or []:
            if not ref.get("controller"):
                continue
            if ref.get("kind") != KIND:
                return
            try:
                foo = self.foos_lister.by_namespace(md["namespace"]).get(ref["name"])
            except Exception:
                log.debug("Ignore orphaned object %s/%s of foo %s", md.get("namespace"),
                          md.get("name"), ref.get("name"))
                return
            self.enqueue_foo(foo)
            return


def run(api_client: ApiClient, stop: threading.Event, *, namespace: str = "",
        workers: int = 2) -> None:
    """Go ``main``: informer factories, the controller, start, run until ``stop``;
    ``namespace`` limits it to one namespace (default: all)."""
    factory = new_shared_informer_factory_with_options(
        api_client, 30.0, SharedInformerFactoryOptions(namespace=namespace))
    controller = Controller(AppsV1Api(api_client), CustomObjectsApi(api_client),
                            factory.for_resource(DEPLOYMENTS), factory.for_resource(FOOS))
    informers_stop = threading.Event()
    factory.start(informers_stop)
    try:
        controller.run(workers, stop)
    finally:
        informers_stop.set()
        factory.shutdown(5)


def main() -> None:
    args = parser(__doc__).parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    with connect(args) as cluster:
        install_crd(cluster.api_client)
        run_demo(cluster, run)


if __name__ == "__main__":
    main()
