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
from client_cache.testing.apiserver import EmbeddedApiServer

REPO = Path(__file__).resolve().parent.parent


def test_the_generated_module_is_current() -> None:
    if kubernetes.__version__ != typed_module.GENERATED_FROM:
        pytest.skip(f"generated from kubernetes {typed_module.GENERATED_FROM}, "
                    f"{kubernetes.__version__} installed")
    result = subprocess.run([sys.executable, str(REPO / "docs" / "gen_typed.py"), "--check"],
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
