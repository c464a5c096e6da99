"""A complete first controller: for each ConfigMap labelled ``app=greeter`` it
keeps a child ConfigMap ``<name>-reply`` (owned by it, so deleting the parent
deletes the child) whose ``reply`` says hello to the parent's ``name``. Runs on
the embedded API server; on a cluster, pass ``config.new_client_from_config()``
(from ``kubernetes``) instead of ``server.api_client()`` and drop the server."""

import threading

from kubernetes.client import CoreV1Api, V1ConfigMap, V1ObjectMeta

from client_cache import GroupVersionResource
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.runtime import (
    Action,
    Controller,
    apply,
    set_controller_reference,
)
from client_cache.testing.apiserver import EmbeddedApiServer

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")

with EmbeddedApiServer() as server:
    api = server.api_client()
    replied = threading.Event()

    def reconcile(parent, ctx):  # parent: the cached ConfigMap (read only)
        reply = {"metadata": {"name": parent["metadata"]["name"] + "-reply",
                              "namespace": parent["metadata"]["namespace"]},
                 "data": {"reply": "hello, " + parent["data"]["name"]}}
        set_controller_reference(parent, reply, kind="ConfigMap",
                                 api_version="v1")
        apply(api, CONFIGMAPS, reply, field_manager="greeter", force=True)
        replied.set()
        return Action.await_change()  # or Action.requeue(300): look again

    def greeters_only(options):  # the informer lists and watches only these
        options.label_selector = "app=greeter"

    factory = new_shared_informer_factory_with_options(
        api, 0, SharedInformerFactoryOptions(namespace="default",
                                             tweak_list_options=greeters_only))
    stop = threading.Event()  # stop.set() from anywhere ends the run
    controller = Controller(factory, CONFIGMAPS)
    runner = threading.Thread(target=controller.run, args=(reconcile,),
                              kwargs={"stop": stop}, name="greeter",
                              daemon=True)
    runner.start()

    CoreV1Api(api).create_namespaced_config_map("default", V1ConfigMap(
        metadata=V1ObjectMeta(name="alice", labels={"app": "greeter"}),
        data={"name": "Alice"}))
    replied.wait(30)
    child = CoreV1Api(api).read_namespaced_config_map("alice-reply", "default")
    owner = child.metadata.owner_references[0].name
    print(child.data["reply"], "- owned by", owner)
    stop.set()
    runner.join(5)
