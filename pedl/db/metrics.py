"""Ingesting and reading training/validation metrics (idempotent, batched upserts)."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from itertools import compress, repeat
from operator import eq, itemgetter, ne
from typing import Any, NamedTuple, NotRequired, TypedDict, cast

from pydantic_core import PydanticSerializationError, to_json
from sqlalchemy import String, Table, Text, TextClause, bindparam, select, text, type_coerce, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.orm import Session

from pedl.db import trials as trials_repo
from pedl.db._errors import NotFoundError
from pedl.db._models import Metric, Trial
from pedl.db._types import as_utc, sqlite_stamp_iso, utc_iso, utcnow
from pedl.vocabulary import MetricKind, encode_metric_value


class MetricRow(NamedTuple):
    """One reported row. ``(trial, kind, total_batches)`` is its identity. A named tuple (not
    a dataclass): the master makes one per reported row, and a tuple costs a fifth as much
    to make."""

    kind: MetricKind
    total_batches: int
    metrics: Mapping[str, Any]
    total_records: int | None = None
    total_epochs: float | None = None
    reported_at: datetime | None = None


class MetricReport(TypedDict):
    """One reported row as a report's JSON carries it (the fields of :class:`MetricRow`,
    the optional ones absent or ``None``): the master's metric-report fast path hands the
    rows its schema made straight to the metric writer, with no object made per row."""

    kind: MetricKind
    total_batches: int
    metrics: Mapping[str, Any]
    total_records: NotRequired[int | None]
    total_epochs: NotRequired[float | None]
    reported_at: NotRequired[datetime | None]


AnyMetricRow = MetricRow | MetricReport
"""A row as :func:`upsert_metrics` and the metric writer take it."""


def as_metric_row(row: AnyMetricRow) -> MetricRow:
    """``row`` as a :class:`MetricRow`."""
    if isinstance(row, MetricRow):
        return row
    return MetricRow(
        row["kind"],
        row["total_batches"],
        row["metrics"],
        row.get("total_records"),
        row.get("total_epochs"),
        row.get("reported_at"),
    )


def row_keys(rows: Sequence[AnyMetricRow]) -> set[tuple[Any, int]]:
    """The ``(kind, total_batches)`` keys of ``rows``."""
    return {
        (row["kind"], row["total_batches"])
        if isinstance(row, dict)
        else (row.kind, row.total_batches)
        for row in rows
    }


def most_batches(rows: Sequence[AnyMetricRow]) -> int:
    """The largest ``total_batches`` of ``rows`` (-1 for none)."""
    return max(
        (row["total_batches"] if isinstance(row, dict) else row.total_batches for row in rows),
        default=-1,
    )


MAX_METRIC_MAGNITUDE = 1e300
"""The largest magnitude a reported metric value may have (finite values beyond it are
refused; ``NaN`` and the infinities are stored as strings, see :func:`upsert_metrics`).

Both stores hold every finite double exactly (PostgreSQL's ``jsonb`` as an exact decimal,
SQLite as the JSON text), so the bound is not about storage but about the values' readers,
which must get back a finite number: SQLite writes the learning curves' values with 15
significant digits, and a value within 1e-15 of the largest double (1.8e308) comes back as
infinity; the charts and the downsampling add and subtract values (ranges, means), which
overflow near the top of the range. 1e300 leaves eight orders of magnitude for that, and is
far beyond any loss a model can meaningfully report (float32's largest value is 3.4e38, and
a float64 loss past 1e300 has diverged: it can report ``"Infinity"``)."""


class MetricValueError(ValueError):
    """A reported metric value no reader could use (see :data:`MAX_METRIC_MAGNITUDE`);
    ``field`` names it (``rows[i].metrics.<name>``)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def check_metric_values(rows: Sequence[AnyMetricRow]) -> None:
    """Raise :class:`MetricValueError` for the first finite value in ``rows`` whose magnitude
    exceeds :data:`MAX_METRIC_MAGNITUDE` (non-numbers are left to the schema)."""
    for index, row in enumerate(rows):
        for name, value in as_metric_row(row).metrics.items():
            if isinstance(value, bool) or not isinstance(value, float | int):
                continue
            if isinstance(value, float) and not math.isfinite(value):
                continue
            if abs(value) > MAX_METRIC_MAGNITUDE:
                shown = repr(value) if len(repr(value)) <= 24 else repr(value)[:20] + "..."
                raise MetricValueError(
                    f"metric {name!r} is {shown}: reported values must lie within "
                    f'±{MAX_METRIC_MAGNITUDE:g} (report a diverged value as "Infinity")',
                    field=f"rows[{index}].metrics.{name}",
                )


