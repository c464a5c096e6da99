"""A pop on an empty queue waits on a condition variable: it burns no CPU while blocked.

Measured with the blocked thread's own CPU clock (``pthread_getcpuclockid``) over a 0.3 s
window; the window is the measurement, not a synchronisation (the thread is released by
``close()`` and joined).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from client_cache import FIFOClosedError, HeapClosedError, new_fifo, new_heap
from client_cache.delta_fifo import DeltaFIFOOptions, new_delta_fifo_with_options
from client_cache.the_real_fifo import new_real_fifo
from tests.fixtures import fifo_key, known

WINDOW = 0.3
MAX_CPU = 0.02  # seconds of CPU the blocked thread may use in the window


def make(kind: str) -> Any:
    if kind == "delta":
        return new_delta_fifo_with_options(DeltaFIFOOptions(key_function=fifo_key))
    if kind == "fifo":
        return new_fifo(fifo_key)
    if kind == "real":
        return new_real_fifo(fifo_key, known())
    return new_heap(fifo_key, lambda a, b: a.val < b.val)


@pytest.mark.skipif(not hasattr(time, "pthread_getcpuclockid"), reason="needs per-thread clocks")
@pytest.mark.parametrize("kind", ["delta", "fifo", "real", "heap"])
def test_blocked_pop_uses_no_cpu(kind: str) -> None:
    queue = make(kind)
    entered = threading.Event()
    ended: list[BaseException] = []

    def blocked() -> None:
        entered.set()
        try:
            if kind == "heap":
                queue.pop()
            else:
                queue.pop(lambda obj, initial: None)
        except (FIFOClosedError, HeapClosedError) as err:
            ended.append(err)

    thread = threading.Thread(target=blocked, name=f"test-idle-{kind}", daemon=True)
    thread.start()
    assert entered.wait(5)
    assert thread.ident is not None
    clock = time.pthread_getcpuclockid(thread.ident)
    before = time.clock_gettime(clock)
    time.sleep(WINDOW)
    used = time.clock_gettime(clock) - before
    queue.close()
    thread.join(1.0)
    assert not thread.is_alive() and len(ended) == 1
    assert used < MAX_CPU, f"blocked pop used {used:.4f}s CPU in {WINDOW}s"
