"""Who is calling: trial tokens now, user accounts later.

Trial-side writes depend on :data:`TrialAuth`, which requires ``Authorization: Bearer
<token>`` where the token was issued for the trial named in the path (401 without a valid
token, 403 with another trial's). User-facing routes depend on :data:`CurrentUser`; until
user accounts exist every caller is the default user, and that dependency is where user
authentication will slot in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from pedl.master.api._deps import DatabaseDep, TrialId
from pedl.master.api._errors import ApiError
from pedl.master.db import trials as trials_repo

DEFAULT_USER = "admin"

_bearer = HTTPBearer(
    auto_error=False,
    scheme_name="TrialToken",
    description="The token the master issued to a trial; valid only for that trial's routes.",
)
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


@dataclass(frozen=True)
class TrialPrincipal:
    """A caller proven to be the trial ``trial_id``."""

    trial_id: int


@dataclass(frozen=True)
class UserPrincipal:
    """A human (or SDK) caller."""

    username: str


def require_trial(
    trial_id: TrialId,
    database: DatabaseDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> TrialPrincipal:
    """Check the bearer token against the trial in the path."""
    if credentials is None:
        raise ApiError(
            401, "missing bearer token of the trial", field="Authorization", headers=_CHALLENGE
        )
    with database.session() as session:
        owner = trials_repo.trial_id_for_token(session, credentials.credentials)
    if owner is None:
        raise ApiError(401, "invalid trial token", field="Authorization", headers=_CHALLENGE)
    if owner != trial_id:
        raise ApiError(403, f"this token is not valid for trial {trial_id}", field="Authorization")
    return TrialPrincipal(trial_id=trial_id)


def current_user() -> UserPrincipal:
    """The calling user; the default user until user accounts exist."""
    return UserPrincipal(username=DEFAULT_USER)


TrialAuth = Annotated[TrialPrincipal, Depends(require_trial)]
CurrentUser = Annotated[UserPrincipal, Depends(current_user)]