# PostgreSQL's jsonb keeps numbers as exact decimals and writes them without an exponent: a
# float of 1e16 or more comes back as an integer literal (1e300: 301 digits), which JSON
# readers take for an integer, and one below 1e-16 as a decimal of that many digits. Documents
# with such literals (17 digits or more before any point, or 16 zeros after one) are written
# again, floats as floats; every other document is passed on as stored.
_LONG_LITERAL = re.compile(r"(?<![0-9.])[0-9]{17,}(?![0-9.eE])|\.0{16,}")
_LONG_INTEGER_MIN = 10**16
_MAX_FLOAT_INTEGER = int(sys.float_info.max)


def _parse_int(text: str) -> int | float:
    """A JSON integer literal: a float when it is one of jsonb's rewritten floats."""
    value = int(text)
    return float(value) if _is_long_integer(value) else value


def float_literals(document: str) -> str:
    """``document`` (a stored metrics document's JSON text) with every integer literal of 17
    digits or more written as a float (``1e+300``, not 301 digits), and every number below
    1e-16 with an exponent; unchanged (the same string, no decoding) when it has none."""
    if _LONG_LITERAL.search(document) is None:
        return document
    decoded = json.loads(document, parse_int=_parse_int)
    return json.dumps(decoded, ensure_ascii=False, separators=(", ", ": "))


def as_floats(document: dict[str, Any]) -> dict[str, Any]:
    """A decoded metrics document with the integers :func:`float_literals` rewrites (17
    digits or more) as floats."""
    if not any(_is_long_integer(value) for value in document.values()):
        return document
    return {
        name: float(value) if _is_long_integer(value) else value for name, value in document.items()
    }


def _is_long_integer(value: object) -> bool:
    """An integer of 17 digits or more that a float can hold."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return _LONG_INTEGER_MIN <= abs(value) <= _MAX_FLOAT_INTEGER


def upsert_metrics(session: Session, trial_id: int, rows: Sequence[AnyMetricRow]) -> int:
    """Store ``rows`` for a trial with one ``INSERT ... ON CONFLICT DO UPDATE`` statement.

    Re-sending a row with the same ``(kind, total_batches)`` replaces it, so a trial that
    re-reports after a resume never loses or doubles a row. Within one call the last row
    for a key wins. Non-finite float values are stored as the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"`` (JSON has no literal for them). Also advances the
    trial's ``total_batches`` (training rows) and refreshes its best validation/checkpoint
    (validation rows). Returns the number of distinct keys written. The trial must exist
    (the caller checks; a missing one violates the foreign key).
    """
    return upsert_metrics_of_trials(session, {trial_id: rows})[trial_id]


def upsert_metrics_of_trials(
    session: Session, rows_by_trial: Mapping[int, Sequence[AnyMetricRow]]
) -> dict[int, int]:
    """:func:`upsert_metrics` for several trials at once: ONE upsert statement for all their
    rows and one executemany ``UPDATE`` of their ``total_batches``, then a best-validation
    refresh per trial that reported validation rows. Returns the number of distinct keys
    written per trial."""
    keys = _write_rows(session, rows_by_trial)
    written = dict.fromkeys(rows_by_trial, 0)
    for trial_id, _, _ in keys:
        written[trial_id] += 1
    top: dict[int, int] = {}
    validated: dict[int, set[int]] = {}
    _note_rows(top, validated, keys)
    _advance_trials(session, top, validated)
    return written


class ReportText(NamedTuple):
    """A report's rows as the JSON text they arrived in, ``{"rows": [...]}``, beside the rows
    the API's schema made of it; made by :func:`report_text`, which checks that the text
    says exactly what the rows say (or from what it found, by a process that ran it: then
    ``rows`` may be made from the text when read). The database reads such a report's rows
    from its text itself (:func:`upsert_reports`): no array per row to build and serialize
    while holding the GIL that the master's event loop needs for the next reports."""

    body: str
    rows: Sequence[MetricReport]
    top: int | None
    """The largest batch count of its training rows (``None``: it has none)."""
    validated: frozenset[int]
    """The batch counts of its validation rows."""
    dialect: str
    """The database that reads the text as it would store the rows (SQLAlchemy's name)."""


