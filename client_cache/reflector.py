"""The Reflector: keeps a store in step with the server (Go ``tools/cache/reflector.go``).

``Reflector.run(stop)`` loops ``list_and_watch`` under an exponential backoff (0.8 s doubling
to 30 s, jittered, reset after 2 minutes without a failure, on the injected clock; the
port's ``ReflectorOptions.max_backoff`` lowers the 30 s):

1. **list**: a paged LIST (500 per page) at the *relist resourceVersion* - ``"0"`` (any
   recent state, served by the watch cache) the first time, the last seen version
   afterwards, ``""`` (a consistent read) when the last one is unavailable. A list that
   fails with 410 Expired/Gone or "too large resourceVersion" is retried at once with
   ``""``. The result replaces the store (``store.replace(items, rv)``).
2. **watch** from the last seen resourceVersion, with bookmarks and a server timeout drawn
   from ``[min_watch_timeout, 2 * min_watch_timeout)`` (5 minutes at least). ADDED,
   MODIFIED and DELETED go to ``store.add/update/delete``; every event, bookmarks included,
   advances the last seen resourceVersion and is reported to a store that implements
   ``update_resource_version``. A watch that ends normally is re-established from the last
   version without relisting. An ERROR event becomes an
   :class:`~client_cache.errors.ApiStatusError`; 410 ends the watch and the next round
   relists at the last seen version; 429 and refused connections back off and re-watch
   without relisting; internal errors are retried at once for
   ``max_internal_error_retry_duration``; anything else relists after the backoff. A watch
   that closes within a second without any event is a "very short watch" error.
3. **resync**: with a resync period, a named thread calls ``store.resync()`` every period
   (when ``should_resync`` allows); its failure ends the watch.
4. **watch-list** (``use_watch_list``): instead of LIST, a watch with
   ``sendInitialEvents=true`` fills a temporary store until the
   ``k8s.io/initial-events-end`` bookmark, swaps it into the store and keeps the same watch
   going; on failure it falls back to LIST.

Port additions, each documented where it acts: a watch that receives nothing (not even a
bookmark) for ``idle_timeout`` seconds (default: the watch's server timeout plus one
minute) is abandoned and re-established from the last version, so a silently dead
connection never freezes the cache; :meth:`Reflector.reconnect` re-establishes the watch
now, from the last version, and ends a backoff wait (a sharded controller asks it after
its member lapsed, before it reconciles every key again); metrics are recorded through
:mod:`client_cache.reflector_metrics`; an exception from the user's store is logged and
never kills the reflector thread; ``run`` returns within a second of ``stop`` in every state
(a LIST in progress finishes its current page first).

This module holds the rounds (list, watch, resync, what follows an error); the watch-list
round is :mod:`client_cache._reflector_watch_list`, the loop over one watch's events
:mod:`client_cache._reflector_watch`, the check of each object's type
:mod:`client_cache.expected_type`, the watch-list consistency check
:mod:`client_cache._reflector_consistency`.
"""

from __future__ import annotations

