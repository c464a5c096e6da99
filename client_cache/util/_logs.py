"""Failures an operator must see, even where the application configured no logging.

The package's loggers carry a ``NullHandler`` (the library convention), which keeps
Python's last-resort handler quiet: with nothing configured, not even an ERROR reached
stderr. :func:`log_visibly` logs as usual and, when no handler but a ``NullHandler``
would receive the record, hands it to :data:`logging.lastResort` too (stderr, WARNING and
above), as Python does for an application without a library's ``NullHandler``.
controller-runtime and kopf print the first failure of a reconcile, with its stack, the
same way.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

__all__ = ["FAILURE_REPEAT_SECONDS", "FailureEpisodes", "Repeat", "configured",
           "log_visibly"]

FAILURE_REPEAT_SECONDS = 60.0
"""While something keeps failing for one reason, how often an ERROR line says so again (the
first failure of an episode is always logged, with its traceback)."""


def configured(logger: logging.Logger) -> bool:
    """Whether a handler other than a ``NullHandler`` receives ``logger``'s records (on it
    or on an ancestor it propagates to)."""
    current: logging.Logger | None = logger
    while current is not None:
        if any(not isinstance(h, logging.NullHandler) for h in current.handlers):
            return True
        if not current.propagate:
            return False
        current = current.parent
    return False


def log_visibly(logger: logging.Logger, level: int, msg: str, *args: Any,
                exc_info: BaseException | None = None,
                extra: dict[str, Any] | None = None) -> None:
    """Log ``msg % args`` at ``level`` on ``logger`` (with ``exc_info``'s traceback and
    ``extra``'s attributes on the record), and to stderr through
    :data:`logging.lastResort` when nothing is configured to show it."""
    if not logger.isEnabledFor(level):
        return
    info = (type(exc_info), exc_info, exc_info.__traceback__) if exc_info else None
    record = logger.makeRecord(logger.name, level, "(client_cache)", 0, msg, args, info,
                               extra=extra)
    logger.handle(record)
    last = logging.lastResort
    if last is not None and level >= last.level and not configured(logger):
        last.handle(record)
        sys.stderr.flush()


def log_failure(logger: logging.Logger, episodes: FailureEpisodes, key: Hashable,
                reason: str, msg: str, *args: Any) -> None:
    """Log a failure of ``key`` for ``reason`` by episode (:class:`FailureEpisodes`): the
    first at ERROR, visible with no logging configured (:func:`log_visibly`); repeats at
    DEBUG, with one ERROR line every ``repeat_seconds`` saying how many there were."""
    repeat = episodes.failed(key, reason)
    if repeat.first:
        log_visibly(logger, logging.ERROR, msg, *args)
    elif repeat.due:
        log_visibly(logger, logging.ERROR, msg + " (%d more times in %.0f s)", *args,
                    repeat.count, repeat.seconds)
    else:
        logger.debug(msg, *args)


@dataclass
class _Episode:
    since: float
    reason: str
    count: int = 0


@dataclass(frozen=True)
class Repeat:
    """What :meth:`FailureEpisodes.failed` decided: ``first`` (a new episode: log it at
    ERROR with its traceback), else ``due`` (log one ERROR line saying ``count`` more
    failures in ``seconds``) or neither (DEBUG at most)."""

    first: bool
    due: bool = False
    count: int = 0
    seconds: float = 0.0


class FailureEpisodes:
    """Rate-limits the ERROR lines of repeated failures, per key (an object, a handler):
    an *episode* is the failures of one key for one reason, until :meth:`ended` or a
    failure for another reason starts the next. Its first failure is to be logged at
    once; then one line every ``repeat_seconds`` with the count. Thread-safe; times on
    ``monotonic``. (controller-runtime and kopf log every failure; this keeps the first
    with its traceback and a count, so a hot loop cannot flood stderr.)"""

    def __init__(self, repeat_seconds: float = FAILURE_REPEAT_SECONDS,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.repeat_seconds = repeat_seconds
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._episodes: dict[Hashable, _Episode] = {}

    def failed(self, key: Hashable, reason: str) -> Repeat:
        """``key`` failed for ``reason``: what to log."""
        now = self._monotonic()
        with self._lock:
            episode = self._episodes.get(key)
            if episode is None or episode.reason != reason:
                self._episodes[key] = _Episode(now, reason)
                return Repeat(first=True)
            episode.count += 1
            since, count = episode.since, episode.count
            if now - since < self.repeat_seconds:
                return Repeat(first=False, count=count, seconds=now - since)
            episode.since, episode.count = now, 0
            return Repeat(first=False, due=True, count=count, seconds=now - since)

    def ended(self, key: Hashable) -> None:
        """``key`` succeeded: its episode, if any, is over."""
        if self._episodes:
            with self._lock:
                self._episodes.pop(key, None)