def upsert_reports(
    session: Session,
    reports: Sequence[tuple[int, Sequence[AnyMetricRow] | ReportText]],
    *,
    fresh: bool = False,
) -> None:
    """Store several reports ``(trial_id, rows)`` in the order given, as
    :func:`upsert_metrics_of_trials` stores rows (the last row for a key wins, across reports
    too), then advance each trial's ``total_batches`` and refresh its best validation once
    (the metric writer's batch). Consecutive reports of rows go in one statement; a
    :class:`ReportText` checked for this database goes in a statement of its own, which
    unpacks its text (SQLite's ``json_each``, PostgreSQL's ``json_to_recordset``); one checked
    for another goes as its rows.

    ``fresh``: the texts' rows are expected to be new (the metric writer's first try), so each
    text goes in a plain ``INSERT``, which costs the database a fifth less than the upsert
    (bench/RESULTS.md, "P5a, 2026-12-03"), and fails with
    :class:`sqlalchemy.exc.IntegrityError` if any of its keys is already stored (a re-sent
    report, a chunk re-reported after a resume): the caller then rolls back and stores the
    reports again without ``fresh``."""
    dialect = session.get_bind().dialect.name
    statements = _UPSERTS[dialect]
    statement = statements.fresh_text if fresh else statements.text
    array_statement = statements.fresh_array_text if fresh else statements.array_text
    stamp = statements.stamp
    top: dict[int, int] = {}
    validated: dict[int, set[int]] = {}
    pending: dict[int, list[AnyMetricRow]] = {}
    now = stamp(utcnow())

    def flush() -> None:
        _note_rows(top, validated, _write_rows(session, pending))
        pending.clear()

    for trial_id, report in reports:
        if not isinstance(report, ReportText) or report.dialect != dialect:
            rows = report.rows if isinstance(report, ReportText) else report
            pending.setdefault(trial_id, []).extend(rows)
            continue
        if pending:
            flush()
        body, of = report.body, statement
        if array_statement is not None and (array := _rows_array(body)) is not None:
            body, of = array, array_statement
        session.execute(of, {"trial": trial_id, "body": body, "now": now})
        if report.top is not None and report.top > top.get(trial_id, -1):
            top[trial_id] = report.top
        if report.validated:
            validated.setdefault(trial_id, set()).update(report.validated)
    if pending:
        flush()
    _advance_trials(session, top, validated)


def _write_rows(
    session: Session, rows_by_trial: Mapping[int, Sequence[AnyMetricRow]]
) -> list[tuple[int, str, int]]:
    """Upsert these trials' rows in ONE statement; the ``(trial, kind, total_batches)``
    keys written (each once)."""
    dialect = session.get_bind().dialect.name
    statements = _UPSERTS[dialect]
    statement, stamp = statements.rows, statements.stamp
    now = stamp(utcnow())
    kinds = _KINDS
    # Each row as the array the statement unpacks, by key: the last row for a key wins.
    latest: dict[tuple[int, str, int], list[Any]] = {}
    for trial_id, rows in rows_by_trial.items():
        for row in rows:
            if isinstance(row, dict):  # a MetricReport
                row_kind = row["kind"]
                batches = row["total_batches"]
                metrics = row["metrics"]
                records = row.get("total_records")
                epochs = row.get("total_epochs")
                reported_at = row.get("reported_at")
            else:
                row_kind, batches, metrics, records, epochs, reported_at = row
            kind = kinds.get(row_kind) or MetricKind(row_kind).value
            latest[(trial_id, kind, batches)] = [
                trial_id,
                kind,
                batches,
                records,
                epochs,
                metrics if type(metrics) is dict else dict(metrics),
                now if reported_at is None else stamp(reported_at),
            ]
    if not latest:
        return []
    values = list(latest.values())
    document = _json_array(values)
    if "NaN" in document or "Infinity" in document:
        # A non-finite value (or a name or string that merely spells one): values as
        # encode_metric_value stores them, a non-finite float as its string.
        for value in values:
            value[5] = {name: encode_metric_value(v) for name, v in value[5].items()}
        document = _json_array(values)
    session.execute(statement, {"rows": document})
    return list(latest)


def _note_rows(
    top: dict[int, int], validated: dict[int, set[int]], keys: Sequence[tuple[int, str, int]]
) -> None:
    """Note written rows for :func:`_advance_trials`: each trial's largest training batch
    count, the batch counts of each trial's validation rows."""
    training = _TRAINING
    for trial_id, kind, batches in keys:
        if kind == training:
            if batches > top.get(trial_id, batches - 1):
                top[trial_id] = batches
        else:
            validated.setdefault(trial_id, set()).add(batches)


_TRAINING = MetricKind.TRAINING.value


def _advance_trials(
    session: Session, top: Mapping[int, int], validated: Mapping[int, set[int]]
) -> None:
    """After rows were written: one executemany ``UPDATE`` raising each trial's
    ``total_batches`` to its ``top`` training row, then a best-validation refresh per
    ``validated`` trial, of the checkpoints at the batch counts of its written validation
    rows."""
    if top:
        session.execute(
            _ADVANCE_TOTAL_BATCHES, [{"trial": t, "top": b} for t, b in sorted(top.items())]
        )
    for trial_id, batches in sorted(validated.items()):
        trials_repo.refresh_trial_best(session, trial_id, batches)


