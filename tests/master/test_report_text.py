"""Reports stored from their text (``report_text``; SQLite's ``json_each``, PostgreSQL's
``json_to_recordset``) against the same reports stored from their rows: the text is taken only
where every reader gets the same values, of the same JSON types, back; everything else is
stored from its rows."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy.exc import IntegrityError

from pedl.db import Database, experiments, trials
from pedl.db import metrics as metrics_repo
from pedl.db.metrics import AnyMetricRow, MetricReport, ReportText, report_text
from pedl.master.api.trials import fast_metric_rows
from pedl.vocabulary import MetricKind
from tests.master.helpers import make_archive

from .metric_bodies import report_bodies, training_body


def _trial(database: Database) -> int:
    with database.session(write=True) as session:
        experiment = experiments.create_experiment(
            session,
            config={"searcher": {"metric": "loss"}},
            config_text="searcher: {}",
            model_definition=make_archive(),
            owner="alice",
            searcher_metric="loss",
            smaller_is_better=True,
        )
        trial, _token = trials.create_trial(
            session, experiment_id=experiment.id, hparams={"lr": 0.5}, seed=3
        )
        return trial.id


def _typed(value: Any) -> Any:
    """``value`` with every number tagged by its JSON type (1 and 1.0 differ)."""
    if isinstance(value, dict):
        return {name: _typed(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def _read(database: Database, trial_id: int) -> Any:
    """What the API and the charts read of a trial's rows: the rows' JSON (all but the trial
    and the time), each metric's series, the trial's best validation and batch count."""
    with database.session() as session:
        rows = json.loads(metrics_repo.metrics_json(session, trial_id))
        names = sorted({name for row in rows for name in row["metrics"]})
        series = {
            (kind, name): [
                json.loads(found.points)
                for found in metrics_repo.series(session, [trial_id], kind, name, epochs=True)
            ]
            for kind in MetricKind
            for name in names
        }
        trial = trials.get_trial(session, trial_id)
        summary = (trial.best_validation, trial.total_batches)
    for row in rows:
        del row["trial_id"], row["reported_at"]
    return _typed([rows, sorted(series.items()), summary])


def _stored_both_ways(database: Database, body: bytes) -> tuple[Any, Any] | None:
    """The body's rows read back when stored from its rows and from its text; ``None`` where
    the fast schema or ``report_text`` leaves it to the rows."""
    rows = fast_metric_rows(body)
    if rows is None:
        return None
    text = report_text(body, rows, database.dialect)
    if text is None:
        return None
    from_rows, from_text = _trial(database), _trial(database)
    with database.session(write=True) as session:
        metrics_repo.upsert_reports(session, [(from_rows, rows)])
        metrics_repo.upsert_reports(session, [(from_text, text)])
    return _read(database, from_rows), _read(database, from_text)


def _same_both_ways(database: Database, body: bytes) -> None:
    stored = _stored_both_ways(database, body)
    event("stored from the text" if stored is not None else "stored from the rows")
    if stored is not None:
        assert stored[1] == stored[0], body


# Bodies a client writes (floats in every spelling, spaces anywhere), with now and then one
# thing the text must not be taken for: an integer or boolean value, a numeric string, a
# repeated key.
_FLOATS = ["0.5", "-0.0", "1e300", "-1e300", "2e-320", "5e-400", "0.10", "1E5", "1.0", "null",
           "0.1000000000000000055511151231257827", "123456789012345678901234567890.0",
           "0.6931471824645996", "-0.30000000000000004", "1234567890123456.5"]  # fmt: skip
_OPTIONAL = ["", ',"total_records":64', ',"total_records":null', ',"total_epochs":1.5',
             ',"total_epochs":2', ',"reported_at":null']  # fmt: skip
_TRAPS = ["1", "-3", "true", "false", '"0.5"', "DUPLICATE"]


@st.composite
def _client_bodies(draw: st.DrawFn) -> bytes:
    space = st.sampled_from(["", " ", "\n  "])
    trap = draw(st.sampled_from([None] * 8 + _TRAPS))
    rows = []
    for index in range(draw(st.integers(min_value=0, max_value=4))):
        names = draw(st.lists(st.sampled_from(["loss", "acc", "kind", "rows", "m"]), unique=True))
        values = [draw(st.sampled_from(_FLOATS)) for _ in names]
        pairs = [f'"{n}"{draw(space)}:{draw(space)}{v}' for n, v in zip(names, values, strict=True)]
        if trap is not None and index == 0:
            pairs.append('"loss":0.25,"loss":0.75' if trap == "DUPLICATE" else f'"t":{trap}')
        optional = draw(st.sampled_from(_OPTIONAL))
        kind = draw(st.sampled_from(["training", "validation"]))
        batches = draw(st.integers(min_value=0, max_value=3))
        rows.append(
            f'{{{draw(space)}"kind":"{kind}",{draw(space)}"total_batches":{batches},'
            f'"metrics":{{{",".join(pairs)}}}{optional}}}'
        )
    # Spaced or not around the rows (PostgreSQL reads the rows' array cut from a text that
    # starts '{"rows":' and ends '}', any other text whole).
    head = f'{{{draw(space)}"rows"{draw(space)}:{draw(space)}['
    return (head + f",{draw(space)}".join(rows) + f"]{draw(space)}}}").encode()


_SETTINGS = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@_SETTINGS
@given(body=_client_bodies())
def test_a_report_stored_from_its_text_reads_back_as_from_its_rows(
    database: Database, body: bytes
) -> None:
    _same_both_ways(database, body)


@_SETTINGS
@given(body=report_bodies())
def test_the_route_schemas_edge_cases_read_back_as_from_their_rows(
    database: Database, body: bytes
) -> None:
    _same_both_ways(database, body)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_what_a_client_writes_is_stored_from_its_text(dialect: str) -> None:
    rows = [
        {"kind": "training", "total_batches": 10, "metrics": {"loss": 0.25, "acc": 1.0}},
        {
            "kind": "validation",
            "total_batches": 10,
            "total_records": 320,
            "total_epochs": 0.5,
            "reported_at": None,
            "metrics": {"val_loss": 1e-7, "n": None},
        },
        # doubles as Python prints them, most with 16 or 17 digits (float32 values above all)
        {"kind": "validation", "total_batches": 20, "metrics": {"loss": 0.6931471824645996}},
        {"kind": "training", "total_batches": 20, "metrics": {"loss": 0.1 + 0.2, "x": -1e-5}},
        {"kind": "training", "total_batches": 21, "metrics": {"time1": 0.5}},  # no exponent
    ]
    for body in (json.dumps({"rows": rows}), json.dumps({"rows": rows}, indent=2), '{"rows":[]}'):
        fast = fast_metric_rows(body.encode())
        assert fast is not None
        assert isinstance(report_text(body.encode(), fast, dialect), ReportText), body


def _body(metrics: str, optional: str = "") -> bytes:
    row = f'{{"kind":"training","total_batches":1,"metrics":{metrics}{optional}}}'
    return f'{{"rows":[{row}]}}'.encode()


def _left_to_the_rows(body: bytes, dialect: str) -> bool:
    rows = fast_metric_rows(body)
    assert rows is not None, body
    return report_text(body, rows, dialect) is None


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_what_the_text_would_store_otherwise_is_stored_from_the_rows(dialect: str) -> None:
    for left in (
        _body('{"loss":1}'),  # stored as 1.0 from the rows
        _body('{"loss":true}'),  # 1.0
        _body('{"loss":"0.5"}'),  # 0.5
        _body('{"loss":0.5,"loss":0.25}'),  # the last one; SQLite would read the first
        _body('{"loss":0.5}', ',"total_batches":2'),  # a repeated field
        _body('{"loss":"NaN"}'),
        _body('{"\\u00e9":0.5}'),  # an escape: the name is stored unescaped from the rows
        _body('{"loss":0.5}', ',"total_epochs":2'),
        _body('{"loss":0.5}', ',"reported_at":"2026-01-02T03:04:05Z"'),
        b'{"rows":[],"rows":[{"kind":"training","total_batches":1,"metrics":{}}]}',
        # a batch count written as a float beside an integer value: as many integers
        b'{"rows":[{"kind":"training","total_batches":1.0,"metrics":{"loss":1}}]}',
    ):
        assert _left_to_the_rows(left, dialect), left


def test_what_postgresql_would_store_otherwise_is_stored_from_the_rows() -> None:
    """jsonb keeps a number's spelling; the rows' JSON spells it as Python's float."""
    twice = b'{"kind":"training","total_batches":1,"metrics":{"loss":0.5}}'
    for body in (
        _body('{"loss":1E+2}'),  # 100 to the API from the text, 100.0 from the rows
        _body('{"loss":1e2}'),
        _body('{"loss":10000000000000000.0}'),  # stored so; from the rows (1e+16) without ".0"
        _body('{"loss": -10000000000000000.0}'),
        _body('{"loss":0.5e-400}'),  # below the smallest double: not a double precision
        _body('{"loss":0.%s1}' % ("0" * 330)),
        _body('{"loss":0.5}', ',"total_epochs":1e-400'),
        b'{"rows":[' + twice + b"," + twice + b"]}",  # one upsert may not touch a row twice
    ):
        assert _left_to_the_rows(body, "postgresql"), body
        assert not _left_to_the_rows(body, "sqlite"), body


