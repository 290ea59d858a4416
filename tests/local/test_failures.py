"""Local mode: every place a model definition can fail, InvalidHP from every place."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from pedl.cli import cli
from pedl.cli._local_run import summary_table
from pedl.local import LocalExperiment
from pedl.vocabulary import ExperimentState, TrialOutcome, TrialState
from tests.failure_cases import (
    CASES,
    CONFIG,
    INVALID_HP_PLACES,
    INVALID_UNITS,
    MAX_RESTARTS,
    Case,
    write_tensorflow_stubs,
)


def _config(
    tmp_path: Path, name: str, *, searcher: str = "grid", units: str = "1", extra: str = ""
):
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        CONFIG.format(
            name=name, units=units, searcher=searcher, extra=extra, max_restarts=MAX_RESTARTS
        )
    )
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_failing_model_definition_ends_its_trial_as_the_rules_say(
    case: Case, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    model = case.write(tmp_path / "model")
    exp = LocalExperiment.create(_config(tmp_path, case.name), model, tmp_path / "out")
    with caplog.at_level(logging.ERROR, logger="pedl.local"):
        summary = exp.run()
    (trial,) = summary.trials
    assert trial.state == TrialState.ERROR
    assert trial.outcome == TrialOutcome.ERRORED
    assert trial.error is not None
    assert trial.error.type == case.error_type
    assert case.message in trial.error.message
    assert trial.error.location == case.location()
    assert trial.error.before_progress == case.before_progress
    assert exp.trial(trial.trial_id).restarts == case.attempts - 1
    assert summary.state == ExperimentState.ERROR
    assert summary.error is not None and trial.error.summary() in summary.error
    # One traceback per attempt, no more.
    tracebacks = [
        r for r in caplog.records if "Traceback (most recent call last)" in r.getMessage()
    ]
    assert len(tracebacks) == case.attempts
    exp.close()


def test_the_cli_prints_type_message_and_location_once(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "build_model")
    model = case.write(tmp_path / "model")
    result = CliRunner().invoke(
        cli,
        ["experiment", "create", "--local", str(_config(tmp_path, "cli")), str(model),
         "--output-dir", str(tmp_path / "out")],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    summary_line = f"ValueError: boom in build_model ({case.location()})"
    assert "The experiment failed: every trial failed (1 of 1); trial 1: " + summary_line in (
        result.output
    )
    assert result.output.count("boom in build_model") == 1, result.output


def test_tensorflow_missing_says_what_to_install(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.name == "build_model")
    model = case.write(tmp_path / "model")
    stubs = write_tensorflow_stubs(tmp_path / "stubs")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(stubs), os.getcwd()])}
    done = subprocess.run(
        [sys.executable, "-m", "pedl", "experiment", "create", "--local",
         str(_config(tmp_path, "notf")), str(model), "--output-dir", str(tmp_path / "out")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "ModuleNotFoundError" in output
    assert "pip install 'pedl[tf]'" in output
    assert output.count("Traceback (most recent call last)") <= 1


@pytest.mark.parametrize("place", sorted(INVALID_HP_PLACES))
def test_invalid_hp_is_replaced_in_a_random_search(place: str, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "__init__.py").write_text(INVALID_HP_PLACES[place])
    config = _config(tmp_path, f"random-{place}", searcher="random", units="1, 2, 3",
                     extra="max_trials: 3")  # fmt: skip
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    assert summary.state == ExperimentState.COMPLETED
    valid = [t for t in summary.trials if t.outcome == TrialOutcome.COMPLETED]
    invalid = [t for t in summary.trials if t.outcome == TrialOutcome.INVALID_HP]
    assert len(valid) == 3
    assert all(t.hparams["units"] != INVALID_UNITS for t in valid)
    assert all(t.hparams["units"] == INVALID_UNITS for t in invalid)
    assert all(t.state == TrialState.COMPLETED and t.error for t in invalid)
    # The summary table does not read it as a plain COMPLETED.
    console = Console(width=200, record=True)
    console.print(summary_table(summary))
    text = console.export_text()
    assert text.count("COMPLETED (invalid hyperparameters)") == len(invalid) > 0, text
    exp.close()


@pytest.mark.parametrize("place", sorted(INVALID_HP_PLACES))
def test_invalid_hp_marks_a_grid_point_invalid(place: str, tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "__init__.py").write_text(INVALID_HP_PLACES[place])
    config = _config(tmp_path, f"grid-{place}", units="1, 2, 3")
    exp = LocalExperiment.create(config, model, tmp_path / "out")
    summary = exp.run()
    assert summary.state == ExperimentState.COMPLETED
    outcomes = {t.hparams["units"]: t.outcome for t in summary.trials}
    assert outcomes == {
        1: TrialOutcome.COMPLETED,
        2: TrialOutcome.COMPLETED,
        INVALID_UNITS: TrialOutcome.INVALID_HP,
    }
    assert (
        exp.trial(next(t.trial_id for t in summary.trials if t.hparams["units"] == 3)).restarts == 0
    )
    exp.close()
