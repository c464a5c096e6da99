"""The factory's typed accessors, generated from the installed kubernetes package's API
classes: current, named as client-go names them, checked by mypy, helpful when misspelt."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import kubernetes
import pytest
from kubernetes.client import CoreV1Api, V1ConfigMap

from client_cache.errors import ClientCacheError
from client_cache.informers import new_shared_informer_factory
from client_cache.informers import typed as typed_module
from client_cache.informers.accessors import ModelNotInstalledError, TypedResource
from client_cache.informers.metadata import new_metadata_shared_informer_factory
from client_cache.testing.apiserver import EmbeddedApiServer

REPO = Path(__file__).resolve().parents[2]


def test_the_generated_module_is_current() -> None:
    if kubernetes.__version__ != typed_module.GENERATED_FROM:
        pytest.skip(f"generated from kubernetes {typed_module.GENERATED_FROM}, "
                    f"{kubernetes.__version__} installed")
    result = subprocess.run([sys.executable, str(REPO / "tools" / "gen_typed.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_names_follow_client_go() -> None:
    factory = new_shared_informer_factory(None, 0)
    core = factory.core().v1()
    assert {"config_maps", "pods", "persistent_volume_claims", "endpoints",
            "service_accounts", "events"} <= set(core.RESOURCES)
    assert "network_policies" in factory.networking().v1().RESOURCES
    assert "ingress_classes" in factory.networking().v1().RESOURCES
    assert "cluster_role_bindings" in factory.rbac().v1().RESOURCES
    assert "horizontal_pod_autoscalers" in factory.autoscaling().v2().RESOURCES
    groups = [name for name in dir(typed_module.TypedGroups) if not name.startswith("_")]
    assert len(groups) >= 20 and {"core", "apps", "batch", "rbac", "storage", "policy",
                                  "networking", "coordination", "events"} <= set(groups)
    assert "config_maps" in dir(core) and "pods" in dir(core)


def test_a_misspelt_accessor_lists_the_valid_ones() -> None:
    core = new_shared_informer_factory(None, 0).core().v1()
    with pytest.raises(AttributeError, match=r"'podz'; valid: .*config_maps.*pods"):
        core.podz()  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="valid: "):
        core.resource("nope")


@pytest.mark.slow  # mypy over the package: ~13 s with the lint step's cache
def test_mypy_catches_a_misspelt_accessor(tmp_path: Path) -> None:
    script = tmp_path / "typo.py"
    script.write_text(
        "from client_cache.informers import new_shared_informer_factory\n"
        "factory = new_shared_informer_factory(None, 0)\n"
        "factory.core().v1().config_maps()\n"
        "factory.rbac().v1().cluster_roles()\n"
        "factory.core().v1().podz()\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict",
                             str(script)], capture_output=True, text=True, check=False,
                            cwd=REPO)
    assert result.returncode == 1, result.stdout
    assert result.stdout.count("error:") == 1
    assert 'typo.py:5: error: "CoreV1" has no attribute "podz"' in result.stdout


@pytest.mark.slow  # mypy over the package: ~13 s with the lint step's cache
def test_mypy_types_listers_and_handlers(tmp_path: Path) -> None:
    """Objects are typed through the lister (the model with ``models=True``, a read-only
    mapping otherwise), and a handler for another type is refused where it is added."""
    script = tmp_path / "typed.py"
    script.write_text(
        "from typing import Any\n"
        "from kubernetes.client import V1Node, V1Pod\n"
        "from client_cache.controller import ResourceEventHandlerFuncs\n"
        "from client_cache.informers import new_shared_informer_factory\n"
        "from client_cache.store import DeletedFinalStateUnknown\n"
        "factory = new_shared_informer_factory(None, 0)\n"
        "pods = factory.core().v1().pods(models=True)\n"
        "reveal_type(pods.lister().by_namespace('ns').get('web'))\n"
        "reveal_type(factory.core().v1().pods().lister().get('ns/web'))\n"
        "reveal_type(pods.lister().list)\n"
        "def on_pod(pod: V1Pod) -> None: ...\n"
        "def on_node(node: V1Node) -> None: ...\n"
        "def gone(pod: V1Pod | DeletedFinalStateUnknown) -> None: ...\n"
        "pods.informer().add_event_handler(ResourceEventHandlerFuncs(add_func=on_pod,\n"
        "                                                            delete_func=gone))\n"
        "pods.informer().add_event_handler(ResourceEventHandlerFuncs(add_func=on_node))\n",
        encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mypy", "--strict", str(script)],
                            capture_output=True, text=True, check=False, cwd=REPO)
    out = result.stdout
    assert 'typed.py:8: note: Revealed type is "kubernetes.client.models.v1_pod.V1Pod"' \
        in out, out
    assert 'typed.py:9: note: Revealed type is "typing.Mapping[str, Any]"' in out, out
    assert "list[kubernetes.client.models.v1_pod.V1Pod]" in out, out
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "typed.py:16: error:" in errors[0], out
    assert '"Callable[[V1Node], None]"; expected "Callable[[V1Pod], None] | None"' \
        in errors[0], out


def test_every_accessor_model_exists() -> None:
    """``models=True`` looks the model up in ``kubernetes.client``: every generated name
    must be there (kinds two groups share carry the group's prefix there)."""
    import kubernetes.client as models  # noqa: PLC0415

    gone = [(cls.__name__, name, resource.model)
            for cls in vars(typed_module).values()
            if isinstance(cls, type) and issubclass(cls, typed_module.GroupVersion)
            for name, resource in cls.RESOURCES.items()
            if not hasattr(models, resource.model)]
    assert not gone


def test_a_metadata_factory_refuses_every_typed_accessor() -> None:
    """Go's metadata factory has ForResource only; a typed accessor would expect its kind
    where a metadata watch sends PartialObjectMetadata (only four groups were refused)."""
    factory = new_metadata_shared_informer_factory(None, 0)
    groups = [name for name in vars(typed_module.TypedGroups) if not name.startswith("_")]
    for group in groups:
        with pytest.raises(AttributeError, match="for_resource"):
            getattr(factory, group)()
    assert len(groups) >= 20


def test_generated_accessors_inform(server: EmbeddedApiServer) -> None:
    api = server.api_client()
    CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    factory = new_shared_informer_factory(api, 0)
    models = factory.core().v1().config_maps(models=True)
    legacy = factory.core().v1().configmaps  # the REST plural still works, as an alias
    with factory.running(timeout=10):
        cached = models.lister().by_namespace("default").get("c")
        assert isinstance(cached, V1ConfigMap) and cached.metadata.name == "c"
        # one informer per resource and factory, in the mode asked first
        assert legacy(models=True).informer() is models.informer()
        with pytest.raises(ClientCacheError, match="gives V1ConfigMap, not wire dicts"):
            legacy()
    api.close()


def test_models_the_installed_kubernetes_lacks_name_the_version_that_has_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 60: with an older kubernetes package (the declared floor is older than the
    one the accessors come from), models=True for a model it lacks says which version
    has it, instead of a bare AttributeError; wire dicts still work."""
    core_v1 = typed_module.CoreV1
    pods = core_v1.RESOURCES["pods"]
    # the model of a resource added after the installed version (one that lacks it)
    monkeypatch.setitem(core_v1.RESOURCES, "pods", TypedResource(
        pods.plural, pods.singular, "V1PodFromTheFuture", pods.namespaced))
    monkeypatch.setattr(kubernetes, "__version__", "29.0.0")
    with EmbeddedApiServer() as server:
        factory = new_shared_informer_factory(server.api_client(), 0)
        with pytest.raises(ModelNotInstalledError) as raised:
            factory.core().v1().pods(models=True)
        message = str(raised.value)
        assert "V1PodFromTheFuture" in message and "(29.0.0)" in message
        assert f"kubernetes>={typed_module.GENERATED_FROM}" in message
        assert isinstance(raised.value, ClientCacheError)
        assert factory.core().v1().pods().resource.resource == "pods"  # dicts: fine
