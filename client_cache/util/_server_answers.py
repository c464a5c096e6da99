"""server_answers: the moment a server answers again, told to whoever waits for it.

Every request the library sends goes through :func:`client_cache.util.rest_metrics.measure`,
which calls :func:`answered` with the URL's ``host:port`` when an HTTP answer came that
says the server is serving (any status but 429 and 5xx). A reflector backing off after
its server became unreachable registers with :func:`on_answer` and retries as soon as
anything on the same process reaches that server again (a leader election or shard
Lease renewal every retry period, another informer's retry, a reconcile's write),
instead of sleeping out client-go's backoff of up to 30 s (jittered to 60 s). A port
addition: client-go waits its backoff. What client-go's backoff is for, not hammering a
server that is down, still holds: when nothing else talks to the server, the waiting
reflectors take turns through :func:`claim_probe`, so a process sends a down server one
small request per period between them, not one per informer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["Registration", "answered", "claim_probe", "on_answer"]

_lock = threading.Lock()
_waiting: dict[str, list[Callable[[], object]]] = {}
_probed: dict[str, float] = {}  # host -> when its last probe was claimed (monotonic)


class Registration:
    """A callback registered with :func:`on_answer`; :meth:`cancel` takes it back."""

    def __init__(self, host: str, callback: Callable[[], object]) -> None:
        self._host = host
        self._callback = callback

    def cancel(self) -> None:
        """Not called any more (a no-op once it was)."""
        with _lock:
            waiting = _waiting.get(self._host)
            if waiting is not None and self._callback in waiting:
                waiting.remove(self._callback)
                if not waiting:
                    del _waiting[self._host]


def on_answer(host: str, callback: Callable[[], object]) -> Registration:
    """Call ``callback`` once, on the thread that got the answer, the next time ``host``
    (``host:port``) answers; it must be quick (it sends to a channel)."""
    with _lock:
        _waiting.setdefault(host, []).append(callback)
    return Registration(host, callback)


def answered(host: str, status: int) -> None:
    """``host`` answered with ``status``: the waiting callbacks run (once each) unless the
    status says the server is not serving (429, 5xx). The hot path is one dict lookup
    when nobody waits."""
    if not _waiting or status == 429 or status >= 500:
        return
    with _lock:
        callbacks = _waiting.pop(host, None)
    for callback in callbacks or ():
        callback()


def claim_probe(host: str, period: float, now: float) -> bool:
    """True when the caller should probe ``host`` now: no probe of it was claimed in the
    ``period`` seconds before ``now`` (a monotonic reading); the claim is recorded.
    Callers that get False wait for the answer the claimer's probe brings."""
    with _lock:
        last = _probed.get(host)
        if last is not None and 0.0 <= now - last < period:
            return False
        _probed[host] = now
        return True
