"""One watch applied to a store: the loop at the heart of a reflector (Go
``handleAnyWatch`` and ``initialEventsEndBookmarkTicker`` in ``tools/cache/reflector.go``).

:func:`handle_watch` takes a watch's events until the watch ends, the reflector stops, its
resync fails, the watch goes idle too long (a port addition) or, for a watch-list, the
bookmark that ends the initial events arrives. :class:`~client_cache.reflector.Reflector`
decides what happens next.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from client_cache.api import meta
from client_cache.api.lists import INITIAL_EVENTS_ANNOTATION_KEY
from client_cache.api.watch import Event, EventType, Watch
from client_cache.client.stream_watcher import BurstTake, StreamWatcher
from client_cache.codec._unfit import UnfitObject
from client_cache.errors import ClientCacheError, MetaAccessError, StopRequestedError, from_status
from client_cache.expected_type import TypeCheck
from client_cache.reflector_metrics import ReflectorMetrics
from client_cache.reflector_status import ReflectorStatus
from client_cache.store import DeletedFinalStateUnknown, Store, meta_namespace_key_func
from client_cache.util.chan import CLOSED, STOPPED, TIMED_OUT, Chan, select_or_stop
from client_cache.util.clock import Timer, WithTicker
from client_cache.util.runtime import handle_error
from client_cache.util.stop import on_stop

__all__ = [
    "InitialEventsEndBookmarkTicker",
    "ResourceVersionUpdater",
    "VeryShortWatchError",
    "WatchReconnectRequested",
    "WatchStalledError",
    "WatchTarget",
    "handle_watch",
    "random_watch_timeout",
]

# the reflector's records, whichever of its modules writes them
_log = logging.getLogger("client_cache.reflector")

# How long the watch loop waits on the result channel alone before it blocks in a select
# over every channel (see handle_watch); short enough that a stop or an error is never
# noticed later than this while events flow.
_BUSY_STREAM_WAIT = 0.002

# While the initial events of a watch-list stream in, nothing reaches the store's readers
# until the bookmark that ends them, so the watch loop takes them in batches: when the
# result channel is empty it waits (Chan.wait_batch) until it holds half its capacity, or
# this long. Woken for each event instead, the loop and the watch's reader thread passed
# the interpreter lock back and forth on every event (on the real apiserver, 30,000 pods,
# the loop's thread used 0.66 s of CPU over the sync, 0.27 s with batches).
_INITIAL_EVENTS_BATCH_WAIT = 0.002


class VeryShortWatchError(ClientCacheError):
    """The watch closed within a second without delivering anything (Go
    ``VeryShortWatchError``, v0.34)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"very short watch: {name}: Unexpected watch close - watch lasted less than a "
            "second and no items received"
        )


class WatchStalledError(ClientCacheError):
    """Nothing arrived on a watch for the idle timeout (a port addition)."""


class WatchReconnectRequested(ClientCacheError):
    """What ends a watch that :meth:`~client_cache.reflector.Reflector.reconnect` asked
    to re-establish (a port addition); the reflector watches again at once."""


@runtime_checkable
class ResourceVersionUpdater(Protocol):
    """A store told about every resourceVersion the watch reaches (Go
    ``ResourceVersionUpdater``)."""

    def update_resource_version(self, resource_version: str) -> None:
        """Told the resourceVersion the reflector has synced to (Go
        ``UpdateResourceVersion``)."""
        ...


def _go_duration(seconds: float) -> str:
    """Go's ``time.Duration`` string for the durations these messages print."""
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"


def random_watch_timeout(min_watch_timeout: float) -> int:
    """A watch's server-side timeout, in whole seconds, drawn from
    ``[min_watch_timeout, 2 * min_watch_timeout)`` so that a fleet of reflectors does not
    re-watch in step."""
    return int(min_watch_timeout * (random.random() + 1.0))


