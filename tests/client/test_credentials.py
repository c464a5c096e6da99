"""Credentials never leak: with every logger at DEBUG and an ApiClient carrying a bearer token
and client certificate files, the informer is driven through every error path the embedded
server can produce; no log record, formatted traceback or exception text may contain the
token, the key material, the key file's path or an Authorization header.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration, CoreV1Api

from client_cache import mutation_detector
from client_cache.api.watch import Event, EventType, FakeWatcher
from client_cache.controller import ResourceEventHandlerFuncs
from client_cache.delta_fifo import Delta, Deltas, DeltaType
from client_cache.errors import KeyFuncError
from client_cache.informers import (
    SharedInformerFactoryOptions,
    new_shared_informer_factory_with_options,
)
from client_cache.listwatch import ListWatch
from client_cache.reflector import Reflector, ReflectorOptions
from client_cache.store import DeletedFinalStateUnknown, new_store
from client_cache.testing.apiserver import EmbeddedApiServer
from tests.fixtures import eventually

TOKEN = "s3cr3t-t0ken-9f2c41d7e"
KEY_MATERIAL = "UHJpdmF0ZUtleU1hdGVyaWFsLTdkMWU"
NAMESPACE = "creds"


class Secrets:
    """What must never appear, and the check over collected texts."""

    def __init__(self, key_file: Path) -> None:
        self.needles = [TOKEN, KEY_MATERIAL, str(key_file), "Authorization", "authorization:",
                        "Bearer "]

    def leaks(self, texts: list[str]) -> list[tuple[str, str]]:
        return [(needle, text[:300]) for text in texts for needle in self.needles
                if needle in text]


def record_texts(records: list[logging.LogRecord]) -> list[str]:
    """Everything a handler could write for these records: message, arguments, traceback."""
    texts = []
    for record in records:
        texts.append(record.getMessage())
        texts.append(repr(record.args))
        if record.exc_info and record.exc_info[1] is not None:
            texts.append("".join(traceback.format_exception(*record.exc_info)))
        if record.exc_text:
            texts.append(record.exc_text)
    return texts


@pytest.fixture
def secret_client(
        tmp_path: Path) -> Iterator[tuple[EmbeddedApiServer, Secrets, Callable[[], ApiClient]]]:
    key_file = tmp_path / "client.key"
    key_file.write_text(f"-----BEGIN PRIVATE KEY-----\n{KEY_MATERIAL}\n"
                        "-----END PRIVATE KEY-----\n")
    cert_file = tmp_path / "client.crt"
    cert_file.write_text("-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n")
    server = EmbeddedApiServer(bookmark_interval=0.2).start()

    def client() -> ApiClient:
        config = Configuration()
        config.host = server.url
        config.api_key = {"authorization": TOKEN}
        config.api_key_prefix = {"authorization": "Bearer"}
        config.cert_file = str(cert_file)
        config.key_file = str(key_file)
        return ApiClient(config)

    try:
        yield server, Secrets(key_file), client
    finally:
        server.stop()


def wait_for_log(caplog: pytest.LogCaptureFixture, fragment: str, timeout: float = 20) -> None:
    eventually(lambda: any(fragment in text.lower() for text in record_texts(caplog.records)),
               timeout, f"no log record with {fragment!r}")


def test_the_leak_check_catches_a_logged_token(
        secret_client: tuple[EmbeddedApiServer, Secrets, Callable[[], ApiClient]],
        caplog: pytest.LogCaptureFixture) -> None:
    """The check itself: a regression that logged the header would be caught."""
    _, secrets, client = secret_client
    caplog.set_level(logging.DEBUG)
    api = client()
    setting = api.configuration.auth_settings()["BearerToken"]  # what the client sends
    headers = {"Authorization": setting["value"]}
    logging.getLogger("client_cache.reflector").debug("request headers: %s", headers)
    assert {needle for needle, _ in secrets.leaks(record_texts(caplog.records))} >= {
        TOKEN, "Bearer "}


class Informer:
    """A pods informer on ``client`` with a recording add handler and watch error handler."""

    def __init__(self, api: ApiClient, errors: list[str]) -> None:
        self.stop = threading.Event()
        self.factory = new_shared_informer_factory_with_options(
            api, 0, SharedInformerFactoryOptions(namespace=NAMESPACE))
        informer = self.factory.core().v1().pods().informer()

        def on_watch_error(reflector: Any, err: BaseException) -> None:
            errors.append(str(err))
            errors.append(repr(err))
            errors.append("".join(traceback.format_exception(type(err), err, err.__traceback__)))

        informer.set_watch_error_handler(on_watch_error)
        self.seen: set[str] = set()
        self.changed = threading.Condition()
        informer.add_event_handler(ResourceEventHandlerFuncs(add_func=self.on_add))
        self.factory.start(self.stop)
        assert all(self.factory.wait_for_cache_sync(self.stop).values())

    def on_add(self, obj: Any) -> None:
        with self.changed:
            self.seen.add(obj["metadata"]["name"])
            self.changed.notify_all()

    def close(self) -> None:
        self.stop.set()
        self.factory.shutdown()


def test_no_secret_in_logs_or_errors_on_any_error_path(
        secret_client: tuple[EmbeddedApiServer, Secrets, Callable[[], ApiClient]],
        caplog: pytest.LogCaptureFixture) -> None:
    """Each fault gets a fresh informer (the reflector's backoff grows with every failure,
    up to 30 s, as in client-go, and would make a shared one slow)."""
    server, secrets, client = secret_client
    caplog.set_level(logging.DEBUG)  # every logger: ours, urllib3's, the kubernetes client's
    errors: list[str] = []
    core = CoreV1Api(client())
    made = [0]

    def still_works(informer: Informer) -> None:
        """After a fault, a new pod reaches the handler."""
        made[0] += 1
        name = f"p{made[0]}"
        deadline = time.monotonic() + 20
        while True:
            try:
                core.create_namespaced_pod(NAMESPACE, {"metadata": {"name": name}, "spec": {
                    "containers": [{"name": "c", "image": "busybox"}]}})
                break
            except Exception as err:  # the fault may hit our own request: collect, retry
                errors.append(str(err))
                assert time.monotonic() < deadline
                time.sleep(0.1)
        with informer.changed:
            assert informer.changed.wait_for(lambda: name in informer.seen, 20), \
                f"{name} never arrived"

    def wait_watching() -> None:
        eventually(lambda: server.open_watch_count() >= 1, 10)

    def watch_fails(code: int, **kw: Any) -> Callable[[], None]:
        def inject() -> None:
            server.fail_next(1, code, watch_only=True, **kw)
            server.close_watches()
        return inject

    def relist_fails(code: int) -> Callable[[], None]:
        def inject() -> None:
            server.fail_next(1, code)
            server.send_watch_error(410)
        return inject

    def list_broken(mode: str) -> Callable[[], None]:
        def inject() -> None:
            server.corrupt_next_lists(mode)
            server.send_watch_error(410)
        return inject

    faults: list[Callable[[], None]] = [
        watch_fails(401), watch_fails(403), watch_fails(429, retry_after=1), watch_fails(504),
        lambda: server.send_watch_error(500), relist_fails(401), relist_fails(403),
        relist_fails(500), server.send_garbled_line, list_broken("html"), list_broken("cut"),
        list_broken("truncated"), server.abort_watches, server.drop_all_connections,
    ]
    for inject in faults:
        informer = Informer(client(), errors)
        try:
            wait_watching()
            inject()
            still_works(informer)
        finally:
            informer.close()
    # the server goes away (connection refused) and comes back on the same port
    informer = Informer(client(), errors)
    try:
        wait_watching()
        server.stop()
        wait_for_log(caplog, "refused")
        revived = EmbeddedApiServer(server.port, bookmark_interval=0.2, store=server.store)
        revived.start()
        try:
            still_works(informer)
        finally:
            informer.close()
            revived.stop()
    finally:
        informer.close()
    texts = record_texts(caplog.records) + errors
    assert len(caplog.records) > 50 and errors  # the paths were really taken
    assert any("401" in t or "Unauthorized" in t for t in texts)
    assert any("refused" in t.lower() for t in texts)
    assert secrets.leaks(texts) == []


SECRET_VALUES = ("c3VwZXItc2VjcmV0LXZhbHVlLTQyMQ==", "plain-string-data-77e1")


def secret(name: str, rv: str, **extra: Any) -> dict[str, Any]:
    """A Secret whose ``data`` and ``stringData`` values must never be shown."""
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "namespace": NAMESPACE, "resourceVersion": rv},
        "data": {"password": SECRET_VALUES[0]}, "stringData": {"token": SECRET_VALUES[1]},
    }
    obj.update(extra)
    return obj


def test_no_secret_contents_in_logs_errors_or_reprs(caplog: pytest.LogCaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Every path that names an object in a log record, an exception or a repr: a store
    that rejects adds, updates and deletes; watch objects without usable metadata and of the
    wrong kind; a key function that fails; a mutated cached object (mutation detector);
    the reprs of events, deltas and tombstones. Only names may appear, never values."""
    caplog.set_level(logging.DEBUG)
    texts: list[str] = []

    class RejectingStore:
        """A store whose writes fail with the object in the message (as a careless user
        store would); the reflector must not echo the object itself."""

        def __init__(self) -> None:
            self.inner = new_store(lambda o: o["metadata"]["name"])

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

        def add(self, obj: Any) -> None:
            raise ValueError("store full")

        update = delete = add

    watcher = FakeWatcher(16)
    listed = {"metadata": {"resourceVersion": "1"}, "items": [secret("s0", "1")]}
    lw = ListWatch(lambda options: listed, lambda options: watcher,
                   unsupported_watch_list_semantics=True)  # a fake: LIST, then watch
    store = RejectingStore()
    reflector = Reflector(lw, {"apiVersion": "v1", "kind": "Secret"}, store,  # type: ignore[arg-type]
                          ReflectorOptions(name="secrets"))
    stop = threading.Event()
    thread = threading.Thread(target=reflector.run, args=(stop,), name="reflector-secrets")
    thread.start()
    try:
        watcher.add(secret("s1", "2"))
        watcher.modify(secret("s1", "3"))
        watcher.delete(secret("s1", "4"))
        watcher.add(secret("s2", "5", metadata="not-a-mapping"))
        watcher.add({**secret("s3", "6"), "kind": "ConfigMap"})
        watcher.add({**secret("s4", "7"), "apiVersion": "v2"})
        watcher.add(secret("s5", "8"))  # the last event: once it failed, all were handled
        deadline = time.monotonic() + 10
        while not any("s5" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "the reflector never reached the last event"
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()

    # a failing key function, and the reprs of what carries objects
    try:
        new_store(lambda o: o["metadata"]["missing"]).add(secret("s6", "9"))
    except KeyFuncError as err:
        texts += [str(err), repr(err)]
    else:
        raise AssertionError("the key function should have failed")
    texts += [repr(Event(EventType.ADDED, secret("s7", "10"))),
              repr(Delta(DeltaType.ADDED, secret("s8", "11"))),
              repr(Deltas([Delta(DeltaType.UPDATED, secret("s9", "12"))])),
              repr(DeletedFinalStateUnknown(f"{NAMESPACE}/s10", secret("s10", "13")))]

    # the mutation detector's report of a mutated Secret
    detector = mutation_detector.DefaultCacheMutationDetector(
        "secrets", 60.0, failure_func=texts.append)
    cached = secret("s11", "14")
    detector.add_object(cached)
    cached["data"]["password"] = "bXV0YXRlZA=="
    detector.compare_objects()

    texts += record_texts(caplog.records)
    assert any("store full" in t for t in texts)  # the rejecting store's paths were taken
    assert any("ALTERED" in t for t in texts)
    assert any("Secret creds/s1" in t for t in texts)  # objects are named...
    leaked = [(v, t[:200]) for t in texts for v in (*SECRET_VALUES, "bXV0YXRlZA==") if v in t]
    assert leaked == []  # ...never shown


def test_rotated_token_is_refreshed_and_reported_once(caplog: pytest.LogCaptureFixture) -> None:
    """The server starts accepting only a new token. The informer's requests get 401: the
    configuration's refresh hook is called before the next attempt, one WARNING with a
    hint is logged for the whole episode (not one per retry), the token is never logged;
    once the hook hands out the new token, the informer carries on. A 403 gets its own
    single WARNING naming the verb and the resource."""
    caplog.set_level(logging.DEBUG)
    old_token, new_token = "rotating-old-4f1e", "rotating-new-8c2a"
    source = [old_token]  # where the hook finds the current credential (a token file)
    hook_calls = [0]
    with EmbeddedApiServer(bookmark_interval=0.2) as server:
        server.accept_tokens(old_token)
        config = Configuration()
        config.host = server.url
        config.api_key = {"authorization": old_token}
        config.api_key_prefix = {"authorization": "Bearer"}

        def refresh(conf: Configuration) -> None:
            hook_calls[0] += 1
            conf.api_key = {"authorization": source[0]}

        config.refresh_api_key_hook = refresh
        api = ApiClient(config)
        writer = CoreV1Api(server.api_client())
        errors: list[str] = []
        server.accept_tokens(old_token, "embedded-token")  # the test's own writer
        informer = Informer(api, errors)
        try:
            server.accept_tokens(new_token, "embedded-token")  # rotated on the server
            server.close_watches()  # the next WATCH must authenticate again
            eventually(lambda: sum("401 Unauthorized" in r.getMessage()
                                   for r in caplog.records) >= 1 and len(errors) >= 2)
            calls_before = hook_calls[0]
            source[0] = new_token  # the credential source is renewed
            writer.create_namespaced_pod(NAMESPACE, {"metadata": {"name": "after"}, "spec": {
                "containers": [{"name": "c", "image": "busybox"}]}})
            with informer.changed:
                assert informer.changed.wait_for(lambda: "after" in informer.seen, 30)
            assert hook_calls[0] > calls_before
            warnings = [r.getMessage() for r in caplog.records
                        if r.levelno == logging.WARNING and "401" in r.getMessage()]
            assert len(warnings) == 1, warnings  # two or more failed attempts, one line
            assert "rejected the credentials" in warnings[0] and "pods in creds" in warnings[0]
            # 403: valid credentials, no permission
            server.fail_next(2, 403)
            server.close_watches()
            eventually(lambda: any("403 Forbidden" in r.getMessage() for r in caplog.records))
            forbidden = [r.getMessage() for r in caplog.records if "403 Forbidden" in
                         r.getMessage() and r.levelno == logging.WARNING]
            assert forbidden and all(
                ("verb 'watch' on resource 'pods'" in f or "verb 'list' on resource 'pods'"
                 in f) and "namespace 'creds'" in f for f in forbidden)
        finally:
            informer.close()
    texts = record_texts(caplog.records) + errors
    assert not [t for t in texts if old_token in t or new_token in t]
