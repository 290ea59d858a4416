"""``/api/v1/master/logs``: the master's own latest log lines (``det master logs``), for
administrators, from the in-memory ring buffer of :class:`~pedl.master._master_log.MasterLog`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel

from pedl.master._master_log import MasterLog
from pedl.master.api._auth import USER_AUTH_RESPONSES, require_admin
from pedl.master.api._errors import ERROR_RESPONSES
from pedl.master.api._schemas import MAX_BIGINT, ErrorResponse

MAX_MASTER_LOG_LINES = 10_000
"""The most lines one request returns."""

router = APIRouter(
    tags=["master"],
    responses={
        **ERROR_RESPONSES,
        **USER_AUTH_RESPONSES,
        403: {"model": ErrorResponse, "description": "Administrators only"},
    },
    dependencies=[Depends(require_admin)],
)


class MasterLogLinePublic(BaseModel):
    """One line of the master's log; ``seq`` numbers the lines since the master started."""

    seq: int
    timestamp: datetime
    level: str
    logger: str
    message: str


@router.get("/master/logs")
async def get_master_logs(
    request: Request,
    after_seq: Annotated[
        int | None, Query(ge=0, le=MAX_BIGINT, description="Only lines with a larger seq.")
    ] = None,
    tail: Annotated[
        int | None,
        Query(ge=0, le=MAX_MASTER_LOG_LINES, description="Only the last N lines."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_MASTER_LOG_LINES)] = 1000,
) -> list[MasterLogLinePublic]:
    """The master's latest log lines, oldest first: at most ``limit`` of those after
    ``after_seq`` (its first ``limit``), or with ``tail`` its last ``tail``. The master keeps
    its latest 10,000 lines in memory, each at most 8,192 characters; older ones are gone.
    Administrators only (403)."""
    log = request.app.state.master_log
    if not isinstance(log, MasterLog):
        return []
    lines = log.lines(after_seq=after_seq, tail=tail)
    if tail is None:
        lines = lines[:limit]
    return [
        MasterLogLinePublic(
            seq=line.seq,
            timestamp=line.timestamp,
            level=line.level,
            logger=line.logger,
            message=line.message,
        )
        for line in lines
    ]
