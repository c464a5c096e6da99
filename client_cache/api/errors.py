"""Errors with the shape of a Kubernetes ``Status``: :class:`ApiStatusError`, its reasons,
the functions that build one (``new_not_found``...) and the predicates that ask what an
error is (``is_not_found``...), seeing through exception chains and the ``kubernetes``
client's ``ApiException`` (Go ``k8s.io/apimachinery/pkg/api/errors``). All names here are
exported by :mod:`client_cache.errors` too.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Mapping
from typing import Any

from urllib3.exceptions import HTTPError

from client_cache.util.errors import ClientCacheError

__all__ = [
    "ApiStatusError",
    "describe_error",
    "find_api_error",
    "from_api_exception",
    "from_status",
    "has_status_cause",
    "is_already_exists",
    "is_bad_request",
    "is_conflict",
    "is_connection_refused",
    "is_expired",
    "is_forbidden",
    "is_gone",
    "is_internal_error",
    "is_not_found",
    "server_unreachable",
    "is_resource_expired",
    "is_timeout",
    "is_too_large_resource_version",
    "is_too_many_requests",
    "is_unauthorized",
    "new_already_exists",
    "new_bad_request",
    "new_conflict",
    "new_gone",
    "new_internal_error",
    "new_not_found",
    "new_resource_expired",
    "new_status_error",
    "new_timeout_error",
    "new_too_large_resource_version",
    "new_too_many_requests",
    "reason_for_error",
    "suggests_client_delay",
]


class ApiStatusError(ClientCacheError):
    """An error with the shape of a Kubernetes ``Status`` (Go ``apierrors.StatusError``).

    ``code`` is the HTTP status code, ``reason`` the machine-readable ``StatusReason``
    (``"NotFound"``, ``"Expired"``, ...), ``message`` the human text and ``details`` the
    ``StatusDetails`` as a wire dict (``name``, ``group``, ``kind``, ``causes``...).
    ``hint`` (a port addition) is what to check, when the raiser knows (a list-watch
    explains the first 401 or 403 of an episode); reports append it.
    """

    hint: str = ""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        super().__init__(message)

    def status(self) -> dict[str, Any]:
        """The wire form of the ``Status`` object this error stands for."""
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = dict(self.details)
        return out


# --- Status reasons and causes (apimachinery metav1) -----------------------------------------

REASON_UNKNOWN = ""
REASON_NOT_FOUND = "NotFound"
REASON_ALREADY_EXISTS = "AlreadyExists"
REASON_CONFLICT = "Conflict"
REASON_GONE = "Gone"
REASON_EXPIRED = "Expired"
REASON_TOO_MANY_REQUESTS = "TooManyRequests"
REASON_INTERNAL_ERROR = "InternalError"
REASON_TIMEOUT = "Timeout"
REASON_BAD_REQUEST = "BadRequest"
REASON_FORBIDDEN = "Forbidden"
REASON_UNAUTHORIZED = "Unauthorized"
REASON_METHOD_NOT_ALLOWED = "MethodNotAllowed"
REASON_INVALID = "Invalid"
CAUSE_RESOURCE_VERSION_TOO_LARGE = "ResourceVersionTooLarge"

_KNOWN_REASONS = {
    REASON_NOT_FOUND, REASON_ALREADY_EXISTS, REASON_CONFLICT, REASON_GONE, REASON_EXPIRED,
    REASON_TOO_MANY_REQUESTS, REASON_INTERNAL_ERROR, REASON_TIMEOUT, REASON_BAD_REQUEST,
    REASON_FORBIDDEN, REASON_UNAUTHORIZED, REASON_METHOD_NOT_ALLOWED, REASON_INVALID,
    "ServiceUnavailable", "ServerTimeout", "NotAcceptable", "UnsupportedMediaType",
    "RequestEntityTooLarge",
}


def new_status_error(
    code: int,
    reason: str,
    message: str,
    details: Mapping[str, Any] | None = None,
) -> ApiStatusError:
    """An :class:`ApiStatusError` from its parts."""
    return ApiStatusError(code, reason, message, details)


def from_status(status: Any, headers: Mapping[str, str] | None = None) -> ApiStatusError:
    """Build an error from a ``Status`` object: a wire dict, a ``V1Status`` model or a
    dynamic object (Go ``apierrors.FromObject``). A ``Retry-After`` header fills
    ``retryAfterSeconds`` when the body has none."""
    if not isinstance(status, Mapping):
        to_dict = getattr(status, "to_dict", None)
        status = to_dict() if callable(to_dict) else {}
    details = status.get("details") or {}
    if not isinstance(details, Mapping):
        details = {}
    details = dict(details)
    if "retry_after_seconds" in details and "retryAfterSeconds" not in details:
        details["retryAfterSeconds"] = details.pop("retry_after_seconds")
    if headers and not details.get("retryAfterSeconds"):
        retry = _retry_after(headers)
        if retry:
            details["retryAfterSeconds"] = retry
    code = status.get("code") or 0
    return ApiStatusError(
        int(code) if isinstance(code, (int, str)) and str(code).isdigit() else 0,
        str(status.get("reason") or ""),
        str(status.get("message") or ""),
        details,
    )


def _retry_after(headers: Mapping[str, str]) -> int:
    for name, value in headers.items():
        if name.lower() == "retry-after":
            try:
                return max(0, int(str(value).strip()))
            except ValueError:
                return 0
    return 0


def from_api_exception(exc: BaseException) -> ApiStatusError:
    """Convert a ``kubernetes.client.ApiException`` (either client generation) into an
    :class:`ApiStatusError`, parsing its body when it is a ``Status``."""
    code = getattr(exc, "status", 0) or 0
    body = getattr(exc, "body", None) or getattr(exc, "data", None)
    headers = getattr(exc, "headers", None) or {}
    status: dict[str, Any] = {}
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body.strip().startswith("{"):
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and parsed.get("kind") == "Status":
            status = parsed
    if not status:
        reason = getattr(exc, "reason", "") or ""
        status = {"code": code, "reason": "", "message": str(body or reason or exc)}
    status.setdefault("code", code)
    if not status.get("code"):
        status["code"] = code
    try:
        header_map = dict(headers.items())
    except AttributeError:
        header_map = {}
    err = from_status(status, header_map)
    err.__cause__ = exc
    return err


def _is_client_api_exception(err: BaseException) -> bool:
    """Whether ``err`` is the ``kubernetes`` client's ``ApiException`` (either client
    generation; recognised by class name and an integer ``status``, so that this module
    does not import the client)."""
    names = {cls.__name__ for cls in type(err).__mro__}
    return ("ApiException" in names or "OpenApiException" in names) and isinstance(
        getattr(err, "status", None), int)


def _status_of(err: BaseException | None) -> ApiStatusError | None:
    """The first :class:`ApiStatusError` in ``err``'s chain (Go ``errors.As``), or None.

    The chain is ``__cause__``, then ``__context__`` (an exception raised while handling
    another), so the predicates see through ``raise ... from err`` and through an error
    raised in an ``except`` block. A ``kubernetes`` client ``ApiException`` met on the way
    counts as the :class:`ApiStatusError` :func:`from_api_exception` makes of it, so
    ``is_not_found(e)`` works on what ``CoreV1Api`` raises without converting first.
    urllib3's exceptions carry no status and answer False (see
    :func:`is_connection_refused` for those)."""
    seen = 0
    while err is not None and seen < 20:
        if isinstance(err, ApiStatusError):
            return err
        if _is_client_api_exception(err):
            return from_api_exception(err)
        err = err.__cause__ or err.__context__
        seen += 1
    return None


_MESSAGE_LIMIT = 300
"""The most characters of a server's ``Status`` message :func:`describe_error` repeats."""


