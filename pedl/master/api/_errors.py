"""One error shape for every failure: ``{"error": {"message", "field", "issues"}}``.

Bad input is always a 4xx: a body over the size limit -> 413, JSON nested too deeply or text that is
not text (lone surrogates) -> 400 (see :mod:`._limits`), request validation -> 422, unknown ids ->
404, illegal state changes and conflicting writes -> 409, missing/invalid token -> 401, another
trial's token -> 403. Load the master sheds is a 503 with a ``Retry-After`` header: no free pooled
connection within ``db_pool_timeout`` (``sqlalchemy.exc.TimeoutError``), SQLite's lock not granted
within its busy timeout, PostgreSQL refusing connections (too many clients, restarting), the metric
writer's queue full or stuck, too many requests in flight (see :mod:`._app`). Anything unexpected is
a 500 in the same shape (and logged).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from starlette.exceptions import HTTPException as StarletteHTTPException

from pedl.db import ConflictError, IngestUnavailableError, NotFoundError
from pedl.master.api._schemas import ErrorBody, ErrorIssue, ErrorResponse
from pedl.vocabulary import IllegalTransitionError

logger = logging.getLogger("pedl.master.api")


class ApiError(Exception):
    """An error to answer with ``status_code`` in the standard shape."""

    def __init__(
        self,
        status_code: int,
        message: str,
        *,
        field: str | None = None,
        issues: Sequence[ErrorIssue] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.field = field
        self.issues = list(issues)
        self.headers = headers


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": description}
    for code, description in (
        (400, "Malformed request: JSON nested too deeply, a lone surrogate, NUL in the URL"),
        (404, "Not found"),
        (409, "Conflicts with the current state"),
        (413, "Request body over the master's size limit"),
        (422, "Invalid request"),
        (503, "Overloaded or briefly unavailable: retry after Retry-After seconds"),
    )
}
"""The ``responses=`` documentation shared by the routes."""

AUTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "Missing or invalid trial token"},
    403: {"model": ErrorResponse, "description": "The token belongs to another trial"},
}


DEFAULT_RETRY_AFTER_S = 1

# Messages of database errors that are load or a passing outage, not a bug: answered 503.
_TRANSIENT_DB_ERRORS = (
    "database is locked",  # SQLite: the write lock was not granted within the busy timeout
    "database is busy",
    "database table is locked",
    "too many clients",  # PostgreSQL: max_connections reached
    "too many connections",
    "remaining connection slots are reserved",
    "the database system is starting up",
    "the database system is shutting down",
    "the database system is in recovery mode",
    "connection refused",
    "server closed the connection",
    "terminating connection",
)


def retry_after(request: Request | None) -> int:
    """The Retry-After seconds of this app's 503 answers (``settings.retry_after_seconds``)."""
    settings = None if request is None else getattr(request.app.state, "settings", None)
    return int(getattr(settings, "retry_after_seconds", DEFAULT_RETRY_AFTER_S))


def error_response(
    status_code: int,
    message: str,
    *,
    field: str | None = None,
    issues: Sequence[ErrorIssue] = (),
    headers: dict[str, str] | None = None,
    retry_after_s: int = DEFAULT_RETRY_AFTER_S,
) -> JSONResponse:
    """A JSON response in the standard error shape; a 503 always carries ``Retry-After``
    (``retry_after_s`` unless ``headers`` has one)."""
    body = ErrorResponse(error=ErrorBody(message=message, field=field, issues=list(issues)))
    if status_code == 503 and not any(k.lower() == "retry-after" for k in headers or {}):
        headers = {**(headers or {}), "Retry-After": str(retry_after_s)}
    return JSONResponse(body.model_dump(mode="json"), status_code=status_code, headers=headers)


def is_transient_db_error(exc: BaseException) -> bool:
    """Whether a database error is overload or a passing outage (lock wait, connection
    limit, server restarting, connection lost) rather than a bug."""
    if isinstance(exc, PoolTimeoutError):
        return True
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        text = str(exc.orig if exc.orig is not None else exc).lower()
        return any(marker in text for marker in _TRANSIENT_DB_ERRORS)
    return False


