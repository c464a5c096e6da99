"""SharedIndexInformer throughput (run with ``make bench-micro``).

The embedded API server runs in its own process and creates N configmaps as fast as it
can (``/__control/load``); one informer in this process watches them with 1 or 10
counting handlers. Reported: events per second from the start of the load until every
handler has seen all N adds (server writes, HTTP streaming, decoding, DeltaFIFO, indexer
and fan-out included).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers import new_shared_informer_factory
from client_cache.testing.apiserver import EmbeddedApiServerProcess


def run_once(server: EmbeddedApiServerProcess, namespace: str, count: int,
             handlers: int) -> float:
    factory = new_shared_informer_factory(server.api_client(), 0)
    informer = factory.core().v1().config_maps().informer()
    lock = threading.Lock()
    remaining = [handlers]
    done = threading.Event()

    def counter() -> Any:
        seen = [0]

        def on_add(obj: Any) -> None:
            if obj["metadata"]["namespace"] != namespace:
                return
            seen[0] += 1
            if seen[0] == count:
                with lock:
                    remaining[0] -= 1
                    if remaining[0] == 0:
                        done.set()

        return on_add

    for _ in range(handlers):
        informer.add_event_handler(ResourceEventHandlerFuncs(add_func=counter()))
    stop = threading.Event()
    factory.start(stop)
    factory.wait_for_cache_sync(stop)
    start = time.perf_counter()
    server.control("load", count=count, namespace=namespace)
    finished = done.wait(300)
    elapsed = time.perf_counter() - start
    stop.set()
    factory.shutdown(5)
    if not finished:
        raise RuntimeError("the handlers did not see every event")
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        print(f"SharedIndexInformer throughput: {args.events} configmap adds per run, "
              f"{args.repeats} runs")
        for handlers in (1, 10):
            rates = [run_once(server, f"bench-{handlers}-{i}", args.events, handlers)
                     for i in range(args.repeats)]
            print(f"  {handlers:>2} handler(s): {statistics.median(rates):>9,.0f} events/s"
                  f"   (min {min(rates):,.0f}, max {max(rates):,.0f})")


if __name__ == "__main__":
    main()