import functools
import inspect
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from client_cache._reflector_consistency import DataInconsistencyError
from client_cache._reflector_watch import (
    InitialEventsEndBookmarkTicker,
    ResourceVersionUpdater,
    VeryShortWatchError,
    WatchReconnectRequested,
    WatchStalledError,
    WatchTarget,
    handle_watch,
    random_watch_timeout,
)
from client_cache._reflector_watch_list import watch_list
from client_cache.api.lists import (
    ListOptions,
    list_items,
    list_resource_version,
)
from client_cache.api.watch import Watch
from client_cache.client.pager import (
    DEFAULT_PAGE_BUFFER_SIZE,
    DEFAULT_PAGE_SIZE,
    ListPager,
)
from client_cache.codec import _wire as wire
from client_cache.codec._unfit import UnfitObject
from client_cache.errors import (
    ClientCacheError,
    StopRequestedError,
    find_api_error,
    is_connection_refused,
    is_expired,
    is_gone,
    is_internal_error,
    is_too_large_resource_version,
    is_too_many_requests,
    server_unreachable,
)
from client_cache.expected_type import (
    DEFAULT_EXPECTED_TYPE_NAME,
    ListFailedError,
    TypeCheck,
    describe_expected_type,
)
from client_cache.index import NAMESPACE_INDEX, Indexer, meta_namespace_index_func
from client_cache.listwatch import ListerWatcher, to_lister_watcher_with_context
from client_cache.reflector_metrics import ReflectorMetrics
from client_cache.reflector_status import ReflectorStatus, describe_failure
from client_cache.retry_with_deadline import new_retry_with_deadline
from client_cache.store import (
    Store,
    meta_namespace_key_func,
    new_indexer,
)
from client_cache.util import gc_policy
from client_cache.util._env import env_true
from client_cache.util._server_answers import claim_probe, on_answer
from client_cache.util.chan import (
    STOPPED,
    Chan,
    DoneChan,
    select_or_stop,
)
from client_cache.util.clock import REAL_CLOCK, WithTicker
from client_cache.util.features import WATCH_LIST_CLIENT, feature_gates
from client_cache.util.runtime import handle_error
from client_cache.util.wait import backoff_until, new_exponential_backoff_manager

__all__ = [
    "DEFAULT_EXPECTED_TYPE_NAME",
    "DEFAULT_MAX_BACKOFF",
    "DEFAULT_MIN_WATCH_TIMEOUT",
    "DataInconsistencyError",
    "InitialEventsEndBookmarkTicker",
    "ListFailedError",
    "Reflector",
    "ReflectorOptions",
    "ResourceVersionUpdater",
    "VeryShortWatchError",
    "WatchErrorHandler",
    "WatchListSemanticsUnsupported",
    "WatchReconnectRequested",
    "WatchStalledError",
    "default_watch_error_handler",
    "describe_expected_type",
    "does_client_not_support_watch_list_semantics",
    "new_namespace_keyed_indexer_and_reflector",
    "new_named_reflector",
    "new_reflector",
    "new_reflector_with_options",
]

_log = logging.getLogger(__name__)

DEFAULT_MIN_WATCH_TIMEOUT = 300.0
DEFAULT_MAX_BACKOFF = 30.0
"""The longest unjittered wait between a reflector's failed rounds unless an option lowers
it (client-go's fixed 30 s)."""

ANSWER_JITTER = 0.25
"""The most a reflector waits, after its server answered again, before it retries
(seconds, uniformly spread: the informers of a process do not all reconnect at once)."""

PROBE_PERIOD = 1.0
"""How often a process asks an unreachable server whether it answers again (seconds):
one ``GET /version`` per server and period, however many reflectors wait on it
(:func:`~client_cache.util._server_answers.claim_probe`)."""

PROBE_TIMEOUT = 0.5
"""How long one probe of an unreachable server may take (seconds)."""


def check_max_backoff(value: float) -> float:
    """``value`` when it can be a ``max_backoff``; ``ValueError`` when it is not positive."""
    if not value > 0:
        raise ValueError(f"max_backoff must be positive, not {value!r}")
    return value
"""Watches last at least this long (seconds) before the server ends them (upstream 5 min)."""

_PACKAGE_DIR = str(Path(__file__).resolve().parent)

WatchErrorHandler = Callable[["Reflector", BaseException], None]
"""Called with each error ``list_and_watch`` ends with (Go ``WatchErrorHandler``)."""


@runtime_checkable
class WatchListSemanticsUnsupported(Protocol):
    """A lister-watcher that says whether it does *not* support watch-list semantics
    (``sendInitialEvents`` and the initial-events-end bookmark): Go's
    ``unSupportedWatchListSemantics``. Fakes that ignore those options say True, so a
    reflector lists from them even with the ``WatchListClient`` gate on."""

    def is_watch_list_semantics_unsupported(self) -> bool:
        """True when this lister-watcher does not support watch-list semantics."""
        ...


