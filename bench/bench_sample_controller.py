"""Kubernetes' sample-controller as a user runs it: the runtime port
(``examples/sample_controller.py``, default settings and with a 20/s client limit) against
the plain port (``examples/sample_controller_plain.py``, Go's ``controller.go``), on the
embedded server and on the real kube-apiserver (when built): the seconds from creating
200 Foos (8 threads) until every Foo has its owned Deployment at the right replicas and
its status updated, median of ``--rounds`` (each in a fresh namespace, with the
Deployment-controller stand-in of the demo making Deployments available).

Writes ``bench/results/sample-controller.json`` and ``.md``.

    python -m bench.bench_sample_controller [--rounds 3] [--foos 200]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes.client import AppsV1Api, CoreV1Api, CustomObjectsApi

from bench.contenders import api_servers, save_results

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str) -> Any:
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    return importlib.import_module(name)


def converged(api: Any, ns: str, foos: int) -> bool:
    apis = example("_sample_apis")
    items = CustomObjectsApi(api).list_namespaced_custom_object(
        apis.GROUP, apis.VERSION, ns, apis.FOOS.resource)["items"]
    deployments = {d.metadata.name: d for d in AppsV1Api(api).list_namespaced_deployment(
        ns).items}
    if len(items) < foos:
        return False
    for foo in items:
        spec = foo["spec"]
        d = deployments.get(spec["deploymentName"])
        if (d is None or not d.metadata.owner_references
                or d.spec.replicas != spec["replicas"]
                or (foo.get("status") or {}).get("availableReplicas") != spec["replicas"]):
            return False
    return True


_namespaces = iter(range(10**6))


def one_round(new_client: Callable[[], Any], variant: str, foos: int) -> float:
    """Seconds for ``foos`` new Foos to converge under ``variant``."""
    apis = example("_sample_apis")
    api = new_client()
    ns = f"bench-sc-{next(_namespaces)}-{int(time.time())}"
    CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
    apis.install_crd(api)
    stop = threading.Event()
    clients = [new_client(), new_client()]
    stand_in = example("_sample_demo").play_deployment_controller(clients[0], stop, ns)
    if variant == "plain":
        target, options = example("sample_controller_plain").run, {}
    else:
        target = example("sample_controller").run
        options = {"client_qps": 20.0} if variant == "runtime, 20/s limit" else {}
    runner = threading.Thread(target=target, args=(clients[1], stop),
                              kwargs={"namespace": ns, **options}, daemon=True,
                              name="bench-sample-controller")
    runner.start()
    objects = CustomObjectsApi(api)
    time.sleep(1.0)  # the controller's caches sync (not part of the measured time)
    started = time.monotonic()
    with ThreadPoolExecutor(8, thread_name_prefix="bench-create") as pool:
        list(pool.map(lambda i: objects.create_namespaced_custom_object(
            apis.GROUP, apis.VERSION, ns, apis.FOOS.resource,
            apis.foo(f"foo-{i}", f"deploy-{i}", 1 + i % 3)), range(foos)))
    while not converged(api, ns, foos):
        if time.monotonic() - started > 300:
            raise RuntimeError(f"{variant}: not converged in 300 s")
        time.sleep(0.05)
    took = time.monotonic() - started
    stop.set()
    runner.join(30)
    stand_in.join(30)
    for client in (api, *clients):
        client.close()
    return took


VARIANTS = ("plain", "runtime", "runtime, 20/s limit")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--foos", type=int, default=200)
    args = parser.parse_args()
    results: dict[str, Any] = {"foos": args.foos, "rounds": args.rounds, "servers": {}}
    with api_servers() as found:
        for server, new_client in found:
            runs: dict[str, list[float]] = {v: [] for v in VARIANTS}
            for _ in range(args.rounds):  # alternated: each round runs every variant
                for variant in VARIANTS:
                    runs[variant].append(one_round(new_client, variant, args.foos))
                    print(f"{server} {variant}: {runs[variant][-1]:.2f} s", file=sys.stderr)
            results["servers"][server] = {v: {"runs": r, "median": statistics.median(r)}
                                          for v, r in runs.items()}
    lines = [f"# Sample-controller: {args.foos} Foos created, seconds until converged "
             f"(median of {args.rounds})", "",
             "| server | " + " | ".join(VARIANTS) + " | runtime / plain |",
             "|---|" + "---|" * (len(VARIANTS) + 1)]
    for server, by in results["servers"].items():
        ratio = by["runtime"]["median"] / by["plain"]["median"]
        lines.append(f"| {server} | " + " | ".join(f"{by[v]['median']:.2f}" for v in VARIANTS)
                     + f" | {ratio:.2f} |")
    save_results("sample-controller", results, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