# What report_text reads of a body: its bytes without whitespace, digits and '-', and with
# '}' as ',' (an integer value then reads '":,'). Without a backslash (checked first) no
# string holds an escaped quote, so every '"' opens or closes a string and '":' ends a key.
_BARE = bytes.maketrans(b"}", b","), b" \t\n\r-0123456789"
_LITERAL_VALUE = re.compile(rb":(?:NaN|Infinity|true|false)")
# What PostgreSQL reads otherwise from a text SQLite reads alike. jsonb keeps a number's
# decimal spelling: a positive exponent (1E+2, 1e2) spells a value without a fraction where
# the rows' JSON has one (100.0), so the API would answer an integer for a float; an integer
# part of 16 digits or more may do the reverse (10000000000000000.0 where the rows' 1e+16 is
# stored as 10000000000000000); an exponent of three digits (1e-400) or a run of 300 digits
# (0.000…1) may spell a value below the smallest double, which fails the cast to double
# precision where the rows hold 0.0. A fraction of 16 or 17 digits (0.6931471824645996, as
# most doubles print) is none of these: jsonb keeps the spelling, which reads back as the same
# double. Found in the body with every digit as 0, E as e and every character a number may
# follow (and its sign) as ':', by substring searches (a regular expression took 2 ms for
# 1,000 rows); a match in a name too leaves the report to its rows.
_SPELLING = bytes.maketrans(b"123456789E-,[ \t\n\r", b"000000000e:::::::")
_POSTGRESQL_SPELLINGS = (b"0e0", b"0e+", b"0e:000", b":" + b"0" * 16, b"0" * 300)


class ReportSummary(NamedTuple):
    """What the metric writer needs of a report's rows, besides the rows
    (:func:`summarize_report`)."""

    keys: int
    """How many distinct ``(kind, total_batches)`` keys the rows have."""
    most: int
    """The largest batch count of its rows (-1: none)."""
    top: int | None
    """The largest batch count of its training rows (``None``: it has none)."""
    validated: frozenset[int]
    """The batch counts of its validation rows."""


_KIND = itemgetter("kind")
_BATCHES = itemgetter("total_batches")
_METRICS = itemgetter("metrics")


def summarize_report(rows: Sequence[MetricReport]) -> ReportSummary:
    """The :class:`ReportSummary` of ``rows`` (dicts, as the API's schema makes them), read
    column by column in C (``map``, ``list.count``, ``compress``): no Python code runs per row,
    which the master's event loop would wait for (the per-row generators this replaced took
    half of :func:`report_text`'s time on 1,000 rows)."""
    kinds = list(map(_KIND, rows))
    batches = list(map(_BATCHES, rows))
    if not batches:
        return ReportSummary(0, -1, None, frozenset())
    if kinds.count(MetricKind.TRAINING) == len(kinds):
        most = max(batches)
        return ReportSummary(len(set(batches)), most, most, frozenset())
    trained = list(compress(batches, map(eq, kinds, repeat(MetricKind.TRAINING))))
    validated = frozenset(compress(batches, map(ne, kinds, repeat(MetricKind.TRAINING))))
    keys = len(set(trained)) + len(validated)
    return ReportSummary(keys, max(batches), max(trained, default=None), validated)


def report_text(
    body: bytes,
    rows: Sequence[MetricReport],
    dialect: str,
    summary: ReportSummary | None = None,
) -> ReportText | None:
    """``body`` (a ``{"rows": [...]}`` report the API's schema validated into ``rows``) as a
    :class:`ReportText` when its text says exactly what ``rows`` say, in the form the rows
    would be stored in, so that the database (``dialect``: SQLite or PostgreSQL) may store
    the text's values; else ``None`` (the rows are stored as rows). The schema read the text
    laxly (an integer or ``true`` as a float, a numeric string as a number, the last of two
    equal keys); the text is taken only when counting over its bytes (no parse) shows none
    of that: no escape (a stored name keeps its spelling), no non-finite or boolean literal,
    no integer but the batch and record counts, no ``reported_at`` (stored in SQLite's own
    spelling), and exactly as many strings as ``rows`` has keys and kinds: every one of those
    comes from the text, so any more is a repeated key or a string value. PostgreSQL also
    needs each row's key once (its upsert may not touch a row twice) and none of the
    spellings ``_POSTGRESQL_SPELLINGS`` lists. ``summary``: the rows' :func:`summarize_report`,
    if the caller has it. Costs ~0.6 ms for 1,000 rows on SQLite, ~0.9 ms on PostgreSQL (2
    vCPUs AMD EPYC, 2026-12-04; the database then parses the text without the GIL)."""
    bare = body.translate(*_BARE)
    if b"\\" in bare or _LITERAL_VALUE.search(bare) is not None:
        return None
    counts = len(rows)  # every batch count, an integer literal
    if bare.count(b'"total_batches":,') != counts:
        return None
    if b'"total_records"' in bare:
        records = bare.count(b'"total_records":,')
        if bare.count(b'"total_records"') != records + bare.count(b'"total_records":null'):
            return None
        counts += records
    if b'"reported_at"' in bare and bare.count(b'"reported_at"') != bare.count(
        b'"reported_at":null'
    ):
        return None
    strings = 1 + len(rows) + sum(map(len, rows)) + sum(map(len, map(_METRICS, rows)))
    if bare.count(b'":,') != counts or bare.count(b'"') != 2 * strings:
        return None
    if summary is None:
        summary = summarize_report(rows)
    if dialect == "postgresql":
        spelled = body.translate(_SPELLING)
        if any(spelling in spelled for spelling in _POSTGRESQL_SPELLINGS):
            return None
        if summary.keys < len(rows):
            return None
    try:
        text = body.decode()
    except UnicodeDecodeError:  # (the schema's parser refuses it first)
        return None
    return ReportText(text, rows, summary.top, summary.validated, dialect)