def does_client_not_support_watch_list_semantics(client: Any) -> bool:
    """Whether ``client`` says it does not support watch-list semantics (Go
    ``watchlist.DoesClientNotSupportWatchListSemantics``): only one that has
    ``is_watch_list_semantics_unsupported()`` and answers True."""
    check = getattr(client, "is_watch_list_semantics_unsupported", None)
    return bool(check()) if callable(check) else False


def default_watch_error_handler(reflector: Reflector, err: BaseException) -> None:
    """Report the error: quietly (DEBUG) for an expired watch; not again for a failure
    the reflector's status has reported (one line per failed attempt, see
    :meth:`~client_cache.reflector_status.ReflectorStatus.failed`); through ``handle_error``
    otherwise (Go: ``utilruntime.HandleError`` for every error)."""
    if is_expired(err) or is_gone(err):
        _log.debug("%s: watch of %s closed with: %s", reflector.name,
                   reflector.type_description, err)
        return
    if not reflector.status.reported(err):
        handle_error(f"{reflector.status.resource}: list/watch failed: "
                     f"{describe_failure(err)}")


@dataclass
class ReflectorOptions:
    """Options of :func:`new_reflector_with_options` (Go ``ReflectorOptions``).

    ``min_watch_timeout`` below 5 minutes is ignored; ``clock`` defaults to the real clock.
    ``idle_timeout`` (a port addition) overrides the stalled-watch timeout.

    ``max_backoff`` (a port addition, as kube-rs lets a watcher choose its backoff;
    client-go fixes it at 30 s): the longest unjittered wait between failed rounds. The
    first wait is 0.8 s or this when smaller; the jitter makes any wait up to twice the
    unjittered one. A reflector of a few small objects whose freshness matters (the Leases
    of a shard ring) lowers it so that it resumes within seconds of an outage's end.
    A value that is not positive raises ``ValueError``.
    """

    name: str = ""
    type_description: str = ""
    resync_period: float = 0.0
    min_watch_timeout: float = 0.0
    clock: WithTicker | None = None
    idle_timeout: float | None = None
    status: ReflectorStatus | None = None
    """Where the reflector reports what it does (health, logs); its own by default."""
    max_backoff: float = DEFAULT_MAX_BACKOFF


def _name_from_callsite() -> str:
    for frame in inspect.stack()[2:]:
        filename = str(Path(frame.filename).resolve()) if frame.filename else ""
        if filename and not filename.startswith(_PACKAGE_DIR):
            return f"{frame.filename}:{frame.lineno}"
    return "????"


