"""The one-sleeper wake-up (client_cache.util._parking.Parker)."""

from __future__ import annotations

import threading

from client_cache.util._parking import Parker


def test_park_sleeps_until_unpark() -> None:
    parker = Parker()
    parked, woke = threading.Event(), threading.Event()

    def sleeper() -> None:
        parked.set()
        if parker.park(10):
            woke.set()

    thread = threading.Thread(target=sleeper, name="test-sleeper")
    thread.start()
    assert parked.wait(5)
    assert not woke.is_set()  # nothing woke it yet: it is still in park (or about to be)
    parker.unpark()
    assert woke.wait(5)
    thread.join(1)
    assert not thread.is_alive()


def test_a_wake_up_given_before_park_is_kept_once() -> None:
    parker = Parker()
    parker.unpark()
    parker.unpark()  # a second one while one is pending: no error, not counted twice
    assert parker.park(0) is True
    assert parker.park(0) is False


def test_park_gives_up_after_its_timeout() -> None:
    assert Parker().park(0.01) is False
