"""A user's tests of greeter.py: end to end on the embedded server and the real
one (``kube_api``), then through the faults a real cluster has
(``kube_server``)."""


from greeter import greeter
from kubernetes.client import CoreV1Api, V1ConfigMap, V1ObjectMeta
from kubernetes.watch import Watch


def create(api, name):
    CoreV1Api(api).create_namespaced_config_map("default", V1ConfigMap(
        metadata=V1ObjectMeta(name=name, labels={"app": "greeter"}),
        data={"name": name}))


def reply_of(api, name):
    """Waits for the reply ConfigMap (a watch: woken, no polling)."""
    configmaps = CoreV1Api(api).list_namespaced_config_map
    for event in Watch().stream(configmaps, "default",
                                field_selector=f"metadata.name={name}-reply",
                                timeout_seconds=30):
        return event["object"].data["reply"]
    raise AssertionError(f"no reply to {name}")


def test_every_greeter_gets_a_reply(kube_api, run_controller):
    controller, reconcile = greeter(kube_api)
    running = run_controller(controller, reconcile)
    create(kube_api, "alice")
    assert reply_of(kube_api, "alice") == "hello, alice"
    assert running.stop().reconciles >= 1


def test_replies_survive_a_410_a_dropped_watch_and_a_conflict(kube_server,
                                                              run_controller):
    api = kube_server.api_client()
    controller, reconcile = greeter(api)
    running = run_controller(controller, reconcile)
    create(api, "bob")
    assert reply_of(api, "bob") == "hello, bob"
    kube_server.send_watch_error(410)  # the watch expired: the informer relists
    kube_server.abort_watches()        # a dropped connection: it watches again
    kube_server.fail_next(1, 409, method="PATCH")  # the next apply conflicts
    create(api, "carol")
    assert reply_of(api, "carol") == "hello, carol"
    assert running.stop().errors == 1  # the conflict, and nothing else, failed
