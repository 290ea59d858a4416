"""Column types shared by the models and the migrations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, Dialect, Integer
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import TypeDecorator, TypeEngine

JSONType: TypeEngine[Any] = JSON().with_variant(postgresql.JSONB(), "postgresql")
"""JSON on SQLite, JSONB on PostgreSQL (which sorts an object's keys: by length, then bytes)."""

OrderedJSONType: TypeEngine[Any] = JSON()
"""JSON kept as written on both backends (PostgreSQL's ``json``, which stores the text;
SQLite's JSON is text too): objects come back with their keys in the order they were
written. For documents whose order people see (experiment configs) and for metric rows,
written far more often than read (PostgreSQL stores a row's ``json`` with a third less CPU
than its ``jsonb``, and reads a value back from it in under a microsecond more); it
cannot be indexed or compared with ``=`` on PostgreSQL, which nothing does with them."""

BigIntPK: TypeEngine[int] = BigInteger().with_variant(Integer(), "sqlite")
"""A 64-bit primary key that still autoincrements on SQLite (where only INTEGER is a rowid)."""


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and always read back timezone-aware.

    SQLite keeps no zone, so values are normalised to UTC on the way in and tagged UTC on the
    way out. Naive datetimes given to it are taken to be UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def as_utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive datetime is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def utc_iso(moment: datetime) -> str:
    """``moment`` in UTC as pydantic writes a datetime: ``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``
    (no fraction when it is zero); a naive ``moment`` is taken to be UTC."""
    return as_utc(moment).replace(tzinfo=None).isoformat() + "Z"


def sqlite_stamp_iso(stored: str) -> str:
    """A timestamp as stored on SQLite (naive UTC text) in :func:`utc_iso`'s form, read
    without parsing it when it has the form SQLAlchemy and the metric upsert store
    (``YYYY-MM-DD HH:MM:SS.ffffff``)."""
    if len(stored) == 26 and stored[10] == " " and stored[19] == ".":
        if stored.endswith("000000"):
            return f"{stored[:10]}T{stored[11:19]}Z"
        return f"{stored[:10]}T{stored[11:]}Z"
    return utc_iso(datetime.fromisoformat(stored))
