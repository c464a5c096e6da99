"""What a reflector has been doing, kept for health checks and said in the logs.

A :class:`ReflectorStatus` belongs to one informer (it exists before the informer starts,
so health can be asked at any time) and is told by the reflector what happens: a LIST
starts, succeeds or fails, a watch starts, an event arrives, a watch or LIST finds its
resourceVersion expired (410). It counts, keeps times on the monotonic clock (wall times
only for display), and logs what an operator needs at INFO and WARNING:

* INFO when a LIST starts and when it has filled the cache, with the item count and the
  duration; WARNING instead when the LIST took longer than :data:`SLOW_LIST_SECONDS` (10 s,
  where client-go traces it);
* WARNING when the cache is relisted because a resourceVersion expired (410), naming it;
* one line per failed attempt (:meth:`ReflectorStatus.failed`), WARNING for the first of
  an episode (INFO for repeats of the same error), with the resource named as people
  write it and, for 401 and 403, a hint at the credentials or RBAC.

:meth:`ReflectorStatus.health` makes an :class:`InformerHealth` snapshot. The informer is
*unhealthy* when it has been failing for longer than ``failing_after`` (default 60 s: two
caps of the reflector's 30 s backoff) or when, synced, its watch has been silent longer
than the watch's idle timeout (the stalled-watch detector should have acted by then).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from client_cache.codec._unfit import UnfitObject
from client_cache.errors import (
    describe_error,
    find_api_error,
    is_forbidden,
    is_not_found,
    is_unauthorized,
)
from client_cache.util._logs import log_visibly
from client_cache.util.clock import REAL_CLOCK, PassiveClock
from client_cache.util.stop import on_stop

__all__ = [
    "DEFAULT_FAILING_AFTER",
    "SLOW_LIST_SECONDS",
    "UNFIT_SHOWN",
    "InformerHealth",
    "ReflectorStatus",
    "describe_failure",
    "display_resource",
]

_log = logging.getLogger("client_cache.reflector")

SLOW_LIST_SECONDS = 10.0
DEFAULT_FAILING_AFTER = 60.0
UNFIT_SHOWN = 20
"""How many objects that do not fit :class:`InformerHealth` ``unfit`` names at most (the
latest)."""


def display_resource(label: str) -> str:
    """A resource as people write it, from its label (``GroupVersionResource.label()``):
    ``pods``; ``apps/v1 deployments`` for a group without a dot;
    ``foos.samplecontroller.k8s.io`` (kubectl's ``resource.group``) for one with dots.
    Anything else is returned as it is."""
    parts = label.split("/")
    if len(parts) != 3 or not all(parts):
        return label
    group, version, plural = parts
    return f"{plural}.{group}" if "." in group else f"{group}/{version} {plural}"


def describe_failure(err: BaseException) -> str:
    """``err`` for a log line or a health report: the API error inside it (found along
    its causes) by code and reason only (its message may quote an object), else the
    error itself (see :func:`~client_cache.errors.describe_error`)."""
    api = find_api_error(err)
    if api is None or api is err:
        return describe_error(err)
    return f"{type(err).__name__} ({describe_error(api)})"


@dataclass(frozen=True)
class InformerHealth:
    """One informer's state, as :meth:`SharedIndexInformer.health` reports it. Times are
    wall-clock seconds (``time.time()``) or None when it has not happened; ``last_error``
    never carries a credential or an object's contents."""

    resource: str
    healthy: bool
    reason: str = ""
    """Why it is unhealthy ("" when healthy)."""
    started: bool = False
    synced: bool = False
    last_list: float | None = None
    last_watch_activity: float | None = None
    """The last watch event or bookmark, or the last watch start."""
    consecutive_failures: int = 0
    failing_for: float = 0.0
    last_error: str = ""
    lists: int = 0
    relists: int = 0
    watch_restarts: int = 0
    watch_events: int = 0
    bookmarks: int = 0
    """The BOOKMARK events among ``watch_events``."""
    queue_depth: int = 0
    handler_buffers: dict[str, int] = field(default_factory=dict)
    """Notifications waiting in each event handler's buffer, by handler name."""
    handled: int = 0
    handler_errors: int = 0
    index_errors: dict[str, int] = field(default_factory=dict)
    """Objects an index function failed on, by index: each is cached and delivered, and
    left out of that index alone (a port addition)."""
    decode_errors: int = 0
    """Objects the server sent that do not fit the informer's class (LIST items and watch
    events), each kept out of the cache alone (a port addition: client-go fails the LIST)."""
    unfit: dict[str, str] = field(default_factory=dict)
    """The objects that do not fit now, ``namespace/name`` to the decoder's reason (the
    field path), at most :data:`UNFIT_SHOWN`; one that fits again leaves it."""

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class ReflectorStatus:
    """See the module documentation. Thread-safe; the per-event call
    (:meth:`watch_event`) only counts."""

    def __init__(self, resource: str, clock: PassiveClock = REAL_CLOCK,
                 failing_after: float = DEFAULT_FAILING_AFTER) -> None:
        self.resource = display_resource(resource)
        self.clock = clock
        self.failing_after = failing_after
        self.idle_timeout: float | None = None
        """Set by the reflector: its watch's idle timeout."""
        self._lock = threading.Lock()
        self._connected = threading.Condition(self._lock)
        self._connected_at: float | None = None  # monotonic: the last LIST or watch start
        self._list_started: float | None = None
        self._last_list: float | None = None  # monotonic
        self._last_activity: float | None = None  # monotonic
        self._first_failure: float | None = None
        self._failures = 0
        self._last_error = ""
        self._lists = 0
        self._relists = 0
        self._restarts = 0
        self._after_list = False
        self._reported = 0
        self.watch_events = 0
        self.bookmarks = 0
        self._index_errors: dict[str, int] = {}
        self._index_reasons: set[tuple[str, str]] = set()
        self._decode_errors = 0
        self._unfit: dict[str, str] = {}

    def _wall(self, mono: float | None) -> float | None:
        if mono is None:
            return None
        return time.time() - (self.clock.monotonic() - mono)

    def list_started(self, resource_version: str, *, stream: bool = False) -> None:
        """A LIST (``stream`` False) or a watch-list stream (True) begins from
        ``resource_version``."""
        with self._lock:
            self._list_started = self.clock.monotonic()
            relist = self._lists > 0
        _log.info("%s: %s from resourceVersion %r%s", self.resource,
                  "relisting" if relist else "listing", resource_version or "(latest)",
                  " (watch-list stream)" if stream else "",
                  extra={"resource": self.resource})

    def list_succeeded(self, items: int, resource_version: str, *,
                       stream: bool = False) -> None:
        """The LIST's (or the watch-list stream's) items are in the cache."""
        now = self.clock.monotonic()
        with self._lock:
            seconds = now - (self._list_started if self._list_started is not None else now)
            self._lists += 1
            if self._lists > 1:
                self._relists += 1
            self._last_list = self._last_activity = self._connected_at = now
            self._first_failure = None
            self._failures = 0
            self._after_list = True
            self._connected.notify_all()
        level = logging.WARNING if seconds > SLOW_LIST_SECONDS else logging.INFO
        _log.log(level, "%s: cache filled with %d items at resourceVersion %s in %.2f s%s",
                 self.resource, items, resource_version, seconds,
                 (" (slow watch-list)" if stream else " (slow LIST)")
                 if level == logging.WARNING else "",
                 extra={"resource": self.resource})

    def expired(self, resource_version: str, during: str) -> None:
        """The server answered 410 for ``resource_version`` during a ``during`` (LIST or
        watch): a relist follows."""
        _log.warning("%s: resourceVersion %s is too old for the %s (410 Expired); relisting "
                     "from the latest", self.resource, resource_version, during,
                     extra={"resource": self.resource})

    def watch_started(self) -> None:
        """A watch is open (the first, or a restart)."""
        with self._lock:
            if not self._after_list:
                self._restarts += 1
            self._after_list = False
            self._last_activity = self._connected_at = self.clock.monotonic()
            self._first_failure = None
            self._failures = 0
            self._connected.notify_all()

    def wait_connected(self, since: float, stop: threading.Event,
                       timeout: float | None = None) -> bool:
        """Block until a LIST succeeded or a watch was opened at or after ``since``
        (monotonic, on this status's clock), as after
        :meth:`~client_cache.reflector.Reflector.reconnect`; True then, False when
        ``stop`` is set or ``timeout`` passes first (a port addition)."""
        def notify() -> None:
            with self._connected:
                self._connected.notify_all()

        registration = on_stop(stop, notify)
        try:
            with self._connected:
                return self._connected.wait_for(
                    lambda: stop.is_set() or (self._connected_at is not None
                                              and self._connected_at >= since),
                    timeout) and not stop.is_set()
        finally:
            registration.cancel()

    def watch_event(self, when: float, count: int = 1) -> None:
        """``count`` watch events or bookmarks arrived at monotonic time ``when`` (the hot
        path, called once per burst: one count and one assignment, no lock: only the
        reflector's thread calls it)."""
        self.watch_events += count
        self._last_activity = when

    def bookmark(self) -> None:
        """A BOOKMARK arrived (only the reflector's thread calls it)."""
        self.bookmarks += 1

    def failed(self, err: BaseException) -> str:
        """An attempt (LIST or watch) failed with ``err``: counted, and reported in one
        line, whatever the reflector's error handler does: at WARNING for the first
        failure of an episode and whenever the error changes (with the list-watch's hint
        for a 401 or 403, or a short one), at INFO for a repeat. Returns the line."""
        text = describe_failure(err)
        api = find_api_error(err)
        hint = str(getattr(api, "hint", "") or "")
        if not hint and is_unauthorized(err):
            hint = "the credentials were refused; check the kubeconfig or token"
        elif not hint and is_forbidden(err):
            hint = f"the identity may not list/watch {self.resource}; check its RBAC"
        elif not hint and is_not_found(err):
            hint = (f"the server does not serve {self.resource} (yet): the informer waits "
                    "for it and is not ready meanwhile; is its CustomResourceDefinition "
                    "installed?")
        with self._lock:
            if self._first_failure is None:
                self._first_failure = self.clock.monotonic()
            self._failures += 1
            repeat = self._failures > 1 and text == self._last_error
            self._last_error = text
            failures = self._failures
            line = f"{self.resource}: list/watch failed (attempt {failures}): {text}"
            if hint and not repeat:
                line += f" - {hint}"
            self._reported = id(err)
        if not repeat and is_not_found(err):  # a resource not served: say it visibly
            log_visibly(_log, logging.WARNING, "%s", line, extra={"resource": self.resource})
        else:
            _log.log(logging.INFO if repeat else logging.WARNING, "%s", line,
                     extra={"resource": self.resource})
        return line

    def index_failed(self, index: str, key: str | None, err: BaseException) -> None:
        """Index function ``index`` failed on the object stored under ``key``: counted
        (:class:`InformerHealth` ``index_errors``, the ``index_errors_total`` metric),
        and logged at ERROR once per (index, reason), naming the object by its key, the
        error by its type and message (an informer's index error handler: the object is
        stored and delivered all the same)."""
        reason = f"{type(err).__name__}: {err}"
        with self._lock:
            self._index_errors[index] = self._index_errors.get(index, 0) + 1
            first = (index, reason) not in self._index_reasons
            if first:
                self._index_reasons.add((index, reason))
        if first:
            log_visibly(_log, logging.ERROR, "%s: index %r failed on %s (it is cached and "
                        "delivered, but not in that index; this is said once per reason): "
                        "%s", self.resource, index, key or "an object", reason[:300])

    def unfit_object(self, obj: UnfitObject, during: str) -> None:
        """``obj`` (a LIST item or a watch event's object, ``during`` says which) does
        not fit the informer's class: counted (:class:`InformerHealth` ``decode_errors``
        and ``unfit``, the ``decode_errors_total`` metric) and logged at ERROR, visible
        with no logging configured, once per object and reason, naming its kind,
        ``namespace/name``, resourceVersion and the field path, never its contents."""
        key = obj.key() or "<unnamed>"
        with self._lock:
            self._decode_errors += 1
            first = self._unfit.get(key) != obj.reason
            self._unfit.pop(key, None)
            self._unfit[key] = obj.reason
            while len(self._unfit) > UNFIT_SHOWN:
                del self._unfit[next(iter(self._unfit))]
        if first:
            log_visibly(_log, logging.ERROR, "%s: %s in a %s does not fit %s and is left out "
                        "of the cache (the other objects are cached and delivered; said "
                        "once per object and reason): %s", self.resource, obj.describe(),
                        during, obj.class_name, obj.reason)

    def listed_unfit(self, unfit: list[UnfitObject]) -> None:
        """A LIST is in the cache and ``unfit`` are its items that do not fit: they are
        now the objects :class:`InformerHealth` ``unfit`` names, each reported
        (:meth:`unfit_object`) unless it was already for the same reason."""
        with self._lock:
            before, self._unfit = self._unfit, {}
        for obj in unfit:
            key = obj.key() or "<unnamed>"
            if before.get(key) == obj.reason:  # reported already: counted, not logged
                with self._lock:
                    self._unfit[key] = obj.reason
            self.unfit_object(obj, "LIST")

    def any_unfit(self) -> bool:
        """Whether an object is named as not fitting now (the check before :meth:`fits`,
        without a lock: the per-event path asks it)."""
        return bool(self._unfit)

    def fits(self, key: str) -> None:
        """The object under ``key`` fits again (a later version was decoded)."""
        with self._lock:
            self._unfit.pop(key, None)

    def reported(self, err: BaseException) -> bool:
        """Whether :meth:`failed` already reported ``err`` (the default error handler
        then says nothing more)."""
        with self._lock:
            return self._reported == id(err)

    def health(self, *, started: bool, synced: bool, queue_depth: int = 0,
               handler_buffers: dict[str, int] | None = None, handled: int = 0,
               handler_errors: int = 0) -> InformerHealth:
        """A snapshot, with what the informer adds."""
        now = self.clock.monotonic()
        with self._lock:
            failing_for = 0.0 if self._first_failure is None else now - self._first_failure
            reason = ""
            if self._first_failure is not None and failing_for > self.failing_after:
                reason = (f"failing for {failing_for:.0f} s ({self._failures} attempts): "
                          f"{self._last_error}")
            elif synced and self.idle_timeout is not None and \
                    self._last_activity is not None and \
                    now - self._last_activity > self.idle_timeout:
                reason = f"watch silent for {now - self._last_activity:.0f} s"
            return InformerHealth(
                resource=self.resource, healthy=not reason, reason=reason, started=started,
                synced=synced, last_list=self._wall(self._last_list),
                last_watch_activity=self._wall(self._last_activity),
                consecutive_failures=self._failures, failing_for=failing_for,
                last_error=self._last_error, lists=self._lists, relists=self._relists,
                watch_restarts=self._restarts,
                watch_events=self.watch_events, bookmarks=self.bookmarks,
                queue_depth=queue_depth,
                handler_buffers=dict(handler_buffers or {}), handled=handled,
                handler_errors=handler_errors, index_errors=dict(self._index_errors),
                decode_errors=self._decode_errors, unfit=dict(self._unfit))
