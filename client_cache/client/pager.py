"""Paged LIST (Go ``tools/pager``).

:class:`ListPager` turns one LIST into a series of ``limit``/``continue`` requests and
returns the whole list, plus whether the result really was paginated (the Reflector uses
that to decide how to relist). If a continue token has expired (410 Expired) and
``full_list_if_expired`` is set, it falls back to one unpaged LIST at the originally
requested resourceVersion.

:meth:`ListPager.each_list_item` instead hands items to a function as pages arrive, with a
background thread fetching up to ``page_buffer_size`` pages ahead.

Cancellation: Go's ``ctx`` is a ``stop`` :class:`threading.Event`, checked before every
page; a stop raises :class:`StopRequestedError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from client_cache.api.errors import is_expired
from client_cache.api.lists import ListOptions, list_continue, list_items, list_resource_version
from client_cache.util.chan import CLOSED, Chan, ChanClosedError, UnbufferedChan
from client_cache.util.errors import StopRequestedError

__all__ = [
    "DEFAULT_PAGE_BUFFER_SIZE",
    "DEFAULT_PAGE_SIZE",
    "ListPageFunc",
    "ListPager",
    "StopRequestedError",
    "new_list_pager",
    "simple_page_func",
]

DEFAULT_PAGE_SIZE = 500
DEFAULT_PAGE_BUFFER_SIZE = 10

ListPageFunc = Callable[[ListOptions], Any]
"""Fetches one page: LIST with the given options (Go ``ListPageFunc``)."""


def simple_page_func(fn: Callable[[ListOptions], Any]) -> ListPageFunc:
    """Go ``SimplePageFunc``: a page function that ignores the context."""
    return fn


def _new_list(first_page: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "metadata": {"resourceVersion": list_resource_version(first_page)},
        "items": [],
    }
    if isinstance(first_page, dict):
        for key in ("apiVersion", "kind"):
            if key in first_page:
                out[key] = first_page[key]
    return out


@dataclass
class ListPager:
    """Pages through a LIST (Go ``ListPager``).

    Field defaults are Go's zero values (``page_size`` 0 means one unlimited request,
    ``full_list_if_expired`` off, no page buffering); :func:`new_list_pager` gives the
    upstream defaults (500, on, 10).
    """

    page_fn: ListPageFunc
    page_size: int = 0
    full_list_if_expired: bool = False
    page_buffer_size: int = 0

    def list(
        self, options: ListOptions | None = None, stop: threading.Event | None = None
    ) -> tuple[Any, bool]:
        """LIST every page; returns ``(list, paginated_result)``.

        A single page (no continue token) is returned as the server sent it; several are
        merged into a wire-dict list whose resourceVersion is the first page's. Continue
        requests drop ``resource_version`` and ``resource_version_match`` (the server
        refuses them with a token).
        """
        options = (options or ListOptions()).copy()
        if options.limit == 0:
            options.limit = self.page_size
        requested_rv = options.resource_version
        requested_match = options.resource_version_match
        paginated = False
        merged: dict[str, Any] | None = None
        while True:
            if stop is not None and stop.is_set():
                raise StopRequestedError("context canceled")
            try:
                page = self.page_fn(options)
            except Exception as err:
                if not (is_expired(err) and self.full_list_if_expired and options.continue_):
                    raise
                # The continue token expired: fall back to one full list at the version
                # the caller asked for.
                options.limit = 0
                options.continue_ = ""
                options.resource_version = requested_rv
                options.resource_version_match = requested_match
                return self.page_fn(options), paginated
            token = list_continue(page)
            if merged is None and not token:
                return page, paginated
            if merged is None:
                merged = _new_list(page)
            merged["items"].extend(list_items(page))
            if not token:
                return merged, paginated
            options.continue_ = token
            options.resource_version = ""
            options.resource_version_match = ""
            paginated = True

    list_with_alloc = list
    """Go's ``ListWithAlloc``; items are never copied here, so it is :meth:`list`."""

    def each_list_item(
        self,
        options: ListOptions | None,
        fn: Callable[[Any], None],
        stop: threading.Event | None = None,
    ) -> None:
        """Call ``fn`` on every item of every page, in order, while a background thread
        fetches up to ``page_buffer_size`` pages ahead. The first exception from ``fn``
        stops everything and propagates; a page error is raised after the earlier pages'
        items were handed out."""
        if self.page_buffer_size < 0:
            raise ValueError(
                f"ListPager.page_buffer_size must be >= 0, got {self.page_buffer_size}"
            )
        chunks: Chan[Any] = (
            UnbufferedChan() if self.page_buffer_size == 0 else Chan(self.page_buffer_size)
        )
        cancel = threading.Event()
        failure: list[BaseException] = []

        def fetch() -> None:
            try:
                self._each_list_chunk(options, chunks.send, stop, cancel)
            except ChanClosedError:
                pass  # the consumer went away
            except BaseException as err:
                failure.append(err)
            finally:
                chunks.close()

        producer = threading.Thread(target=fetch, name="pager-each-list-item", daemon=True)
        producer.start()
        try:
            while True:
                if stop is not None and stop.is_set():
                    raise StopRequestedError("context canceled")
                page, _ = chunks.recv()
                if page is CLOSED:
                    break
                for item in list_items(page):
                    fn(item)
        finally:
            cancel.set()
            chunks.close()
            producer.join()
        if failure:
            raise failure[0]

    each_list_item_with_alloc = each_list_item

    def _each_list_chunk(
        self,
        options: ListOptions | None,
        deliver: Callable[[Any], Any],
        stop: threading.Event | None,
        cancel: threading.Event,
    ) -> None:
        options = (options or ListOptions()).copy()
        if options.limit == 0:
            options.limit = self.page_size
        while True:
            if cancel.is_set() or (stop is not None and stop.is_set()):
                return
            page = self.page_fn(options)
            deliver(page)
            token = list_continue(page)
            if not token:
                return
            options.continue_ = token  # upstream keeps the resourceVersion here


def new_list_pager(fn: ListPageFunc) -> ListPager:
    """A pager with the upstream defaults: 500 per page, full list when a continue token
    expired, 10 pages of buffering (Go ``pager.New``)."""
    return ListPager(fn, DEFAULT_PAGE_SIZE, True, DEFAULT_PAGE_BUFFER_SIZE)
