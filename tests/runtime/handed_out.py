"""What a scheduler hands out, for the priority tests."""

from __future__ import annotations

from client_cache.runtime.scheduler import Scheduler


def take_all(s: Scheduler) -> list[tuple[str, int]]:
    """Every due request, in the order handed out, as (name, priority); each is marked
    done as it is taken."""
    out = []
    s.wait_for_idle_loop()
    while True:
        try:
            request = s.get(timeout=0)
        except TimeoutError:
            return out
        assert request is not None
        s.done(request.obj_ref)
        out.append((request.obj_ref.name, request.priority))
