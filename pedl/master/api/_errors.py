"""One error shape for every failure: ``{"error": {"message", "field", "issues"}}``.

Bad input is always a 4xx: request validation -> 422, unknown ids -> 404, illegal state
changes and conflicting writes -> 409, missing/invalid token -> 401, another trial's token ->
403. Anything unexpected is a 500 in the same shape (and logged).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import IntegrityError
from starlette.exceptions import HTTPException as StarletteHTTPException

from pedl.engine import IllegalTransitionError
from pedl.master.api._schemas import ErrorBody, ErrorIssue, ErrorResponse
from pedl.master.db import ConflictError, NotFoundError

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
        (404, "Not found"),
        (409, "Conflicts with the current state"),
        (422, "Invalid request"),
    )
}
"""The ``responses=`` documentation shared by the routes."""

AUTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": ErrorResponse, "description": "Missing or invalid trial token"},
    403: {"model": ErrorResponse, "description": "The token belongs to another trial"},
}


def error_response(
    status_code: int,
    message: str,
    *,
    field: str | None = None,
    issues: Sequence[ErrorIssue] = (),
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """A JSON response in the standard error shape."""
    body = ErrorResponse(error=ErrorBody(message=message, field=field, issues=list(issues)))
    return JSONResponse(body.model_dump(mode="json"), status_code=status_code, headers=headers)


def format_loc(loc: Sequence[int | str]) -> str:
    """``("body", "rows", 0, "kind")`` -> ``"body.rows[0].kind"``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _validation_issues(errors: Sequence[Any]) -> list[ErrorIssue]:
    issues = []
    for error in errors:
        loc = [part for part in error.get("loc", ()) if isinstance(part, int | str)]
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


async def _on_api_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(
        exc.status_code, exc.message, field=exc.field, issues=exc.issues, headers=exc.headers
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


async def _on_http_exception(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    headers = dict(exc.headers) if exc.headers else None
    return error_response(exc.status_code, str(exc.detail), headers=headers)


async def _on_unexpected(_request: Request, exc: Exception) -> JSONResponse:
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
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(Exception, _on_unexpected)
