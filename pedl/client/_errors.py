"""The errors the SDK raises: every failed request becomes a :class:`PEDLError`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorIssue:
    """One problem the master found with a request (e.g. one invalid config field)."""

    field: str | None
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = self.field or ""
        if self.line is not None:
            where += f" (line {self.line})"
        return f"{where}: {self.message}" if where else self.message


class PEDLError(Exception):
    """A request to the master failed.

    ``message`` is the master's own explanation (``error.message`` of the API's error shape),
    ``field`` the offending input field when there is one, ``issues`` every problem when there
    are several (each invalid config field, with its YAML line), ``status_code`` the HTTP
    status (``None`` when no response came back).
    """

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        field: str | None = None,
        issues: Sequence[ErrorIssue] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.field = field
        self.issues = tuple(issues)

    def details(self) -> str:
        """The message followed by one indented line per issue (when there are several)."""
        lines = [self.message]
        if len(self.issues) > 1 or (self.issues and str(self.issues[0]) not in self.message):
            lines += [f"  {issue}" for issue in self.issues]
        return "\n".join(lines)


class NotFoundError(PEDLError):
    """The master has no such experiment, trial or checkpoint (HTTP 404)."""


class MasterUnreachableError(PEDLError):
    """No answer from the master: it is not running, or the address is wrong."""


class NotSignedInError(PEDLError):
    """The master wants a signed-in user (HTTP 401): no token, or one that is unknown,
    expired or revoked; or, when signing in, a wrong username or password."""
