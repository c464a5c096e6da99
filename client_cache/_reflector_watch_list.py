"""The reflector's watch-list round (Go ``Reflector.watchList``): the initial state streamed
by a watch with ``sendInitialEvents=true`` instead of a LIST.

:func:`watch_list` fills a temporary store from the watch until the
``k8s.io/initial-events-end`` bookmark, checks it against a LIST when the consistency check
is asked for (:mod:`client_cache._reflector_consistency`), swaps it into the reflector's
store and returns the still-open watch, which the reflector then goes on reading. A watch
that closes before the bookmark is asked again; 410 Expired/Gone and "too large
resourceVersion" ask again from a consistent read (resourceVersion ""); a refused
connection or a 429 asks again after the reflector's backoff; any other error is raised
(the reflector then falls back to LIST).
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from client_cache._reflector_consistency import check_watch_list_consistency_if_requested
from client_cache._reflector_watch import handle_watch, random_watch_timeout
from client_cache.api.lists import RESOURCE_VERSION_MATCH_NOT_OLDER_THAN, ListOptions
from client_cache.api.watch import Watch
from client_cache.codec import _wire as wire
from client_cache.errors import (
    ClientCacheError,
    StopRequestedError,
    is_connection_refused,
    is_expired,
    is_gone,
    is_too_large_resource_version,
    is_too_many_requests,
)
from client_cache.listwatch import to_lister_watcher_with_context
from client_cache.store import deletion_handling_meta_namespace_key_func, new_store
from client_cache.util.chan import Chan

if TYPE_CHECKING:
    from client_cache.reflector import Reflector

__all__ = ["watch_list"]


def watch_list(r: Reflector, stop: threading.Event) -> Watch | None:
    """Stream ``r``'s initial state into its store; returns the still-open watch, or None
    when stopped.

    The cyclic garbage collector is paused from each attempt's request until the
    streamed state is in the queue, as over a LIST (:func:`client_cache.codec._wire.gc_paused`:
    the stream allocates the whole cache, and every full collection meanwhile would walk
    all it has built so far), but never over a backoff between attempts."""
    with contextlib.ExitStack() as pause:
        return _watch_list_paused(r, stop, pause)


def _watch_list_paused(r: Reflector, stop: threading.Event,
                       pause: contextlib.ExitStack) -> Watch | None:
    never: Chan[BaseException] = Chan(1)
    resource_version = [""]

    def set_resource_version(rv: str) -> None:
        resource_version[0] = rv

    def retry(err: BaseException) -> bool:
        pause.close()  # not over a backoff
        return _retry(r, err, stop)

    while True:
        pause.close()
        if stop.is_set():
            return None
        resource_version[0] = ""
        temporary = new_store(deletion_handling_meta_namespace_key_func)
        options = ListOptions(
            resource_version=r.rewatch_resource_version(),
            allow_watch_bookmarks=True,
            send_initial_events=True,
            resource_version_match=RESOURCE_VERSION_MATCH_NOT_OLDER_THAN,
            timeout_seconds=random_watch_timeout(r.min_watch_timeout),
        )
        start = r.clock.monotonic()
        r.status.list_started(options.resource_version, stream=True)
        pause.enter_context(wire.gc_paused(promote=True))
        try:
            watch = to_lister_watcher_with_context(r.lister_watcher).watch_with_context(
                stop, options)
        except StopRequestedError:
            return None
        except Exception as err:
            if retry(err):
                continue
            raise
        try:
            done = handle_watch(
                r.watch_target(), start, watch, stop, never,
                idle=r.idle_timeout or (options.timeout_seconds or 300) + 60.0,
                store=temporary, set_resource_version=set_resource_version,
                exit_on_initial_events_end=True)
        except Exception as err:
            watch.stop()
            if isinstance(err, StopRequestedError):
                return None
            if retry(err):
                continue
            raise
        if done:
            break
        watch.stop()  # closed before the bookmark: ask again
    r.set_is_last_sync_resource_version_unavailable(False)
    rv = resource_version[0]
    streamed = temporary.list()  # once: the check and the swap read the same objects
    check_watch_list_consistency_if_requested(r.name, rv, r.lister_watcher, streamed, r.log)
    try:
        r.store.replace(streamed, rv)
    except Exception as err:
        watch.stop()
        raise ClientCacheError(f"unable to sync watch-list result: {err}") from err
    r.set_last_sync_resource_version(rv)
    r.metrics.filled(max(0.0, r.clock.monotonic() - start), len(streamed))
    r.status.list_succeeded(len(streamed), rv, stream=True)
    return watch


def _retry(r: Reflector, err: BaseException, stop: threading.Event) -> bool:
    """Whether to ask again after ``err`` (having backed off where it calls for that)."""
    if is_connection_refused(err) or is_too_many_requests(err):
        r.status.failed(err)  # counted and reported, as every failed attempt
        return r.wait_backoff(stop, err)
    if is_expired(err) or is_gone(err) or is_too_large_resource_version(err):
        r.set_is_last_sync_resource_version_unavailable(True)
        return True
    return False
