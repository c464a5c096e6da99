"""Reflector benchmarks (run with ``make bench-micro``).

The embedded API server runs in its own process and generates pod-sized objects (about
3 KB of JSON each). Measured in this process, with a plain Store as target:

* initial sync: LIST (paged by the reflector's rules) and store.replace of N pods;
* watch: after the sync, the server creates N more pods as fast as it can; events per
  second from the start of that load until the store holds all of them.
"""

from __future__ import annotations

import argparse
import threading
import time

from client_cache import meta_namespace_key_func, new_store
from client_cache.api.schema import GroupVersionResource
from client_cache.listwatch import new_list_watch_from_client
from client_cache.reflector import Reflector, ReflectorOptions
from client_cache.testing.apiserver import EmbeddedApiServerProcess


def wait_for_server_rv(server: EmbeddedApiServerProcess, rv: int) -> None:
    while int(server.control("state")["resourceVersion"]) < rv:
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=10_000)
    args = parser.parse_args()
    with EmbeddedApiServerProcess(bookmark_interval=60) as server:
        server.control("load", count=args.pods, kind="pods", namespace="initial")
        wait_for_server_rv(server, args.pods + 1)
        store = new_store(meta_namespace_key_func)
        lw = new_list_watch_from_client(server.api_client(),
                                        GroupVersionResource("", "v1", "pods"))
        reflector = Reflector(lw, None, store, ReflectorOptions(name="bench"))
        stop = threading.Event()
        start = time.perf_counter()
        thread = threading.Thread(target=reflector.run, args=(stop,), name="bench-reflector",
                                  daemon=True)
        thread.start()
        while len(store.list_keys()) < args.pods:
            time.sleep(0.001)
        synced = time.perf_counter() - start
        print(f"reflector initial sync of {args.pods} pod-sized objects: {synced:.2f}s "
              f"({args.pods / synced:,.0f} objects/s)")
        start = time.perf_counter()
        server.control("load", count=args.pods, kind="pods", namespace="watched")
        while len(store.list_keys()) < 2 * args.pods:
            time.sleep(0.001)
        elapsed = time.perf_counter() - start
        print(f"reflector watch into a Store: {args.pods} pod-sized ADDED events in "
              f"{elapsed:.2f}s = {args.pods / elapsed:,.0f} events/s (server generating in its "
              "own process)")
        stop.set()
        thread.join(2)


if __name__ == "__main__":
    main()
