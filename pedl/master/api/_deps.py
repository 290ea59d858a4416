"""Request dependencies: the database and transactional sessions.

Sessions are function-scoped: the transaction commits after the handler returns and before
the response is sent, so a client never sees a success that was not stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Query, Request
from fastapi import Path as PathParam
from sqlalchemy.orm import Session

from pedl.master.db import Database

MAX_INT_ID = 2**31 - 1


def get_database(request: Request) -> Database:
    """The app's :class:`Database` (created by ``create_app``)."""
    database = request.app.state.database
    assert isinstance(database, Database)
    return database


DatabaseDep = Annotated[Database, Depends(get_database)]


def read_session(database: DatabaseDep) -> Iterator[Session]:
    """A session for reading."""
    with database.session() as session:
        yield session


def write_session(database: DatabaseDep) -> Iterator[Session]:
    """A session that writes; committed when the handler returns, rolled back if it raises."""
    with database.session(write=True) as session:
        yield session


ReadSession = Annotated[Session, Depends(read_session, scope="function")]
WriteSession = Annotated[Session, Depends(write_session, scope="function")]

ExperimentId = Annotated[int, PathParam(ge=1, le=MAX_INT_ID, description="Experiment id.")]
TrialId = Annotated[int, PathParam(ge=1, le=MAX_INT_ID, description="Trial id.")]
Limit = Annotated[int, Query(ge=1, le=1000, description="Page size.")]
Offset = Annotated[int, Query(ge=0, le=2**62, description="Items to skip.")]