def _json_array(values: list[list[Any]]) -> str:
    """``values`` as JSON text, non-finite floats as ``NaN`` / ``Infinity`` (as
    :func:`json.dumps` writes them, so the caller can look for them). pydantic's serializer
    writes it ~4x faster than :func:`json.dumps` (floats above all), and it holds the GIL
    that the event loop's next reports need; what it cannot write (a string with a lone
    surrogate, a type it does not know) is left to :func:`json.dumps`, with its errors. The
    text differs only in spacing and float spelling (``1e-7``, not ``1e-07``): the same
    values."""
    try:
        return to_json(values, inf_nan_mode="constants").decode()
    except PydanticSerializationError:
        return json.dumps(values)


_KINDS: dict[object, str] = {
    **{kind: kind.value for kind in MetricKind},
    **{kind.value: kind.value for kind in MetricKind},
}
"""A row's ``kind`` (the enum or its value) as stored, without the enum's call per row."""


_trials = cast(Table, Trial.__table__)
_ADVANCE_TOTAL_BATCHES = (
    update(_trials)
    .where(_trials.c.id == bindparam("trial"), _trials.c.total_batches < bindparam("top"))
    .values(total_batches=bindparam("top"))
)


# The whole batch travels as ONE JSON document, an array of rows, each row an array of the
# columns' values in _COLUMNS' order (no keys: a third less to write and to parse), unpacked
# by the database (PostgreSQL's json_array_elements, SQLite's json_each) in one
# INSERT ... SELECT ... ON CONFLICT statement: per-row parameter processing (SQLAlchemy's,
# psycopg's array escaping) cost 3-5x more. Timestamps are written as each database stores
# them for the ORM: ISO 8601 with zone on PostgreSQL, naive UTC
# 'YYYY-MM-DD HH:MM:SS.ffffff' on SQLite.
_SET_ON_CONFLICT = """
    ON CONFLICT (trial_id, kind, total_batches) DO UPDATE SET
        metrics = excluded.metrics,
        total_records = excluded.total_records,
        total_epochs = excluded.total_epochs,
        reported_at = excluded.reported_at
"""
_COLUMNS = "trial_id, kind, total_batches, total_records, total_epochs, metrics, reported_at"
_POSTGRESQL_UPSERT = text(
    f"""
    INSERT INTO metrics ({_COLUMNS})
    SELECT (r->>0)::integer, r->>1, (r->>2)::bigint, (r->>3)::bigint,
           (r->>4)::double precision, r->5, (r->>6)::timestamptz
    FROM json_array_elements(CAST(:rows AS json)) AS r
    {_SET_ON_CONFLICT}
    """
)
# ``WHERE true`` keeps SQLite's parser from reading ON CONFLICT as a join constraint.
_SQLITE_UPSERT = text(
    f"""
    INSERT INTO metrics ({_COLUMNS})
    SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'),
           json_extract(value, '$[2]'), json_extract(value, '$[3]'),
           json_extract(value, '$[4]'), json_extract(value, '$[5]'),
           json_extract(value, '$[6]')
    FROM json_each(:rows) WHERE true
    {_SET_ON_CONFLICT}
    """
)


