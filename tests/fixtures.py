"""Objects and key functions shared by the tests (the upstream fixtures, with our values)."""

from __future__ import annotations

import contextlib
import gc
import os
import queue as queue_module
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hypothesis import strategies as st
from kubernetes.client import ApiClient, Configuration

from bench import go_programs
from client_cache import FIFOClosedError
from client_cache.record import CoreV1EventSink
from client_cache.testing.envtest import Binaries, find_binaries
from client_cache.util import _native as native


def eventually(predicate: Callable[[], object], timeout: float = 10.0,
               message: str | Callable[[], str] = "") -> None:
    """Wait until ``predicate()`` is truthy; fail the test after ``timeout`` seconds.

    For state the test cannot be woken by (another process, a server's counters, a
    thread's registration); it re-checks every 5 ms and never carries on past its deadline.
    Waits that can be woken (a handler's condition, a queue) should use those instead.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"not true within {timeout} s: {text or predicate}")
        time.sleep(0.005)


@dataclass(frozen=True)
class StoreObject:
    """Upstream's ``testStoreObject{id, val}``: key is ``id``, index ``by_val`` is ``[val]``."""

    id: str
    val: str


def containers(obj: Any) -> Iterator[Any]:
    """Every dict, list and tuple in ``obj`` (itself included), through struct fields."""
    if isinstance(obj, (dict, list, tuple)):
        yield obj
        for value in obj.values() if isinstance(obj, dict) else obj:
            yield from containers(value)
    for field in getattr(obj, "__struct_fields__", ()):
        yield from containers(getattr(obj, field))


@contextlib.contextmanager
def running(informer: Any, name: str = "test-informer") -> Iterator[threading.Event]:
    """Run ``informer`` in a named daemon thread for the ``with`` block (yields its stop
    event); on leaving, stop it and check that its thread ended within 2 s."""
    stop = threading.Event()
    thread = threading.Thread(target=informer.run, args=(stop,), name=name, daemon=True)
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(2.0)
    assert not thread.is_alive(), f"{name} did not stop"


class UpdateQueue:
    """An event handler putting each update's (old, new) on a queue (adds and deletes
    ignored)."""

    def __init__(self) -> None:
        self.updates: queue_module.Queue[tuple[Any, Any]] = queue_module.Queue()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        pass

    def on_update(self, old: Any, new: Any) -> None:
        self.updates.put((old, new))

    def on_delete(self, obj: Any) -> None:
        pass


def store_key_func(obj: Any) -> str:
    assert isinstance(obj, StoreObject)
    return obj.id


def by_val(obj: Any) -> list[str]:
    return [obj.val]


