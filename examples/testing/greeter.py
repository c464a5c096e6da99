"""The controller under test (a user's own code): for each ConfigMap labelled
``app=greeter`` it applies a child ConfigMap ``<name>-reply`` owned by it."""

from typing import Any

from client_cache import GroupVersionResource
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.runtime import Action, Controller, apply, set_controller_reference

CONFIGMAPS = GroupVersionResource("", "v1", "configmaps")


def greeter(api: Any) -> tuple[Controller[Any], Any]:
    """The controller and its reconcile, on ``api`` (any API client)."""
    def reconcile(parent: Any, ctx: Any) -> Action:
        reply = {"metadata": {"name": parent["metadata"]["name"] + "-reply",
                              "namespace": parent["metadata"]["namespace"]},
                 "data": {"reply": "hello, " + parent["data"]["name"]}}
        set_controller_reference(parent, reply, kind="ConfigMap", api_version="v1")
        apply(api, CONFIGMAPS, reply, field_manager="greeter", force=True)
        return Action.await_change()

    def greeters_only(options: Any) -> None:
        options.label_selector = "app=greeter"

    factory = new_shared_informer_factory_with_options(
        api, 0, SharedInformerFactoryOptions(tweak_list_options=greeters_only))
    return Controller(factory, CONFIGMAPS), reconcile
