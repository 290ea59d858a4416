"""PostgreSQL: a metric row's trial checked per statement, not per row.

A foreign key checks each row it inserts with a query of its own, ``SELECT ... FOR KEY
SHARE`` on the trial: a third of the server's CPU per metric row, and metric reports are
PEDL's largest writes. On PostgreSQL the foreign key of ``metrics.trial_id`` becomes two
statement triggers that keep its guarantees with one query per statement:

- after ``INSERT`` or ``UPDATE`` of metrics, every distinct trial of the new rows must
  exist; it is locked ``FOR KEY SHARE``, as the key's check locks it, so a trial being
  deleted waits for the rows' transaction or makes it fail (SQLSTATE 23503,
  ``foreign_key_violation``, which SQLAlchemy raises as ``IntegrityError`` as it did);
- after ``DELETE`` of trials, their metric rows are deleted (``ON DELETE CASCADE``); the
  trigger's query sees every committed row, those of a transaction the deletion waited
  for included.

SQLite keeps its foreign key: its check is an index probe in the same process.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UPGRADE = [
    "ALTER TABLE metrics DROP CONSTRAINT fk_metrics_trial_id_trials",
    """
    CREATE FUNCTION pedl_metrics_trials_exist() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        missing integer;
    BEGIN
        SELECT t.trial_id INTO missing
        FROM (SELECT DISTINCT trial_id FROM new_rows) AS t
        WHERE NOT EXISTS (SELECT 1 FROM trials WHERE id = t.trial_id FOR KEY SHARE)
        LIMIT 1;
        IF FOUND THEN
            RAISE foreign_key_violation USING
                MESSAGE = 'insert or update on table "metrics" violates its trial check',
                DETAIL = format('Key (trial_id)=(%s) is not present in table "trials".', missing);
        END IF;
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER metrics_trials_exist_on_insert AFTER INSERT ON metrics
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pedl_metrics_trials_exist()
    """,
    """
    CREATE TRIGGER metrics_trials_exist_on_update AFTER UPDATE ON metrics
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pedl_metrics_trials_exist()
    """,
    """
    CREATE FUNCTION pedl_trials_delete_metrics() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM metrics WHERE trial_id IN (SELECT id FROM old_rows);
        RETURN NULL;
    END $$
    """,
    """
    CREATE TRIGGER trials_delete_metrics AFTER DELETE ON trials
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION pedl_trials_delete_metrics()
    """,
]

_DOWNGRADE = [
    "DROP TRIGGER trials_delete_metrics ON trials",
    "DROP FUNCTION pedl_trials_delete_metrics()",
    "DROP TRIGGER metrics_trials_exist_on_update ON metrics",
    "DROP TRIGGER metrics_trials_exist_on_insert ON metrics",
    "DROP FUNCTION pedl_metrics_trials_exist()",
    """
    ALTER TABLE metrics ADD CONSTRAINT fk_metrics_trial_id_trials
    FOREIGN KEY (trial_id) REFERENCES trials (id) ON DELETE CASCADE
    """,
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _UPGRADE:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in _DOWNGRADE:
            op.execute(statement)
