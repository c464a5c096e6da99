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
from typing import Any

__all__ = ["configured", "log_visibly"]


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
                exc_info: BaseException | None = None) -> None:
    """Log ``msg % args`` at ``level`` on ``logger`` (with ``exc_info``'s traceback), and
    to stderr through :data:`logging.lastResort` when nothing is configured to show it."""
    if not logger.isEnabledFor(level):
        return
    info = (type(exc_info), exc_info, exc_info.__traceback__) if exc_info else None
    record = logger.makeRecord(logger.name, level, "(client_cache)", 0, msg, args, info)
    logger.handle(record)
    last = logging.lastResort
    if last is not None and level >= last.level and not configured(logger):
        last.handle(record)
        sys.stderr.flush()
