"""pager.go (pager_test.go)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from client_cache.api.lists import ListOptions, list_items, list_resource_version
from client_cache.client.pager import ListPager, StopRequestedError, new_list_pager
from client_cache.errors import is_expired, new_resource_expired

# the native parts and their Python twins alike (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("native_impl")


class FakePages:
    """Upstream's ``testPager``: serves ``remaining`` items named "0", "1"... in pages of
    the requested limit, with continue tokens ``rv:20:<index>``; checks each request."""

    def __init__(self, remaining: int, expect_page: int, expire_on_page: int = 0) -> None:
        self.remaining = remaining
        self.index = 0
        self.expect_page = expect_page
        self.expire_on_page = expire_on_page
        self.calls = 0
        self.errors: list[str] = []

    def __call__(self, options: ListOptions) -> dict[str, Any]:
        self.calls += 1
        if options.continue_ and (options.resource_version or options.resource_version_match):
            self.errors.append("resourceVersion sent together with continue")
        if options.continue_ and options.continue_ != f"rv:20:{self.index}":
            self.errors.append(f"bad continue {options.continue_!r}")
        if options.limit not in (self.expect_page, 0):
            self.errors.append(f"unexpected limit {options.limit}")
        if self.expire_on_page and self.calls == self.expire_on_page:
            raise new_resource_expired("continue token expired")
        take = self.remaining if options.limit == 0 else min(options.limit, self.remaining)
        items = [{"metadata": {"name": str(self.index + i)}} for i in range(take)]
        self.index += take
        self.remaining -= take
        md: dict[str, Any] = {"resourceVersion": "rv:20"}
        if self.remaining > 0:
            md["continue"] = f"rv:20:{self.index}"
        return {"metadata": md, "items": items}


def names(lst: Any) -> list[str]:
    return [item["metadata"]["name"] for item in list_items(lst)]


@pytest.mark.parametrize(
    ("total", "paged"), [(0, False), (9, False), (10, False), (11, True), (21, True)]
)
def test_list(total: int, paged: bool) -> None:
    """TestListPager_List: sizes around the page size."""
    pages = FakePages(total, 10)
    result, paginated = ListPager(pages, page_size=10).list(ListOptions())
    assert names(result) == [str(i) for i in range(total)]
    assert paginated is paged
    assert list_resource_version(result) == "rv:20"
    assert not pages.errors


def test_list_expired_without_fallback() -> None:
    pages = FakePages(21, 10, expire_on_page=2)
    with pytest.raises(Exception) as info:
        ListPager(pages, page_size=10).list(ListOptions())
    assert is_expired(info.value)


def test_list_expired_falls_back_to_full_list() -> None:
    pages = FakePages(21, 10, expire_on_page=2)
    result, paginated = ListPager(pages, page_size=10, full_list_if_expired=True).list(
        ListOptions(resource_version="rv:10")
    )
    # the fallback is one unpaged call that lists what remains in this fake; the real
    # server would list everything at the restored resourceVersion
    assert pages.calls == 3 and paginated is True
    assert names(result) == [str(i) for i in range(10, 21)]


@pytest.mark.parametrize("match", ["", "NotOlderThan"])
def test_list_clears_resource_version_on_continue(match: str) -> None:
    pages = FakePages(11, 10)
    result, paginated = ListPager(pages, page_size=10).list(
        ListOptions(resource_version="rv:10", resource_version_match=match)
    )
    assert names(result) == [str(i) for i in range(11)] and paginated
    assert not pages.errors


@pytest.mark.parametrize("total", [0, 9, 10, 11, 21])
def test_each_list_item(total: int) -> None:
    """TestListPager_EachListItem."""
    seen: list[str] = []
    ListPager(FakePages(total, 10), page_size=10).each_list_item(
        ListOptions(), lambda item: seen.append(item["metadata"]["name"])
    )
    assert seen == [str(i) for i in range(total)]


def test_each_list_item_expired_after_first_page() -> None:
    seen: list[str] = []
    with pytest.raises(Exception) as info:
        ListPager(FakePages(21, 10, expire_on_page=2), page_size=10).each_list_item(
            ListOptions(), lambda item: seen.append(item["metadata"]["name"])
        )
    assert is_expired(info.value)
    assert seen == [str(i) for i in range(10)]


def test_each_list_item_fn_exception_propagates() -> None:
    seen: list[str] = []

    def fn(item: Any) -> None:
        seen.append(item["metadata"]["name"])
        if len(seen) == 3:
            raise RuntimeError("fn failed")

    with pytest.raises(RuntimeError, match="fn failed"):
        ListPager(FakePages(51, 10), page_size=10).each_list_item(ListOptions(), fn)
    assert seen == ["0", "1", "2"]


def test_each_list_item_stop_event() -> None:
    stop = threading.Event()
    seen: list[str] = []

    def fn(item: Any) -> None:
        seen.append(item["metadata"]["name"])
        if len(seen) == 3:
            stop.set()

    with pytest.raises(StopRequestedError):
        ListPager(FakePages(51, 10), page_size=10).each_list_item(ListOptions(), fn, stop)
    assert len(seen) == 10  # the page in hand is finished first


@pytest.mark.parametrize(
    ("buffer", "total_pages", "processed_pages", "expected_calls"),
    [(0, 1, 1, 1), (0, 5, 1, 2), (0, 5, 2, 3), (0, 5, 5, 5),
     (1, 5, 1, 3), (1, 5, 5, 5), (10, 5, 1, 5)],
)
def test_each_list_page_buffered(
    buffer: int, total_pages: int, processed_pages: int, expected_calls: int
) -> None:
    """TestListPager_eachListPageBuffered: page fetches = min(T, P + buffer + 1)."""
    pages = FakePages(10 * total_pages, 10)
    count = [0]
    enough = threading.Event()
    original = pages.__call__

    def counting(options: ListOptions) -> Any:
        result = original(options)
        if pages.calls >= expected_calls:
            enough.set()
        return result

    def fn(item: Any) -> None:
        count[0] += 1
        if count[0] == 10 * processed_pages:
            # wait until the fetcher has run ahead as far as the buffer lets it
            assert enough.wait(5)
            raise StopIteration("done")

    with pytest.raises(StopIteration):
        ListPager(counting, page_size=10, page_buffer_size=buffer).each_list_item(
            ListOptions(), fn
        )
    assert pages.calls == expected_calls


def test_negative_buffer_and_defaults() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        ListPager(FakePages(1, 10), page_buffer_size=-1).each_list_item(None, print)
    pager = new_list_pager(FakePages(1, 500))
    assert (pager.page_size, pager.full_list_if_expired, pager.page_buffer_size) == (500, True, 10)
