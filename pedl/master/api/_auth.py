"""Who is calling: trial tokens now, user accounts later.

Trial-side writes depend on :data:`TrialAuth`, which requires ``Authorization: Bearer
<token>`` where the token was issued for the trial named in the path (401 without a valid
token, 403 with another trial's). A route that checks the token later itself (the metrics
route, in the metric writer's transaction) depends on :data:`BearerToken` and answers a
mismatch with :func:`token_error`. User-facing routes depend on :data:`CurrentUser`; until
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


def bearer_token(
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The request's bearer token, not yet checked (401 when there is none)."""
    if credentials is None:
        raise ApiError(
            401, "missing bearer token of the trial", field="Authorization", headers=_CHALLENGE
        )
    return credentials.credentials


def token_error(owner: int | None, trial_id: int) -> ApiError:
    """The error for a token that does not belong to ``trial_id``: 401 when it belongs to no
    trial (``owner`` is ``None``), 403 when it is another trial's."""
    if owner is None:
        return ApiError(401, "invalid trial token", field="Authorization", headers=_CHALLENGE)
    return ApiError(403, f"this token is not valid for trial {trial_id}", field="Authorization")


BearerToken = Annotated[str, Depends(bearer_token)]


def require_trial(trial_id: TrialId, database: DatabaseDep, token: BearerToken) -> TrialPrincipal:
    """Check the bearer token against the trial in the path."""
    with database.session() as session:
        owner = trials_repo.trial_id_for_token(session, token)
    if owner != trial_id:
        raise token_error(owner, trial_id)
    return TrialPrincipal(trial_id=trial_id)


def current_user() -> UserPrincipal:
    """The calling user; the default user until user accounts exist."""
    return UserPrincipal(username=DEFAULT_USER)


TrialAuth = Annotated[TrialPrincipal, Depends(require_trial)]
CurrentUser = Annotated[UserPrincipal, Depends(current_user)]
