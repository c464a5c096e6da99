"""errors.py: Status-shaped errors, their predicates and the converters."""

from __future__ import annotations

import socket

import pytest
import urllib3
from kubernetes.client import ApiException, V1Status, V1StatusDetails

from client_cache import errors
from client_cache.errors import (
    ApiStatusError,
    from_api_exception,
    from_status,
    has_status_cause,
    is_already_exists,
    is_conflict,
    is_connection_refused,
    is_expired,
    is_gone,
    is_internal_error,
    is_not_found,
    is_timeout,
    is_too_large_resource_version,
    is_too_many_requests,
    suggests_client_delay,
)


def test_constructors_match_upstream_shapes() -> None:
    expired = errors.new_resource_expired("rv too old")
    assert (expired.code, expired.reason, str(expired)) == (410, "Expired", "rv too old")
    gone = errors.new_gone("gone")
    assert (gone.code, gone.reason) == (410, "Gone")
    internal = errors.new_internal_error(RuntimeError("db down"))
    assert str(internal) == "Internal error occurred: db down"
    assert internal.details["causes"] == [{"message": "db down"}]
    timeout = errors.new_timeout_error("slow", 2)
    assert (timeout.code, timeout.message) == (504, "Timeout: slow")
    conflict = errors.new_conflict("apps", "deployments", "web", "stale")
    assert str(conflict) == 'Operation cannot be fulfilled on deployments.apps "web": stale'
    exists = errors.new_already_exists("", "pods", "p")
    assert str(exists) == 'pods "p" already exists' and is_already_exists(exists)
    status = errors.new_too_many_requests("slow down", 3).status()
    assert status["kind"] == "Status" and status["details"]["retryAfterSeconds"] == 3


@pytest.mark.parametrize(
    ("err", "predicate", "expected"),
    [
        (errors.new_resource_expired("x"), is_expired, True),
        (errors.new_gone("x"), is_expired, False),
        (errors.new_gone("x"), is_gone, True),
        (ApiStatusError(410, "", "no reason"), is_gone, True),
        (ApiStatusError(410, "Expired", "known reason"), is_gone, False),
        (errors.new_internal_error("x"), is_internal_error, True),
        (ApiStatusError(500, "", "plain 500"), is_internal_error, True),
        (ApiStatusError(500, "ServiceUnavailable", "x"), is_internal_error, False),
        (errors.new_timeout_error("x", 1), is_timeout, True),
        (ApiStatusError(504, "", "x"), is_timeout, True),
        (ApiStatusError(429, "", "x"), is_too_many_requests, True),
        (errors.new_conflict("", "pods", "a", "x"), is_conflict, True),
        (errors.new_not_found("", "pods", "a"), is_not_found, True),
        (ApiStatusError(404, "", "x"), is_not_found, True),
        (RuntimeError("not a status"), is_not_found, False),
        (None, is_expired, False),
    ],
)
def test_predicates(err: BaseException | None, predicate: object, expected: bool) -> None:
    assert predicate(err) is expected  # type: ignore[operator]


def test_too_large_resource_version_detection() -> None:
    modern = errors.new_too_large_resource_version(50, 40, 1)
    assert str(modern) == "Timeout: Too large resource version: 50, current: 40"
    assert has_status_cause(modern, "ResourceVersionTooLarge")
    assert is_too_large_resource_version(modern)
    assert suggests_client_delay(modern) == (1, True)
    # 1.17-1.18.5 servers: Timeout with a cause message but no cause type
    causes = {"causes": [{"message": "Too large resource version"}]}
    old = ApiStatusError(504, "Timeout", "x", causes)
    assert is_too_large_resource_version(old)
    # before 1.17: only the message
    older = ApiStatusError(504, "Timeout", "Too large resource version: 9, current: 8")
    assert is_too_large_resource_version(older)
    assert not is_too_large_resource_version(errors.new_timeout_error("other", 1))
    assert not is_too_large_resource_version(ApiStatusError(500, "", "Too large resource version"))