def describe_error(err: BaseException) -> str:
    """A one-line description of ``err`` that is safe to log: for an API error (ours or the
    ``kubernetes`` client's ``ApiException``, whose text carries response headers and a
    body that may quote the object) its type, HTTP code, reason and the ``Status``
    message the server wrote (``pods "web" not found``; at most 300 characters, on one
    line), never the headers or the body; for anything else its type and message (the
    raiser's words)."""
    if isinstance(err, ApiStatusError) or _is_client_api_exception(err):
        status = _status_of(err)
        if status is not None:
            text = f"{type(err).__name__}: {status.code} {status.reason or 'Unknown'}"
            message = " ".join(str(status.message or "").split())
            if message:
                if len(message) > _MESSAGE_LIMIT:
                    message = message[:_MESSAGE_LIMIT] + "..."
                text += f": {message}"
            return text
    return f"{type(err).__name__}: {err}"


def reason_for_error(err: BaseException | None) -> str:
    """The ``reason`` of an :class:`ApiStatusError`, else ``""``."""
    status = _status_of(err)
    return status.reason if status is not None else REASON_UNKNOWN


def _reason_or_code(err: BaseException | None, reason: str, code: int) -> bool:
    status = _status_of(err)
    if status is None:
        return False
    if status.reason == reason:
        return True
    return status.reason not in _KNOWN_REASONS and status.code == code