def pod(name: str, namespace: str = "", labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, rv: str = "1", *, uid: str = "",
        **fields: Any) -> dict[str, Any]:
    """The one builder of test objects: a wire-form pod dict. ``rv=""`` leaves the
    resourceVersion out; ``fields`` are top-level fields (``spec=...``, ``status=...``,
    or ``kind``/``apiVersion`` to build another kind)."""
    md: dict[str, Any] = {"name": name}
    if rv:
        md["resourceVersion"] = rv
    if namespace:
        md["namespace"] = namespace
    if uid:
        md["uid"] = uid
    if labels is not None:
        md["labels"] = labels
    if annotations is not None:
        md["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, **fields}


@dataclass(frozen=True)
class FifoObject:
    """Upstream's ``testFifoObject{name, val}``: key is ``name``."""

    name: str
    val: Any


def mk(name: str, val: Any) -> FifoObject:
    return FifoObject(name, val)


def fifo_key(obj: Any) -> str:
    if not isinstance(obj, FifoObject):
        raise TypeError(f"not a FifoObject: {obj!r}")
    return obj.name


class LiteralListerGetter:
    """Upstream's ``literalListerGetter``: known objects from a function returning a list."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def list_keys(self) -> list[str]:
        return [o.name for o in self._source()]

    def get_by_key(self, key: str) -> tuple[Any, bool]:
        for obj in self._source():
            if obj.name == key:
                return obj, True
        return None, False


def known(*objs: FifoObject) -> LiteralListerGetter:
    """``K(objs...)``."""
    return LiteralListerGetter(lambda: list(objs))


def pop2(queue: Any, timeout: float = 5.0) -> tuple[Any, bool]:
    """Pop once; return ``(item, is_in_initial_list)``."""
    seen: list[bool] = []
    item = queue.pop(lambda obj, initial: seen.append(initial), timeout=timeout)
    return item, seen[0]


def newest(deltas: Any) -> Any:
    """``testPop``'s projection: the newest object of popped Deltas."""
    return deltas.newest().object


def check_two_producers_keep_order(queue: Any, unwrap: Any, amount: int = 400) -> None:
    """Upstream ``Test*_basic``: two threads add ``amount`` objects each (one with int
    values, one with float values); popping everything yields each producer's values in
    strictly increasing order. ``unwrap`` turns a popped item into the object."""

    def produce(prefix: str, kind: type) -> None:
        for i in range(amount):
            queue.add(mk(f"{prefix}{i}", kind(i + 1)))

    threads = [
        threading.Thread(target=produce, args=("a", int), name="test-prod-a", daemon=True),
        threading.Thread(target=produce, args=("b", float), name="test-prod-b", daemon=True),
    ]
    for t in threads:
        t.start()
    last_int, last_float = 0, 0.0
    for _ in range(2 * amount):
        obj = unwrap(queue.pop(lambda o, i: None, timeout=5))
        if isinstance(obj.val, int):
            assert obj.val > last_int
            last_int = obj.val
        else:
            assert obj.val > last_float
            last_float = obj.val
    for t in threads:
        t.join(5)
    assert (last_int, last_float) == (amount, float(amount))


def check_pop_unblocks_when_closed(queue: Any, poppers: int = 10) -> None:
    """Upstream ``Test*_PopShouldUnblockWhenClosed``: blocked pops all raise
    FIFOClosedError within 1 s of ``close()``."""
    errors: list[BaseException] = []
    started = threading.Barrier(poppers + 1)

    def blocked() -> None:
        started.wait(5)
        try:
            queue.pop(lambda o, i: None)
        except FIFOClosedError as err:
            errors.append(err)

    threads = [threading.Thread(target=blocked, name=f"test-blocked-pop-{i}", daemon=True)
               for i in range(poppers)]
    for t in threads:
        t.start()
    started.wait(5)
    queue.close()
    for t in threads:
        t.join(1.0)
        assert not t.is_alive()
    assert len(errors) == poppers
    assert queue.is_closed()


def check_has_synced_does_not_wait_for_a_pop(queue: Any) -> None:
    """``has_synced`` answers at once while a pop processes the item that completes the
    initial population (the popping thread holds the queue's lock meanwhile: an event
    loop asking must not wait for a handler), answers False until that item has been
    processed, and True after, with the ``on_synced`` callbacks run before it does."""
    queue.replace([mk("a", 1)], "0")
    processing = threading.Event()
    release = threading.Event()
    seen: list[bool] = []
    queue.on_synced(lambda: seen.append(queue.has_synced()))

    def process(obj: Any, initial: bool) -> None:
        processing.set()
        assert release.wait(10)

    popper = threading.Thread(target=queue.pop, args=(process,), name="test-pop", daemon=True)
    popper.start()
    try:
        assert processing.wait(5)
        answers: queue_module.Queue[bool] = queue_module.Queue()
        asker = threading.Thread(target=lambda: answers.put(queue.has_synced()),
                                 name="test-has-synced", daemon=True)
        asker.start()
        assert answers.get(timeout=5) is False  # answered while the pop holds the lock
        assert seen == []
    finally:
        release.set()
        popper.join(5)
    assert not popper.is_alive()
    assert seen == [False]  # the callbacks ran before has_synced turned True
    assert queue.has_synced() is True


def check_each_burst_wakes_the_sleeping_poppers(queue: Any, poppers: int) -> None:
    """``poppers`` threads pop while items come in bursts of 1 to 7, and each burst is
    waited for until every popper is asleep again: so the first add of every burst must
    wake them (an add that left a sleeping popper unwoken hangs the wait); no item is
    popped twice or lost."""
    done = threading.Condition()
    popped: list[Any] = []

    def process(obj: Any, initial: bool) -> None:
        with done:
            popped.append(obj)
            done.notify_all()

    def pop_until_closed() -> None:
        while True:
            try:
                queue.pop(process)
            except FIFOClosedError:
                return

    threads = [threading.Thread(target=pop_until_closed, name=f"test-pop-{i}", daemon=True)
               for i in range(poppers)]
    for t in threads:
        t.start()
    added = 0
    try:
        for burst in range(400):
            for _ in range(burst % 7 + 1):
                queue.add(mk(f"k{added}", added))
                added += 1
            with done:
                assert done.wait_for(lambda n=added: len(popped) == n, 5), \
                    f"burst {burst}: {len(popped)} of {added} popped"
    finally:
        queue.close()
        for t in threads:
            t.join(5)
    assert not any(t.is_alive() for t in threads)
    assert len(popped) == added == 1597  # 400 bursts of 1-7


def apply_sync_actions(queue: Any, actions: list[str]) -> None:
    """Run an upstream ``Test*_HasSynced`` action list on ``queue``."""
    for action in actions:
        if action == "add a":
            queue.add(mk("a", 1))
        elif action == "delete a":
            queue.delete(mk("a", 1))
        elif action == "resync":
            queue.resync()
        elif action == "replace":
            queue.replace([], "0")
        elif action == "replace a b":
            queue.replace([mk("a", 1), mk("b", 2)], "0")
        elif action == "replace a a2":
            queue.replace([mk("a", 1), mk("a", 2)], "0")
        elif action == "pop":
            queue.pop(lambda o, i: None, timeout=1)
        else:
            raise ValueError(action)



def envtest_binaries() -> Binaries:
    """The built real kube-apiserver + etcd, or skip the test with how to build them; under
    ``CI=true`` a missing build fails instead (CI must run the real-server tests)."""
    found = find_binaries()
    if found is None:
        missing("the real kube-apiserver and etcd are not built: run `make envtest` "
                "(needs Go and the Go module proxy; about 6 minutes the first time)")
    return found


def go_program(name: str) -> Path:
    """The binary of the Go program ``name`` (:mod:`bench.go_programs`), built by ``make
    envtest``; skips the test until then (fails under ``CI=true``)."""
    binary = go_programs.built(name)
    if binary is None:
        missing(go_programs.missing_message(name))
    return binary


def missing(message: str) -> NoReturn:
    """Skip the test (or, called at import, its module) because something it needs is not
    here; under ``CI=true`` fail instead: CI builds everything and must run every test
    (but for the native parts in the leg that turns them off, ``CLIENT_CACHE_NATIVE=0``)."""
    if os.environ.get("CI", "").lower() == "true" and native.enabled():
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def missing_native(name: str) -> NoReturn:
    """:func:`missing` for native module ``name``: "turned off" in the leg that turns the
    native parts off (``make test-no-native``), "not built" elsewhere."""
    if not native.enabled():
        missing(f"{name} is turned off ({native.NATIVE_ENV}=0)")
    missing(f"{name} was not built (no C compiler)")


#: JSON values for property tests of code that follows JSON's structure without decoding
#: it (the LIST splitters): strings full of the characters that structure is made of,
#: and "items" keys at every depth.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab"\\[]{},: \n\u00e9\u4e2d'), max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["items", "a", 'k"]', "[{"]), inner, max_size=4),
    max_leaves=20)