# A ReportText's rows, unpacked from its text by the database (reported_at: now).
# As a plain INSERT too (``fresh``: no ON CONFLICT clause), which a key already stored fails.
_POSTGRESQL_TEXT_INSERT = f"""
    INSERT INTO metrics ({_COLUMNS})
    SELECT :trial, r.kind, r.total_batches, r.total_records, r.total_epochs, r.metrics,
           CAST(:now AS timestamptz)
    FROM json_to_recordset({{rows}}) AS r(
        kind text, total_batches bigint, total_records bigint,
        total_epochs double precision, metrics json
    )
"""
# PostgreSQL's rows: of the whole text, or of the rows' array cut from it (_rows_array):
# ``-> 'rows'`` parses the whole text once more (a tenth of the server's CPU per row).
_OF_BODY = "CAST(:body AS json) -> 'rows'"
_OF_ARRAY = "CAST(:body AS json)"
_ROWS_KEY = '{"rows":'


def _rows_array(body: str) -> str | None:
    """The rows' array of a report's text spelled ``{"rows":...}``, else ``None``. Its only key
    (:func:`report_text` counted its strings), so the array is all the text holds between
    ``{"rows":`` and its closing brace."""
    if body.startswith(_ROWS_KEY) and body.endswith("}"):
        return body[len(_ROWS_KEY) : -1]
    return None


_SQLITE_TEXT_INSERT = f"""
    INSERT INTO metrics ({_COLUMNS})
    SELECT :trial, json_extract(value, '$.kind'), json_extract(value, '$.total_batches'),
           json_extract(value, '$.total_records'), json_extract(value, '$.total_epochs'),
           json_extract(value, '$.metrics'), :now
    FROM json_each(:body, '$.rows') WHERE true
"""


def _postgresql_stamp(moment: datetime) -> str:
    return as_utc(moment).isoformat()


def _sqlite_stamp(moment: datetime) -> str:
    return as_utc(moment).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


class _Statements(NamedTuple):
    """A database's statements for metric rows."""

    rows: TextClause
    """The rows' upsert."""
    text: TextClause
    """A :class:`ReportText`'s upsert."""
    fresh_text: TextClause
    """A :class:`ReportText`'s plain ``INSERT`` (see :func:`upsert_reports`' ``fresh``)."""
    stamp: Callable[[datetime], str]
    """The timestamp's spelling."""
    array_text: TextClause | None = None
    """PostgreSQL: ``text`` of the rows' array (:func:`_rows_array`), not the whole text."""
    fresh_array_text: TextClause | None = None
    """PostgreSQL: ``fresh_text`` of the rows' array."""


_UPSERTS: dict[str, _Statements] = {
    "postgresql": _Statements(
        _POSTGRESQL_UPSERT,
        text(_POSTGRESQL_TEXT_INSERT.format(rows=_OF_BODY) + _SET_ON_CONFLICT),
        text(_POSTGRESQL_TEXT_INSERT.format(rows=_OF_BODY)),
        _postgresql_stamp,
        text(_POSTGRESQL_TEXT_INSERT.format(rows=_OF_ARRAY) + _SET_ON_CONFLICT),
        text(_POSTGRESQL_TEXT_INSERT.format(rows=_OF_ARRAY)),
    ),
    "sqlite": _Statements(
        _SQLITE_UPSERT,
        text(_SQLITE_TEXT_INSERT + _SET_ON_CONFLICT),
        text(_SQLITE_TEXT_INSERT),
        _sqlite_stamp,
    ),
}


def list_metrics(
    session: Session,
    trial_id: int,
    *,
    kind: MetricKind | None = None,
    after_batches: int | None = None,
    limit: int | None = None,
) -> list[Metric]:
    """A trial's metric rows ordered by ``(kind, total_batches)``; ``after_batches`` keeps only
    rows with a larger batch count (a cursor for incremental reads)."""
    query = select(Metric).where(Metric.trial_id == trial_id)
    if kind is not None:
        query = query.where(Metric.kind == kind)
    if after_batches is not None:
        query = query.where(Metric.total_batches > after_batches)
    query = query.order_by(Metric.kind, Metric.total_batches)
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query).all())


def rows_after(session: Session, trial_id: int, after_row: int, *, limit: int) -> list[Metric]:
    """A trial's metric rows (both kinds) whose id is above ``after_row``, by id, at most
    ``limit``: a cursor over what the trial reported since (the TensorBoard sync)."""
    query = (
        select(Metric)
        .where(Metric.trial_id == trial_id, Metric.id > after_row)
        .order_by(Metric.id)
        .limit(limit)
    )
    return list(session.scalars(query).all())