class InitialEventsEndBookmarkTicker:
    """Warns while a watch-list waits for its initial-events-end bookmark (Go
    ``initialEventsEndBookmarkTicker``): every ``interval`` (10 s) without the bookmark it
    produces a warning. Without ``exit_on_bookmark`` it never ticks nor warns. Without
    ``channel`` (a port addition) it makes no clock ticker: :meth:`c` never ticks, and
    whoever calls :meth:`warn_if_expired` every ``interval`` keeps the time."""

    def __init__(
        self, name: str, clock: WithTicker, watch_start: float, interval: float,
        exit_on_bookmark: bool, *, channel: bool = True,
    ) -> None:
        self.name = name
        self.clock = clock
        self.watch_start = watch_start
        self.interval = interval
        self.last_event: float | None = None
        self._warns = exit_on_bookmark
        self._ticker = clock.new_ticker(interval) if exit_on_bookmark and channel else None
        self._never: Chan[float] = Chan(1)

    def c(self) -> Chan[float]:
        """The channel that ticks while the initial events' end bookmark is awaited."""
        return self._ticker.c() if self._ticker is not None else self._never

    def stop(self) -> None:
        """Stop the ticker."""
        if self._ticker is not None:
            self._ticker.stop()

    def observe_last_event_time(self, when: float) -> None:
        """Note when the last event arrived (monotonic seconds)."""
        self.last_event = when

    def produce_warning_if_expired(self) -> str | None:
        """A warning text when the bookmark is overdue, else None (Go
        ``produceWarningIfExpired``)."""
        if not self._warns:
            return None
        if self.last_event is None:
            waited = _go_duration(self.clock.monotonic() - self.watch_start)
            return (f"{self.name}: awaiting required bookmark event for initial events "
                    f"stream, no events received for {waited}")
        elapsed = self.clock.monotonic() - self.last_event
        if elapsed < self.interval:
            return None
        return (f"{self.name}: hasn't received required bookmark event marking the end of "
                f"initial events stream, received last event {_go_duration(elapsed)} ago")

    def warn_if_expired(self) -> None:
        """Log the warning when the bookmark is overdue (Go ``warnIfExpired``)."""
        warning = self.produce_warning_if_expired()
        if warning:
            _log.warning("%s", warning)


@dataclass(frozen=True)
class WatchTarget:
    """What the watch loop needs of its reflector, and nothing more (Go hands
    ``handleAnyWatch`` the same things one by one): the name its logs and errors give,
    the clock of its timers, the store events go to unless the loop is given another,
    the check of each object's type and its description, the status and metrics it
    records the watch in, and the logger. :meth:`Reflector.watch_target
    <client_cache.reflector.Reflector.watch_target>` makes one for each watch."""

    name: str
    clock: WithTicker
    store: Store
    type_check: TypeCheck
    type_description: str
    status: ReflectorStatus
    metrics: ReflectorMetrics
    log: logging.LoggerAdapter[logging.Logger]


class _Case(enum.Enum):
    """What woke the watch loop (the cases of Go's ``select`` in ``handleAnyWatch``)."""

    EVENT = 0  # an event, or the result channel closed (value CLOSED)
    RESYNC_FAILED = 1  # the resync thread's store.resync() raised (value: the error)
    IDLE = 2  # the idle timer fired
    BOOKMARK_TICK = 3  # the initial-events-end ticker fired


_CASE_OF_INDEX = {case.value: case for case in _Case}


def _next_case(stop: threading.Event, result: Chan[Event],
               chans: list[Chan[Any]], batch: int = 0) -> tuple[_Case, Any]:
    """Wait for the next thing the watch loop must handle; raises on stop.

    A busy stream has its next event within a moment: after a look at every channel, wait
    :data:`_BUSY_STREAM_WAIT` on the result channel alone (much cheaper than registering
    with every channel), and only then block in a full select. With ``batch``, an empty
    result channel is first given :data:`_INITIAL_EVENTS_BATCH_WAIT` to fill up to
    ``batch`` events."""
    index, value = select_or_stop(stop, chans, 0)
    if index == TIMED_OUT and batch:
        result.wait_batch(batch, _INITIAL_EVENTS_BATCH_WAIT)
        index, value = select_or_stop(stop, chans, 0)
    if index == TIMED_OUT:
        value, ok = result.recv(_BUSY_STREAM_WAIT)
        if ok or value is CLOSED:
            return _Case.EVENT, value
        index, value = select_or_stop(stop, chans)
    if index == STOPPED:
        raise StopRequestedError()
    return _CASE_OF_INDEX[index], value


def _is_bookmark(event: Event) -> bool:
    return event.type is EventType.BOOKMARK