def threads_amid_collections(work: Callable[[int], None], count: int = 4,
                             name: str = "worker") -> int:
    """Run ``work(n)`` in ``count`` threads started together, with a collection after
    every allocation of a container, a Python callback in each (a chance for another
    thread to run in the middle of C code that allocates) and the shortest switch
    interval; raise the first failure of a thread. Returns the callbacks run."""
    thresholds = gc.get_threshold()
    interval = sys.getswitchinterval()
    switches = 0

    def callback(phase: str, info: dict[str, int]) -> None:
        nonlocal switches
        switches += 1

    failures: list[BaseException] = []
    start = threading.Barrier(count)

    def run(n: int) -> None:
        try:
            start.wait()
            work(n)
        except BaseException as error:  # handed to the main thread
            failures.append(error)

    threads = [threading.Thread(target=run, args=(n,), name=f"{name}-{n}")
               for n in range(count)]
    gc.set_threshold(1, 1, 1)
    sys.setswitchinterval(1e-6)
    gc.callbacks.append(callback)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        gc.callbacks.remove(callback)
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
    if failures:
        raise failures[0]
    assert not any(thread.is_alive() for thread in threads)
    return switches


class TimedEventSink:
    """A CoreV1 event sink that records, on the monotonic clock, when each create
    finished (the record tests' view of when the last write ended)."""

    def __init__(self, api_client: Any, **options: Any) -> None:
        self.sink = CoreV1EventSink(api_client, **options)
        self.finished: list[float] = []

    def create(self, event: dict[str, Any]) -> dict[str, Any]:
        stored = self.sink.create(event)
        self.finished.append(time.monotonic())
        return stored

    def patch(self, event: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
        return self.sink.patch(event, patch)


class RecordingStore:
    """A store (``new_store`` by namespace/name) that records each write as
    ``(operation, object)`` (``replace`` with its list of items), so a test can wait for
    the n-th write instead of polling the store."""

    def __init__(self) -> None:
        from client_cache import meta_namespace_key_func, new_store  # noqa: PLC0415
        self.store = new_store(meta_namespace_key_func)
        self.cond = threading.Condition()
        self.writes: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _record(self, op: str, obj: Any) -> None:
        with self.cond:
            self.writes.append((op, obj))
            self.cond.notify_all()

    def add(self, obj: Any) -> None:
        self.store.add(obj)
        self._record("add", obj)

    def update(self, obj: Any) -> None:
        self.store.update(obj)
        self._record("update", obj)

    def delete(self, obj: Any) -> None:
        self.store.delete(obj)
        self._record("delete", obj)

    def replace(self, items: list[Any], resource_version: str) -> None:
        self.store.replace(items, resource_version)
        self._record("replace", items)

    def wait_for(self, count: int, timeout: float = 30.0) -> list[tuple[str, Any]]:
        """The writes so far, once there are at least ``count``; fails after ``timeout``."""
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.writes) >= count, timeout), \
                [op for op, _ in self.writes]
            return list(self.writes)


def http_get(url: str) -> tuple[int, str]:
    """GET ``url`` (5 s timeout): its status and body, an HTTP error's included."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


class HungServer:
    """A loopback server that accepts connections and never answers (nor reads, nor
    closes): a server hung behind a live TCP stack. :attr:`connected` is set at the first
    connection; the accept thread ends and every connection closes on exit."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.connected = threading.Event()
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="test-hung-server",
                                        daemon=True)

    def __enter__(self) -> HungServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(1)
        for conn in self._held:
            conn.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self._held.append(conn)
            self.connected.set()

    def api_client(self) -> Any:
        """A ``kubernetes`` ApiClient for this server (its caller closes it)."""
        return ApiClient(Configuration(host=f"http://127.0.0.1:{self.port}"))
