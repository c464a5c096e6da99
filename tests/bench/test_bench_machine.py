"""The benchmark's thread hand-off probe (``bench/machine.py``)."""

from __future__ import annotations

import threading

import pytest

from bench import machine
from bench.machine import answer, handoff_round_trip_us


def test_a_round_trip_takes_time_and_its_thread_ends() -> None:
    us = handoff_round_trip_us(rounds=200, tries=3)
    assert 0 < us < 1e6  # a round trip is two wake-ups: more than nothing, under a second
    assert not [t for t in threading.enumerate() if t.name == "bench-handoff-probe"]


@pytest.mark.parametrize(("rounds", "tries"), [(0, 3), (10, 0), (-1, 1)])
def test_nothing_to_measure_is_refused(rounds: int, tries: int) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        handoff_round_trip_us(rounds=rounds, tries=tries)


def test_the_answering_side_gives_up_when_nobody_pings() -> None:
    ping, pong = threading.Lock(), threading.Lock()
    ping.acquire()  # held and never released: the measuring side is gone
    pong.acquire()  # held by the measuring side until answered, as in the probe
    assert answer(ping, pong, 10, wait=0.05) == 0
    ping.release()  # one ping, then silence: one round answered
    assert answer(ping, pong, 10, wait=0.05) == 1
    assert not pong.locked()  # the one answer released it


def test_the_measuring_side_raises_when_nobody_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "answer", lambda ping, pong, rounds: 0)  # answers nothing
    with pytest.raises(RuntimeError, match="stopped answering"):
        handoff_round_trip_us(rounds=10, tries=1)
    assert not [t for t in threading.enumerate() if t.name == "bench-handoff-probe"]
