"""Types reach the reconcile (issue 60): ``mypy --strict``, run on user scripts outside the
repository against the installed package (here the editable install; ``make
package-check`` runs the same scripts against the wheel), finds the documented quick
starts typed through, with no ``Any`` where the library knows the type, and a reconcile
written for the wrong type is an error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GOOD = '''
from dataclasses import dataclass
from kubernetes.client import V1Pod
from client_cache import workqueue
from client_cache.informers import new_shared_informer_factory
from client_cache.crd import CustomResource, custom_resource
from client_cache.runtime import Action, Context, Controller
from client_cache.testing.apiserver import EmbeddedApiServer
import msgspec


@dataclass
class MyData:
    name: str


class GizmoSpec(msgspec.Struct):
    size: int


@custom_resource(group="example.com", version="v1", kind="Gizmo")
class Gizmo(CustomResource):
    spec: GizmoSpec


def reconcile_gizmo(gizmo: Gizmo, ctx: Context[None]) -> Action:
    reveal_type(gizmo.spec.size)
    return Action.await_change()


def reconcile(pod: V1Pod, ctx: Context[MyData]) -> Action:
    reveal_type(ctx.data)
    return Action.await_change()


def runtime() -> None:
    with EmbeddedApiServer() as server:
        factory = new_shared_informer_factory(server.api_client(), 0)
        pods = factory.core().v1().pods(models=True)
        reveal_type(pods.lister().by_namespace("default").get("web-0"))
        controller = Controller(factory, pods)
        reveal_type(controller)
        controller.run(reconcile, data=MyData("x"))
        dicts = Controller(factory, factory.core().v1().config_maps())
        reveal_type(dicts)
        queue = workqueue.new_rate_limiting_queue(workqueue.default_controller_rate_limiter(),
                                                  item_type=str)
        reveal_type(queue.get()[0])
        gizmos = Controller(factory, Gizmo)
        reveal_type(gizmos)
        gizmos.run(reconcile_gizmo)
'''

BAD = '''
from typing import Any
from kubernetes.client import V1Node
from client_cache.informers import new_shared_informer_factory
from client_cache.runtime import Action, Context, Controller


def reconcile(node: V1Node, ctx: Context[None]) -> Action:
    return Action.await_change()


def wrong(api: Any) -> None:
    factory = new_shared_informer_factory(api, 0)
    Controller(factory, factory.core().v1().pods(models=True)).run(reconcile)
'''

EXPECTED = [
    "int",
    "user_good.MyData",
    "kubernetes.client.models.v1_pod.V1Pod",
    "client_cache.runtime.controller.Controller[kubernetes.client.models.v1_pod.V1Pod]",
    "client_cache.runtime.controller.Controller[typing.Mapping[str, Any]]",
    "str | None",
    "client_cache.runtime.controller.Controller[user_good.Gizmo]",
]


def quick_start() -> str:
    """The README's quick start, as tests/test_docs.py runs it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme.split("<!-- quickstart")[1].split("```python\n", 1)[1].split("```", 1)[0]


def check_user_scripts(python: str, where: Path) -> None:
    """Run ``python -m mypy --strict`` in ``where`` (outside the repository) on the quick
    start and the scripts above; assert what it finds."""
    (where / "user_quickstart.py").write_text(quick_start(), encoding="utf-8")
    (where / "user_good.py").write_text(GOOD, encoding="utf-8")
    (where / "user_bad.py").write_text(BAD, encoding="utf-8")
    result = subprocess.run(
        [python, "-m", "mypy", "--strict", "--cache-dir", str(where / ".mypy_cache"),
         "user_quickstart.py", "user_good.py", "user_bad.py"],
        cwd=where, capture_output=True, text=True, timeout=600, check=False)
    out = result.stdout
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert errors, out  # the bad script must fail
    assert all(line.startswith("user_bad.py:") for line in errors), out
    assert any('Argument 1 to "run" of "Controller"' in line for line in errors), out
    revealed = re.findall(r'user_good\.py:\d+: note: Revealed type is "(.*)"', out)
    assert revealed == EXPECTED, out


def test_mypy_strict_on_user_scripts_outside_the_repo(tmp_path: Path) -> None:
    if ROOT in tmp_path.parents:
        pytest.skip("the temporary directory is inside the repository")
    check_user_scripts(sys.executable, tmp_path)