def metrics_json(
    session: Session,
    trial_id: int,
    *,
    kind: MetricKind | None = None,
    after_batches: int | None = None,
    limit: int | None = None,
) -> bytes:
    """:func:`list_metrics` as the API's JSON array (the fields of ``MetricPublic``, in the
    text its serialization gives, but each row's metrics in their stored JSON text), built
    from the stored values: no ORM objects, no decoding and re-encoding, the kind and (on
    SQLite) the timestamp read as stored text (several times cheaper for the API's polling
    readers). Raises :class:`NotFoundError` for an unknown trial."""
    table = Metric.__table__
    if session.scalar(select(Trial.id).where(Trial.id == trial_id)) is None:
        raise NotFoundError("trial", trial_id)
    sqlite = session.get_bind().dialect.name == "sqlite"
    query = select(
        type_coerce(table.c.kind, String),
        table.c.total_batches,
        table.c.total_records,
        table.c.total_epochs,
        sql_cast(table.c.metrics, Text),
        type_coerce(table.c.reported_at, String) if sqlite else table.c.reported_at,
    ).where(table.c.trial_id == trial_id)
    if kind is not None:
        query = query.where(table.c.kind == kind)
    if after_batches is not None:
        query = query.where(table.c.total_batches > after_batches)
    query = query.order_by(table.c.kind, table.c.total_batches)
    if limit is not None:
        query = query.limit(limit)
    head = f'{{"trial_id":{int(trial_id)},"kind":'
    kinds = _KIND_JSON
    stamp = _sqlite_stamp_json if sqlite else _datetime_json
    parts = [
        f'{head}{kinds[row_kind]},"total_batches":{batches},'
        f'"total_records":{"null" if records is None else records},'
        f'"total_epochs":{"null" if epochs is None else json.dumps(epochs)},'
        f'"metrics":{float_literals(values)},"reported_at":{stamp(reported_at)}}}'
        for row_kind, batches, records, epochs, values, reported_at in session.execute(query)
    ]
    return ("[" + ",".join(parts) + "]").encode()


_KIND_JSON = {kind.value: json.dumps(kind.value) for kind in MetricKind}


def _datetime_json(moment: datetime) -> str:
    return f'"{utc_iso(moment)}"'


def _sqlite_stamp_json(stored: str) -> str:
    return f'"{sqlite_stamp_iso(stored)}"'


def validation_metrics_at(
    session: Session, trial_id: int, total_batches: int
) -> dict[str, Any] | None:
    """The validation metrics a trial reported at exactly ``total_batches``, if any (floats
    as floats, see :func:`as_floats`)."""
    document = session.scalar(
        select(Metric.metrics).where(
            Metric.trial_id == trial_id,
            Metric.kind == MetricKind.VALIDATION,
            Metric.total_batches == total_batches,
        )
    )
    return None if document is None else as_floats(document)


class TrialSeries(NamedTuple):
    """One trial's values of one metric: ``points`` is the JSON text of its ``[batches,
    value]`` pairs in batch order, as the database wrote it (``[batches, value, epochs]``
    triples where :func:`series` is asked for epochs; ``epochs`` is the row's stored
    ``total_epochs``, null where it has none)."""

    trial_id: int
    points: str


def series(
    session: Session,
    trial_ids: Sequence[int],
    kind: MetricKind,
    metric: str,
    *,
    after_row: int | None = None,
    epochs: bool = False,
) -> list[TrialSeries]:
    """The values of ``metric`` in the ``kind`` rows of these trials, one :class:`TrialSeries`
    per trial that has any, by trial id; rows where it is missing or not a finite number are
    left out; ``after_row`` keeps only rows with a larger id; ``epochs``: each point also
    carries its row's ``total_epochs``. One query: the database extracts the numbers and
    writes each trial's points as JSON (SQLite with 15 significant digits), so 10,000 points
    cost one row per trial, no row objects and no JSON encoding here."""
    if not trial_ids:
        return []
    dialect = session.get_bind().dialect.name
    params = _series_params(trial_ids, kind, after_row)
    if dialect == "postgresql":
        statement = _PG_SERIES_EPOCHS if epochs else _PG_SERIES
        params["name"] = metric
    elif '"' not in metric:
        statement = _SQLITE_SERIES_EPOCHS if epochs else _SQLITE_SERIES
        params["path"] = f'$."{metric}"'
    else:  # SQLite's JSON paths cannot quote a '"': read the documents instead
        return _series_decoded(session, params, metric, epochs=epochs)
    rows = session.execute(statement, params).all()
    return [TrialSeries(row[0], row[1]) for row in rows if row[1] not in (None, "[]")]


def last_row_id(
    session: Session, trial_ids: Sequence[int], kind: MetricKind, *, after_row: int | None = None
) -> int | None:
    """The largest id of these trials' ``kind`` rows (above ``after_row``), if any: a cursor
    for :func:`series` (an index-only scan)."""
    if not trial_ids:
        return None
    statement = text(
        "SELECT max(id) FROM metrics WHERE trial_id IN :trials AND kind = :kind AND id > :after"
    ).bindparams(bindparam("trials", expanding=True))
    params = _series_params(trial_ids, kind, after_row)
    params["trials"] = [int(t) for t in trial_ids]
    value = session.scalar(statement, params)
    return None if value is None else int(value)


