"""Error and crash handling for background threads (apimachinery ``util/runtime``).

:func:`handle_error` is where errors that cannot be returned to anyone go (Go
``utilruntime.HandleError``): each registered handler is called in turn. The default
handlers log the error through ``logging`` (logger ``client_cache``) and then rate-limit the
caller to one error per millisecond, as upstream's rudimentary backoff does, so a hot error
loop cannot flood the log or burn a core.

:func:`handle_crash` is a context manager for the top of a thread (Go ``defer
HandleCrash()``): an exception escaping the block is logged and passed to the registered
panic handlers, then re-raised when :data:`REALLY_CRASH` is true (the default, as upstream).

Module-level state (the handler lists, ``REALLY_CRASH``) is the documented exception to "no
mutable module state"; :func:`reset_for_tests` restores the defaults.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = [
    "ERROR_HANDLERS",
    "PANIC_HANDLERS",
    "REALLY_CRASH",
    "handle_crash",
    "handle_error",
    "reset_for_tests",
]

_log = logging.getLogger("client_cache")

ErrorHandler = Callable[[BaseException | str], None]
PanicHandler = Callable[[BaseException], None]


class _RudimentaryErrorBackoff:
    """Makes the caller wait so that errors are handled at most once per ``min_period``."""

    def __init__(self, min_period: float) -> None:
        self.min_period = min_period
        self._last = 0.0
        self._lock = threading.Lock()

    def on_error(self, _err: BaseException | str) -> None:
        with self._lock:
            since = time.monotonic() - self._last
            if since < self.min_period:
                time.sleep(self.min_period - since)
            self._last = time.monotonic()


def _log_error(err: BaseException | str) -> None:
    """Log at ERROR; an exception keeps its traceback (when it was raised)."""
    if isinstance(err, BaseException) and err.__traceback__ is not None:
        _log.error("%s", err, exc_info=(type(err), err, err.__traceback__))
    else:
        _log.error("%s", err)


def _default_error_handlers() -> list[ErrorHandler]:
    return [_log_error, _RudimentaryErrorBackoff(0.001).on_error]


def _log_panic(err: BaseException) -> None:
    _log.error(
        "Observed a panic: %r\n%s",
        err,
        "".join(traceback.format_exception(type(err), err, err.__traceback__)),
    )


ERROR_HANDLERS: list[ErrorHandler] = _default_error_handlers()
"""Called in order by :func:`handle_error` (Go ``ErrorHandlers``)."""

PANIC_HANDLERS: list[PanicHandler] = [_log_panic]
"""Called in order by :func:`handle_crash` (Go ``PanicHandlers``)."""

REALLY_CRASH = True
"""Whether :func:`handle_crash` re-raises (Go ``ReallyCrash``)."""


def handle_error(err: BaseException | str) -> None:
    """Report an error that has no caller to return to. ``None``-like empty values are
    ignored, as upstream ignores a nil error."""
    if not err:
        return
    for handler in list(ERROR_HANDLERS):
        handler(err)


@contextmanager
def handle_crash(*additional: PanicHandler) -> Iterator[None]:
    """Log an exception escaping the block, call the panic handlers and ``additional``,
    then re-raise it if :data:`REALLY_CRASH`."""
    try:
        yield
    except Exception as err:
        for handler in [*PANIC_HANDLERS, *additional]:
            handler(err)
        if REALLY_CRASH:
            raise


def reset_for_tests() -> None:
    """Restore the default handlers and ``REALLY_CRASH = True``."""
    global REALLY_CRASH  # noqa: PLW0603 - the documented module-level switch
    ERROR_HANDLERS[:] = _default_error_handlers()
    PANIC_HANDLERS[:] = [_log_panic]
    REALLY_CRASH = True
