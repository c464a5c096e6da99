"""SignalRelay (client_cache.util.signals): a signal, whichever thread the OS hands it to
and whatever lock the main thread holds then, is acted on by the relay's own thread."""

from __future__ import annotations

import logging
import queue
import signal
import threading
from collections.abc import Iterator
from types import FrameType

import pytest

from client_cache.util.signals import SignalRelay

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"),
                                reason="needs signal.pthread_kill (POSIX)")

DEADLINE = 10.0


@pytest.fixture
def before() -> Iterator[queue.Queue[int]]:
    """SIGUSR1 handled by a handler of the test's (what a relay must put back); it
    records the signals it gets. The handler before that is put back afterwards."""
    got: queue.Queue[int] = queue.Queue()

    def handler(signum: int, frame: FrameType | None) -> None:
        got.put(signum)

    previous = signal.signal(signal.SIGUSR1, handler)
    yield got
    signal.signal(signal.SIGUSR1, previous)


def wakeup_fd() -> int:
    fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(fd)
    return fd


def recorder() -> tuple[queue.Queue[tuple[int, str]], SignalRelay]:
    """A relay of SIGUSR1 whose action records the signal and the thread it ran on."""
    got: queue.Queue[tuple[int, str]] = queue.Queue()
    relay = SignalRelay(lambda signum: got.put((signum, threading.current_thread().name)),
                        (signal.SIGUSR1,), name="test")
    return got, relay


def test_a_signal_another_thread_takes_wakes_a_plain_wait_on_the_main_thread(
        before: queue.Queue[int]) -> None:
    done = threading.Event()

    def other() -> None:  # the signal is this thread's: the main thread is not interrupted
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)

    with SignalRelay(lambda _: done.set(), (signal.SIGUSR1,), name="test"):
        thread = threading.Thread(target=other, name="test-signal-taker", daemon=True)
        thread.start()
        assert done.wait(DEADLINE)
        thread.join(DEADLINE)


def test_a_signal_while_the_main_thread_holds_the_events_lock_is_acted_on_after_it(
        before: queue.Queue[int]) -> None:
    """The deadlock a handler calling ``event.set()`` has: the main thread holds the
    event's lock (as ``Event.wait`` does on its way in) when the signal comes; the
    handler runs on that thread, there. The relay's action runs beside it instead and
    sets the event once the lock is let go."""
    done = threading.Event()
    acted: queue.Queue[str] = queue.Queue()

    def action(signum: int) -> None:
        acted.put(threading.current_thread().name)
        done.set()

    with SignalRelay(action, (signal.SIGUSR1,), name="test"):
        with done._cond:  # type: ignore[attr-defined]  # CPython's Event internals
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)
            # the handler has run on this thread by now, between two bytecodes
            assert acted.get(timeout=DEADLINE) == "signals-test"
            assert not done.is_set()  # the action waits for the lock this thread holds
        assert done.wait(DEADLINE)
    assert before.empty()  # relayed, not handled by the handler before


def test_once_a_repeat_gets_the_handler_before(before: queue.Queue[int]) -> None:
    got: queue.Queue[int] = queue.Queue()
    with SignalRelay(got.put, (signal.SIGUSR1,), name="test", once=True):
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)
        assert got.get(timeout=DEADLINE) == signal.SIGUSR1
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)
        assert before.get(timeout=DEADLINE) == signal.SIGUSR1
    assert got.empty()


def test_every_signal_is_relayed_without_once_and_others_are_not(
        before: queue.Queue[int]) -> None:
    got, relay = recorder()
    previous_usr2 = signal.signal(signal.SIGUSR2, lambda *_: None)  # its wakeup byte too
    try:
        with relay:
            for signum in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGUSR1):
                signal.pthread_kill(threading.main_thread().ident or 0, signum)
                if signum == signal.SIGUSR1:
                    assert got.get(timeout=DEADLINE) == (signal.SIGUSR1, "signals-test")
        assert got.empty()
    finally:
        signal.signal(signal.SIGUSR2, previous_usr2)


def test_a_failing_action_is_logged_and_the_relay_goes_on(
        before: queue.Queue[int], caplog: pytest.LogCaptureFixture) -> None:
    calls: queue.Queue[int] = queue.Queue()

    def action(signum: int) -> None:
        calls.put(signum)
        if calls.qsize() == 1:
            raise RuntimeError("boom")

    with SignalRelay(action, (signal.SIGUSR1,), name="test"):
        for _ in range(2):
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGUSR1)
            assert calls.get(timeout=DEADLINE) == signal.SIGUSR1
    assert any(r.levelno == logging.ERROR and f"signal {int(signal.SIGUSR1)}" in r.getMessage()
               for r in caplog.records)


def test_close_puts_back_handlers_and_descriptor_and_ends_the_thread(
        before: queue.Queue[int]) -> None:
    fd, handler = wakeup_fd(), signal.getsignal(signal.SIGUSR1)
    _, relay = recorder()
    relay.start()
    assert wakeup_fd() not in (fd, -1) and signal.getsignal(signal.SIGUSR1) is not handler
    assert "signals-test" in {t.name for t in threading.enumerate()}
    with pytest.raises(RuntimeError, match="started already"):
        relay.start()
    relay.close()
    relay.close()  # again: nothing
    assert wakeup_fd() == fd and signal.getsignal(signal.SIGUSR1) is handler
    assert "signals-test" not in {t.name for t in threading.enumerate()}


def test_only_the_main_thread_starts_one_and_it_needs_signals() -> None:
    errors: list[BaseException] = []

    def off_main() -> None:
        try:
            SignalRelay(lambda _: None, name="off").start()
        except ValueError as err:
            errors.append(err)

    thread = threading.Thread(target=off_main, name="test-off-main", daemon=True)
    thread.start()
    thread.join(DEADLINE)
    assert errors and "main thread" in str(errors[0])
    with pytest.raises(ValueError, match="no signals"):
        SignalRelay(lambda _: None, ())