def is_expired(err: BaseException | None) -> bool:
    """Reason ``Expired`` (Go ``IsResourceExpired``): a too old resourceVersion or an
    expired continue token."""
    status = _status_of(err)
    return status is not None and status.reason == REASON_EXPIRED


is_resource_expired = is_expired


def is_gone(err: BaseException | None) -> bool:
    """Reason ``Gone``, or an unknown reason with code 410 (Go ``IsGone``)."""
    return _reason_or_code(err, REASON_GONE, 410)


def is_conflict(err: BaseException | None) -> bool:
    """Reason ``Conflict``, or an unknown reason with code 409."""
    return _reason_or_code(err, REASON_CONFLICT, 409)


def is_already_exists(err: BaseException | None) -> bool:
    """True when ``err`` (or an error it wraps) is the server's 409 AlreadyExists (Go
    ``errors.IsAlreadyExists``)."""
    return _reason_or_code(err, REASON_ALREADY_EXISTS, 409)


def is_too_many_requests(err: BaseException | None) -> bool:
    """Reason ``TooManyRequests`` or code 429."""
    status = _status_of(err)
    return status is not None and (
        status.reason == REASON_TOO_MANY_REQUESTS or status.code == 429
    )


def is_internal_error(err: BaseException | None) -> bool:
    """Reason ``InternalError``, or an unknown reason with code 500."""
    return _reason_or_code(err, REASON_INTERNAL_ERROR, 500)


def is_timeout(err: BaseException | None) -> bool:
    """Reason ``Timeout``, or an unknown reason with code 504."""
    return _reason_or_code(err, REASON_TIMEOUT, 504)


def is_bad_request(err: BaseException | None) -> bool:
    """True when ``err`` (or an error it wraps) is the server's 400 BadRequest (Go
    ``errors.IsBadRequest``)."""
    return _reason_or_code(err, REASON_BAD_REQUEST, 400)


def is_unauthorized(err: BaseException | None) -> bool:
    """Reason ``Unauthorized``, or an unknown reason with code 401 (Go
    ``IsUnauthorized``)."""
    return _reason_or_code(err, REASON_UNAUTHORIZED, 401)


def is_forbidden(err: BaseException | None) -> bool:
    """Reason ``Forbidden``, or an unknown reason with code 403 (Go ``IsForbidden``)."""
    return _reason_or_code(err, REASON_FORBIDDEN, 403)


def find_api_error(err: BaseException | None) -> BaseException | None:
    """``err`` or the first error in its chain (as :func:`_status_of` walks it) that is
    an API error, ours or the ``kubernetes`` client's ``ApiException``; None when there is
    none."""
    for _ in range(20):
        if err is None or isinstance(err, ApiStatusError) or _is_client_api_exception(err):
            return err
        err = err.__cause__ or err.__context__
    return None


def has_status_cause(err: BaseException | None, cause_type: str) -> bool:
    """Whether the error's details list a cause of ``cause_type``."""
    status = _status_of(err)
    if status is None:
        return False
    causes = status.details.get("causes") or []
    return any(isinstance(c, Mapping) and c.get("reason", c.get("type")) == cause_type
               for c in causes)


def is_too_large_resource_version(err: BaseException | None) -> bool:
    """The requested resourceVersion is newer than the server has (the reflector's
    ``isTooLargeResourceVersionError``): a ``ResourceVersionTooLarge`` cause, or, from
    servers older than 1.18.6, a Timeout whose cause or message says "Too large resource
    version"."""
    if has_status_cause(err, CAUSE_RESOURCE_VERSION_TOO_LARGE):
        return True
    status = _status_of(err)
    if status is None or not is_timeout(status):
        return False
    for cause in status.details.get("causes") or []:
        if isinstance(cause, Mapping) and cause.get("message") == "Too large resource version":
            return True
    return "Too large resource version" in status.message


def suggests_client_delay(err: BaseException | None) -> tuple[int, bool]:
    """``(seconds, True)`` when the server asked the client to wait (Retry-After)."""
    status = _status_of(err)
    if status is None:
        return 0, False
    seconds = status.details.get("retryAfterSeconds") or 0
    try:
        seconds = int(seconds)
    except (TypeError, ValueError):
        return 0, False
    return (seconds, True) if seconds > 0 else (0, False)


def is_connection_refused(err: BaseException | None) -> bool:
    """Whether ``err`` or anything it wraps is a refused TCP connection (Go
    ``utilnet.IsConnectionRefused``); follows ``__cause__``, ``__context__`` and urllib3's
    ``reason``."""
    seen: set[int] = set()
    stack: list[Any] = [err]
    while stack:
        cur = stack.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        if isinstance(cur, ConnectionRefusedError):
            return True
        if isinstance(cur, OSError) and cur.errno == errno.ECONNREFUSED:
            return True
        if isinstance(cur, BaseException):
            stack.extend([cur.__cause__, cur.__context__, getattr(cur, "reason", None)])
            stack.extend(a for a in cur.args if isinstance(a, BaseException))
            if "Connection refused" in str(cur) and "Errno" in str(cur):
                return True
    return False


