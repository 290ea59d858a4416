"""``/api/v1/master/cluster_message``: the cluster-wide message (``det master cluster-message``)
that every user sees from its start until its end or until it is cleared.

Any signed-in user reads it; administrators set and clear it (403 otherwise). Setting one
ends the one before. Its end is given as a time (``end_time``) or as a ``duration`` from its
start, as Determined takes it: a sequence of numbers with units ``s``, ``m``, ``h``, ``d``
(24 h) and ``w`` (7 days), e.g. ``24h``, ``2w``, ``1h30m``.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from pedl.db import cluster_messages as messages_repo
from pedl.db._types import as_utc, utcnow
from pedl.master.api._auth import USER_AUTH_RESPONSES, AdminUser, require_admin, require_user
from pedl.master.api._deps import ReadSession, WriteSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError

router = APIRouter(
    prefix="/master/cluster_message",
    tags=["master"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
)

MAX_MESSAGE = 1_000
"""The longest message (characters)."""
MAX_DURATION = timedelta(days=365 * 100)
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h|d|w)")
_UNITS = {
    "ns": timedelta(microseconds=0.001),
    "us": timedelta(microseconds=1),
    "µs": timedelta(microseconds=1),
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}


def parse_duration(text: str) -> timedelta:
    """``text`` as a Go duration with days and weeks (``24h``, ``2w``, ``5d``, ``1h30m``);
    ``ValueError`` naming the problem otherwise."""
    rest, total = text.strip(), timedelta()
    if not rest:
        raise ValueError("is empty")
    while rest:
        match = _DURATION_PART.match(rest)
        if match is None:
            raise ValueError(
                f"{text!r} is not a duration such as 24h, 5d, 2w or 1h30m (units: s, m, h, d, w)"
            )
        total += float(match.group(1)) * _UNITS[match.group(2)]
        if total > MAX_DURATION:
            raise ValueError(f"{text!r} is longer than 100 years")
        rest = rest[match.end() :]
    if total <= timedelta():
        raise ValueError(f"{text!r} is not longer than 0")
    return total


class ClusterMessagePublic(BaseModel):
    """The cluster-wide message as the API shows it."""

    model_config = ConfigDict(from_attributes=True)

    message: str
    start_time: datetime = Field(description="From when it shows.")
    end_time: datetime | None = Field(description="Until when it shows (null: until cleared).")
    created_at: datetime
    created_by: str = Field(description="The administrator who set it.")


class ClusterMessageAnswer(BaseModel):
    """The current message (shown now or starting later), or null."""

    cluster_message: ClusterMessagePublic | None


class ClusterMessageSet(BaseModel):
    """Body of ``PUT /master/cluster_message``."""

    model_config = ConfigDict(extra="forbid")

    message: str = Field(min_length=1, max_length=MAX_MESSAGE, description="Its text.")
    start_time: datetime | None = Field(
        default=None, description="From when it shows (RFC 3339; left out: now)."
    )
    end_time: datetime | None = Field(
        default=None,
        description="Until when it shows (RFC 3339; left out, with no duration: until cleared).",
    )
    duration: str | None = Field(
        default=None,
        max_length=64,
        description="How long it shows from its start instead of end_time: 24h, 5d, 2w, 1h30m.",
    )

    @field_validator("message")
    @classmethod
    def _no_nul(cls, value: str) -> str:
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value

    @field_validator("start_time", "end_time")
    @classmethod
    def _with_a_zone(cls, value: datetime | None) -> datetime | None:
        return None if value is None else as_utc(value)


@router.get("", dependencies=[require_user])
def get_cluster_message(session: ReadSession) -> ClusterMessageAnswer:
    """The current cluster-wide message: one that has not ended, shown already or starting
    later; null when there is none."""
    row = messages_repo.current_message(session)
    shown = None if row is None else ClusterMessagePublic.model_validate(row)
    return ClusterMessageAnswer(cluster_message=shown)


@router.put("", dependencies=[Depends(require_admin)])
def set_cluster_message(
    body: ClusterMessageSet, session: WriteSession, user: AdminUser
) -> ClusterMessageAnswer:
    """Set the cluster-wide message (ending the one before), shown from ``start_time``
    (default now) until ``end_time`` or for ``duration`` (one of them at most; neither: until
    cleared). 422 when both are given, for a bad duration, or an end not after the start and
    now. Administrators only (403)."""
    if body.end_time is not None and body.duration is not None:
        raise ApiError(422, "give end_time or duration, not both", field="duration")
    start = body.start_time or utcnow()
    end = body.end_time
    if body.duration is not None:
        try:
            end = start + parse_duration(body.duration)
        except ValueError as err:
            raise ApiError(422, f"duration {err}", field="duration") from None
    if end is not None and (end <= start or end <= utcnow()):
        raise ApiError(
            422, "the message must end after its start and in the future", field="end_time"
        )
    row = messages_repo.set_message(
        session, body.message, start_time=start, end_time=end, created_by=user.username
    )
    return ClusterMessageAnswer(cluster_message=ClusterMessagePublic.model_validate(row))


@router.delete("", status_code=204, dependencies=[Depends(require_admin)])
def clear_cluster_message(session: WriteSession) -> Response:
    """End the current cluster-wide message (nothing to end: no-op). Administrators only
    (403)."""
    messages_repo.clear_message(session)
    return Response(status_code=204)