def test_from_status_dict_and_model() -> None:
    err = from_status({"kind": "Status", "code": 410, "reason": "Expired",
                       "message": "too old resource version: 5 (10)"})
    assert is_expired(err) and str(err) == "too old resource version: 5 (10)"
    model = V1Status(code=429, reason="TooManyRequests", message="wait",
                     details=V1StatusDetails(retry_after_seconds=7))
    err = from_status(model)
    assert is_too_many_requests(err) and suggests_client_delay(err) == (7, True)
    err = from_status({"code": 429, "reason": "TooManyRequests"}, {"Retry-After": "4"})
    assert suggests_client_delay(err) == (4, True)


def test_from_api_exception() -> None:
    exc = ApiException(status=409, reason="Conflict")
    exc.body = ('{"kind":"Status","apiVersion":"v1","status":"Failure","message":"stale",'
                '"reason":"Conflict","code":409}')
    err = from_api_exception(exc)
    assert is_conflict(err) and err.message == "stale" and err.__cause__ is exc
    plain = ApiException(status=500, reason="Internal Server Error")
    plain.body = "oops, not json"
    err = from_api_exception(plain)
    assert err.code == 500 and is_internal_error(err) and "oops" in err.message


def test_connection_refused_detection() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens on this port now
    http = urllib3.PoolManager(retries=False)
    with pytest.raises(Exception) as info:
        http.request("GET", f"http://127.0.0.1:{port}/")
    assert is_connection_refused(info.value)
    assert is_connection_refused(ConnectionRefusedError())
    assert not is_connection_refused(RuntimeError("other"))
    assert not is_connection_refused(None)


def _client_exception(code: int, reason: str, message: str) -> ApiException:
    body = (f'{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"{message}",'
            f'"reason":"{reason}","code":{code}}}')
    exc = ApiException(status=code, reason=reason)
    exc.body = body
    return exc


@pytest.mark.parametrize(
    ("code", "reason", "predicate"),
    [
        (404, "NotFound", is_not_found),
        (409, "Conflict", is_conflict),
        (409, "AlreadyExists", is_already_exists),
        (410, "Gone", is_gone),
        (410, "Expired", is_expired),
        (429, "TooManyRequests", is_too_many_requests),
        (500, "InternalError", is_internal_error),
        (504, "Timeout", is_timeout),
    ],
)
def test_predicates_accept_the_clients_api_exception(code: int, reason: str,
                                                     predicate: object) -> None:
    exc = _client_exception(code, reason, "m")
    assert predicate(exc)  # type: ignore[operator]
    # without a Status body, the HTTP code decides (an unknown reason)
    bare = ApiException(status=code, reason=reason)
    assert predicate(bare) or predicate in (is_already_exists, is_expired)  # type: ignore[operator]
    # raised while handling it, or raised from it
    try:
        try:
            raise exc
        except ApiException as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert predicate(outer)  # type: ignore[operator]
    assert not is_not_found(_client_exception(403, "Forbidden", "no")) or code == 404


def test_predicates_answer_false_for_urllib3_errors() -> None:
    refused = urllib3.exceptions.MaxRetryError(
        None, "/api", ConnectionRefusedError(111, "Connection refused"))  # type: ignore[arg-type]
    timeout = urllib3.exceptions.ReadTimeoutError(None, "/api", "read timed out")  # type: ignore[arg-type]
    for err in (refused, timeout):
        for predicate in (is_not_found, is_gone, is_expired, is_conflict, is_timeout,
                          is_internal_error, is_too_many_requests):
            assert predicate(err) is False
    assert is_connection_refused(refused)
    assert errors.reason_for_error(refused) == ""


def test_an_api_exception_is_described_by_status_reason_and_message_only() -> None:
    """Issue 59: a 404 reads ``NotFoundException``-like ``404 NotFound: pods "web" not
    found``, never the headers or the body it came with; a long message is cut."""
    err = ApiException(status=404, reason="Not Found")
    err.body = ('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound",'
                '"message":"pods \\"web\\" not found","code":404}')
    err.headers = {"Authorization": "Bearer secret-token"}
    text = errors.describe_error(err)
    assert text == 'ApiException: 404 NotFound: pods "web" not found'
    long = errors.new_bad_request("x" * 1000)
    assert errors.describe_error(long).endswith("x" * 300 + "...")
    assert "\n" not in errors.describe_error(errors.new_bad_request("two\nlines"))
