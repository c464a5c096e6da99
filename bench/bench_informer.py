"""SharedIndexInformer throughput (run with ``make bench``).

The embedded API server runs in its own process and creates N configmaps as fast as it
can (``/__control/load``); one informer in this process watches them with 1 or 10
counting handlers. Reported: events per second from the start of the load until every
handler has seen all N adds (server writes, HTTP streaming, decoding, DeltaFIFO, indexer
and fan-out included).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any

from kubernetes.client import ApiClient, Configuration

from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.informers import new_shared_informer_factory


def run_once(url: str, namespace: str, count: int, handlers: int) -> float:
    config = Configuration()
    config.host = url
    factory = new_shared_informer_factory(ApiClient(config), 0)
    informer = factory.core().v1().configmaps().informer()
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
    urllib.request.urlopen(
        urllib.request.Request(f"{url}/__control/load?count={count}&namespace={namespace}",
                               method="POST")).read()
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
    proc = subprocess.Popen([sys.executable, "-m", "client_cache.testing.apiserver",
                             "--bookmark-interval", "60"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        print(f"SharedIndexInformer throughput: {args.events} configmap adds per run, "
              f"{args.repeats} runs")
        for handlers in (1, 10):
            rates = [run_once(url, f"bench-{handlers}-{i}", args.events, handlers)
                     for i in range(args.repeats)]
            print(f"  {handlers:>2} handler(s): {statistics.median(rates):>9,.0f} events/s"
                  f"   (min {min(rates):,.0f}, max {max(rates):,.0f})")
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()
