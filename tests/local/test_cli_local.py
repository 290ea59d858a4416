"""``pedl experiment create --local`` and ``--test`` as a user runs them."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from pedl.cli import cli

from .test_local_experiment import GRID, write_experiment


def test_create_local_prints_the_summary(tmp_path: Path) -> None:
    config, model = write_experiment(
        tmp_path,
        GRID.replace("vals: [4, 8]", "vals: [4]").replace("vals: [0.01, 0.05]", "vals: [0.05]"),
    )
    result = CliRunner().invoke(
        cli,
        [
            "experiment",
            "create",
            "--local",
            str(config),
            str(model),
            "--output-dir",
            str(tmp_path / "o"),
        ],
        terminal_width=200,
    )
    assert result.exit_code == 0, result.output
    assert f"Created local experiment in {tmp_path / 'o' / 'exp-1'}" in result.output
    assert "COMPLETED" in result.output
    assert "best val_accuracy" in result.output
    assert "Best trial: 1 (val_accuracy = " in result.output


def test_test_mode_reports_each_step(tmp_path: Path) -> None:
    config, model = write_experiment(tmp_path, GRID)
    result = CliRunner().invoke(cli, ["experiment", "create", "--test", str(config), str(model)])
    assert result.exit_code == 0, result.output
    assert "ok   restore the checkpoint and train on" in result.output
    assert "The model definition works with PEDL." in result.output


def test_test_mode_says_what_failed_in_plain_words(tmp_path: Path) -> None:
    config, model = write_experiment(
        tmp_path,
        GRID.replace("vals: [4, 8]", "vals: [0]"),
    )
    result = CliRunner().invoke(
        cli, ["experiment", "create", "--test", str(config), str(model)], terminal_width=200
    )
    assert result.exit_code == 1
    assert "ok   load the model definition: Tiny" in result.output
    assert (
        "FAILED train 2 batches, validate and checkpoint: ValueError: units must be positive"
        in result.output
    )
    assert "in build_model" in result.output


def test_test_mode_reports_a_bad_config(tmp_path: Path) -> None:
    config, model = write_experiment(tmp_path, GRID.replace("metric: val_accuracy", "metric: 3"))
    result = CliRunner().invoke(
        cli, ["experiment", "create", "--test", str(config), str(model)], terminal_width=200
    )
    assert result.exit_code == 1
    assert "FAILED load the experiment config" in result.output
    assert "searcher.metric" in result.output


def test_create_local_with_a_bad_config_names_the_field(tmp_path: Path) -> None:
    config, model = write_experiment(
        tmp_path, GRID.replace("smaller_is_better: false", "smaller_is_better: maybe")
    )
    result = CliRunner().invoke(
        cli,
        [
            "experiment",
            "create",
            "--local",
            str(config),
            str(model),
            "--output-dir",
            str(tmp_path / "o"),
        ],
        terminal_width=200,
    )
    assert result.exit_code == 1
    assert "searcher.smaller_is_better" in result.output


def test_create_local_warns_once_about_ignored_fields(tmp_path: Path) -> None:
    config, model = write_experiment(
        tmp_path,
        GRID.replace("vals: [4, 8]", "vals: [4]").replace("vals: [0.01, 0.05]", "vals: [0.05]")
        + "debug: true\nprofiling: {enabled: true}\n",
    )
    result = CliRunner().invoke(
        cli,
        ["experiment", "create", "--local", str(config), str(model),
         "--output-dir", str(tmp_path / "o")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    assert "debug" in warnings[0] and "profiling" in warnings[0]
