"""SignalWaker (client_cache.util.signals): the main thread's wait for what a signal
handler does wakes whichever thread the OS hands the signal to."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from types import FrameType

import pytest

from client_cache.util.signals import SignalWaker
from client_cache.util.stop import stop_callbacks
from tests.fixtures import eventually

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_kill"),
                                reason="needs signal.pthread_kill (POSIX)")

DEADLINE = 10.0  # a wait not woken by then is ended by the test's own thread: a failure


@pytest.fixture
def handled() -> Iterator[threading.Event]:
    """SIGUSR1 handled by setting the yielded event; the handler before put back."""
    got = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        got.set()

    previous = signal.signal(signal.SIGUSR1, handler)
    yield got
    signal.signal(signal.SIGUSR1, previous)


def wakeup_fd() -> int:
    fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(fd)
    return fd


def signalled_from_another_thread(event: threading.Event, waker: SignalWaker) -> bool:
    """Send SIGUSR1 to a thread of this test's own (not the main one) once the main
    thread waits for ``event`` with ``waker`` (its wake-up registered on the event), and
    have it wait; whether the signal woke it (else the thread's deadline did). A plain
    ``event.wait()`` is not woken so: CPython runs the handler on the main thread only,
    and the signal does not interrupt a main thread blocked in a lock."""
    gave_up = threading.Event()

    def other() -> None:
        eventually(lambda: stop_callbacks(event) > 0, DEADLINE)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        if not event.wait(DEADLINE):
            gave_up.set()
            event.set()

    thread = threading.Thread(target=other, name="test-signal-sender", daemon=True)
    thread.start()
    waker.wait(event)
    thread.join(DEADLINE + 5)
    return not gave_up.is_set()


def test_a_signal_taken_by_another_thread_wakes_the_main_threads_wait(
        handled: threading.Event) -> None:
    with SignalWaker() as waker:
        assert signalled_from_another_thread(handled, waker)


def test_the_wait_ends_when_any_thread_sets_the_event() -> None:
    done = threading.Event()

    def setter() -> None:
        eventually(lambda: stop_callbacks(done) > 0, DEADLINE)  # the wait registered
        done.set()

    with SignalWaker() as waker:
        thread = threading.Thread(target=setter, name="test-event-setter", daemon=True)
        thread.start()
        waker.wait(done)
        thread.join(DEADLINE)
    assert done.is_set() and stop_callbacks(done) == 0  # its registration cancelled


def test_the_wakeup_fd_before_is_put_back() -> None:
    before = wakeup_fd()
    waker = SignalWaker().start()
    assert wakeup_fd() not in (before, -1)
    waker.close()
    waker.close()  # again: nothing
    assert wakeup_fd() == before
    with pytest.raises(ValueError, match="outside"):
        waker.wait(threading.Event())


def test_only_the_main_thread_starts_one() -> None:
    errors: list[BaseException] = []

    def off_main() -> None:
        try:
            SignalWaker().start()
        except ValueError as err:
            errors.append(err)

    thread = threading.Thread(target=off_main, name="test-off-main", daemon=True)
    thread.start()
    thread.join(5)
    assert errors and "main thread" in str(errors[0])
