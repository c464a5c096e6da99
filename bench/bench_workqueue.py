"""Workqueue benchmarks (run with ``make bench-micro``).

* throughput: N keys go through add -> get -> done with 1 and with 8 worker threads, on the
  plain queue and on the rate-limiting queue (the controller setup); median of several runs;
* idle cost: 8 workers blocked in ``get`` on an empty rate-limiting queue for a few seconds;
  reports the process CPU time used as a percentage of one core (the target is < 1 %).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

from client_cache import workqueue
from client_cache.workqueue import RateLimitingQueueConfig, new_rate_limiting_queue_with_config


def run_pool(queue: Any, keys: int, workers: int) -> float:
    remaining = [keys]
    lock = threading.Lock()
    finished = threading.Event()

    def worker() -> None:
        while True:
            item, shutdown = queue.get()
            if shutdown:
                return
            queue.done(item)
            with lock:
                remaining[0] -= 1
                if remaining[0] == 0:
                    finished.set()

    threads = [threading.Thread(target=worker, name=f"bench-worker-{i}", daemon=True)
               for i in range(workers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for i in range(keys):
        queue.add(f"ns/key-{i}")
    finished.wait()
    elapsed = time.perf_counter() - start
    queue.shut_down()
    for t in threads:
        t.join()
    return keys / elapsed


def throughput(kind: str, keys: int, workers: int, repeats: int) -> None:
    rates = []
    for _ in range(repeats):
        if kind == "plain":
            queue: Any = workqueue.new()
        else:
            queue = new_rate_limiting_queue_with_config(
                workqueue.default_controller_rate_limiter(),
                RateLimitingQueueConfig(name="bench"),
            )
        rates.append(run_pool(queue, keys, workers))
    print(
        f"{kind:<14} add+get+done, {workers} worker(s): {statistics.median(rates):>10,.0f} ops/s"
        f"   (min {min(rates):,.0f}, max {max(rates):,.0f}, n={repeats})"
    )


def idle_cpu(seconds: float) -> None:
    queue: Any = new_rate_limiting_queue_with_config(
        workqueue.default_controller_rate_limiter(), RateLimitingQueueConfig(name="idle")
    )
    threads = [
        threading.Thread(target=queue.get, name=f"bench-idle-{i}", daemon=True) for i in range(8)
    ]
    for t in threads:
        t.start()
    time.sleep(0.2)  # let the workers block
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    queue.shut_down()
    for t in threads:
        t.join()
    print(
        f"idle: 8 workers blocked in get for {wall:.1f}s used {cpu * 1000:.1f} ms CPU "
        f"= {100 * cpu / wall:.3f}% of one core"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--idle-seconds", type=float, default=3.0)
    args = parser.parse_args()
    print(f"client_cache workqueue benchmarks: {args.keys} keys, {args.repeats} runs each")
    for kind in ("plain", "rate-limiting"):
        for workers in (1, 8):
            throughput(kind, args.keys, workers, args.repeats)
    idle_cpu(args.idle_seconds)


if __name__ == "__main__":
    main()
