"""Request and response bodies of the accounts API (``/auth``, ``/me``, ``/users``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

USERNAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$"
"""Usernames: 1 to 128 letters, digits, ``.``, ``_``, ``@``, ``-``; not starting with a sign."""
MIN_PASSWORD = 8
MAX_PASSWORD = 1024


def _encodable(value: str) -> str:
    if "\x00" in value:
        raise ValueError("NUL characters are not allowed")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError("not valid Unicode text (a lone surrogate?)") from err
    return value


Username = Annotated[str, Field(pattern=USERNAME_PATTERN, max_length=128)]
Password = Annotated[str, Field(min_length=1, max_length=MAX_PASSWORD), AfterValidator(_encodable)]
NewPassword = Annotated[
    str,
    Field(min_length=MIN_PASSWORD, max_length=MAX_PASSWORD, description="At least 8 characters."),
    AfterValidator(_encodable),
]


class Login(BaseModel):
    """Body of ``POST /auth/login``."""

    model_config = ConfigDict(extra="forbid")

    username: Annotated[str, Field(min_length=1, max_length=128)]
    password: Password


class LoginPublic(BaseModel):
    """A new session: its bearer token (shown only here) and until when it is valid."""

    token: str = Field(description="Send it as `Authorization: Bearer <token>`.")
    username: str
    admin: bool
    expires_at: datetime


class UserPublic(BaseModel):
    """An account as the API shows it (never its password or its hash)."""

    model_config = ConfigDict(from_attributes=True)

    id: int = Field(description="The account's id (Determined's `user_id`); never reused.")
    username: str
    admin: bool
    active: bool
    created_at: datetime


class UserCreate(BaseModel):
    """Body of ``POST /users``."""

    model_config = ConfigDict(extra="forbid")

    username: Username
    password: NewPassword
    admin: bool = False


class UserPatch(BaseModel):
    """Body of ``PATCH /users/{username}`` (``det user edit``, ``det user rename``): what to
    change; a field left out stays."""

    model_config = ConfigDict(extra="forbid")

    username: Username | None = Field(
        default=None, description="A new username (also the owner of what the account owns)."
    )
    admin: bool | None = None
    active: bool | None = None
    display_name: str | None = Field(
        default=None, description="Not kept by PEDL: any value is refused (422)."
    )


class PasswordChange(BaseModel):
    """Body of ``POST /users/{username}/password``: ``old_password`` is required when users
    change their own password (not when an administrator sets another user's)."""

    model_config = ConfigDict(extra="forbid")

    password: NewPassword
    old_password: Password | None = None
