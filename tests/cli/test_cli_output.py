"""What the CLI prints: plain text with whole ids when not on a terminal, numbers with four
significant digits, no colour with NO_COLOR."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from pedl.cli import cli
from pedl.cli._context import console
from pedl.cli._display import NUMBER_WIDTH, format_number, hparams_text, metrics_text
from pedl.client import Client
from pedl.vocabulary import ExperimentState, TrialState
from tests.client.helpers import LiveMaster, report, store_checkpoint
from tests.waits import scaled

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
# Neither a forced terminal nor NO_COLOR from the environment the tests run in; a narrow
# COLUMNS that would cut a UUID if the CLI used it off a terminal.
PLAIN_ENV: dict[str, str | None] = {
    "FORCE_COLOR": None,
    "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None,
    "NO_COLOR": None,
    "COLUMNS": "40",
}


@pytest.fixture
def filled(
    master: LiveMaster, client: Client, config_file: Path, model_dir: Path, storage: Path
) -> dict[str, Any]:
    """A COMPLETED experiment with one trial (awkward hyperparameters), a validation and a
    checkpoint."""
    exp = client.create_experiment(config_file, model_dir)
    trial_id, token = master.create_trial(
        exp.id, lr=0.000123456789, opt={"beta": 0.123456789, "layers": 3}, decay=1e-05
    )
    with master.trial_api(token) as api:
        report(api, trial_id, "validation", 5, val_loss=0.123456789)
        uuid = store_checkpoint(api, trial_id, storage, 5, {"w.bin": b"w" * 9})
    master.set_trial_state(trial_id, TrialState.COMPLETED)
    master.set_experiment_state(exp.id, ExperimentState.COMPLETED)
    return {"experiment": exp.id, "trial": trial_id, "uuid": uuid}


def _commands(filled: dict[str, Any]) -> list[list[str]]:
    exp, trial, uuid = str(filled["experiment"]), str(filled["trial"]), filled["uuid"]
    return [
        ["experiment", "list"],
        ["experiment", "describe", exp],
        ["experiment", "list-trials", exp],
        ["experiment", "list-checkpoints", exp],
        ["experiment", "wait", exp, "--interval", "0.05"],
        ["trial", "describe", trial],
        ["checkpoint", "describe", uuid],
    ]


def test_piped_output_is_plain_with_whole_uuids(master: LiveMaster, filled: dict[str, Any]) -> None:
    for args in _commands(filled):
        result = CliRunner().invoke(cli, ["--master", master.url, *args], env=PLAIN_ENV)
        assert result.exit_code == 0, (args, result.output)
        assert "\x1b[" not in result.output, (args, result.output)
        assert "…" not in result.output, (args, result.output)
        if args[0] != "experiment" or args[1] not in ("list", "wait"):
            assert filled["uuid"] in result.output.split(), (args, result.output)
            assert all(len(u) == 36 for u in UUID.findall(result.output))
    trials = CliRunner().invoke(
        cli, ["--master", master.url, "experiment", "list-trials", str(filled["experiment"])]
    )
    assert "decay=1e-05 lr=0.0001235 opt.beta=0.1235 opt.layers=3" in trials.output
    assert "0.1235" in trials.output and "0.123456789" not in trials.output


def test_a_real_pipe(master: LiveMaster, filled: dict[str, Any]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in PLAIN_ENV}
    result = subprocess.run(
        [sys.executable, "-m", "pedl", "-m", master.url, "trial", "describe", str(filled["trial"])],
        capture_output=True,
        text=True,
        timeout=scaled(60),
        env={**env, "COLUMNS": "30"},
    )
    assert result.returncode == 0, result.stderr
    assert "\x1b[" not in result.stdout
    assert result.stdout.count(filled["uuid"]) == 3  # best, latest, and the checkpoints table


def test_a_terminal_keeps_colour_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich: stdout counts as a terminal
    coloured = console()
    with coloured.capture() as captured:
        coloured.print("[red]red[/red]")
    assert "\x1b[31m" in captured.get()
    monkeypatch.setenv("NO_COLOR", "1")
    plain = console()
    with plain.capture() as captured:
        plain.print("[red]red[/red]")
    assert "\x1b[31m" not in captured.get() and "red" in captured.get()


def test_not_a_terminal_means_no_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PLAIN_ENV:
        monkeypatch.delenv(name, raising=False)
    out = console()
    assert not out.is_terminal and out.width >= 10_000
    with out.capture() as captured:
        out.print("[red bold]red[/red bold]")
    assert captured.get() == "red\n"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0001234, "0.0001234"),
        (0.123456789, "0.1235"),
        (1e-05, "1e-05"),
        (0.1, "0.1"),
        (123456.0, "1.235e+05"),
        (-2.5, "-2.5"),
        (0.0, "0"),
        (3, "3"),
        (10**12, "1000000000000"),
        (True, "True"),
        (None, "-"),
        ("adam", "adam"),
        ([1, 2], "[1, 2]"),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
    ],
)
def test_format_number(value: Any, text: str) -> None:
    assert format_number(value) == text


def test_hparams_and_metrics_text() -> None:
    hparams = {"opt": {"lr": 0.000123456789, "name": "adam"}, "units": 64, "dropout": 0.25}
    assert hparams_text(hparams) == "dropout=0.25 opt.lr=0.0001235 opt.name=adam units=64"
    assert hparams_text({}) == "-"
    assert metrics_text({"loss": 1.23456, "acc": 0.98765}) == "acc=0.9877 loss=1.235"
    assert metrics_text(None) == "-"


def _check_float(value: float) -> None:
    """Short, and within a relative 5e-4 of the value (compared as decimals: near the largest
    float, the rounded text is past it)."""
    text = format_number(value)
    assert len(text) <= NUMBER_WIDTH, text
    shown, exact = Decimal(text), Decimal(value)
    assert abs(shown - exact) <= Decimal("5e-4") * abs(exact), (value, text)


def test_format_number_keeps_four_digits_seeded() -> None:
    """The property below without Hypothesis: many floats across the whole range."""
    rng = random.Random(4)
    for _ in range(20_000):
        value = rng.uniform(-10, 10) * 10.0 ** rng.randint(-307, 307)
        _check_float(value)
    for value in (
        1.0005,
        9.9995,
        99995.0,
        0.00099995,
        -1.7976931348623157e308,
        2.2250738585072014e-308,
    ):
        _check_float(value)


def test_format_number_keeps_four_digits_hypothesis() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    @hypothesis.settings(max_examples=2000)
    @hypothesis.given(st.floats(allow_nan=False, allow_infinity=False))
    def check(value: float) -> None:
        _check_float(value)

    @hypothesis.given(st.integers())
    def check_int(value: int) -> None:
        assert format_number(value) == str(value)

    check()
    check_int()


def test_wait_prints_the_best_metric_with_four_digits(
    master: LiveMaster, filled: dict[str, Any]
) -> None:
    result = CliRunner().invoke(
        cli,
        ["--master", master.url, "experiment", "wait", str(filled["experiment"])],
        env=PLAIN_ENV,
    )
    assert result.exit_code == 0, result.output
    assert "best val_loss=0.1235" in result.output