class _EventSink:
    """Applies watch events to a store and records their resourceVersions (the body of
    Go's ``handleAnyWatch`` loop for one event). The last resourceVersion applied is
    handed to ``set_resource_version`` by :meth:`flush`, once per burst of events, not
    after each (Go sets it after each event): it is never ahead of the store, and is
    current whenever the watch loop waits for more."""

    def __init__(self, target: WatchTarget, store: Store | None,
                 set_resource_version: Callable[[str], None]) -> None:
        self.name = target.name
        self.type_check = target.type_check
        self.status = target.status
        self.target = target.store if store is None else store
        self.set_rv = set_resource_version
        self.pending_rv: str | None = None
        self.count = 0  # events applied (not skipped)
        self.updater = (self.target if store is None
                        and isinstance(self.target, ResourceVersionUpdater) else None)
        # the store's writes, bound once rather than looked up on every event
        self.add, self.update, self.delete = (self.target.add, self.target.update,
                                              self.target.delete)
        # a store that hears of bookmarks (Go ReflectorBookmarkStore: a RealFIFO that
        # queues them for the informer's store, v0.36)
        self.bookmark: Callable[[str], None] | None = getattr(self.target, "bookmark", None)

    def apply(self, event: Event) -> bool | None:
        """Apply ``event``; returns whether it was the initial-events-end bookmark, or
        None when it was skipped. An ERROR event raises its status as an exception."""
        kind, obj = event.type, event.object
        if kind is EventType.ERROR:
            raise from_status(obj)
        if type(obj) is UnfitObject:
            self._apply_unfit(kind, obj)
            return None
        if kind is not EventType.BOOKMARK and not self.type_check.accept(obj):
            return None  # a bookmark's object is an identity dict when objects are typed
        try:
            rv = meta.get_resource_version(obj)
        except MetaAccessError:
            handle_error(f"{self.name}: unable to understand watch event of "
                         f"{self.type_check.description}: {event!r}")
            return None
        bookmark_end = False
        op: Callable[[Any], None] | None
        if kind is EventType.MODIFIED:  # the most common first
            op, verb, prep = self.update, "update", "to"
        elif kind is EventType.ADDED:
            op, verb, prep = self.add, "add", "to"
        elif kind is EventType.DELETED:
            op, verb, prep = self.delete, "delete", "from"
        else:  # BOOKMARK (ERROR was handled above)
            op = None
            self.status.bookmark()
            annotations = meta.accessor(obj).annotations
            bookmark_end = annotations.get(INITIAL_EVENTS_ANNOTATION_KEY) == "true"
            if self.bookmark is not None:
                try:
                    self.bookmark(rv)
                except Exception as err:
                    handle_error(f"{self.name}: unable to send bookmark event to store: "
                                 f"{err}")
        if op is not None:
            if self.status.any_unfit():
                self._fits_again(obj)
            try:
                op(obj)
            except Exception as err:
                handle_error(f"{self.name}: unable to {verb} watch event object "
                             f"({meta.describe(obj)}) {prep} store: {err}")
        self.pending_rv = rv
        if self.updater is not None:
            try:
                self.updater.update_resource_version(rv)
            except Exception as err:
                handle_error(f"{self.name}: update_resource_version failed: {err}")
        self.count += 1
        return bookmark_end

    def _apply_unfit(self, kind: EventType, obj: UnfitObject) -> None:
        """An event whose object does not fit the class: reported, and left out of the
        cache (an ADDED is not added, a MODIFIED leaves the last version that fitted);
        a DELETED is applied all the same, as a ``DeletedFinalStateUnknown`` holding
        the object's identity dict, so that nothing stays cached that the server has
        deleted. The watch goes on from its resourceVersion."""
        self.status.unfit_object(obj, f"watch {kind.value} event")
        key = obj.key()
        if kind is EventType.DELETED and key:
            self.status.fits(key)
            try:
                self.delete(DeletedFinalStateUnknown(key, obj.wire))
            except Exception as err:
                handle_error(f"{self.name}: unable to delete watch event object "
                             f"({obj.describe()}) from store: {err}")
        rv = obj.resource_version()
        if rv:
            self.pending_rv = rv

    def _fits_again(self, obj: Any) -> None:
        with contextlib.suppress(Exception):
            self.status.fits(meta_namespace_key_func(obj))

    def flush(self) -> None:
        """Record the last resourceVersion applied, if one was since the last flush."""
        rv = self.pending_rv
        if rv is not None:
            self.pending_rv = None
            self.set_rv(rv)


_AfterFunc = Callable[[float, Callable[[], None]], Timer]
"""A clock's ``after_func``: call a function on a thread of its own after a delay."""


