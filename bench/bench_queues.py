"""Micro-benchmarks of the storage and queue layer (run with ``make bench-micro``).

Each case runs a fixed amount of work several times and reports the median rate and the
min-max spread. Objects are small wire-form pod dicts keyed by ``meta_namespace_key_func``.
These are single-thread figures of the data structures alone; the end-to-end suite (informer
over HTTP, side by side with other clients) is built separately.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from client_cache import (
    NAMESPACE_INDEX,
    meta_namespace_index_func,
    meta_namespace_key_func,
    new_indexer,
)
from client_cache.delta_fifo import DeltaFIFOOptions, new_delta_fifo_with_options
from client_cache.the_real_fifo import new_real_fifo


def pods(n: int, namespaces: int = 20) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{i}",
                "namespace": f"ns-{i % namespaces}",
                "resourceVersion": str(i + 1),
                "labels": {"app": f"app-{i % 7}"},
            },
        }
        for i in range(n)
    ]


def measure(name: str, ops: int, run: Callable[[], None], repeats: int) -> None:
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        rates.append(ops / (time.perf_counter() - start))
    print(
        f"{name:<44} {statistics.median(rates):>12,.0f} ops/s"
        f"   (min {min(rates):,.0f}, max {max(rates):,.0f}, n={repeats})"
    )


def delta_fifo_add_pop(objs: list[dict[str, Any]]) -> Callable[[], None]:
    def run() -> None:
        fifo = new_delta_fifo_with_options(DeltaFIFOOptions())
        noop = lambda obj, initial: None  # noqa: E731
        for obj in objs:
            fifo.add(obj)
            fifo.pop(noop)

    return run


def delta_fifo_batch(objs: list[dict[str, Any]]) -> Callable[[], None]:
    def run() -> None:
        fifo = new_delta_fifo_with_options(DeltaFIFOOptions())
        noop = lambda obj, initial: None  # noqa: E731
        for obj in objs:
            fifo.add(obj)
        for _ in objs:
            fifo.pop(noop)

    return run


def delta_fifo_informer_like(objs: list[dict[str, Any]]) -> Callable[[], None]:
    """Replace (initial list) into a DeltaFIFO whose pops update a namespace-indexed
    indexer: the informer's data path without the network and handlers."""

    def run() -> None:
        indexer = new_indexer(meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func})
        fifo = new_delta_fifo_with_options(
            DeltaFIFOOptions(known_objects=indexer, emit_delta_type_replaced=True)
        )

        def process(deltas: Any, initial: bool) -> None:
            for d in deltas:
                indexer.update(d.object)

        fifo.replace(objs, "1")
        for _ in objs:
            fifo.pop(process)

    return run


def real_fifo_add_pop(objs: list[dict[str, Any]]) -> Callable[[], None]:
    def run() -> None:
        fifo = new_real_fifo(meta_namespace_key_func, new_indexer(meta_namespace_key_func, {}))
        noop = lambda obj, initial: None  # noqa: E731
        for obj in objs:
            fifo.add(obj)
            fifo.pop(noop)

    return run


def delta_fifo_two_threads(objs: list[dict[str, Any]]) -> Callable[[], None]:
    def run() -> None:
        fifo = new_delta_fifo_with_options(DeltaFIFOOptions())
        popped = [0]
        noop = lambda obj, initial: None  # noqa: E731

        def consume() -> None:
            while popped[0] < len(objs):
                fifo.pop(noop)
                popped[0] += 1

        consumer = threading.Thread(target=consume, name="bench-consumer", daemon=True)
        consumer.start()
        for obj in objs:
            fifo.add(obj)
        consumer.join()

    return run


def indexer_ops(objs: list[dict[str, Any]]) -> Callable[[], None]:
    def run() -> None:
        indexer = new_indexer(meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func})
        for obj in objs:
            indexer.add(obj)
        for obj in objs:
            indexer.update(obj)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=50_000, help="objects per case")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    objs = pods(args.n)
    print(f"client_cache queue micro-benchmarks: {args.n} objects, {args.repeats} runs each")
    measure("DeltaFIFO add+pop, one thread", args.n, delta_fifo_add_pop(objs), args.repeats)
    measure("DeltaFIFO add all, then pop all", args.n, delta_fifo_batch(objs), args.repeats)
    measure("DeltaFIFO add / pop on two threads", args.n, delta_fifo_two_threads(objs),
            args.repeats)
    measure("DeltaFIFO replace+pop into indexer", args.n, delta_fifo_informer_like(objs),
            args.repeats)
    measure("RealFIFO add+pop, one thread", args.n, real_fifo_add_pop(objs), args.repeats)
    measure("Indexer add+update (namespace index)", 2 * args.n, indexer_ops(objs), args.repeats)


if __name__ == "__main__":
    main()