def new_resource_expired(message: str) -> ApiStatusError:
    """410 Expired (Go ``NewResourceExpired``)."""
    return ApiStatusError(410, REASON_EXPIRED, message)


def new_gone(message: str) -> ApiStatusError:
    """410 Gone (Go ``NewGone``)."""
    return ApiStatusError(410, REASON_GONE, message)


def new_too_many_requests(message: str, retry_after_seconds: int) -> ApiStatusError:
    """429 TooManyRequests with Retry-After (Go ``NewTooManyRequests``)."""
    return ApiStatusError(
        429, REASON_TOO_MANY_REQUESTS, message, {"retryAfterSeconds": retry_after_seconds}
    )


def new_internal_error(err: BaseException | str) -> ApiStatusError:
    """500 ``Internal error occurred: ...`` (Go ``NewInternalError``)."""
    return ApiStatusError(
        500,
        REASON_INTERNAL_ERROR,
        f"Internal error occurred: {err}",
        {"causes": [{"message": str(err)}]},
    )


def new_timeout_error(message: str, retry_after_seconds: int) -> ApiStatusError:
    """504 ``Timeout: ...`` (Go ``NewTimeoutError``)."""
    return ApiStatusError(
        504, REASON_TIMEOUT, f"Timeout: {message}", {"retryAfterSeconds": retry_after_seconds}
    )


def new_too_large_resource_version(minimum: int, current: int, retry_after: int) -> ApiStatusError:
    """What the API server answers for a resourceVersion newer than it has (apiserver's
    ``NewTooLargeResourceVersionError``)."""
    err = new_timeout_error(f"Too large resource version: {minimum}, current: {current}",
                            retry_after)
    err.details["causes"] = [
        {"reason": CAUSE_RESOURCE_VERSION_TOO_LARGE, "message": "Too large resource version"}
    ]
    return err


def new_conflict(group: str, resource: str, name: str, err: BaseException | str) -> ApiStatusError:
    """409 Conflict (Go ``NewConflict``)."""
    qualified = f"{resource}.{group}" if group else resource
    return ApiStatusError(
        409,
        REASON_CONFLICT,
        f'Operation cannot be fulfilled on {qualified} "{name}": {err}',
        {"name": name, "group": group, "kind": resource},
    )


def new_already_exists(group: str, resource: str, name: str) -> ApiStatusError:
    """409 AlreadyExists (Go ``NewAlreadyExists``)."""
    qualified = f"{resource}.{group}" if group else resource
    return ApiStatusError(
        409,
        REASON_ALREADY_EXISTS,
        f'{qualified} "{name}" already exists',
        {"name": name, "group": group, "kind": resource},
    )


def new_bad_request(message: str) -> ApiStatusError:
    """400 BadRequest (Go ``NewBadRequest``)."""
    return ApiStatusError(400, REASON_BAD_REQUEST, message)


def new_not_found(group: str, resource: str, name: str) -> ApiStatusError:
    """Build the 404 error listers raise (Go ``apierrors.NewNotFound``).

    The message is ``<resource>[.<group>] "<name>" not found``.
    """
    qualified = f"{resource}.{group}" if group else resource
    return ApiStatusError(
        404,
        "NotFound",
        f'{qualified} "{name}" not found',
        {"name": name, "group": group, "kind": resource},
    )


def is_not_found(err: BaseException | None) -> bool:
    """Reason ``NotFound``, or an unknown reason with code 404."""
    return _reason_or_code(err, REASON_NOT_FOUND, 404)


def server_unreachable(err: BaseException | None) -> bool:
    """Whether ``err`` says the server is not serving: an API error of 429 or 5xx along
    its chain, or, with none, a network failure (refused, reset, timed out: an
    ``OSError`` or one of urllib3's errors) along it. A 4xx answer, a decode error or a
    stop is not: the server answered, or nothing was wrong with it."""
    api = find_api_error(err)
    if api is not None:
        code = getattr(api, "code", None)
        if code is None:
            code = getattr(api, "status", None)
        return isinstance(code, int) and (code == 429 or code >= 500)
    for _ in range(20):
        if err is None:
            return False
        if isinstance(err, (OSError, HTTPError)):
            return True
        err = err.__cause__ or err.__context__
    return False
