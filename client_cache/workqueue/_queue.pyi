"""Types of client_cache.workqueue._queue, the work queue's native core (C in
workqueue/csrc/queue.c); client_cache.workqueue.queue's Python code is its
specification, and tests/test_stubs.py checks that this stub names exactly what the
built module has."""

from collections import deque
from typing import Any, Final, final

SOURCE_HASH: Final[str]

@final
class Core:
    shutting_down: bool
    drain: bool
    def __init__(self, lock: Any, dirty: set[Any], processing: set[Any], line: deque[Any],
                 getters: deque[Any], nothing: object, /) -> None: ...
    def add(self, item: Any, /) -> Any: ...
    def take(self) -> Any: ...
    def done(self, item: Any, /) -> Any: ...