def format_loc(loc: Sequence[int | str]) -> str:
    """``("body", "rows", 0, "kind")`` -> ``"body.rows[0].kind"``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


# pydantic's labels of union members and validator functions in an error's location, which
# name no field: "function-after[_no_nul(), str]", "dict[str,any]", ...
_UNION_MEMBER = re.compile(
    r"^(?:function-(?:after|before|wrap|plain)\[.+\]|(?:list|dict|tuple|set|nullable)\[.+\])$"
)


def _validation_issues(errors: Sequence[Any]) -> list[ErrorIssue]:
    issues = []
    for error in errors:
        loc = [
            part
            for part in error.get("loc", ())
            if isinstance(part, int) or (isinstance(part, str) and not _UNION_MEMBER.match(part))
        ]
        message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        if error.get("type") == "json_invalid":
            message = "request body is not valid JSON"
        issues.append(ErrorIssue(field=format_loc(loc) or None, message=message))
    return issues


def _summary(issues: Sequence[ErrorIssue]) -> str:
    first = issues[0]
    text = f"{first.field}: {first.message}" if first.field else first.message
    if len(issues) > 1:
        text += f" (and {len(issues) - 1} more)"
    return text


async def _on_api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(
        exc.status_code,
        exc.message,
        field=exc.field,
        issues=exc.issues,
        headers=exc.headers,
        retry_after_s=retry_after(request),
    )


async def _on_validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    issues = _validation_issues(exc.errors()) or [ErrorIssue(field=None, message="invalid")]
    return error_response(
        422, "invalid request: " + _summary(issues), field=issues[0].field, issues=issues
    )


async def _on_not_found(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, NotFoundError)
    return error_response(404, exc.message)


async def _on_conflict(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ConflictError)
    return error_response(409, exc.message, field=exc.field)


async def _on_illegal_transition(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, IllegalTransitionError)
    return error_response(409, exc.message, field="state")


async def _on_integrity_error(_request: Request, exc: Exception) -> JSONResponse:
    logger.info("integrity error answered with 409: %s", exc)
    return error_response(409, "the request conflicts with stored data")


async def _on_http_exception(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers) if exc.headers else None
    return error_response(
        exc.status_code, str(exc.detail), headers=headers, retry_after_s=retry_after(request)
    )


async def _on_ingest_unavailable(request: Request, exc: Exception) -> JSONResponse:
    return error_response(503, str(exc), retry_after_s=retry_after(request))


def _overloaded(request: Request, exc: BaseException) -> JSONResponse:
    logger.warning("shedding %s %s: %s", request.method, request.url.path, exc)
    if isinstance(exc, PoolTimeoutError):
        message = "the master is overloaded (no free database connection); retry later"
    else:
        message = "the database is busy or unavailable; retry later"
    return error_response(503, message, retry_after_s=retry_after(request))


async def _on_pool_timeout(request: Request, exc: Exception) -> JSONResponse:
    return _overloaded(request, exc)


async def _on_db_error(request: Request, exc: Exception) -> JSONResponse:
    if is_transient_db_error(exc):
        return _overloaded(request, exc)
    return await _on_unexpected(request, exc)


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    if is_transient_db_error(exc):  # e.g. wrapped by a library: still load, not a bug
        return _overloaded(request, exc)
    if isinstance(exc, RecursionError):  # input nested past what a recursive step handles
        logger.info("%s %s: input nested too deeply", request.method, request.url.path)
        return error_response(400, "the request is nested too deeply to process")
    logger.exception("unhandled error", exc_info=exc)
    return error_response(500, "internal server error")


def install_error_handlers(app: FastAPI) -> None:
    """Make every error ``app`` returns use the standard shape."""
    app.add_exception_handler(ApiError, _on_api_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(NotFoundError, _on_not_found)
    app.add_exception_handler(ConflictError, _on_conflict)
    app.add_exception_handler(IllegalTransitionError, _on_illegal_transition)
    app.add_exception_handler(IntegrityError, _on_integrity_error)
    app.add_exception_handler(PoolTimeoutError, _on_pool_timeout)
    app.add_exception_handler(DBAPIError, _on_db_error)
    app.add_exception_handler(IngestUnavailableError, _on_ingest_unavailable)
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(Exception, _on_unexpected)