class Reflector:
    """See the module documentation. Public fields as upstream:
    ``watch_list_page_size``, ``should_resync``, ``max_internal_error_retry_duration``,
    ``use_watch_list`` and ``watch_error_handler``."""

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        expected_type: Any,
        store: Store,
        options: ReflectorOptions | None = None,
    ) -> None:
        options = options or ReflectorOptions()
        self.name = options.name or _name_from_callsite()
        description, checked_type, checked_gvk = describe_expected_type(expected_type)
        self.type_description = options.type_description or description
        self.type_check = TypeCheck(self.name, self.type_description, checked_type, checked_gvk)
        """Skips (and reports) objects not of the expected type."""
        self.store = store
        self.lister_watcher = lister_watcher
        self.resync_period = options.resync_period
        self.clock: WithTicker = options.clock or REAL_CLOCK
        self.min_watch_timeout = max(options.min_watch_timeout, DEFAULT_MIN_WATCH_TIMEOUT)
        self.idle_timeout = options.idle_timeout
        cap = check_max_backoff(options.max_backoff)
        self.backoff_manager = new_exponential_backoff_manager(
            min(0.8, cap), cap, 120.0, 2.0, 1.0, self.clock)
        self.watch_list_page_size = 0
        self.should_resync: Callable[[], bool] | None = None
        self.max_internal_error_retry_duration = 0.0
        self.use_watch_list = env_true("ENABLE_CLIENT_GO_WATCH_LIST_ALPHA") or (
            feature_gates().enabled(WATCH_LIST_CLIENT))
        if self.use_watch_list and does_client_not_support_watch_list_semantics(
                lister_watcher):
            _log.debug("%s: the lister-watcher does not support watch-list semantics; "
                       "the reflector lists", self.name)
            self.use_watch_list = False
        self.watch_error_handler: WatchErrorHandler = default_watch_error_handler
        self.metrics = ReflectorMetrics(self.name)
        self.status = options.status or ReflectorStatus(self.type_description, self.clock)
        self.log = logging.LoggerAdapter(_log, {"resource": self.status.resource})
        """The reflector's logger: every record carries ``resource`` (as people write it),
        for formatters that filter or structure by it."""
        self.status.idle_timeout = self.idle_timeout or 2 * self.min_watch_timeout + 60.0
        self._lock = threading.Lock()
        # what reconnect() wakes: the errors channel of the watch being handled, the
        # backoff wait in progress
        self._watch_errors: Chan[BaseException] | None = None
        self._backoff_poke: Chan[None] | None = None
        self._relist_asked = False  # reconnect(relist=True): fill again at the next turn
        self._last_sync_resource_version = ""
        self._last_sync_resource_version_unavailable = False
        self._paginated_result = False

    @property
    def expected_type(self) -> type | None:
        """The class objects are checked against (None: not checked)."""
        return self.type_check.expected_type

    @property
    def expected_gvk(self) -> tuple[str, str] | None:
        """The ``(apiVersion, kind)`` objects are checked against (None: not checked)."""
        return self.type_check.expected_gvk

    def __repr__(self) -> str:
        return f"<Reflector {self.name} ({self.type_description})>"

    # -- resource versions -----------------------------------------------------------------------
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the store is known to be at (Go
        ``LastSyncResourceVersion``).

        It is recorded after the store is filled, in Go's order: a reader that already
        sees a list's objects in the store may read the previous version here for a
        moment."""
        with self._lock:
            return self._last_sync_resource_version

    def set_last_sync_resource_version(self, rv: str) -> None:
        """Record that the store is at ``rv`` (Go ``setLastSyncResourceVersion``)."""
        with self._lock:
            self._last_sync_resource_version = rv
        self.metrics.resource_version(rv)

    def set_is_last_sync_resource_version_unavailable(self, unavailable: bool) -> None:
        """Record whether the server said the last synced resourceVersion is too old or
        too new to list or watch from (Go ``setIsLastSyncResourceVersionUnavailable``)."""
        with self._lock:
            self._last_sync_resource_version_unavailable = unavailable

    def _relist_resource_version(self) -> str:
        with self._lock:
            if self._last_sync_resource_version_unavailable:
                return ""
            return self._last_sync_resource_version or "0"

    def rewatch_resource_version(self) -> str:
        """The resourceVersion to watch from again: the last synced one, or "" (a
        consistent read) when it is unavailable (Go ``rewatchResourceVersion``)."""
        with self._lock:
            if self._last_sync_resource_version_unavailable:
                return ""
            return self._last_sync_resource_version

    # -- run -------------------------------------------------------------------------------------
    def reconnect(self, reason: str, *, relist: bool = False) -> None:
        """Re-establish the watch now (a port addition): the watch being handled ends
        and a new one starts from the last synced resourceVersion (no relist; a 410 then
        relists as usual), on a new connection; a backoff wait in progress ends at once
        with the backoff reset; a LIST in progress goes on (what it returns is fresh).
        ``reason`` is logged. :meth:`ReflectorStatus.wait_connected` tells when the new
        watch (or LIST) is there. For a caller that has reason to distrust the watch's
        connection, such as a sharded member whose Lease watch went half-dead or that
        lapsed during an outage, before it reconciles every key again; client-go has no
        equivalent (its reflector trusts an open watch until it ends).

        With ``relist`` the reflector fills the cache again instead (a LIST or
        watch-list, with the list-watch's options as they are then, and the store
        replaced), at once, without a backoff: for a caller whose list options changed,
        such as a server-sharded member whose range moved. A fill in progress when asked
        is followed by another, since it went out with the old options. Asked before the
        reflector runs, its first fill is that relist."""
        with self._lock:
            errors, poke = self._watch_errors, self._backoff_poke
            if relist:
                self._relist_asked = True
        if errors is None and poke is None:
            return
        self.log.info("%s: %s: %s", self.status.resource,
                      "filling the cache again" if relist else "re-establishing the watch",
                      reason)
        if errors is not None:
            errors.try_send(WatchReconnectRequested(reason))
        if poke is not None:
            poke.try_send(None)

    def run(self, stop: threading.Event) -> None:
        """List and watch until ``stop`` is set, backing off between rounds."""
        self.log.debug("Starting reflector %s (%s) from %s", self.type_description,
                   self.resync_period, self.name)

        failure: list[BaseException | None] = [None]  # what ended the last round

        def round_() -> None:
            failure[0] = None
            try:
                self.list_and_watch(stop)
            except DataInconsistencyError:
                raise  # Go panics
            except Exception as err:
                failure[0] = err
                if not (is_expired(err) or is_gone(err)):
                    self.status.failed(err)
                self.watch_error_handler(self, err)

        try:
            with gc_policy.spaced_full_collections():  # see client_cache.util.gc_policy
                backoff_until(round_, self.backoff_manager, True, stop,
                              wait=lambda: self.wait_backoff(stop, failure[0]))
        finally:
            # the connections of a stopped reflector end with it (a list-watch that pools
            # them dials again if it is run again)
            self._reset_connections()
        self.log.debug("Stopping reflector %s (%s) from %s", self.type_description,
                   self.resync_period, self.name)

    def wait_backoff(self, stop: threading.Event, cause: BaseException | None) -> bool:
        """Wait the backoff manager's next backoff after the failure ``cause`` (False
        when ``stop`` was set): Go's ``BackoffUntil(round, backoff, sliding)`` between
        rounds, and the wait before a watch or watch-list is asked again after a refused
        connection or a 429; every wait of the reflector after a failure comes here.

        When ``cause`` says the server is not serving (no answer, 429, 5xx:
        :func:`~client_cache.api.errors.server_unreachable`), the wait also ends as
        soon as the server answers anyone in this process
        (:mod:`client_cache.util._server_answers`: a Lease renewal, another informer, a
        write), a moment of jitter later, with the backoff reset: after an API server
        restart the cache is re-established within about a second, not after up to 30 s
        (jittered to 60 s, reset only after 120 s without a failure) as client-go's is.
        When the server did not answer at all (refused, reset, timed out), the
        list-watch's ``probe`` finds out even if nothing else in the process talks to
        it (a plain controller): every :data:`PROBE_PERIOD` one waiting reflector per
        server sends a ``GET /version`` bounded by :data:`PROBE_TIMEOUT`. A port
        addition: client-go's informers each retry on their own backoff; here a
        process's informers cost a down server one small request a second between
        them. A server that answers 429 or 5xx is not probed: it asked for the backoff.
        A :meth:`reconnect` ends the wait at once too."""
        if cause is None and self._relist_due():
            return not stop.is_set()  # reconnect(relist=True) asked: no wait
        host = getattr(self.lister_watcher, "server_host", None)
        timer = self.backoff_manager.backoff()
        woken: Chan[None] = Chan(1)
        poked: Chan[None] = Chan(1)
        registration = on_answer(host, functools.partial(woken.try_send, None)) \
            if server_unreachable(cause) and isinstance(host, str) else None
        probe = getattr(self.lister_watcher, "probe", None) \
            if registration is not None and find_api_error(cause) is None else None
        with self._lock:
            self._backoff_poke = poked
        try:
            while True:
                tick = self.clock.new_timer(PROBE_PERIOD) if callable(probe) else None
                chans: list[Chan[Any]] = [timer.c(), woken, poked]
                if tick is not None:
                    chans.append(tick.c())
                index, _ = select_or_stop(stop, chans)
                if index != 3:
                    if tick is not None:
                        tick.stop()
                    break
                assert isinstance(host, str) and callable(probe)
                if claim_probe(host, PROBE_PERIOD, self.clock.monotonic()):
                    probe(stop, PROBE_TIMEOUT)  # an answer wakes every waiter, this one too
        finally:
            with self._lock:
                self._backoff_poke = None
            if registration is not None:
                registration.cancel()
        if index == STOPPED:
            if not timer.stop():
                timer.c().try_recv()
            return False
        if index in (1, 2):  # the server answered again, or reconnect() asked
            timer.stop()
            reset = getattr(self.backoff_manager, "reset", None)
            if callable(reset):
                reset()
            if index == 2:
                return True
            self.log.info("%s: the server answers again; retrying now", self.status.resource)
            return not stop.wait(random.uniform(0.0, ANSWER_JITTER))
        return True

    def _relist_due(self) -> bool:
        """Whether :meth:`reconnect` asked for a relist not yet begun."""
        with self._lock:
            return self._relist_asked

    def _reset_connections(self) -> None:
        """Close the list-watch's idle pooled connections, if it pools any."""
        reset = getattr(self.lister_watcher, "reset_connections", None)
        if callable(reset):
            reset()

    def list_and_watch(self, stop: threading.Event) -> None:
        """One round: list (or watch-list), then watch until the watch ends. Raises the
        error that ended the round, if any."""
        self.log.debug("Listing and watching %s from %s", self.type_description, self.name)
        with self._lock:
            self._relist_asked = False  # this fill takes the options as they are now
        watch: Watch | None = None
        if self.use_watch_list:
            try:
                watch = watch_list(self, stop)
            except DataInconsistencyError:
                raise
            except Exception as err:
                # expected where the server does not serve watch-list (Go logs it at V(4))
                self.log.debug(
                    "Data couldn't be fetched in watchlist mode, falling back to a regular "
                    "list: %s", err)
                watch = None
            else:
                if watch is None:
                    return  # stop requested
        if watch is None and not self._list(stop):
            return
        self.log.debug("Caches populated for %s from %s", self.type_description, self.name)
        self._watch_with_resync(watch, stop)

    # -- list ------------------------------------------------------------------------------------
    def _list(self, stop: threading.Event) -> bool:
        """LIST into the store; False when stopped before finishing."""
        options = ListOptions(resource_version=self._relist_resource_version())
        lister = to_lister_watcher_with_context(self.lister_watcher)
        refuse_table = self.type_check.refuse_table
        pager = ListPager(lambda page: refuse_table(lister.list_with_context(stop, page)),
                          DEFAULT_PAGE_SIZE, True, DEFAULT_PAGE_BUFFER_SIZE)
        if self.watch_list_page_size:
            pager.page_size = self.watch_list_page_size
        elif self._paginated_result:
            pass
        elif options.resource_version not in ("", "0"):
            pager.page_size = 0  # served from the watch cache: no paging
        started = time.monotonic()
        self.status.list_started(options.resource_version)
        with wire.gc_paused(promote=True):  # the whole sync allocates; see gc_paused
            return self._list_and_replace(pager, options, stop, started)

    def _list_and_replace(self, pager: ListPager, options: ListOptions,
                          stop: threading.Event, started: float) -> bool:
        try:
            try:
                result, paginated = pager.list(options, stop)
            except StopRequestedError:
                return False
            except Exception as err:
                if not (is_expired(err) or is_gone(err) or is_too_large_resource_version(err)):
                    raise
                self.status.expired(options.resource_version, "LIST")
                self.set_is_last_sync_resource_version_unavailable(True)
                result, paginated = pager.list(
                    ListOptions(resource_version=self._relist_resource_version()), stop)
        except StopRequestedError:
            return False
        except Exception as err:
            raise ListFailedError(f"failed to list {self.type_description}: {err}") from err
        if options.resource_version == "0" and paginated:
            self._paginated_result = True
        self.set_is_last_sync_resource_version_unavailable(False)
        rv = list_resource_version(result)
        items = self.type_check.accept_list(result, self._fitting(list_items(result)))
        self.metrics.filled(time.monotonic() - started, len(items))
        try:
            self.store.replace(items, rv)
        except Exception as err:
            raise ClientCacheError(f"unable to sync list result: {err}") from err
        self.set_last_sync_resource_version(rv)
        self.status.list_succeeded(len(items), rv)
        return True

    def _fitting(self, items: list[Any]) -> list[Any]:
        """``items`` without those that do not fit the lister-watcher's class (each
        reported: :meth:`ReflectorStatus.unfit_object`; after a LIST, these are the
        objects that do not fit); ``items`` itself when all fit."""
        unfit = [item for item in items if type(item) is UnfitObject]
        self.status.listed_unfit(unfit)
        if not unfit:
            return items
        return [item for item in items if type(item) is not UnfitObject]

    # -- watch -----------------------------------------------------------------------------------
    def _watch_with_resync(self, watch: Watch | None, stop: threading.Event) -> None:
        resync_errors: Chan[BaseException] = Chan(1)
        cancel = DoneChan()
        resyncer: threading.Thread | None = None
        if self.resync_period > 0:
            resyncer = threading.Thread(
                target=self._start_resync, args=(stop, cancel, resync_errors),
                name=f"reflector-resync-{self.type_description}", daemon=True)
            resyncer.start()
        with self._lock:
            self._watch_errors = resync_errors
        try:
            self._watch(watch, stop, resync_errors)
        finally:
            with self._lock:
                self._watch_errors = None
            cancel.close()
            if resyncer is not None:
                resyncer.join(1.0)

    def _start_resync(
        self, stop: threading.Event, cancel: DoneChan, errors: Chan[BaseException]
    ) -> None:
        while True:
            timer = self.clock.new_timer(self.resync_period)
            index, _ = select_or_stop(stop, [timer.c(), cancel])
            timer.stop()
            if index != 0:
                return
            if self.should_resync is None or self.should_resync():
                self.log.debug("%s: forcing resync", self.name)
                try:
                    self.store.resync()
                except Exception as err:
                    errors.try_send(err)
                    return

    def _watch(
        self, watch: Watch | None, stop: threading.Event, resync_errors: Chan[BaseException]
    ) -> None:
        """Watch, re-watching after every normal end, until an error that needs a relist
        (then return, or raise it) or ``stop`` (Go ``watch``)."""
        retry = new_retry_with_deadline(self.max_internal_error_retry_duration, 60.0,
                                        is_internal_error, self.clock)
        while True:
            if stop.is_set() or self._relist_due():
                if watch is not None:
                    watch.stop()
                return
            start = self.clock.monotonic()
            timeout = random_watch_timeout(self.min_watch_timeout)
            if watch is None:
                watch = self._start_watch(timeout, stop)
                if watch is None:
                    if stop.is_set():
                        return
                    continue  # backed off after a refused connection or a 429
            self.metrics.watches.inc()
            self.status.watch_started()
            error: BaseException | None = None
            try:
                self._handle_watch(start, watch, stop, resync_errors,
                                   idle=self.idle_timeout or timeout + 60.0)
            except Exception as err:
                error = err
            watch.stop()
            watch = None
            retry.after(error)
            if not self._rewatch_after(error, retry, stop):
                return

    def _start_watch(self, timeout: int, stop: threading.Event) -> Watch | None:
        """Open a watch from the last synced resourceVersion; None after backing off from
        a refused connection or a 429 (or when stopped meanwhile); other errors raise."""
        options = ListOptions(resource_version=self.last_sync_resource_version(),
                              timeout_seconds=timeout, allow_watch_bookmarks=True)
        try:
            return to_lister_watcher_with_context(self.lister_watcher).watch_with_context(
                stop, options)
        except StopRequestedError:
            return None
        except Exception as err:
            if is_connection_refused(err) or is_too_many_requests(err):
                # a failed attempt like any other: counted (health turns unhealthy when
                # they go on) and reported, once an episode at WARNING
                self.status.failed(err)
                self.wait_backoff(stop, err)
                return None
            raise

    def _rewatch_after(self, error: BaseException | None, retry: Any,
                       stop: threading.Event) -> bool:
        """Decide what follows a watch that ended with ``error`` (None: a normal end):
        True to watch again from the last resourceVersion, False to return to
        ``list_and_watch`` (stop, or an error that needs a relist)."""
        if error is None:
            return True
        if isinstance(error, WatchReconnectRequested):  # logged by reconnect()
            self._reset_connections()
            return True
        if isinstance(error, WatchStalledError):
            self.log.info("%s: watch of %s stalled, re-establishing it", self.name,
                      self.type_description)
            # the path to the server may be dead: do not reuse idle connections
            self._reset_connections()
            return True
        if isinstance(error, StopRequestedError):
            return False
        if is_expired(error) or is_gone(error):
            self.status.expired(self.last_sync_resource_version(), "watch")
            return False
        # a watch that failed is a failed attempt: counted and reported (status.failed)
        if is_too_many_requests(error):
            self.status.failed(error)
            return self.wait_backoff(stop, error)
        if is_internal_error(error) and retry.should_retry():
            self.status.failed(error)
            return True
        self.status.failed(error)
        return False

    def watch_target(self) -> WatchTarget:
        """What the watch loop needs of this reflector
        (:class:`~client_cache._reflector_watch.WatchTarget`), as it is now: made for each
        watch, so the loop sees a clock or store set since the reflector was made."""
        return WatchTarget(self.name, self.clock, self.store, self.type_check,
                           self.type_description, self.status, self.metrics, self.log)

    def _handle_watch(
        self,
        start: float,
        watch: Watch,
        stop: threading.Event,
        errors: Chan[BaseException],
        *,
        idle: float,
        store: Store | None = None,
        set_resource_version: Callable[[str], None] | None = None,
        exit_on_initial_events_end: bool = False,
    ) -> bool:
        """Apply watch events until the watch ends (Go ``handleAnyWatch``):
        :func:`client_cache._reflector_watch.handle_watch`, resourceVersions going to the
        reflector's own unless ``set_resource_version`` is given."""
        return handle_watch(
            self.watch_target(), start, watch, stop, errors, idle=idle, store=store,
            set_resource_version=set_resource_version or self.set_last_sync_resource_version,
            exit_on_initial_events_end=exit_on_initial_events_end)