def test_reports_apply_in_order_whatever_their_form(database: Database) -> None:
    """Rows, text and rows again for the same keys: the last report's values win."""
    trial_id = _trial(database)

    def report(values: list[float], *, as_text: bool) -> Any:
        body = json.dumps(
            {
                "rows": [
                    {"kind": kind, "total_batches": b, "metrics": {"loss": v}}
                    for (b, v), kind in zip(
                        enumerate(values, start=1),
                        itertools.cycle(["training", "validation"]),
                        strict=False,
                    )
                ]
            }
        ).encode()
        rows: list[MetricReport] | None = fast_metric_rows(body)
        assert rows is not None
        text = report_text(body, rows, database.dialect) if as_text else None
        assert (text is not None) == as_text
        form: list[AnyMetricRow] | ReportText = text if text is not None else list(rows)
        return form

    with database.session(write=True) as session:
        metrics_repo.upsert_reports(
            session,
            [
                (trial_id, report([0.9, 0.8, 0.7], as_text=False)),
                (trial_id, report([0.6, 0.5], as_text=True)),
                (trial_id, report([0.4], as_text=False)),
            ],
        )
    with database.session() as session:
        stored = json.loads(metrics_repo.metrics_json(session, trial_id))
        trial = trials.get_trial(session, trial_id)
    assert [(r["kind"], r["total_batches"], r["metrics"]["loss"]) for r in stored] == [
        ("training", 1, 0.4),
        ("training", 3, 0.7),
        ("validation", 2, 0.5),
    ]
    assert (trial.total_batches, trial.best_validation) == (3, pytest.approx(0.5))