def _apply_channel(r: WatchTarget, sink: _EventSink, start: float, watch: Watch,
                   stop: threading.Event, errors: Chan[BaseException], idle: float,
                   exit_on_initial_events_end: bool) -> bool:
    """:func:`handle_watch`'s loop over the watch's result channel; True when it ended at
    the initial-events-end bookmark."""
    last_event = r.clock.monotonic()
    idle_timer = r.clock.new_timer(idle)
    ticker = InitialEventsEndBookmarkTicker(r.name, r.clock, start, 10.0,
                                            exit_on_initial_events_end)
    try:
        result = watch.result_chan()
        chans: list[Chan[Any]] = [result, errors, idle_timer.c(), ticker.c()]
        batch = result.cap() // 2 if exit_on_initial_events_end else 0
        if batch < 2:
            batch = 0  # an unbuffered or one-slot channel: nothing to batch
        limit = result.cap()
        ends_burst = _is_bookmark if exit_on_initial_events_end else None
        while True:
            case, value = _next_case(stop, result, chans, batch)
            if case is _Case.RESYNC_FAILED:
                raise value
            if case is _Case.BOOKMARK_TICK:
                ticker.warn_if_expired()
                continue
            if case is _Case.IDLE:
                quiet = r.clock.monotonic() - last_event
                if quiet >= idle:
                    raise WatchStalledError(
                        f"{r.name}: no watch event or bookmark for {quiet:.0f}s")
                idle_timer.reset(idle - quiet)
                continue
            if value is CLOSED:
                return False
            last_event = r.clock.monotonic()
            ticker.observe_last_event_time(last_event)
            burst = [value]
            if ends_burst is None or not ends_burst(value):
                burst += result.recv_batch(limit, ends_burst)
            r.status.watch_event(last_event, len(burst))
            try:
                for event in burst:
                    if sink.apply(event) and exit_on_initial_events_end:
                        _log_initial_events_end(r, sink)
                        return True
            finally:
                sink.flush()
    finally:
        idle_timer.stop()
        ticker.stop()


def _apply_bursts(r: WatchTarget, sink: _EventSink, watch: StreamWatcher, bursts: BurstTake,
                  stop: threading.Event, errors: Chan[BaseException], idle: float,
                  after_func: _AfterFunc, ticker: InitialEventsEndBookmarkTicker | None,
                  ) -> bool:
    """:func:`handle_watch`'s loop over a watch read in this thread
    (:meth:`~client_cache.client.stream_watcher.StreamWatcher.take_bursts`): each chunk's events
    applied as soon as they are read, with no reader thread handing them over. Three
    things end the loop from other threads by calling the watch's ``stop`` (which ends a
    read in progress): ``stop`` (an :func:`~client_cache.util.stop.on_stop` callback), a
    resync failure (a callback on ``errors``) and the idle timer (a clock ``after_func``
    that re-arms itself until ``idle`` seconds pass without a chunk of events). Then it
    raises as the channel loop does: :class:`~client_cache.errors.StopRequestedError`, the
    resync error, :class:`WatchStalledError`.

    With ``ticker`` (a watch-list's initial events) it ends at the bookmark that ends
    them and returns True: the events after it in its chunk are given back to the watch
    (:meth:`~client_cache.client.stream_watcher.StreamWatcher.hold`), which stays open for the
    reflector's next loop; meanwhile a second ``after_func`` warns every ticker interval
    while the bookmark is overdue, as the channel loop's ticker case does."""
    interrupt = watch.stop
    last_event = r.clock.monotonic()
    stalled: list[float] = []  # how long it was quiet, once the idle timer stopped it
    # held while a timer's check runs, and to mark the loop's end: a check that re-arms
    # its timer does so before the end stops it, or not at all
    guard = threading.Lock()
    ended = False

    def on_idle() -> None:
        with guard:
            if ended:
                return
            quiet = r.clock.monotonic() - last_event
            if quiet >= idle:
                stalled.append(quiet)
                interrupt()
            else:
                idle_timer.reset(idle - quiet)

    def on_tick() -> None:
        with guard:
            if ended or ticker is None or tick_timer is None:
                return
            tick_timer.reset(ticker.interval)  # re-armed before anyone sees the warning
            ticker.warn_if_expired()

    idle_timer = after_func(idle, on_idle)
    tick_timer = after_func(ticker.interval, on_tick) if ticker is not None else None
    unhook = errors.on_change(interrupt)
    stopping = on_stop(stop, interrupt)
    try:
        for burst in bursts:
            if stop.is_set() or errors.ready() or stalled:
                break
            last_event = r.clock.monotonic()
            r.status.watch_event(last_event, len(burst))
            try:
                if ticker is None:
                    for event in burst:
                        sink.apply(event)
                    continue
                ticker.observe_last_event_time(last_event)
                for index, event in enumerate(burst):
                    if sink.apply(event):
                        watch.hold(burst[index + 1:])
                        _log_initial_events_end(r, sink)
                        return True
            finally:
                sink.flush()
    finally:
        with guard:
            ended = True
        stopping.cancel()
        unhook()
        idle_timer.stop()
        if tick_timer is not None:
            tick_timer.stop()
        bursts.close()  # closes the response, unless held
    if stop.is_set():
        raise StopRequestedError()
    error, failed = errors.try_recv()
    if failed:
        raise cast(BaseException, error)
    if stalled:
        raise WatchStalledError(f"{r.name}: no watch event or bookmark for {stalled[0]:.0f}s")
    return False


