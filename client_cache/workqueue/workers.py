"""Workers over a work queue without hand-started threads: :func:`run_workers`, what
client-go's sample-controller writes as ``for i := 0; i < workers; i++ { go
wait.UntilWithContext(ctx, c.runWorker, time.Second) }`` with its ``processNextWorkItem``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from client_cache.api import meta
from client_cache.util.stop import on_stop

__all__ = ["run_workers"]

_log = logging.getLogger(__name__)

T = TypeVar("T", bound=Hashable)


def _named(item: Any) -> str:
    """An item as a log line names it: a key as it is, an object by kind and
    namespace/name (never its content)."""
    return repr(item) if isinstance(item, (str, int)) else meta.describe(item)


def run_workers(queue: Any, process: Callable[[T], None], workers: int,
                stop: threading.Event, *, name: str = "worker") -> None:
    """Run ``workers`` threads (``<name>-0``, ``<name>-1``...), each taking an item from
    ``queue``, calling ``process(item)`` and marking it done, until ``stop`` is set; then
    shut the queue down, let each worker finish the item in hand, and return when they
    have ended. A rate-limiting queue (one with ``forget`` and ``add_rate_limited``)
    forgets an item ``process`` handled and adds back with backoff one it raised on, as
    sample-controller's ``processNextWorkItem`` does; on another queue the error is
    logged and the item dropped. Every failure is logged at ERROR with its traceback,
    the item named by its key (an object by kind and namespace/name, never its content)."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    forget = getattr(queue, "forget", None)
    retry = getattr(queue, "add_rate_limited", None)

    def work() -> None:
        while True:
            item, shutdown = queue.get()
            if shutdown:
                return
            try:
                process(item)
            except Exception:
                _log.exception("%s: processing %s failed%s", name, _named(item),
                               "; retried with backoff" if retry else "")
                if retry is not None and not queue.shutting_down():
                    retry(item)
            else:
                if forget is not None:
                    forget(item)
            finally:
                queue.done(item)

    threads = [threading.Thread(target=work, name=f"{name}-{i}", daemon=True)
               for i in range(workers)]
    for thread in threads:
        thread.start()
    stopping = on_stop(stop, queue.shut_down)
    try:
        for thread in threads:
            thread.join()
    finally:
        stopping.cancel()
        queue.shut_down()
