"""Migration 0019 (metric rows' documents as ``json`` on PostgreSQL): rows stored under it
read back the same after its downgrade to ``jsonb`` and after upgrading again, and on rows
that ``jsonb`` wrote the readers that look into the documents in SQL (a series, the best
validation, the metric names) and the API's JSON give what was reported."""

from __future__ import annotations

import json
from typing import Any

from alembic import command
from sqlalchemy import text

from pedl.db import Database, _migrate
from pedl.db import metrics as metrics_repo
from pedl.db import trials as trials_repo
from pedl.db.metrics import MetricRow
from pedl.vocabulary import MetricKind
from tests.master.helpers import trial_of_new_experiment

# Key order as reported (jsonb sorts it), a float jsonb keeps as 301 digits (its readers turn
# them back into floats: ``as_floats``), a tiny one, a non-number a series skips.
_VALUES = {"zeta_loss": 1e300, "acc": 0.125, "tiny": 1e-20, "note": "text"}


def _column_type(database: Database) -> str | None:
    if database.dialect != "postgresql":
        return None
    with database.engine.connect() as conn:
        return conn.execute(
            text(
                "SELECT data_type FROM information_schema.columns"
                " WHERE table_name = 'metrics' AND column_name = 'metrics'"
            )
        ).scalar_one()


def _read(database: Database, trial_id: int) -> tuple[list[dict[str, Any]], float | None]:
    with database.session() as session:
        rows = metrics_repo.list_metrics(session, trial_id, kind=MetricKind.VALIDATION)
        trial = trials_repo.get_trial(session, trial_id)
        return [dict(row.metrics) for row in rows], trial.best_validation


def _downgrade(database: Database, revision: str) -> None:
    with database.engine.begin() as connection:
        command.downgrade(_migrate.alembic_config(connection), revision)


def test_rows_read_back_the_same_across_0019_both_ways(fresh_db_url: str) -> None:
    database = Database(fresh_db_url)
    try:
        database.upgrade()
        trial_id = trial_of_new_experiment(database, metric="acc", smaller_is_better=False)
        with database.session(write=True) as session:
            metrics_repo.upsert_metrics(
                session,
                trial_id,
                [
                    MetricRow(MetricKind.VALIDATION, b, {**_VALUES, "acc": 0.125 * b})
                    for b in (1, 2)
                ],
            )
        expected = [{**_VALUES, "acc": 0.125}, {**_VALUES, "acc": 0.25}]
        assert _column_type(database) in (None, "json")
        assert _read(database, trial_id) == (expected, 0.25)
        assert [list(row) for row in _read(database, trial_id)[0]] == [list(_VALUES)] * 2

        _downgrade(database, "0018")
        assert _column_type(database) in (None, "jsonb")
        rows, best = _read(database, trial_id)
        assert [metrics_repo.as_floats(row) for row in rows] == expected and best == 0.25

        database.upgrade()  # 0019 again, on rows jsonb wrote
        assert _column_type(database) in (None, "json")
        rows, best = _read(database, trial_id)
        assert best == 0.25
        assert [metrics_repo.as_floats(row) for row in rows] == expected
        with database.session(write=True) as session:
            metrics_repo.upsert_metrics(
                session, trial_id, [MetricRow(MetricKind.VALIDATION, 3, {**_VALUES, "acc": 0.5})]
            )
        with database.session() as session:
            names = metrics_repo.metric_names(session, _experiment_of(database, trial_id))
            series = metrics_repo.series(session, [trial_id], MetricKind.VALIDATION, "acc")
            document = metrics_repo.metrics_json(session, trial_id, kind=MetricKind.VALIDATION)
        assert names[MetricKind.VALIDATION] == sorted(_VALUES)
        assert [(s[0], json.loads(s[1])) for s in series] == [
            (trial_id, [[1, 0.125], [2, 0.25], [3, 0.5]])
        ]
        assert [row["metrics"] for row in json.loads(document)][2] == {**_VALUES, "acc": 0.5}
        assert _read(database, trial_id)[1] == 0.5
    finally:
        database.dispose()


def _experiment_of(database: Database, trial_id: int) -> int:
    with database.session() as session:
        return trials_repo.get_trial(session, trial_id).experiment_id
