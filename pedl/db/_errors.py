"""Errors the repository functions raise for the API to translate (404, 409)."""

from __future__ import annotations


class NotFoundError(LookupError):
    """The named row does not exist. ``resource`` is e.g. ``"experiment"``, ``key`` its id."""

    def __init__(self, resource: str, key: object) -> None:
        super().__init__(f"{resource} {key} not found")
        self.resource = resource
        self.key = key
        self.message = f"{resource} {key} not found"


class ConflictError(Exception):
    """The request contradicts what is stored (a duplicate key, a row in the wrong state).

    ``field`` names the offending input field when there is one.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
