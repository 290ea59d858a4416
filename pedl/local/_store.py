"""The record of a local-mode experiment: one SQLite file in the experiment directory.

Every write commits at once (WAL mode), so a process killed at any moment leaves a
consistent record to resume from. Metric rows are keyed by (trial, kind, batches): a
resumed trial that re-reports a chunk replaces the row instead of adding one.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pedl.core import MetricKind

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiment (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    id INTEGER PRIMARY KEY,
    request_id INTEGER NOT NULL UNIQUE,
    hparams TEXT NOT NULL,
    seed INTEGER NOT NULL,
    state TEXT NOT NULL,
    restarts INTEGER NOT NULL DEFAULT 0,
    latest_checkpoint TEXT,
    error TEXT
);
CREATE TABLE IF NOT EXISTS metrics (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    kind TEXT NOT NULL,
    total_batches INTEGER NOT NULL,
    metrics TEXT NOT NULL,
    reported_at REAL NOT NULL,
    PRIMARY KEY (trial_id, kind, total_batches)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    uuid TEXT PRIMARY KEY,
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    total_batches INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    resources TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS searcher_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class TrialRecord:
    id: int
    request_id: int
    hparams: dict[str, Any]
    seed: int
    state: str
    restarts: int
    latest_checkpoint: str | None
    error: str | None


@dataclass(frozen=True)
class MetricRow:
    trial_id: int
    kind: str
    total_batches: int
    metrics: dict[str, float]


@dataclass(frozen=True)
class CheckpointRecord:
    uuid: str
    trial_id: int
    total_batches: int
    metadata: dict[str, Any]
    resources: dict[str, int]
    state: str


class LocalStore:
    """All reads and writes of a local experiment's SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    # experiment ---------------------------------------------------------------------------

    def set_value(self, key: str, value: Any) -> None:
        self._db.execute(
            "INSERT INTO experiment (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def get_value(self, key: str, default: Any = None) -> Any:
        row = self._db.execute("SELECT value FROM experiment WHERE key = ?", (key,)).fetchone()
        return default if row is None else json.loads(row[0])

    # trials -------------------------------------------------------------------------------

    def create_trial(self, request_id: int, hparams: Mapping[str, Any], seed: int) -> int:
        cursor = self._db.execute(
            "INSERT INTO trials (request_id, hparams, seed, state) VALUES (?, ?, ?, 'ACTIVE')",
            (request_id, json.dumps(dict(hparams)), seed),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def set_trial_state(self, trial_id: int, state: str, error: str | None = None) -> None:
        self._db.execute(
            "UPDATE trials SET state = ?, error = COALESCE(?, error) WHERE id = ?",
            (state, error, trial_id),
        )

    def add_restart(self, trial_id: int) -> int:
        self._db.execute("UPDATE trials SET restarts = restarts + 1 WHERE id = ?", (trial_id,))
        return self.trial(trial_id).restarts

    def trial(self, trial_id: int) -> TrialRecord:
        row = self._db.execute(
            "SELECT id, request_id, hparams, seed, state, restarts, latest_checkpoint, error "
            "FROM trials WHERE id = ?",
            (trial_id,),
        ).fetchone()
        if row is None:
            raise KeyError(f"no trial {trial_id}")
        return _trial(row)

    def trial_by_request(self, request_id: int) -> TrialRecord | None:
        row = self._db.execute(
            "SELECT id, request_id, hparams, seed, state, restarts, latest_checkpoint, error "
            "FROM trials WHERE request_id = ?",
            (request_id,),
        ).fetchone()
        return None if row is None else _trial(row)

    def trials(self) -> list[TrialRecord]:
        rows = self._db.execute(
            "SELECT id, request_id, hparams, seed, state, restarts, latest_checkpoint, error "
            "FROM trials ORDER BY id"
        ).fetchall()
        return [_trial(r) for r in rows]

    # metrics ------------------------------------------------------------------------------

    def write_metrics(
        self, trial_id: int, kind: MetricKind, total_batches: int, metrics: Mapping[str, float]
    ) -> None:
        self._db.execute(
            "INSERT INTO metrics (trial_id, kind, total_batches, metrics, reported_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT(trial_id, kind, total_batches) "
            "DO UPDATE SET metrics = excluded.metrics, reported_at = excluded.reported_at",
            (trial_id, kind, total_batches, json.dumps(dict(metrics)), time.time()),
        )

    def metrics(self, trial_id: int, kind: MetricKind | None = None) -> list[MetricRow]:
        query = "SELECT trial_id, kind, total_batches, metrics FROM metrics WHERE trial_id = ?"
        args: tuple[Any, ...] = (trial_id,)
        if kind is not None:
            query += " AND kind = ?"
            args += (kind,)
        rows = self._db.execute(query + " ORDER BY kind, total_batches", args).fetchall()
        return [MetricRow(r[0], r[1], r[2], json.loads(r[3])) for r in rows]

    # checkpoints --------------------------------------------------------------------------

    def register_checkpoint(
        self,
        trial_id: int,
        storage_id: str,
        total_batches: int,
        metadata: Mapping[str, Any],
        resources: Mapping[str, int],
    ) -> None:
        with self._db:
            self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO checkpoints "
                "(uuid, trial_id, total_batches, metadata, resources, state, created_at) "
                "VALUES (?, ?, ?, ?, ?, 'COMPLETED', ?)",
                (
                    storage_id,
                    trial_id,
                    total_batches,
                    json.dumps(dict(metadata)),
                    json.dumps(dict(resources)),
                    time.time(),
                ),
            )
            self._db.execute(
                "UPDATE trials SET latest_checkpoint = ? WHERE id = ?", (storage_id, trial_id)
            )

    def checkpoints(
        self, trial_id: int | None = None, state: str = "COMPLETED"
    ) -> list[CheckpointRecord]:
        query = (
            "SELECT uuid, trial_id, total_batches, metadata, resources, state FROM checkpoints "
            "WHERE state = ?"
        )
        args: tuple[Any, ...] = (state,)
        if trial_id is not None:
            query += " AND trial_id = ?"
            args += (trial_id,)
        rows = self._db.execute(query + " ORDER BY trial_id, total_batches", args).fetchall()
        return [
            CheckpointRecord(r[0], r[1], r[2], json.loads(r[3]), json.loads(r[4]), r[5])
            for r in rows
        ]

    def mark_checkpoint_deleted(self, storage_id: str) -> None:
        self._db.execute("UPDATE checkpoints SET state = 'DELETED' WHERE uuid = ?", (storage_id,))

    # searcher events ----------------------------------------------------------------------

    def append_searcher_event(self, event: Mapping[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO searcher_events (event) VALUES (?)", (json.dumps(dict(event)),)
        )

    def searcher_events(self) -> list[dict[str, Any]]:
        rows = self._db.execute("SELECT event FROM searcher_events ORDER BY seq").fetchall()
        return [json.loads(r[0]) for r in rows]


def _trial(row: tuple[Any, ...]) -> TrialRecord:
    return TrialRecord(
        id=row[0],
        request_id=row[1],
        hparams=json.loads(row[2]),
        seed=row[3],
        state=row[4],
        restarts=row[5],
        latest_checkpoint=row[6],
        error=row[7],
    )
