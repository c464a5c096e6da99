"""What the benchmark's machine charges for a thread hand-off, recorded beside the results.

An informer moves every event across threads (reflector, informer, one delivery thread
per handler), and under CPython's interpreter lock each move that finds the receiving
thread asleep costs a kernel wake-up and a switch. How much that costs depends on the
machine far more than on the library: on the virtual machines this project has run on,
two Python threads waking each other took from about 10 us to over 100 us a round trip.
S3 (one delivery thread per handler) follows it closely, so the report records it,
measured three times in a run (its start, before the replay source, its end), the way
each row records the load.

``handoff_round_trip_us`` has two threads take turns through two locks (each wakes the
other and sleeps until woken back), ``rounds`` times; it returns the median of ``tries``
such runs in microseconds per round trip (two wake-ups). Neither side waits more than a
second for the other, so the probe's thread ends within about a second whatever happens
to the measuring one.
"""

from __future__ import annotations

import statistics
import threading
import time

__all__ = ["answer", "handoff_round_trip_us"]


_WAIT = 1.0  # seconds either side waits for the other before giving up


def answer(ping: threading.Lock, pong: threading.Lock, rounds: int,
           wait: float = _WAIT) -> int:
    """The probe's other side: ``rounds`` times, wait for ``ping`` and release ``pong``.
    Gives up when ``ping`` stays held for ``wait`` seconds (the measuring side is gone);
    returns the rounds answered."""
    for done in range(rounds):
        if not ping.acquire(timeout=wait):
            return done
        pong.release()
    return rounds


def _one_run(rounds: int) -> float:
    ping, pong = threading.Lock(), threading.Lock()
    ping.acquire()
    pong.acquire()
    other = threading.Thread(target=answer, args=(ping, pong, rounds),
                             name="bench-handoff-probe", daemon=True)
    other.start()
    try:
        began = time.perf_counter()
        for _ in range(rounds):
            ping.release()
            if not pong.acquire(timeout=_WAIT):
                raise RuntimeError("the hand-off probe's other thread stopped answering")
        elapsed = time.perf_counter() - began
    finally:
        other.join(_WAIT + 1.0)
    return elapsed / rounds * 1e6


def handoff_round_trip_us(rounds: int = 5000, tries: int = 3) -> float:
    """Median over ``tries`` runs of a two-thread lock ping-pong, in microseconds per
    round trip. ``rounds`` and ``tries`` must be positive."""
    if rounds < 1 or tries < 1:
        raise ValueError(f"rounds and tries must be positive, got {rounds} and {tries}")
    return statistics.median(_one_run(rounds) for _ in range(tries))
