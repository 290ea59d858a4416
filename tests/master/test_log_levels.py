"""Trial output lines get the level their text names, so ``--level`` filters them."""

from __future__ import annotations

import pytest

from pedl.db import Database
from pedl.db import experiments as experiments_repo
from pedl.db import logs as logs_repo
from pedl.master.orchestrator import TrialLogWriter
from pedl.master.orchestrator._log_levels import level_of

from .helpers import create_trial, make_archive


@pytest.mark.parametrize(
    ("message", "level"),
    [
        ("2026-11-29 08:00:00,123 INFO pedl.exec.trial: starting", "INFO"),
        ("2026-11-29 08:00:00,123 WARNING pedl.keras: slow", "WARNING"),
        ("2026-11-29T08:00:00.5Z ERROR x: boom", "ERROR"),
        ("WARNING:tensorflow:Compiled the loaded model", "WARNING"),
        ("WARN: deprecated", "WARNING"),
        ("[ERROR] could not open", "ERROR"),
        ("FATAL out of memory", "CRITICAL"),
        ("CRITICAL:root:gone", "CRITICAL"),
        ("DEBUG:urllib3:connection", "DEBUG"),
        ("W1129 08:00:00.123456 140 file.py:12] absl warning", "WARNING"),
        ("E1129 08:00:00.123456 140 file.py:12] absl error", "ERROR"),
        ("2026-11-29 08:00:00.123456: I tensorflow/core/platform/cpu.cc:1] cpu", "INFO"),
        ("2026-11-29 08:00:00.123456: W tensorflow/core/framework/op.cc:1] w", "WARNING"),
        ("[rank=1] 2026-11-29 08:00:00,123 ERROR pedl: on rank 1", "ERROR"),
        ("hello from the trial", None),
        ("Epoch 1/3", None),
        ("INFORMATION is not a level", None),
        ("an ERROR later in the line", None),
        ("1/10 [==>....] - loss: 0.5", None),
        ("", None),
    ],
)
def test_level_of(message: str, level: str | None) -> None:
    assert level_of(message) == level


def test_written_lines_carry_their_level_and_filter_by_it(database: Database) -> None:
    with database.session(write=True) as session:
        experiment = experiments_repo.create_experiment(
            session, config={}, config_text="", model_definition=make_archive(), owner="me"
        )
    trial_id, _ = create_trial(database, experiment.id)
    TrialLogWriter(database).write(
        trial_id,
        [
            ("stderr", "2026-11-29 08:00:00,123 INFO pedl.exec.trial: starting"),
            ("stdout", "Epoch 1/1"),
            ("stderr", "2026-11-29 08:00:01,123 WARNING pedl.keras: slow batch"),
            ("stderr", "2026-11-29 08:00:02,123 ERROR pedl.keras: failed", 0),
        ],
    )
    with database.session() as session:
        rows = logs_repo.list_logs(session, trial_id)
        assert [r.level for r in rows] == ["INFO", None, "WARNING", "ERROR"]
        warnings = logs_repo.list_logs(
            session, trial_id, where=logs_repo.LogFilter(min_level="WARNING")
        )
    assert [r.message.split()[2] for r in warnings] == ["WARNING", "ERROR"]