def _series_params(
    trial_ids: Sequence[int], kind: MetricKind, after_row: int | None
) -> dict[str, Any]:
    return {
        "trials": json.dumps([int(t) for t in trial_ids]),
        "kind": MetricKind(kind).value,
        "after": -1 if after_row is None else after_row,
    }


def _pg_series(point: str) -> TextClause:
    return text(
        f"""
    SELECT m.trial_id,
           CAST(json_agg({point} ORDER BY m.total_batches) AS text)
    FROM metrics m
    WHERE m.trial_id IN (SELECT CAST(value AS integer)
                         FROM jsonb_array_elements_text(CAST(:trials AS jsonb)))
      AND m.kind = :kind AND m.id > :after AND json_typeof(m.metrics -> :name) = 'number'
    GROUP BY m.trial_id
    ORDER BY m.trial_id
    """
    )


_PG_VALUE = "CAST(m.metrics ->> :name AS double precision)"
_PG_SERIES = _pg_series(f"json_build_array(m.total_batches, {_PG_VALUE})")
_PG_SERIES_EPOCHS = _pg_series(f"json_build_array(m.total_batches, {_PG_VALUE}, m.total_epochs)")


# One aggregate per trial over a subquery ordered by batches: SQLite does not flatten a
# subquery with ORDER BY under an aggregate, and reads it in index order (trial, kind,
# batches), so json_group_array sees the rows in batch order (a test stores them out of order).
def _sqlite_series(point: str) -> TextClause:
    return text(
        f"""
    SELECT t.value,
           (SELECT json_group_array({point})
            FROM (SELECT total_batches AS b, json_extract(metrics, :path) AS v,
                         total_epochs AS e
                  FROM metrics
                  WHERE trial_id = t.value AND kind = :kind AND id > :after
                  ORDER BY total_batches)
            WHERE typeof(v) IN ('integer', 'real'))
    FROM json_each(:trials) AS t
    ORDER BY t.value
    """
    )


_SQLITE_SERIES = _sqlite_series("json_array(b, v)")
_SQLITE_SERIES_EPOCHS = _sqlite_series("json_array(b, v, e)")


def _series_decoded(
    session: Session, params: dict[str, Any], metric: str, *, epochs: bool
) -> list[TrialSeries]:
    statement = text(
        "SELECT trial_id, total_batches, total_epochs, metrics FROM metrics "
        "WHERE trial_id IN (SELECT value FROM json_each(:trials)) AND kind = :kind "
        "AND id > :after ORDER BY trial_id, total_batches"
    )
    found: dict[int, list[tuple[Any, ...]]] = {}
    for trial_id, batches, stored_epochs, document in session.execute(statement, params).all():
        value = json.loads(document).get(metric)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            point = (batches, value, stored_epochs) if epochs else (batches, value)
            found.setdefault(trial_id, []).append(point)
    return [TrialSeries(t, json.dumps(points)) for t, points in sorted(found.items())]


def metric_names(session: Session, experiment_id: int) -> dict[MetricKind, list[str]]:
    """The metric names an experiment's trials report, per kind, sorted: the names in each
    trial's first and latest row of that kind (two index lookups per trial, not a scan of
    every row: a name reported only in rows between those is not listed)."""
    dialect = session.get_bind().dialect.name
    statement = _PG_NAMES if dialect == "postgresql" else _SQLITE_NAMES
    names: dict[MetricKind, list[str]] = {}
    for kind in MetricKind:
        found = session.scalars(statement, {"experiment": experiment_id, "kind": kind.value})
        names[kind] = sorted(found)
    return names


def _edge_row(direction: str) -> str:
    return (
        f"SELECT id FROM metrics WHERE trial_id = t.id AND kind = :kind "
        f"ORDER BY total_batches {direction} LIMIT 1"
    )


_SQLITE_NAMES = text(
    f"""
    SELECT DISTINCT j.key
    FROM trials t
    JOIN metrics m ON m.id IN (({_edge_row("ASC")}), ({_edge_row("DESC")})),
         json_each(m.metrics) j
    WHERE t.experiment_id = :experiment
    """
)
_PG_NAMES = text(
    """
    SELECT DISTINCT k
    FROM trials t
    CROSS JOIN LATERAL (
        (SELECT metrics FROM metrics WHERE trial_id = t.id AND kind = :kind
         ORDER BY total_batches ASC LIMIT 1)
        UNION ALL
        (SELECT metrics FROM metrics WHERE trial_id = t.id AND kind = :kind
         ORDER BY total_batches DESC LIMIT 1)
    ) m
    CROSS JOIN LATERAL json_object_keys(m.metrics) k
    WHERE t.experiment_id = :experiment
    """
)