def test_a_fresh_text_is_a_plain_insert_that_a_stored_key_fails(database: Database) -> None:
    """``fresh``: a text's rows go in a plain INSERT, which a key already stored fails (the
    transaction rolled back, nothing changed); without it the same text replaces the row."""
    trial_id = _trial(database)

    def text(batches: list[int], loss: float) -> ReportText:
        body = training_body(batches, loss)
        rows = fast_metric_rows(body)
        assert rows is not None
        checked = report_text(body, rows, database.dialect)
        assert checked is not None
        return checked

    def losses() -> dict[int, float]:
        with database.session() as session:
            stored = json.loads(metrics_repo.metrics_json(session, trial_id))
        return {row["total_batches"]: row["metrics"]["loss"] for row in stored}

    with database.session(write=True) as session:
        metrics_repo.upsert_reports(session, [(trial_id, text([1, 2], 0.5))], fresh=True)
    assert losses() == {1: 0.5, 2: 0.5}
    with pytest.raises(IntegrityError), database.session(write=True) as session:
        metrics_repo.upsert_reports(session, [(trial_id, text([3], 0.25))], fresh=True)
        metrics_repo.upsert_reports(session, [(trial_id, text([2, 4], 0.25))], fresh=True)
    assert losses() == {1: 0.5, 2: 0.5}
    with database.session(write=True) as session:
        metrics_repo.upsert_reports(session, [(trial_id, text([2, 4], 0.25))])
    assert losses() == {1: 0.5, 2: 0.25, 4: 0.25}


_REPORT_ROWS = st.lists(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from([*MetricKind, *(kind.value for kind in MetricKind)]),
            "total_batches": st.integers(min_value=0, max_value=50),
            "metrics": st.dictionaries(st.sampled_from("abc"), st.floats(0, 1), max_size=3),
        }
    ),
    max_size=40,
)


@given(rows=_REPORT_ROWS)
def test_a_reports_summary_is_what_its_rows_say_one_by_one(rows: list[MetricReport]) -> None:
    """``summarize_report`` reads the rows column by column; here, row by row."""
    summary = metrics_repo.summarize_report(rows)
    trained = [row["total_batches"] for row in rows if row["kind"] == MetricKind.TRAINING]
    validated = {row["total_batches"] for row in rows if row["kind"] != MetricKind.TRAINING}
    assert summary.keys == len(metrics_repo.row_keys(rows))
    assert summary.most == metrics_repo.most_batches(rows)
    assert summary.top == max(trained, default=None)
    assert summary.validated == validated