def new_reflector_with_options(
    lister_watcher: ListerWatcher, expected_type: Any, store: Store, options: ReflectorOptions
) -> Reflector:
    """A reflector that keeps ``store`` in step with ``lister_watcher``'s resource, objects
    checked against ``expected_type``, set up by ``options``; start it with ``run(stop)``
    (Go ``NewReflectorWithOptions``)."""
    if not options.name:
        options = ReflectorOptions(**{**options.__dict__, "name": _name_from_callsite()})
    return Reflector(lister_watcher, expected_type, store, options)


def new_reflector(
    lister_watcher: ListerWatcher, expected_type: Any, store: Store, resync_period: float
) -> Reflector:
    """A reflector into ``store`` resyncing every ``resync_period`` seconds (0: never) (Go
    ``NewReflector``)."""
    return new_reflector_with_options(lister_watcher, expected_type, store,
                                      ReflectorOptions(resync_period=resync_period))


def new_named_reflector(
    name: str, lister_watcher: ListerWatcher, expected_type: Any, store: Store,
    resync_period: float,
) -> Reflector:
    """Like :func:`new_reflector`, named ``name`` in logs and metrics (Go
    ``NewNamedReflector``)."""
    return Reflector(lister_watcher, expected_type, store,
                     ReflectorOptions(name=name, resync_period=resync_period))


def new_namespace_keyed_indexer_and_reflector(
    lister_watcher: ListerWatcher, expected_type: Any, resync_period: float
) -> tuple[Indexer, Reflector]:
    """An indexer keyed ``namespace/name`` with a namespace index, and its reflector."""
    indexer = new_indexer(meta_namespace_key_func, {NAMESPACE_INDEX: meta_namespace_index_func})
    reflector = new_reflector_with_options(lister_watcher, expected_type, indexer,
                                           ReflectorOptions(resync_period=resync_period))
    return indexer, reflector