def _log_initial_events_end(r: WatchTarget, sink: _EventSink) -> None:
    r.log.debug("exiting %s Watch because received the bookmark that marks the end of "
                "initial events stream, total %d items received", r.name, sink.count)


def handle_watch(
    target: WatchTarget,
    start: float,
    watch: Watch,
    stop: threading.Event,
    errors: Chan[BaseException],
    *,
    idle: float,
    set_resource_version: Callable[[str], None],
    store: Store | None = None,
    exit_on_initial_events_end: bool = False,
) -> bool:
    """Apply ``watch``'s events to ``store`` (the ``target``'s own by default, which is
    then also told each resourceVersion if it is a :class:`ResourceVersionUpdater`) until
    the watch ends (Go ``handleAnyWatch``). The resourceVersion of the last event applied
    goes to ``set_resource_version`` at the end of each burst (below), even when an event
    of it raised; the target's metrics, status and logs record the watch.
    Returns True when it stopped at the initial-events-end bookmark; raises the error that
    ended the watch (:class:`~client_cache.errors.StopRequestedError` on stop,
    :class:`WatchStalledError` after ``idle`` seconds without an event,
    :class:`VeryShortWatchError` for a watch that closed within a second with nothing).

    Each turn waits for one of four things (:func:`_next_case`): an event, an error from
    the resync thread (``errors``), the idle timer, the initial-events ticker. An event
    comes with those buffered behind it, taken in one step (``Chan.recv_batch``, at most
    the channel's capacity) and applied in order before the next turn looks at the other
    three again: as if Go's ``select`` had picked the event case each time, at a lock
    per burst instead of a receive and a ``select`` per event (S2 from the replay source,
    by hand: 25.4k events/s to 27.9k, medians of 6 alternated runs). Until the
    initial-events-end bookmark (``exit_on_initial_events_end``) a burst ends at any
    bookmark, so the events after the end stay in the channel for the watch that goes
    on, and an empty result channel is given :data:`_INITIAL_EVENTS_BATCH_WAIT` to
    fill (:func:`_apply_channel`).

    A :class:`~client_cache.client.stream_watcher.StreamWatcher` that no reader thread reads
    (every watch a reflector opens, a watch-list's too) is read in this thread instead
    (:func:`_apply_bursts`, a port addition): each chunk's events are applied as soon as
    they are decoded, with the same order, errors and endings, and one thread fewer to
    hand them over (S2 from the replay source, by hand, eight alternated pairs, medians:
    47.7 us of CPU an event against 50.6, 21.3k events/s against 20.0k, each spread over
    about a fifth). A watch-list's loop gives the events after the initial-events-end
    bookmark in its chunk back to the watch, which stays open: the reflector's next loop
    reads on from there in the same way."""
    r = target
    sink = _EventSink(r, store, set_resource_version)
    # the stream read here: a StreamWatcher's nobody reads in a thread of its own, on a
    # clock that can run the timers' checks (the real clock and the fake ones can)
    after_func: _AfterFunc | None = getattr(r.clock, "after_func", None)
    try:
        if (isinstance(watch, StreamWatcher) and after_func is not None
                and (bursts := watch.take_bursts()) is not None):
            ticker = (InitialEventsEndBookmarkTicker(r.name, r.clock, start, 10.0, True,
                                                    channel=False)
                      if exit_on_initial_events_end else None)
            if _apply_bursts(r, sink, watch, bursts, stop, errors, idle, after_func, ticker):
                return True
        elif _apply_channel(r, sink, start, watch, stop, errors, idle,
                            exit_on_initial_events_end):
            return True
    finally:
        r.metrics.items_in_watch.observe(sink.count)
        r.metrics.watch_duration.observe(max(0.0, r.clock.monotonic() - start))
    count = sink.count
    if r.clock.monotonic() - start < 1.0 and count == 0:
        r.metrics.short_watches.inc()
        raise VeryShortWatchError(r.name)
    r.log.debug("%s: Watch close - %s total %d items received", r.name,
                r.type_description, count)
    return False
